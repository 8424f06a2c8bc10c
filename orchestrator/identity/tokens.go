package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// Token type prefixes: a leaked value says what it is, and secret scanners can match it.
const (
	PrefixPAT        = "gld_pat_"   // an account's API token
	PrefixAgentKey   = "gld_agent_" // a model runtime's key for one agent
	PrefixRunToken   = "gld_run_"   // one run's token
	PrefixSession    = "gld_ses_"   // a sign-in session (the cookie's value)
	PrefixInvitation = "gld_inv_"   // an invitation's single-use token
)

// secretLen is the random part of a token: 32 characters of 5 bits, 160 bits.
const secretLen = 32

// shownLen is how much of a token its listing shows after the type prefix.
const shownLen = 6

// alphabet is lowercase base32 (as ids use): no padding, easy to read and copy.
const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// Minted is a new token: its value (shown once), the hash that finds it, and the prefix listings show.
type Minted struct {
	Value  string
	Hash   []byte
	Prefix string
}

// Mint returns a new token of the type prefix.
func Mint(typePrefix string) Minted {
	var b [secretLen]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the runtime guarantees it never does
	}
	out := make([]byte, 0, len(typePrefix)+secretLen)
	out = append(out, typePrefix...)
	for _, c := range b {
		out = append(out, alphabet[c&31])
	}
	v := string(out)
	return Minted{Value: v, Hash: Hash(v), Prefix: v[:len(typePrefix)+shownLen]}
}

// Hash is the SHA-256 a token is stored and found by (tokens carry 160 random bits: a fast hash
// is safe, and a lookup is one index probe, never a scan).
func Hash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// KindOf parses a presented token: the credential kind its type prefix names, or an error saying
// what is wrong with it, which never repeats the token.
func KindOf(token string) (string, error) {
	var kind, rest string
	for _, p := range []struct{ prefix, kind string }{
		{PrefixPAT, orchestrator.CredentialToken},
		{PrefixAgentKey, orchestrator.CredentialAgentKey},
		{PrefixRunToken, orchestrator.CredentialRunToken},
		{PrefixSession, orchestrator.CredentialSession},
	} {
		if r, ok := strings.CutPrefix(token, p.prefix); ok {
			kind, rest = p.kind, r
			break
		}
	}
	if kind == "" {
		return "", orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "unknown token type: a token starts with %s (API token), %s (agent key) or %s (run token), or is the bootstrap GUILDS_ADMIN_TOKEN", PrefixPAT, PrefixAgentKey, PrefixRunToken)
	}
	if len(rest) != secretLen || strings.Trim(rest, alphabet) != "" {
		return "", orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "malformed %s: want its prefix and %d lowercase letters and digits; copy the whole token", kindName(kind), secretLen)
	}
	return kind, nil
}

// kindName is how messages name a credential kind.
func kindName(kind string) string {
	switch kind {
	case orchestrator.CredentialToken:
		return "API token"
	case orchestrator.CredentialAgentKey:
		return "agent key"
	case orchestrator.CredentialRunToken:
		return "run token"
	case orchestrator.CredentialSession:
		return "session"
	case orchestrator.CredentialBootstrap:
		return "bootstrap token"
	}
	return "credential"
}

// ParseBearer reads an Authorization header's value: "Bearer <token>" (the scheme in any case).
// A header without a token, or with another scheme, is an error naming the form to use.
func ParseBearer(header string) (string, error) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", orchestrator.Errorf(orchestrator.EUNAUTHORIZED, "malformed Authorization header: send Authorization: Bearer <token>")
	}
	return token, nil
}
