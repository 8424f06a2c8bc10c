package orchestrator

import (
	"context"
	"time"
)

// OIDCConfig is OpenID Connect single sign-on's configuration: the provider's issuer URL and this
// box's client there (GUILDS_OIDC_ISSUER, GUILDS_OIDC_CLIENT_ID, GUILDS_OIDC_CLIENT_SECRET). The zero
// value means single sign-on is off.
type OIDCConfig struct {
	Issuer       string
	ClientID     string
	ClientSecret string
}

// Enabled reports whether single sign-on is configured.
func (c OIDCConfig) Enabled() bool { return c.Issuer != "" }

// OIDCStateTTL is how long a single sign-on waits for its callback.
const OIDCStateTTL = 10 * time.Minute

// OIDCState is a single sign-on in flight, as stored between its start and its callback (which may
// reach another replica). Neither the state nor the nonce is stored, only their SHA-256; the PKCE
// verifier is sealed.
type OIDCState struct {
	Hash        []byte // SHA-256 of the state value: the row's key
	NonceHash   []byte // SHA-256 of the nonce the ID token must carry
	Verifier    []byte // the PKCE verifier, sealed
	ReturnTo    string // the local path the browser goes to once signed in
	RedirectURI string // the callback URL the provider was given (the code exchange repeats it)
	CreatedAt   time.Time
	ExpiresAt   time.Time
	UsedAt      *time.Time // set by the one callback that took it
}

// OIDCStateStore keeps the single sign-ons in flight.
type OIDCStateStore interface {
	// PutOIDCState stores a new sign-in's state (and drops states long expired).
	PutOIDCState(ctx context.Context, st OIDCState) error
	// TakeOIDCState marks the state of the hash used and returns it with taken true, once, while it
	// has not expired at now. A state already used or expired is returned as it stands with taken
	// false; none with the hash is ENOTFOUND.
	TakeOIDCState(ctx context.Context, hash []byte, now time.Time) (st OIDCState, taken bool, err error)
}
