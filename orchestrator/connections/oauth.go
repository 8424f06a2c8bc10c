package connections

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"golang.org/x/sync/singleflight"
)

// OAuthProtocol is the seam of the OAuth client: connectors/oauth implements it. Errors carry no
// token, code or verifier.
type OAuthProtocol interface {
	// Discover finds the authorization server of the MCP server at serverURL.
	Discover(ctx context.Context, serverURL string) (orchestrator.OAuthServer, error)
	// Register registers a public client for redirectURI (RFC 7591).
	Register(ctx context.Context, m orchestrator.OAuthServer, redirectURI string) (orchestrator.OAuthClient, error)
	// Authorize builds the authorization URL with a fresh state and PKCE verifier.
	Authorize(m orchestrator.OAuthServer, c orchestrator.OAuthClient) (orchestrator.OAuthAuthorization, error)
	// Exchange trades a code and its verifier for tokens.
	Exchange(ctx context.Context, m orchestrator.OAuthServer, c orchestrator.OAuthClient, code, verifier string) (orchestrator.OAuthToken, error)
	// Refresh renews tokens; an error whose OAuthErrorCode() is invalid_grant means the grant is gone.
	Refresh(ctx context.Context, m orchestrator.OAuthServer, c orchestrator.OAuthClient, refreshToken string) (orchestrator.OAuthToken, error)
}

// OAuthStore is the persistence of browser OAuth logins; postgres.Store implements it.
type OAuthStore interface {
	OAuthClientFor(ctx context.Context, server, issuer, redirectURI string) (orchestrator.OAuthClient, []byte, error)
	SaveOAuthClient(ctx context.Context, c orchestrator.OAuthClient, sealedSecret []byte) (orchestrator.OAuthClient, []byte, error)
	SaveConfiguredOAuthClient(ctx context.Context, c orchestrator.OAuthClient, sealedSecret []byte) (orchestrator.OAuthClient, []byte, error)
	BeginOAuth(ctx context.Context, w orchestrator.OAuthBegin) (orchestrator.Connection, error)
	TakeOAuthState(ctx context.Context, stateHash []byte) (orchestrator.OAuthPending, error)
	AbandonOAuth(ctx context.Context, connectionID string) (bool, error)
	CompleteOAuth(ctx context.Context, w orchestrator.OAuthComplete) (orchestrator.Connection, error)
	OAuthGrant(ctx context.Context, connectionID string) (orchestrator.OAuthGrant, error)
	RefreshOAuth(ctx context.Context, connectionID string, fn func(orchestrator.OAuthGrant) (*orchestrator.OAuthGrantUpdate, error)) error
}

// Bearer is an OAuth login's credentials as the MCP client sends them: the access token for each
// request (renewed first when it nears its end), and one renewal after the server refused it.
type Bearer interface {
	// Header returns the Authorization header for one request.
	Header(ctx context.Context) (http.Header, error)
	// Rejected renews the token the server just refused (401); nil means retry with the new one.
	Rejected(ctx context.Context) error
	// Renewed lists the access tokens sent that were not the stored one the login was read with
	// (renewed during the call): the caller redacts them, as the run's set does not hold them yet.
	Renewed() []string
}

// Refresh margins: a token is renewed before a request when less than refreshMargin of its life
// remains, or less than half of it for a token that lives under shortLived.
const (
	refreshMargin         = 60 * time.Second
	shortLived            = 2 * time.Minute
	DefaultRefreshTimeout = 15 * time.Second
)

// OAuth carries browser OAuth logins: it starts them (discovery, registration, the pending state)
// and renews their tokens, serialized per login across replicas by the connection's row lock.
// Everything lives in the database; the token cache here only remembers, per login, the expiry of
// the access token it last saw. Set its fields once.
type OAuth struct {
	Store          OAuthStore
	Box            *sealed.Box
	Protocol       OAuthProtocol
	Now            func() time.Time
	Log            *slog.Logger
	RefreshTimeout time.Duration // the token request's deadline; 0 is DefaultRefreshTimeout

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]tokenState
}

// tokenState is what a request needs to know of a login's access token.
type tokenState struct {
	access  string
	expires *time.Time
	issued  time.Time
}

