package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// ResourceMetadata is an RFC 9728 protected-resource metadata document, the fields used.
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// ServerMetadata is an RFC 8414 (or OpenID Connect discovery) document, the fields used.
type ServerMetadata struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	RegistrationEndpoint          string   `json:"registration_endpoint"`
	ScopesSupported               []string `json:"scopes_supported"`
	ResponseTypesSupported        []string `json:"response_types_supported"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
}

// Discover finds where a login for the MCP server at serverURL happens: the protected-resource
// metadata named by the server's 401 challenge (resource_metadata), else the well-known document
// path-suffixed and then at the origin; then its authorization server's RFC 8414 metadata, else
// OpenID Connect discovery. Scopes come from the challenge, else the resource's metadata.
func (c *Client) Discover(ctx context.Context, serverURL string) (orchestrator.OAuthServer, error) {
	var out orchestrator.OAuthServer
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return out, fmt.Errorf("%w: the server URL %q is not an http(s) URL", ErrInvalid, clip(serverURL, 200))
	}
	metaURL, scope, err := c.challenge(ctx, serverURL)
	if err != nil {
		return out, err
	}
	var places []string
	if metaURL != "" {
		if err := CheckEndpoint("resource_metadata", metaURL); err != nil {
			return out, err
		}
		places = []string{metaURL}
	} else {
		origin := u.Scheme + "://" + u.Host
		if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
			places = append(places, origin+"/.well-known/oauth-protected-resource"+p)
		}
		places = append(places, origin+"/.well-known/oauth-protected-resource")
	}
	var prm ResourceMetadata
	found := false
	for _, p := range places {
		body, ok, err := c.get(ctx, p)
		if err != nil {
			return out, fmt.Errorf("protected-resource metadata: %w", err)
		}
		if !ok {
			continue
		}
		if prm, err = ParseResourceMetadata(body); err != nil {
			return out, fmt.Errorf("protected-resource metadata at %s: %w", p, err)
		}
		found = true
		break
	}
	if !found {
		return out, fmt.Errorf("%w: the server names no protected-resource metadata (no resource_metadata in its 401 challenge, nothing at %s), so it does not say where to log in",
			ErrInvalid, strings.Join(places, " or "))
	}
	if err := sameResource(u, prm.Resource); err != nil {
		return out, err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := c.ServerMetadata(ctx, issuer)
	if err != nil {
		return out, err
	}
	out = orchestrator.OAuthServer{Resource: prm.Resource, Issuer: asm.Issuer, AuthorizationEndpoint: asm.AuthorizationEndpoint,
		TokenEndpoint: asm.TokenEndpoint, RegistrationEndpoint: asm.RegistrationEndpoint, Scopes: prm.ScopesSupported}
	if scope != "" {
		out.Scopes = strings.Fields(scope)
	}
	return out, nil
}

// challenge asks the MCP server without credentials and reads its 401's WWW-Authenticate: the
// resource_metadata URL and scope, when it names them.
func (c *Client) challenge(ctx context.Context, serverURL string) (metaURL, scope string, err error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + c.name() + `","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(body))
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.http().Do(req)
	if err != nil {
		return "", "", fmt.Errorf("ask the MCP server for its login: %w", unwrapURL(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return "", "", nil
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if m, s, ok := ParseChallenge(h); ok {
			return m, s, nil
		}
	}
	return "", "", nil
}

// sameResource checks that the metadata's resource is the server's URL or a prefix of it on the
// same origin: a document describing another resource is not this server's.
func sameResource(server *url.URL, resource string) error {
	r, err := url.Parse(resource)
	if err != nil || r.Host == "" {
		return fmt.Errorf("%w: protected-resource metadata names resource %q, which is not a URL", ErrInvalid, clip(resource, 200))
	}
	sp, rp := strings.TrimSuffix(server.Path, "/"), strings.TrimSuffix(r.Path, "/")
	if !strings.EqualFold(r.Scheme, server.Scheme) || !strings.EqualFold(r.Host, server.Host) || (rp != "" && sp != rp && !strings.HasPrefix(sp, rp+"/")) {
		return fmt.Errorf("%w: protected-resource metadata describes %s, not the server at %s", ErrInvalid, clip(resource, 200), server.Redacted())
	}
	return nil
}

// ParseResourceMetadata parses and checks a protected-resource metadata document: a resource and
// at least one authorization server, each an https (or loopback http) URL.
func ParseResourceMetadata(b []byte) (ResourceMetadata, error) {
	var m ResourceMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: not a JSON object: %v", ErrInvalid, err)
	}
	if m.Resource == "" {
		return m, fmt.Errorf("%w: no resource", ErrInvalid)
	}
	if len(m.AuthorizationServers) == 0 {
		return m, fmt.Errorf("%w: no authorization_servers", ErrInvalid)
	}
	for _, a := range m.AuthorizationServers {
		if err := CheckEndpoint("authorization server", a); err != nil {
			return m, err
		}
	}
	return m, nil
}

