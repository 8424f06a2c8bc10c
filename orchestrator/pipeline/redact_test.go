package pipeline

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

func b64(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }

// embedB64 encodes pre+secret+post, so the secret sits at byte offset len(pre) of the stream.
func embedB64(enc *base64.Encoding, pre, secret, post string) string {
	return enc.EncodeToString([]byte(pre + secret + post))
}

func TestRedact(t *testing.T) {
	const sec = "sk-live-9f8e7d6c5b4a"
	const odd = `p@ss w/rd&x=1"<é>\`
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"plain", []string{sec}, "token=" + sec + " ok", "token=[REDACTED] ok"},
		{"whole string", []string{sec}, sec, "[REDACTED]"},
		{"at both ends, repeated", []string{sec}, sec + " and " + sec, "[REDACTED] and [REDACTED]"},
		{"back to back", []string{sec}, sec + sec, "[REDACTED][REDACTED]"},
		{"no secret", []string{sec}, "nothing to see here", "nothing to see here"},
		{"near miss", []string{sec}, "sk-live-9f8e7d6c5b4", "sk-live-9f8e7d6c5b4"},
		{"base64 std offset 0", []string{sec}, "Basic " + b64(base64.StdEncoding, sec), "Basic [REDACTED]"},
		{"base64 url offset 0", []string{"a?b>c~d?e>f~g"}, "t=" + b64(base64.URLEncoding, "a?b>c~d?e>f~g"), "t=[REDACTED]"},
		{"url query escaping", []string{odd}, "https://x.test/?p=" + url.QueryEscape(odd) + "&q=1", "https://x.test/?p=[REDACTED]&q=1"},
		{"url path escaping", []string{odd}, "https://x.test/" + url.PathEscape(odd) + "/z", "https://x.test/[REDACTED]/z"},
		{"encodeURIComponent", []string{"P@ssw0rd!(x)*"}, "u=P%40ssw0rd!(x)*&v=1", "u=[REDACTED]&v=1"},
		{"python quote", []string{"a b/c?d"}, "https://x.test/a%20b/c%3Fd", "https://x.test/[REDACTED]"},
		{"query escaping with %20 for space", []string{"a b/c?d"}, "q=a%20b%2Fc%3Fd", "q=[REDACTED]"},
		{"json escaping", []string{odd}, `{"password":"` + goJSON(odd, true) + `"}`, `{"password":"[REDACTED]"}`},
		{"json escaping without html", []string{odd}, `{"password":"` + goJSON(odd, false) + `"}`, `{"password":"[REDACTED]"}`},
		{"json ascii escaping", []string{"clé-secrète-✓-𝄞"}, `{"k":"cl\u00e9-secr\u00e8te-\u2713-\ud834\udd1e"}`, `{"k":"[REDACTED]"}`},
		{"one a prefix of another", []string{"abcd1234", "abcd1234efgh"}, "x abcd1234efgh y abcd1234 z", "x [REDACTED] y [REDACTED] z"},
		{"one inside another", []string{"XYZW", "key-XYZW-inner"}, "a key-XYZW-inner b XYZW c", "a [REDACTED] b [REDACTED] c"},
		{"overlapping merge", []string{"aaaa1111", "1111bbbb"}, "<aaaa1111bbbb>", "<[REDACTED]>"},
		{"chain of overlaps", []string{"aaaa1111", "11112222", "22223333"}, "<aaaa111122223333>", "<[REDACTED]>"},
		{"adjacent multibyte", []string{sec}, "日本" + sec + "é✓", "日本[REDACTED]é✓"},
		{"secret with multibyte", []string{"ключ-секрет"}, "«ключ-секрет»", "«[REDACTED]»"},
		{"empty value ignored", []string{""}, "abc", "abc"},
		{"short values ignored", []string{"a", "ab", "abc"}, "a ab abc", "a ab abc"},
		{"four bytes kept", []string{"abcd"}, "xabcdx", "x[REDACTED]x"},
		{"input shorter than any secret", []string{sec}, "sk", "sk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewRedactor(tt.secrets).Redact(tt.in)
			if got != tt.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestRedactBase64Offsets puts the secret at every byte offset of a longer base64 stream, in both
// alphabets, and checks that no alignment of what is left decodes back to it.
func TestRedactBase64Offsets(t *testing.T) {
	secrets := []string{"ghs_16C7e42F292c6912E7710c838347Ae178B4a", "tok?>~\xfb\xff\xfe!", "abcd"}
	for _, sec := range secrets {
		r := NewRedactor([]string{sec})
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			for pre := 0; pre < 6; pre++ {
				for post := 0; post < 4; post++ {
					stream := embedB64(enc, strings.Repeat("P", pre), sec, strings.Repeat("Q", post))
					in := `{"blob":"` + stream + `"}`
					out := r.Redact(in)
					if !strings.Contains(out, Marker) {
						t.Fatalf("secret %q at offset %d not redacted: %q", sec, pre, out)
					}
					if leak := base64Leak(out, sec); leak != "" {
						t.Fatalf("secret %q at offset %d: %s (out %q)", sec, pre, leak, out)
					}
				}
			}
		}
	}
}

func TestRedactorLen(t *testing.T) {
	tests := []struct {
		in   []string
		want int
	}{
		{nil, 0},
		{[]string{"", "a", "abc"}, 0},
		{[]string{"abcd", "abcd", "abcde"}, 2},
	}
	for _, tt := range tests {
		if got := NewRedactor(tt.in).Len(); got != tt.want {
			t.Errorf("NewRedactor(%q).Len() = %d, want %d", tt.in, got, tt.want)
		}
	}
	var nilR *Redactor
	if nilR.Len() != 0 || nilR.Redact("abcd") != "abcd" {
		t.Error("nil Redactor must redact nothing")
	}
	r := NewRedactor([]string{"first-secret"}).With("second-secret")
	if r.Len() != 2 || r.Redact("first-secret second-secret") != "[REDACTED] [REDACTED]" {
		t.Errorf("With: got Len %d, Redact %q", r.Len(), r.Redact("first-secret second-secret"))
	}
}

func TestEncodings(t *testing.T) {
	const sec = `a b/c?d"e`
	got := Encodings(sec)
	for _, want := range []string{sec, url.QueryEscape(sec), url.PathEscape(sec), `a b/c?d\"e`} {
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("Encodings(%q) lacks %q: %q", sec, want, got)
		}
	}
	full := b64(base64.StdEncoding, sec)
	if core := full[:8*len(sec)/6]; !slices.Contains(got, core) {
		t.Errorf("Encodings(%q) lacks the offset-0 base64 core %q", sec, core)
	}
	for _, s := range []string{"a<b>&c\n\t\x01\b\f\r\"\\\u2028é", "\xff\xfeab", "日本語𝄞"} {
		for _, html := range []bool{true, false} {
			if got, want := jsonEscape(s, html, false), goJSON(s, html); got != want {
				t.Errorf("jsonEscape(%q, html=%v) = %q, encoding/json writes %q", s, html, got, want)
			}
		}
		if got, want := jsonEscape(s, false, true), pyJSON(s); got != want {
			t.Errorf("jsonEscape(%q, ascii) = %q, want %q", s, got, want)
		}
	}
}

