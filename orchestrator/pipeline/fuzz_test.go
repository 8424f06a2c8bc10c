package pipeline

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// leaksOutsideMarkers reports whether needle occurs in out at a place that overlaps no Marker:
// such an occurrence is a run of original bytes the redactor left in place.
func leaksOutsideMarkers(out, needle string) bool {
	if needle == "" {
		return false
	}
	var marks [][2]int
	for i := 0; ; {
		j := strings.Index(out[i:], Marker)
		if j < 0 {
			break
		}
		marks = append(marks, [2]int{i + j, i + j + len(Marker)})
		i += j + len(Marker)
	}
	for i := 0; ; i++ {
		j := strings.Index(out[i:], needle)
		if j < 0 {
			return false
		}
		s, e := i+j, i+j+len(needle)
		overlaps := false
		for _, m := range marks {
			if s < m[1] && m[0] < e {
				overlaps = true
				break
			}
		}
		if !overlaps {
			return true
		}
		i = s
	}
}

// uriComponent is JavaScript's encodeURIComponent, derived from url.QueryEscape: the bytes it
// leaves alone that QueryEscape escapes are put back, and a space is %20.
func uriComponent(s string) string {
	out := strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
	for _, c := range "!~*'()" {
		out = strings.ReplaceAll(out, url.QueryEscape(string(c)), string(c))
	}
	return out
}

func FuzzRedact(f *testing.F) {
	f.Add("log line", "sk-live-1234", "1234-more", 1)
	f.Add("é日本", "ключ", "ключ-секрет", 2)
	f.Add("", "abcd", "bcde", 0)
	f.Add("[REDACTED]", "DACT", "a\"<>&\\", 3)
	f.Add("Authorization: Bearer ", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "xoxb-1234567890-abcdefghijklmnopqrstuvwx", 1)
	f.Fuzz(func(t *testing.T, text, s1, s2 string, pre int) {
		if len(text) > 4096 || len(s1) > 256 || len(s2) > 256 {
			return
		}
		pad := strings.Repeat("p", ((pre%3)+3)%3)
		var in strings.Builder
		for _, s := range []string{s1, s2} {
			in.WriteString(text + s + text)
			in.WriteString(" " + base64.StdEncoding.EncodeToString([]byte(pad+s+text)) + " ")
			in.WriteString(" " + base64.RawURLEncoding.EncodeToString([]byte(text+pad+s)) + " ")
			in.WriteString("?q=" + url.QueryEscape(s) + "&p=/" + url.PathEscape(s) + "&j=" + uriComponent(s) + " ")
			in.WriteString(`{"v":"` + goJSON(s, true) + `","w":"` + pyJSON(s) + `"} `)
		}
		red := NewRedactor([]string{s1, s2})
		out := red.Redact(in.String())
		if ref := redactReference(red, in.String()); out != ref {
			t.Fatalf("Redact and the reference disagree:\n got %q\nwant %q", out, ref)
		}
		for _, s := range []string{s1, s2} {
			if len(s) < MinSecretLen {
				continue
			}
			forms := []string{s, url.QueryEscape(s), url.PathEscape(s), uriComponent(s), strings.ReplaceAll(url.QueryEscape(s), "+", "%20"), goJSON(s, true), goJSON(s, false), pyJSON(s),
				base64.StdEncoding.EncodeToString([]byte(s)), base64.URLEncoding.EncodeToString([]byte(s))}
			for _, form := range forms {
				if leaksOutsideMarkers(out, form) {
					t.Fatalf("form %q of secret %q survives in %q", form, s, out)
				}
			}
			if !strings.Contains(s1+s2, Marker) && !strings.Contains(text, Marker) {
				if leak := base64Leak(strings.ReplaceAll(out, Marker, " "), s); leak != "" {
					t.Fatalf("secret %q: %s", s, leak)
				}
			}
		}
	})
}

func FuzzStamp(f *testing.F) {
	f.Add("hello", 0, 10, "secret-value")
	f.Add(strings.Repeat("é", 100), 57, 3, "éé")
	f.Add("a\xffb\x00c", 5, -1, "")
	f.Fuzz(func(t *testing.T, raw string, limit, remaining int, secret string) {
		if limit > 1<<20 || limit < -1 {
			return
		}
		out := Stamp(raw, Options{Redactor: NewRedactor([]string{secret}), Cap: limit, Remaining: remaining})
		if !utf8.ValidString(out) {
			t.Fatalf("output is not valid UTF-8: %q", out)
		}
		effective := limit
		if effective <= 0 {
			effective = DefaultCap
		}
		noteRoom := len(cutNote(effective, effective, len(raw)*4+len(Marker)))
		trailerRoom := len(Trailer(remaining, false))
		if max := max(effective, noteRoom) + trailerRoom; len(out) > max {
			t.Fatalf("output is %d bytes, more than cap %d + trailer room (%d)", len(out), effective, max)
		}
		n := remaining
		if n < 0 {
			n = 0
		}
		if !strings.HasSuffix(out, Trailer(n, true)) {
			t.Fatalf("output does not end with the trailer: %q", out)
		}
	})
}