// ServerMetadata fetches the authorization server's metadata: RFC 8414 (path inserted after the
// well-known prefix), then OpenID Connect discovery (inserted, then appended).
func (c *Client) ServerMetadata(ctx context.Context, issuer string) (ServerMetadata, error) {
	if err := CheckEndpoint("issuer", issuer); err != nil {
		return ServerMetadata{}, err
	}
	u, _ := url.Parse(issuer)
	origin, p := u.Scheme+"://"+u.Host, strings.TrimSuffix(u.EscapedPath(), "/")
	places := []string{origin + "/.well-known/oauth-authorization-server" + p, origin + "/.well-known/openid-configuration" + p}
	if p != "" {
		places = append(places, origin+p+"/.well-known/openid-configuration")
	}
	for _, place := range places {
		body, ok, err := c.get(ctx, place)
		if err != nil {
			return ServerMetadata{}, fmt.Errorf("authorization server metadata: %w", err)
		}
		if !ok {
			continue
		}
		m, err := ParseServerMetadata(body, issuer)
		if err != nil {
			return m, fmt.Errorf("authorization server metadata at %s: %w", place, err)
		}
		return m, nil
	}
	return ServerMetadata{}, fmt.Errorf("%w: the authorization server %s publishes no metadata (nothing at %s)", ErrInvalid, issuer, strings.Join(places, ", "))
}

// ParseServerMetadata parses and checks authorization-server metadata: the issuer it was asked
// for, authorization and token endpoints, S256 PKCE when it lists methods, every endpoint https
// (or loopback http).
func ParseServerMetadata(b []byte, issuer string) (ServerMetadata, error) {
	var m ServerMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: not a JSON object: %v", ErrInvalid, err)
	}
	if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return m, fmt.Errorf("%w: it names issuer %q, not %q", ErrInvalid, clip(m.Issuer, 200), issuer)
	}
	for _, e := range []struct{ what, v string }{{"issuer", m.Issuer}, {"authorization_endpoint", m.AuthorizationEndpoint}, {"token_endpoint", m.TokenEndpoint}} {
		if e.v == "" {
			return m, fmt.Errorf("%w: no %s", ErrInvalid, e.what)
		}
		if err := CheckEndpoint(e.what, e.v); err != nil {
			return m, err
		}
	}
	if m.RegistrationEndpoint != "" {
		if err := CheckEndpoint("registration_endpoint", m.RegistrationEndpoint); err != nil {
			return m, err
		}
	}
	if len(m.CodeChallengeMethodsSupported) > 0 && !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return m, fmt.Errorf("%w: it does not support PKCE S256 (code_challenge_methods_supported is %s)", ErrInvalid, strings.Join(m.CodeChallengeMethodsSupported, ", "))
	}
	if len(m.ResponseTypesSupported) > 0 && !slices.Contains(m.ResponseTypesSupported, "code") {
		return m, fmt.Errorf("%w: it does not offer the authorization code flow", ErrInvalid)
	}
	return m, nil
}

// ParseChallenge reads a WWW-Authenticate value for a Bearer challenge and returns its
// resource_metadata and scope parameters; ok is false when the value has no Bearer challenge.
func ParseChallenge(h string) (resourceMetadata, scope string, ok bool) {
	s := h
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return "", "", false
		}
		scheme := token(s)
		if scheme == "" {
			return "", "", false
		}
		s = s[len(scheme):]
		params, rest := authParams(s)
		if strings.EqualFold(scheme, "Bearer") {
			return params["resource_metadata"], params["scope"], true
		}
		s = rest
	}
}

// authParams reads the k=v and k="quoted" parameters of one challenge and returns the rest (the
// next challenge).
func authParams(s string) (map[string]string, string) {
	out := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t,")
		k := token(s)
		if k == "" {
			return out, s
		}
		after := strings.TrimLeft(s[len(k):], " \t")
		if !strings.HasPrefix(after, "=") {
			return out, s // the next challenge's scheme
		}
		after = strings.TrimLeft(after[1:], " \t")
		var v string
		if strings.HasPrefix(after, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(after) && after[i] != '"'; i++ {
				if after[i] == '\\' && i+1 < len(after) {
					i++
				}
				b.WriteByte(after[i])
			}
			v, s = b.String(), after[min(i+1, len(after)):]
		} else {
			v = token68(after)
			s = after[len(v):]
		}
		out[strings.ToLower(k)] = v
	}
}

// token returns the RFC 7230 token at the start of s.
func token(s string) string {
	i := 0
	for i < len(s) && (isAlnum(s[i]) || strings.IndexByte("!#$%&'*+-.^_`|~", s[i]) >= 0) {
		i++
	}
	return s[:i]
}

// token68 returns an unquoted parameter value at the start of s.
func token68(s string) string {
	i := 0
	for i < len(s) && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
		i++
	}
	return s[:i]
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// IsInvalid reports whether err is a document or answer this client cannot use (as opposed to a
// server that did not answer).
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }
