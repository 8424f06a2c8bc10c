package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// ConnectRequest is a token Connect: the login's credential fields for one server at one scope.
type ConnectRequest struct {
	Server      string            `json:"server"`
	Scope       string            `json:"scope"`
	ScopeID     string            `json:"scope_id"`
	Credentials map[string]string `json:"credentials"`
	AccountHint string            `json:"account_hint"`
	CallbackURL string            `json:"-"` // set by the API: where a browser OAuth login returns
	// The connectors' own settings, one embedded type per connector that takes any: their fields
	// sit beside the others in the body, and a server given another connector's is EINVALID.
	connections.PinnedPrices
}

// settings checks the connector settings of a Connect against its server and returns the
// connection's stored settings ({} for a server that takes none).
func (r ConnectRequest) settings(srv orchestrator.MCPServer) (json.RawMessage, error) {
	return checkCoins(srv, r.PinnedPrices.Coins)
}

// maxCredential bounds one credential value.
const maxCredential = 8192

// Connect stores a token login: it checks the fields against the server's token form, asks the
// server's Verifier (its local adapter, the remote server's tools/list, or Unverified for a
// connector with neither; a provider that does not answer is EUPSTREAM), seals the credentials,
// marks the connection connected, writes its listed tools and the enabled binding at the owner
// scope. A pending or disconnected login of the same server and owner is retried in place; a
// connected one is a 409.
func (s *Service) Connect(ctx context.Context, req ConnectRequest) (orchestrator.Connection, error) {
	srv, err := s.GetServer(ctx, req.Server)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if req.Scope == orchestrator.ScopePlatform {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "platform-scope Connect is reserved; connect %s at an org, guild or agent", srv.Name)
	}
	owner, err := s.chain(ctx, req.Scope, req.ScopeID)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	switch {
	case srv.Kind == orchestrator.ServerGitHub:
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s connects by installing the box's GitHub App, which this orchestrator does not offer yet; nothing was written", srv.Name)
	case s.dynamicOAuth(srv):
		l, err := s.beginOAuth(ctx, srv, req)
		return l.Connection, err
	case s.googleOAuth(srv):
		l, err := s.beginGoogle(ctx, srv, req)
		return l.Connection, err
	case srv.Auth == orchestrator.AuthOAuth:
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s connects through a browser OAuth login, which this orchestrator does not offer yet; nothing was written", srv.Name)
	case srv.Auth == orchestrator.AuthNone && srv.Kind == orchestrator.ServerRemote:
		// A remote server without auth connects with no credentials: Connect still lists its tools.
	case srv.Auth != orchestrator.AuthToken:
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s takes no login (auth %s)", srv.Name, srv.Auth)
	}
	if s.Box == nil {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s is not set, so credentials cannot be stored encrypted; set it (openssl rand -base64 32) in the environment or .env and restart", sealed.KeyVar)
	}
	creds, err := checkFields(srv, req.Credentials)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if utf8.RuneCountInString(req.AccountHint) > 200 {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "account_hint is %d characters; at most 200", utf8.RuneCountInString(req.AccountHint))
	}
	settings, err := req.settings(srv)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	manifest := s.checkedAgainst(srv)
	var v connections.Verifier = connections.Unverified{}
	switch {
	case s.Verifiers[srv.Slug] != nil:
		v = s.Verifiers[srv.Slug]
	case s.local(srv) != nil:
		v = localVerifier{s.local(srv), coinIDs(req.PinnedPrices)}
	case srv.Kind == orchestrator.ServerRemote && s.Caller != nil:
		v = s.Caller
	}
	ver, err := v.Verify(ctx, manifest, creds)
	if orchestrator.ErrorCode(err) == orchestrator.EUPSTREAM {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EUPSTREAM, "%s could not check the login, as the provider did not answer: %v; nothing was written", srv.Name, err)
	}
	if err != nil {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s refused the login: %v; nothing was written", srv.Name, err)
	}
	tools, err := listed(srv, ver.Tools)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	remote, skipped := connections.ShapeRemote(s.log(), srv, ver.Listed)
	tools = append(tools, remote...)
	plain, err := json.Marshal(creds)
	if err != nil {
		return orchestrator.Connection{}, fmt.Errorf("encode credentials: %w", err)
	}
	hint := req.AccountHint
	if ver.AccountHint != "" {
		hint = ver.AccountHint
	}
	conn, err := s.Store.Connect(ctx, orchestrator.ConnectWrite{
		Server: srv, Owner: owner, NewID: orchestrator.NewID(orchestrator.PrefixConnection), AccountHint: hint, Settings: settings,
		Seal:     func(id string) []byte { return s.Box.Seal(plain, connections.SealedFor(id)) },
		Verified: ver.Checked, Tools: tools, Transport: ver.Transport, Now: s.now(),
	})
	clear(plain)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if s.Caller != nil {
		s.Caller.Client.Forget(conn.ID) // a retried login's old session must not outlive its old credentials
	}
	s.log().Info("connection connected", "connection_id", conn.ID, "server", srv.Slug, "scope", owner.Scope, "scope_id", owner.ID(),
		"tools", len(tools), "verified", ver.Checked)
	conn.SkippedTools = append(ver.Skipped, skipped...)
	return conn, nil
}

