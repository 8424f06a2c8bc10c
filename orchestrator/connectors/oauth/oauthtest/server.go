// Package oauthtest is a real OAuth 2.1 authorization server on loopback for tests: protected-
// resource and RFC 8414 metadata, RFC 7591 registration, an authorize endpoint that redirects
// with a code, a token endpoint with PKCE, refresh rotation and invalid_grant, in front of a
// protected handler (an MCP server) that takes only its live access tokens.
package oauthtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Server is the authorization server and the resource it protects, on one loopback origin.
// Set its exported knobs before the flow they change.
type Server struct {
	URL      string // the origin
	Resource string // URL + "/mcp", the protected handler's address

	mu            sync.Mutex
	ts            *httptest.Server
	clients       map[string][]string // client id → redirect URIs
	codes         map[string]code
	access        map[string]grantToken // live access tokens
	refresh       map[string]string     // live refresh token → grant
	used          map[string]string     // rotated refresh tokens → grant
	revoked       map[string]bool       // grants
	counts        map[string]int
	lastAuthorize url.Values
	lastToken     url.Values
	issued        []string // every code, token and verifier seen

	TokenTTL    time.Duration        // access token life; default an hour
	Deny        bool                 // authorize redirects with error=access_denied
	TokenStatus int                  // when set, the token endpoint answers this status (a 5xx outage)
	Extra       map[string]any       // extra fields of every token answer (email_domain, ...)
	Scopes      []string             // scopes_supported of the resource; default read, write
	Hook        func(path string)    // called on every request with its path, before it is served
	Answer      func(map[string]any) // rewrites each token answer before it is sent (a broken server)
	Now         func() time.Time
	NoChallenge bool // the resource's 401 names no resource_metadata
}

type code struct {
	client, redirect, challenge, resource string
}

type grantToken struct {
	grant   string
	expires time.Time
}

// New starts the server in front of protected (served at /mcp and below).
func New(protected http.Handler) *Server {
	s := &Server{clients: map[string][]string{}, codes: map[string]code{}, access: map[string]grantToken{}, refresh: map[string]string{},
		used: map[string]string{}, revoked: map[string]bool{}, counts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", s.resourceMetadata)
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.serverMetadata)
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	mux.Handle("/mcp", s.protect(protected))
	mux.Handle("/mcp/", s.protect(protected))
	s.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.counts[r.URL.Path]++
		hook := s.Hook
		s.mu.Unlock()
		if hook != nil {
			hook(r.URL.Path)
		}
		mux.ServeHTTP(w, r)
	}))
	s.URL = s.ts.URL
	s.Resource = s.URL + "/mcp"
	return s
}

// Close stops the server, cutting open streams first.
func (s *Server) Close() {
	s.ts.CloseClientConnections()
	s.ts.Close()
}

// Count is how many requests reached path.
func (s *Server) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// Refreshes is how many refresh_token grants reached the token endpoint.
func (s *Server) Refreshes() int { return s.Count("refresh_token") }

// LastAuthorize is the query of the last authorize request.
func (s *Server) LastAuthorize() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAuthorize
}

// LastToken is the form of the last token request.
func (s *Server) LastToken() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastToken
}

// Revoke revokes every grant: refreshes are invalid_grant and access tokens are refused.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.access {
		s.revoked[g.grant] = true
	}
	for _, g := range s.refresh {
		s.revoked[g] = true
	}
}

// ExpireAccess makes every live access token refused (as if its life ended early), leaving the
// refresh tokens valid.
func (s *Server) ExpireAccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.access = map[string]grantToken{}
}

