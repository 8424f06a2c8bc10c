package identity_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
)

// TestCheckReturnTo: local paths pass as they are ("" is "/"); anything a browser could read as
// another host is refused with EINVALID naming return_to.
func TestCheckReturnTo(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/": "/", "/agents": "/agents", "/runs/r1?view=calls#last": "/runs/r1?view=calls#last",
		"/a/%2F%2Fevil.example": "/a/%2F%2Fevil.example", "/search?q=a:b": "/search?q=a:b"} {
		got, err := identity.CheckReturnTo(in)
		if err != nil || got != want {
			t.Errorf("CheckReturnTo(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"https://evil.example", "//evil.example", "///evil.example", "/\\evil.example", "\\\\evil.example",
		"/a\\b", "javascript:alert(1)", "evil.example/x", "/\t/evil.example", "/a b", "/a\r\nLocation: x", "/\x00", "/\u2028x",
		"/" + strings.Repeat("a", 2048)} {
		if got, err := identity.CheckReturnTo(in); err == nil || orchestrator.ErrorCode(err) != orchestrator.EINVALID || !strings.Contains(err.Error(), "return_to") {
			t.Errorf("CheckReturnTo(%q) = %q, %v; want EINVALID naming return_to", in, got, err)
		}
	}
}

// TestParseState: a minted state passes; anything else is EINVALID that never repeats it.
func TestParseState(t *testing.T) {
	if err := identity.ParseState(identity.Mint("").Value); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"", "short", identity.Mint("").Value + "x", strings.ToUpper(identity.Mint("").Value), "../../../../../../../../etc/passwd"} {
		err := identity.ParseState(in)
		if err == nil || orchestrator.ErrorCode(err) != orchestrator.EINVALID || (in != "" && strings.Contains(err.Error(), in)) {
			t.Errorf("ParseState(%q) = %v", in, err)
		}
	}
}

// FuzzReturnTo: whatever CheckReturnTo accepts is a path on this box: resolved against the box's
// address it stays on the box, it holds no control character, space or backslash, and checking
// it again gives it back unchanged.
func FuzzReturnTo(f *testing.F) {
	for _, s := range []string{"", "/", "/agents?tab=runs", "//evil.example", "/\\evil", "https://x", "/%2F%2Fx", "/\t/x", "/a#b", "/.//x", "/?//x"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://box.example:8443/api/sessions/oidc/callback")
	f.Fuzz(func(t *testing.T, in string) {
		out, err := identity.CheckReturnTo(in)
		if err != nil {
			if orchestrator.ErrorCode(err) != orchestrator.EINVALID {
				t.Fatalf("CheckReturnTo(%q): %v, want EINVALID", in, err)
			}
			return
		}
		if in != "" && out != in {
			t.Fatalf("CheckReturnTo(%q) changed it to %q", in, out)
		}
		if out[0] != '/' || (len(out) > 1 && (out[1] == '/' || out[1] == '\\')) || strings.ContainsRune(out, '\\') {
			t.Fatalf("CheckReturnTo(%q) = %q, which may name another host", in, out)
		}
		for _, r := range out {
			if r <= ' ' || unicode.IsControl(r) || unicode.IsSpace(r) {
				t.Fatalf("CheckReturnTo(%q) = %q holds %U", in, out, r)
			}
		}
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("accepted %q does not parse: %v", out, err)
		}
		if got := base.ResolveReference(u); got.Host != base.Host || got.Scheme != base.Scheme || got.User != nil {
			t.Fatalf("CheckReturnTo(%q) = %q leads to %s", in, out, got)
		}
		if again, err := identity.CheckReturnTo(out); err != nil || again != out {
			t.Fatalf("checking %q again: %q, %v", out, again, err)
		}
	})
}

// FuzzParseState: ParseState accepts exactly the minted form (32 of the token alphabet), and its
// error never repeats what it was given.
func FuzzParseState(f *testing.F) {
	for _, s := range []string{"", identity.Mint("").Value, "abc", strings.Repeat("z", 32), strings.Repeat("u", 32), strings.Repeat("é", 16)} {
		f.Add(s)
	}
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	f.Fuzz(func(t *testing.T, in string) {
		err := identity.ParseState(in)
		want := len(in) == 32 && strings.Trim(in, alphabet) == ""
		if (err == nil) != want {
			t.Fatalf("ParseState(%q) = %v, want ok=%v", in, err, want)
		}
		if err != nil && len(in) >= 4 && strings.Contains(err.Error(), in) {
			t.Fatalf("ParseState(%q) repeats it: %v", in, err)
		}
	})
}
