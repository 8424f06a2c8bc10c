package identity

import (
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
)

// TestMintAndKindOf: minted tokens carry their type, parse back to their kind, and differ.
func TestMintAndKindOf(t *testing.T) {
	for prefix, kind := range map[string]string{PrefixPAT: orchestrator.CredentialToken, PrefixAgentKey: orchestrator.CredentialAgentKey,
		PrefixRunToken: orchestrator.CredentialRunToken, PrefixSession: orchestrator.CredentialSession} {
		a, b := Mint(prefix), Mint(prefix)
		if a.Value == b.Value || !strings.HasPrefix(a.Value, prefix) || !strings.HasPrefix(a.Value, a.Prefix) || len(a.Prefix) != len(prefix)+shownLen {
			t.Fatalf("mint %s: %+v %+v", prefix, a, b)
		}
		if got, err := KindOf(a.Value); err != nil || got != kind {
			t.Fatalf("KindOf(%s…) = %q, %v; want %q", a.Prefix, got, err, kind)
		}
		if string(Hash(a.Value)) != string(a.Hash) {
			t.Fatal("the hash a token is found by differs from its minted hash")
		}
	}
}

// TestKindOfRefuses: each malformed token is refused with a message that names the problem and
// never repeats the token.
func TestKindOfRefuses(t *testing.T) {
	good := Mint(PrefixPAT).Value
	for _, tc := range []struct{ name, token, says string }{
		{"unknown type", "ghp_" + strings.Repeat("a", 36), "unknown token type"},
		{"empty", "", "unknown token type"},
		{"short", good[:len(good)-1], "malformed API token"},
		{"long", good + "a", "malformed API token"},
		{"uppercase", strings.ToUpper(good[:8]) + good[8:], "unknown token type"},
		{"outside the alphabet", good[:len(good)-1] + "!", "malformed API token"},
		{"letters ids avoid", good[:len(good)-1] + "u", "malformed API token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := KindOf(tc.token)
			if err == nil || orchestrator.ErrorCode(err) != orchestrator.EUNAUTHORIZED || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("KindOf = %v, want EUNAUTHORIZED saying %q", err, tc.says)
			}
			if len(tc.token) > 10 && strings.Contains(err.Error(), tc.token[8:]) {
				t.Fatalf("the error repeats the token: %v", err)
			}
		})
	}
}

// TestParseBearer: the Authorization header's forms.
func TestParseBearer(t *testing.T) {
	for _, tc := range []struct {
		header, want string
		ok           bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"  Bearer   abc  ", "abc", true},
		{"Basic YWxhZGRpbjpvcGVuc2VzYW1l", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer a b", "", false},
		{"abc", "", false},
	} {
		got, err := ParseBearer(tc.header)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBearer(%q) = %q, %v", tc.header, got, err)
		}
		if err != nil && orchestrator.ErrorCode(err) != orchestrator.EUNAUTHORIZED {
			t.Errorf("ParseBearer(%q): code %s", tc.header, orchestrator.ErrorCode(err))
		}
	}
}

// FuzzKindOf: the token parser never panics, accepts only well-formed tokens, and its errors never
// carry the input's secret part.
func FuzzKindOf(f *testing.F) {
	for _, s := range []string{Mint(PrefixPAT).Value, Mint(PrefixRunToken).Value, "gld_agent_", "", "gld_pat_" + strings.Repeat("z", 32), "Bearer x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kind, err := KindOf(s)
		if err != nil {
			if len(s) > 16 && strings.Contains(err.Error(), s) {
				t.Fatalf("error repeats the token: %v", err)
			}
			return
		}
		if kind == "" || len(s) < secretLen || strings.Trim(s[len(s)-secretLen:], alphabet) != "" {
			t.Fatalf("accepted %q as %q", s, kind)
		}
	})
}

// FuzzParseBearer: the header parser never panics and only answers a token without spaces.
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  x ", "Basic x", "", "Bearer\tx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseBearer(s)
		if err == nil && (tok == "" || strings.ContainsAny(tok, " \t")) {
			t.Fatalf("ParseBearer(%q) = %q", s, tok)
		}
	})
}