func TestRedactNoSecretDoesNotAllocate(t *testing.T) {
	r := NewRedactor(manySecrets(200))
	text := corpus(64<<10, nil)
	allocs := testing.AllocsPerRun(20, func() { _ = r.Redact(text) })
	if allocs != 0 {
		t.Errorf("Redact of a clean 64 KiB string allocated %.0f times, want 0", allocs)
	}
}

func TestRedactConcurrent(t *testing.T) {
	secrets := manySecrets(50)
	r := NewRedactor(secrets)
	text := corpus(16<<10, secrets[:10])
	want := r.Redact(text)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if got := r.Redact(text); got != want {
					t.Error("concurrent Redact gave a different result")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// base64Leak decodes every base64 run of out (both alphabets, every alignment) and reports
// whether any decodes to bytes containing secret.
func base64Leak(out, secret string) string {
	for _, alpha := range []struct {
		name  string
		enc   *base64.Encoding
		extra string
	}{{"std", base64.RawStdEncoding, "+/"}, {"url", base64.RawURLEncoding, "-_"}} {
		runs := strings.FieldsFunc(out, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune(alpha.extra, r))
		})
		for _, run := range runs {
			for a := 0; a < 4 && a < len(run); a++ {
				seg := run[a:]
				seg = seg[:len(seg)/4*4]
				dec, err := alpha.enc.DecodeString(seg)
				if err == nil && strings.Contains(string(dec), secret) {
					return alpha.name + " base64 run " + run + " still decodes to the secret"
				}
			}
		}
	}
	return ""
}

// TestRedactorCacheConcurrent builds Redactors for overlapping value sets from many goroutines
// (the cache behind NewRedactor and With); run it with -race.
func TestRedactorCacheConcurrent(t *testing.T) {
	secrets := manySecrets(100)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				vals := secrets[(g+i)%50 : (g+i)%50+20]
				r := NewRedactor(vals).With(secrets[99-i%30])
				if r.Len() != 21 || r.Redact(vals[3]) != Marker {
					t.Errorf("Redactor for %d values: Len %d", len(vals)+1, r.Len())
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if a, b := NewRedactor(secrets[:5]), NewRedactor(secrets[:5]); a != b {
		t.Error("the same values built twice in a row did not come from the cache")
	}
}