func (o *OAuth) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (o *OAuth) log() *slog.Logger {
	if o.Log != nil {
		return o.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (o *OAuth) cached(id string) (tokenState, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st, ok := o.cache[id]
	return st, ok
}

// Remember keeps a login's access token as just stored (a callback's), with its expiry and the
// time it was issued, so its first request needs no read.
func (o *OAuth) Remember(id, access string, expires *time.Time, issued time.Time) {
	o.put(id, tokenState{access: access, expires: expires, issued: issued})
}

func (o *OAuth) put(id string, st tokenState) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cache == nil {
		o.cache = map[string]tokenState{}
	}
	o.cache[id] = st
}

func (o *OAuth) drop(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.cache, id)
}

// due reports whether a token must be renewed before the next request.
func (o *OAuth) due(st tokenState) bool {
	if st.expires == nil {
		return false
	}
	margin := refreshMargin
	if life := st.expires.Sub(st.issued); life < shortLived {
		margin = life / 2
	}
	return st.expires.Sub(o.now()) < margin
}

// bearer returns the Bearer of a login whose stored access token (as just read) is access.
func (o *OAuth) bearer(connectionID, access string) Bearer {
	b := &bearer{o: o, id: connectionID, stored: access}
	b.sent.Store(&access)
	return b
}

type bearer struct {
	o      *OAuth
	id     string
	stored string                 // the token the login was read with
	sent   atomic.Pointer[string] // the token the last request carried (at first, the stored one)
	mu     sync.Mutex
	fresh  []string // tokens sent that are not the stored one
}

// note records the token about to be sent.
func (b *bearer) note(tok string) {
	if old := b.sent.Swap(&tok); *old == tok || tok == b.stored {
		return
	}
	b.mu.Lock()
	b.fresh = append(b.fresh, tok)
	b.mu.Unlock()
}

// Renewed lists the tokens sent that the login was not read with.
func (b *bearer) Renewed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.fresh...)
}

// Header returns the current access token, renewed first when it is due.
func (b *bearer) Header(ctx context.Context) (http.Header, error) {
	tok, err := b.o.token(ctx, b.id, *b.sent.Load())
	if err != nil {
		return nil, err
	}
	b.note(tok)
	return http.Header{"Authorization": []string{"Bearer " + tok}}, nil
}

// Rejected renews the token the server refused, unless another request renewed it already.
func (b *bearer) Rejected(ctx context.Context) error {
	st, err := b.o.refresh(ctx, b.id, *b.sent.Load(), true)
	if err != nil {
		return err
	}
	b.note(st.access)
	return nil
}

// token returns the access token to send for a login whose stored token was seen as seen.
func (o *OAuth) token(ctx context.Context, id, seen string) (string, error) {
	st, ok := o.cached(id)
	if !ok || st.access != seen {
		g, err := o.Store.OAuthGrant(ctx, id)
		if err != nil {
			return "", fmt.Errorf("read the OAuth login %s: %w", id, err)
		}
		creds, err := openCredentials(o.Box, id, g.Sealed)
		if err != nil {
			return "", err
		}
		st = tokenState{access: creds["access_token"], expires: g.ExpiresAt, issued: g.IssuedAt}
		o.put(id, st)
	}
	if !o.due(st) {
		return st.access, nil
	}
	next, err := o.refresh(ctx, id, st.access, false)
	if err != nil {
		if st.expires.After(o.now()) && !disconnected(err) {
			o.log().Warn("OAuth: renewing a token near its end failed; sending the current one", "connection_id", id, "err", err.Error())
			return st.access, nil
		}
		return "", err
	}
	return next.access, nil
}

// errDisconnected marks a refresh that found the grant gone and disconnected the login.
type errDisconnected struct{ msg string }

func (e *errDisconnected) Error() string { return e.msg }

func disconnected(err error) bool {
	var d *errDisconnected
	return errors.As(err, &d)
}