// checkedAgainst is what a login of srv is checked against: a local adapter's manifest (the
// curated tools and what they require) at the provider as in effect (the admin's url and
// endpoints); a remote server's row as in effect (an admin's URL, a custom server).
func (s *Service) checkedAgainst(srv orchestrator.MCPServer) orchestrator.MCPServer {
	if srv.Kind != orchestrator.ServerLocal {
		return srv
	}
	manifest := srv
	for _, m := range s.Manifests {
		if m.Slug == srv.Slug {
			manifest = m
			manifest.URL, manifest.Endpoints = srv.URL, srv.Endpoints
		}
	}
	return manifest
}

// checkFields checks credentials against the server's token form: every required field present and
// not blank, no unknown field, each at most 8 KiB. Empty optional fields are dropped.
func checkFields(srv orchestrator.MCPServer, in map[string]string) (map[string]string, error) {
	known := map[string]orchestrator.CredentialField{}
	var names []string
	for _, f := range srv.Config.Fields {
		known[f.Name] = f
		names = append(names, f.Name)
	}
	var problems []string
	out := map[string]string{}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		if _, ok := known[k]; !ok {
			problems = append(problems, fmt.Sprintf("credentials.%s is not a field of %s", k, srv.Name))
			continue
		}
		if len(v) > maxCredential {
			problems = append(problems, fmt.Sprintf("credentials.%s is %d bytes; at most %d", k, len(v), maxCredential))
			continue
		}
		if strings.TrimSpace(v) != "" {
			out[k] = strings.TrimSpace(v)
		}
	}
	for _, f := range srv.Config.Fields {
		if f.Required && out[f.Name] == "" {
			problems = append(problems, fmt.Sprintf("credentials.%s (%s) is required", f.Name, f.Label))
		}
	}
	if len(problems) > 0 {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "%s; %s's fields are %s", strings.Join(problems, "; "), srv.Name, strings.Join(names, ", "))
	}
	return out, nil
}

// listed turns a verification's tools into the connection's listed tools: namespaced, shaped for
// the model, and marked default-off by the server's rules.
func listed(srv orchestrator.MCPServer, tools []orchestrator.CatalogTool) ([]orchestrator.ListedTool, error) {
	out := make([]orchestrator.ListedTool, 0, len(tools))
	for _, t := range tools {
		name := orchestrator.NamespacedTool(srv.Slug, t.Name)
		if err := catalog.CheckSchema(t.InputSchema); err != nil || !connections.ValidToolName(name) {
			return nil, fmt.Errorf("%s lists tool %q that cannot be offered (name %s, schema error %v)", srv.Name, t.Name, name, err)
		}
		shaped, err := registry.ShapeSchema(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("shape %s: %w", name, err)
		}
		out = append(out, orchestrator.ListedTool{RemoteName: t.Name, Name: name, Description: t.Description,
			InputSchema: t.InputSchema, OfferedSchema: shaped, DefaultOff: t.DefaultOff || srv.Config.IsDefaultOff(t.Name)})
	}
	return out, nil
}
