package credential

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)

const tokensJSON = `{"tokens": [
 {"host": "github.com", "repository": "Owner/Name", "token": "ghs_live", "expires_at": "2026-11-29T22:00:00Z"},
 {"host": "github.com", "repository": "owner/old", "token": "ghs_expired", "expires_at": "2026-11-29T20:00:00Z"},
 {"host": "github.com", "repository": "owner/noexp", "token": "ghs_noexp"},
 {"host": "github.com", "repository": "owner/badexp", "token": "ghs_badexp", "expires_at": "tomorrow"},
 {"host": "github.com", "repository": "owner/inject", "token": "ghs_x\npassword=evil"},
 {"host": "ghe.example.com", "repository": "owner/name", "token": "ghs_ghe"}
]}`

func TestFind(t *testing.T) {
	var toks Tokens
	dir := t.TempDir()
	path := filepath.Join(dir, TokensFile)
	if err := os.WriteFile(path, []byte(tokensJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	toks, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  Request
		want string // "" for no answer
	}{
		{"exact with .git", Request{"https", "github.com", "Owner/Name.git"}, "ghs_live"},
		{"no suffix", Request{"https", "github.com", "owner/name"}, "ghs_live"},
		{"case-insensitive host and path", Request{"HTTPS", "GitHub.com", "OWNER/NAME.GIT"}, "ghs_live"},
		{"leading slash and lfs path", Request{"https", "github.com", "/owner/name.git/info/lfs"}, "ghs_live"},
		{"other host same repo", Request{"https", "ghe.example.com", "owner/name"}, "ghs_ghe"},
		{"no expiry", Request{"https", "github.com", "owner/noexp.git"}, "ghs_noexp"},
		{"expired", Request{"https", "github.com", "owner/old.git"}, ""},
		{"unparsable expiry", Request{"https", "github.com", "owner/badexp"}, ""},
		{"token with a newline", Request{"https", "github.com", "owner/inject"}, ""},
		{"unknown repository", Request{"https", "github.com", "owner/other"}, ""},
		{"unknown host", Request{"https", "gitlab.com", "owner/name"}, ""},
		{"plain http", Request{"http", "github.com", "owner/name"}, ""},
		{"no path (useHttpPath off)", Request{"https", "github.com", ""}, ""},
		{"owner only", Request{"https", "github.com", "owner"}, ""},
		{"dot dot", Request{"https", "github.com", "../name"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := toks.Find(tc.req, now)
			if (tc.want == "") == ok || got.Token != tc.want {
				t.Fatalf("Find(%+v) = %q, %v; want %q", tc.req, got.Token, ok, tc.want)
			}
		})
	}
	// At the expiry instant the token is no longer given.
	if _, ok := toks.Find(Request{"https", "github.com", "owner/name"}, time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)); ok {
		t.Fatal("token given at its expiry time")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Request
		err      string
	}{
		{"git fields", "protocol=https\nhost=github.com\npath=o/n.git\n\n", Request{"https", "github.com", "o/n.git"}, ""},
		{"unknown keys ignored", "capability[]=authtype\nprotocol=https\nhost=h\nwwwauth[]=Basic realm=\"x\"\n", Request{"https", "h", ""}, ""},
		{"stops at blank line", "protocol=https\n\nhost=ignored\n", Request{Protocol: "https"}, ""},
		{"value with equals", "path=a=b/c\n", Request{Path: "a=b/c"}, ""},
		{"CRLF lines", "protocol=https\r\nhost=h\r\n", Request{"https", "h", ""}, ""},
		{"url", "url=https://github.com/o/n.git\n", Request{"https", "github.com", "o/n.git"}, ""},
		{"empty", "", Request{}, ""},
		{"no equals", "protocol https\n", Request{}, "line 1 is not key=value"},
		{"empty key", "=x\n", Request{}, "line 1 is not key=value"},
		{"NUL", "host=a\x00b\n", Request{}, "NUL byte"},
		{"oversized", "path=" + strings.Repeat("a", maxInput) + "\n", Request{}, "over 65536 bytes"},
		{"bad url", "url=http://[::1\n", Request{}, "unparsable url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestMainAnswers(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GUILDS_RUN_DIR", dir)
	if err := os.WriteFile(filepath.Join(dir, TokensFile), []byte(tokensJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return now }
	for _, tc := range []struct {
		name, op, in, out string
		code              int
		stderr            string
	}{
		{"get", "get", "protocol=https\nhost=github.com\npath=owner/name.git\n", "username=x-access-token\npassword=ghs_live\npassword_expiry_utc=1795989600\n", 0, ""},
		{"get unknown", "get", "protocol=https\nhost=github.com\npath=owner/x.git\n", "", 0, ""},
		{"store", "store", "protocol=https\nhost=github.com\npath=owner/name.git\nusername=u\npassword=p\n", "", 0, ""},
		{"erase", "erase", "protocol=https\nhost=github.com\n", "", 0, ""},
		{"future op", "approve", "x", "", 0, ""},
		{"bad input", "get", "garbage\n", "", 1, "line 1 is not key=value"},
		{"no op", "", "", "", 2, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if tc.op != "" {
				args = []string{tc.op}
			}
			var out, errb bytes.Buffer
			code := Main(args, strings.NewReader(tc.in), &out, &errb, clock)
			if code != tc.code || out.String() != tc.out || !strings.Contains(errb.String(), tc.stderr) {
				t.Fatalf("Main(%v) = %d, stdout %q, stderr %q; want %d, %q, %q", args, code, out.String(), errb.String(), tc.code, tc.out, tc.stderr)
			}
		})
	}
}

// TestBrokenTokenFile never echoes the file (it holds tokens) and answers nothing.
func TestBrokenTokenFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GUILDS_RUN_DIR", dir)
	for _, content := range []string{`{"tokens": [{"token": "ghs_secret", `, `{"tokens": {"token": "ghs_secret"}}`, `[ghs_secret]`} {
		if err := os.WriteFile(filepath.Join(dir, TokensFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := Main([]string{"get"}, strings.NewReader("protocol=https\nhost=github.com\npath=a/b\n"), &out, &errb, time.Now)
		if code != 1 || out.Len() != 0 || strings.Contains(errb.String(), "ghs_secret") || !strings.Contains(errb.String(), "is not valid token JSON") {
			t.Fatalf("broken file %q: code %d stdout %q stderr %q", content, code, out.String(), errb.String())
		}
	}
}

// FuzzParse: any input parses or errors without panicking, and no answer for it carries a
// token unless the request named that token's https repository.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"protocol=https\nhost=github.com\npath=owner/name.git\n", "url=https://github.com/o/n\n", "=\n", "a\x00", "path=/../x\n\nhost=y"} {
		f.Add(s)
	}
	toks := Tokens{Tokens: []Token{{Host: "github.com", Repository: "owner/name", Token: "ghs_t"}}}
	f.Fuzz(func(t *testing.T, in string) {
		req, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		if _, ok := toks.Find(req, now); ok {
			repo, _ := RepoFromPath(req.Path)
			if !strings.EqualFold(req.Protocol, "https") || !strings.EqualFold(req.Host, "github.com") || repo != "owner/name" {
				t.Fatalf("token given for %+v", req)
			}
		}
	})
}