// refresh renews the login's tokens if its stored access token is still old: under the
// connection's row lock, so one request of one replica renews and the others read its result.
// force renews even a token that is not due (the server refused it).
func (o *OAuth) refresh(ctx context.Context, id, old string, force bool) (tokenState, error) {
	key := id + "\x00" + old
	if force {
		key += "\x00force"
	}
	v, err, _ := o.flight.Do(key, func() (any, error) {
		timeout := o.RefreshTimeout
		if timeout <= 0 {
			timeout = DefaultRefreshTimeout
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		var st tokenState
		renewed := false
		err := o.Store.RefreshOAuth(ctx, id, func(g orchestrator.OAuthGrant) (*orchestrator.OAuthGrantUpdate, error) {
			creds, err := openCredentials(o.Box, id, g.Sealed)
			if err != nil {
				return nil, err
			}
			if g.Status == orchestrator.ConnDisconnected { // a pending login holding tokens (Drive before its folder) renews too
				return nil, &errDisconnected{fmt.Sprintf("the %s login %s is %s; connect it again", g.Server, id, g.Status)}
			}
			cur := tokenState{access: creds["access_token"], expires: g.ExpiresAt, issued: g.IssuedAt}
			if cur.access != old || (!force && !o.due(cur)) {
				st = cur // another request, or another replica, renewed it already
				return nil, nil
			}
			now := o.now()
			rt := creds["refresh_token"]
			if rt == "" {
				if !force {
					st = cur
					return nil, nil
				}
				return &orchestrator.OAuthGrantUpdate{Disconnect: true, Now: now}, &errDisconnected{fmt.Sprintf(
					"%s refused the access token of login %s and gave no refresh token to renew it, so the login is now disconnected; connect it again", g.Server, id)}
			}
			client, err := o.OpenClient(g.Client, g.SealedSecret)
			if err != nil {
				return nil, err
			}
			tok, err := o.Protocol.Refresh(ctx, g.Meta, client, rt)
			var coded interface{ OAuthErrorCode() string }
			if errors.As(err, &coded) && coded.OAuthErrorCode() == "invalid_grant" {
				return &orchestrator.OAuthGrantUpdate{Disconnect: true, Now: now}, &errDisconnected{fmt.Sprintf(
					"%s refused to renew login %s (invalid_grant: the grant was revoked or has expired), so the login is now disconnected; connect it again", g.Server, id)}
			}
			if err != nil {
				return nil, fmt.Errorf("renewing the %s login %s failed, so this call failed (the login stays connected; try again): %w", g.Server, id, err)
			}
			creds["access_token"], creds["refresh_token"] = tok.AccessToken, tok.RefreshToken
			plain, err := json.Marshal(creds)
			if err != nil {
				return nil, fmt.Errorf("encode the renewed tokens: %w", err)
			}
			sealedCreds := o.Box.Seal(plain, SealedFor(id))
			clear(plain)
			st, renewed = tokenState{access: tok.AccessToken, expires: tok.ExpiresAt, issued: now}, true
			return &orchestrator.OAuthGrantUpdate{Sealed: sealedCreds, ExpiresAt: tok.ExpiresAt, Now: now}, nil
		})
		if err != nil {
			o.drop(id)
			if disconnected(err) {
				o.log().Warn("OAuth login disconnected", "connection_id", id, "err", err.Error())
			}
			return tokenState{}, err
		}
		o.put(id, st)
		if renewed {
			o.log().Info("OAuth tokens renewed", "connection_id", id, "forced", force)
		}
		return st, nil
	})
	if err != nil {
		return tokenState{}, err
	}
	return v.(tokenState), nil
}

// OpenClient opens a stored client's secret (a public client has none).
func (o *OAuth) OpenClient(c orchestrator.OAuthClient, sealedSecret []byte) (orchestrator.OAuthClient, error) {
	if len(sealedSecret) == 0 {
		return c, nil
	}
	plain, err := o.Box.Open(sealedSecret, ClientSecretAD(c))
	if err != nil {
		return c, fmt.Errorf("open the OAuth client secret of %s: %w", c.Server, err)
	}
	c.ClientSecret = string(plain)
	clear(plain)
	return c, nil
}

// ClientSecretAD is the additional data a registered client's secret is sealed with.
func ClientSecretAD(c orchestrator.OAuthClient) []byte {
	return []byte("mcp_oauth_clients.client_secret:" + c.Server + "\n" + c.Issuer + "\n" + c.RedirectURI)
}

// VerifierAD is the additional data a pending login's PKCE verifier is sealed with.
func VerifierAD(stateHash []byte) []byte {
	return []byte("mcp_oauth_states.verifier:" + hex.EncodeToString(stateHash))
}

// StateHash is how a pending login's state is stored and found: its SHA-256.
func StateHash(state string) []byte {
	sum := sha256.Sum256([]byte(state))
	return sum[:]
}

// StaticBearer sends one token: the listing a callback makes before anything is stored.
type StaticBearer string

// Header sends the one token.
func (b StaticBearer) Header(context.Context) (http.Header, error) {
	return http.Header{"Authorization": []string{"Bearer " + string(b)}}, nil
}

// Rejected cannot renew: the token was just issued.
func (b StaticBearer) Rejected(context.Context) error {
	return errors.New("the server refused the access token it just issued")
}

// Renewed lists the one token, which no run's redaction set holds yet.
func (b StaticBearer) Renewed() []string { return []string{string(b)} }
