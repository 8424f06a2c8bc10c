package identity

import (
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"golang.org/x/crypto/argon2"
)

// Argon2id parameters (OWASP's recommendation for argon2id): 19 MiB, two passes, one lane.
const (
	argonMemory  = 19 * 1024
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// Password length bounds, in characters.
const (
	MinPassword = 12
	MaxPassword = 256
)

//go:embed common_passwords.txt
var commonList string

// common is the set of passwords attackers try first (lower-cased).
var common = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(commonList, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			m[strings.ToLower(l)] = true
		}
	}
	return m
})

// CheckPassword refuses a password that is too short or too long, one an attacker would try first,
// or one made of the account's own email or name.
func CheckPassword(pw, email, name string) error {
	n := utf8.RuneCountInString(pw)
	switch {
	case n < MinPassword:
		return orchestrator.Errorf(orchestrator.EINVALID, "password must be at least %d characters, got %d; a few unrelated words make a long one easy to remember", MinPassword, n)
	case n > MaxPassword:
		return orchestrator.Errorf(orchestrator.EINVALID, "password must be at most %d characters, got %d", MaxPassword, n)
	case strings.ContainsRune(pw, 0):
		return orchestrator.Errorf(orchestrator.EINVALID, "password must not contain a NUL character")
	}
	low := strings.ToLower(pw)
	if common()[low] || strings.Count(low, low[:1]) == len(low) {
		return orchestrator.Errorf(orchestrator.EINVALID, "password is on the list of passwords attackers try first; choose another")
	}
	local, _, _ := strings.Cut(strings.ToLower(email), "@")
	if (len(local) >= 4 && strings.Contains(low, local)) || (len(name) >= 4 && strings.Contains(low, strings.ToLower(name))) {
		return orchestrator.Errorf(orchestrator.EINVALID, "password must not contain your email or name; choose another")
	}
	return nil
}

// HashPassword returns the argon2id hash of pw in the PHC string form, with a fresh salt.
func HashPassword(pw string) string {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads, enc.EncodeToString(salt), enc.EncodeToString(key))
}

// VerifyPassword reports whether pw matches the PHC-form hash, comparing in constant time. A hash
// that does not parse matches nothing.
func VerifyPassword(hash, pw string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var v int
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || m > 1<<20 || t == 0 || t > 16 || p == 0 {
		return false
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	want, err2 := enc.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is verified against when an email has no account (or no password), so an unknown
// email takes as long as a wrong password.
var dummyHash = sync.OnceValue(func() string { return HashPassword("not a password anyone can sign in with") })
