package identity

import (
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
)

// TestPasswords: argon2id round trip, fresh salts, and refusal of a changed hash or password.
func TestPasswords(t *testing.T) {
	h1, h2 := HashPassword("correct horse battery"), HashPassword("correct horse battery")
	if h1 == h2 || !strings.HasPrefix(h1, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hashes %q %q", h1, h2)
	}
	if !VerifyPassword(h1, "correct horse battery") || VerifyPassword(h1, "correct horse batterY") {
		t.Fatal("verify")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", strings.Replace(h1, "t=2", "t=99", 1), h1[:len(h1)-4], "$argon2id$v=19$m=0,t=2,p=1$c2FsdA$aGFzaA"} {
		if VerifyPassword(bad, "correct horse battery") {
			t.Fatalf("verified against %q", bad)
		}
	}
}

// TestCheckPassword: the rules a new password meets.
func TestCheckPassword(t *testing.T) {
	for _, tc := range []struct{ pw, says string }{
		{"short pass", "at least 12 characters"},
		{"password1234", "attackers try first"},
		{"PASSWORD1234", "attackers try first"},
		{"aaaaaaaaaaaaaaaa", "attackers try first"},
		{"maria.garcia-2026!", "email or name"},
		{"Maria Lopez rocks", "email or name"},
		{"has a \x00 nul inside", "NUL"},
		{strings.Repeat("long", 65), "at most 256"},
	} {
		err := CheckPassword(tc.pw, "maria.garcia@example.com", "Maria Lopez")
		if orchestrator.ErrorCode(err) != orchestrator.EINVALID || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckPassword(%q) = %v, want one saying %q", tc.pw, err, tc.says)
		}
	}
	if err := CheckPassword("tangerine orbit walrus", "maria.garcia@example.com", "Maria Lopez"); err != nil {
		t.Fatal(err)
	}
}

// TestNormalEmail: addresses are trimmed and lower-cased; anything else is refused.
func TestNormalEmail(t *testing.T) {
	if e, err := NormalEmail("  Maria@Example.COM "); err != nil || e != "maria@example.com" {
		t.Fatalf("%q %v", e, err)
	}
	for _, bad := range []string{"", "maria", "maria@", "@example.com", "Maria <maria@example.com>", "a b@example.com", "maria@example", strings.Repeat("a", 250) + "@example.com"} {
		if _, err := NormalEmail(bad); orchestrator.ErrorCode(err) != orchestrator.EINVALID {
			t.Errorf("NormalEmail(%q) = %v", bad, err)
		}
	}
}