// Set changes a knob under the server's lock.
func (s *Server) Set(f func(s *Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// Tokens returns every code, access token, refresh token and PKCE verifier the server issued or
// received, for asserting where they never appear.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func random(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// protect serves h to requests with a live access token; others get the 401 challenge.
func (s *Server) protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		g, live := s.access[tok]
		live = ok && live && !s.revoked[g.grant] && s.now().Before(g.expires)
		noChallenge := s.NoChallenge
		s.mu.Unlock()
		if !live {
			if noChallenge {
				w.Header().Set("WWW-Authenticate", `Bearer realm="fake"`)
			} else {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="fake", error="invalid_token", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s.URL))
			}
			http.Error(w, "invalid or expired access token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) resourceMetadata(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	scopes := s.Scopes
	s.mu.Unlock()
	if scopes == nil {
		scopes = []string{"read", "write"}
	}
	writeJSON(w, 200, map[string]any{"resource": s.Resource, "authorization_servers": []string{s.URL}, "scopes_supported": scopes})
}

func (s *Server) serverMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer": s.URL, "authorization_endpoint": s.URL + "/authorize", "token_endpoint": s.URL + "/token",
		"registration_endpoint": s.URL + "/register", "response_types_supported": []string{"code"},
		"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		GrantTypes   []string `json:"grant_types"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.RedirectURIs) == 0 {
		oauthError(w, 400, "invalid_client_metadata", "redirect_uris is required")
		return
	}
	if req.AuthMethod != "none" || strings.Join(req.GrantTypes, " ") != "authorization_code refresh_token" {
		oauthError(w, 400, "invalid_client_metadata", "public clients with authorization_code and refresh_token only")
		return
	}
	id := random("client-")
	s.mu.Lock()
	s.clients[id] = req.RedirectURIs
	s.mu.Unlock()
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastAuthorize = q
	uris, ok := s.clients[q.Get("client_id")]
	redirect := q.Get("redirect_uri")
	if !ok || !contains(uris, redirect) {
		http.Error(w, "unknown client or redirect_uri", 400)
		return
	}
	back, _ := url.Parse(redirect)
	out := back.Query()
	out.Set("state", q.Get("state"))
	switch {
	case s.Deny:
		out.Set("error", "access_denied")
		out.Set("error_description", "The user denied access")
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("response_type") != "code":
		out.Set("error", "invalid_request")
		out.Set("error_description", "PKCE S256 is required")
	default:
		c := random("code-")
		s.codes[c] = code{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource")}
		out.Set("code", c)
		s.issued = append(s.issued, c)
	}
	back.RawQuery = out.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		oauthError(w, 400, "invalid_request", "a form POST is required")
		return
	}
	f := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastToken = f
	s.counts[f.Get("grant_type")]++
	if s.TokenStatus != 0 {
		http.Error(w, "token service unavailable", s.TokenStatus)
		return
	}
	if _, ok := s.clients[f.Get("client_id")]; !ok {
		oauthError(w, 401, "invalid_client", "unknown client")
		return
	}
	var grant string
	switch f.Get("grant_type") {
	case "authorization_code":
		if v := f.Get("code_verifier"); v != "" {
			s.issued = append(s.issued, v)
		}
		c, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok:
			oauthError(w, 400, "invalid_grant", "unknown or used code")
			return
		case c.client != f.Get("client_id") || c.redirect != f.Get("redirect_uri"):
			oauthError(w, 400, "invalid_grant", "the code was issued to another client or redirect_uri")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			oauthError(w, 400, "invalid_grant", "PKCE verification failed")
			return
		case c.resource != f.Get("resource"):
			oauthError(w, 400, "invalid_target", "resource differs from the authorization request")
			return
		}
		grant = random("grant-")
	case "refresh_token":
		rt := f.Get("refresh_token")
		g, live := s.refresh[rt]
		if reused, ok := s.used[rt]; ok {
			s.revoked[reused] = true // reuse of a rotated token revokes the whole grant
			oauthError(w, 400, "invalid_grant", "refresh token already used")
			return
		}
		if !live || s.revoked[g] {
			oauthError(w, 400, "invalid_grant", "refresh token revoked")
			return
		}
		delete(s.refresh, rt)
		s.used[rt] = g
		grant = g
	default:
		oauthError(w, 400, "unsupported_grant_type", f.Get("grant_type"))
		return
	}
	ttl := s.TokenTTL
	if ttl == 0 {
		ttl = time.Hour
	}
	access, refresh := random("at-"), random("rt-")
	s.access[access] = grantToken{grant: grant, expires: s.now().Add(ttl)}
	s.refresh[refresh] = grant
	s.issued = append(s.issued, access, refresh)
	out := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(ttl / time.Second), "refresh_token": refresh}
	for k, v := range s.Extra {
		out[k] = v
	}
	if s.Answer != nil {
		s.Answer(out)
	}
	writeJSON(w, 200, out)
}
