package orchestrator

import "time"

// OAuthServer is what discovery learned about a protected MCP server (RFC 9728) and its
// authorization server (RFC 8414 or OpenID Connect discovery).
type OAuthServer struct {
	Resource              string   // the protected resource's identifier, sent as RFC 8707 resource
	Issuer                string   // the authorization server's issuer
	AuthorizationEndpoint string   // where the operator's browser logs in
	TokenEndpoint         string   // code exchange and refresh
	RegistrationEndpoint  string   // RFC 7591 dynamic registration; "" when the server has none
	Scopes                []string // the scopes to request, from the challenge or the metadata
}

// OAuthClient is a client registered (RFC 7591) at one authorization server for one redirect URI,
// stored with its server and reused: authorization servers rate-limit registration.
type OAuthClient struct {
	ID           int64  // the row; 0 before it is stored
	Server       string // the catalog server's slug
	Issuer       string
	RedirectURI  string
	ClientID     string
	ClientSecret string // "" for a public client (token_endpoint_auth_method none); sealed at rest
	AuthMethod   string // token_endpoint_auth_method: none, client_secret_post or client_secret_basic
	RegisteredAt time.Time
}

// OAuthToken is what a token endpoint answered.
type OAuthToken struct {
	AccessToken  string
	RefreshToken string     // "" when the server sent none (a refresh keeps the old one)
	ExpiresAt    *time.Time // nil when the server did not say
	Scope        string
	AccountHint  string // what the response says about the account (Notion's email_domain or workspace_name)
}

// OAuthAuthorization is the start of a browser login: where to send the browser, and the secrets
// its callback needs (the state and the PKCE verifier), which the caller stores.
type OAuthAuthorization struct {
	URL      string
	State    string
	Verifier string
}

// OAuthCallbackPath is where authorization servers (and the GitHub App's install and user
// authorization) send the operator's browser back; PUBLIC_BASE_URL plus it is the callback URL.
const OAuthCallbackPath = "/api/mcp/oauth/callback"

// OAuthStateTTL is how long a browser login's state is accepted by the callback.
const OAuthStateTTL = 10 * time.Minute

// OAuthBegin is the write that starts a browser login: the pending connection (created, or a pending
// or disconnected one retried in place) and its single-use state.
type OAuthBegin struct {
	Server       MCPServer
	Owner        Chain
	NewID        string // the connection id when none exists
	StateHash    []byte // SHA-256 of the state; the state itself is never stored
	SealVerifier func(connectionID string) []byte
	Client       OAuthClient // the stored client (ID set)
	Meta         OAuthServer
	Now          time.Time
}

// OAuthPending is a browser login's state as the callback takes it (once).
type OAuthPending struct {
	ConnectionID   string
	Status         string // the connection's status now ("" when it was deleted)
	Server         string
	Owner          Chain
	SealedVerifier []byte
	Client         OAuthClient // ClientSecret still sealed in SealedSecret
	SealedSecret   []byte
	Meta           OAuthServer
	CreatedAt      time.Time
	ExpiresAt      time.Time
}

// OAuthComplete is the write of a successful callback: tokens sealed, status connected, the
// listed tools and the enabled binding at the owner, in one transaction.
type OAuthComplete struct {
	ConnectionID string
	Server       MCPServer
	Owner        Chain
	Seal         func(connectionID string) []byte // the sealed credentials (access and refresh token); nil keeps the held ones
	Hold         bool                             // store the tokens and the grant only: the connection stays pending (Drive, until its folder is picked)
	Settings     []byte                           // the connection's settings (Drive's folder); nil keeps them
	ExpiresAt    *time.Time
	ClientID     int64
	Meta         OAuthServer
	AccountHint  string
	Tools        []ListedTool
	Transport    string
	Now          time.Time
}

// OAuthGrant is an OAuth login as refresh needs it: its sealed tokens, their life, and the client
// and endpoint that renew them.
type OAuthGrant struct {
	ConnectionID string
	Server       string
	Status       string
	Sealed       []byte     // the connection's sealed credentials
	ExpiresAt    *time.Time // the access token's expiry; nil: unknown
	IssuedAt     time.Time  // when the access token was stored
	Client       OAuthClient
	SealedSecret []byte
	Meta         OAuthServer // TokenEndpoint, Resource and Issuer set
}

// OAuthGrantUpdate is what a refresh writes under the connection's lock.
type OAuthGrantUpdate struct {
	Sealed     []byte // new sealed credentials; nil keeps them
	ExpiresAt  *time.Time
	Disconnect bool // the authorization server refused the grant (invalid_grant)
	Now        time.Time
}
