package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// Service carries the catalog, connection and binding operations of the API. Set its fields once.
type Service struct {
	Store     Store
	Registry  *registry.Registry
	Manifests []orchestrator.MCPServer // catalog.Load(): the seed, and the curated tool lists
	Box       *sealed.Box              // GUILDS_SECRET_KEY; nil: Connect is unavailable
	Verifiers map[string]Verifier      // per server slug; a server without one uses its local adapter (Remote.Local), Remote (remote servers) or Unverified
	Remote    *Remote                  // the MCP client's logins; nil: remote servers are not asked anything
	Policy    *Policy                  // the offer rules, for the access views
	GitHub    GitHubApp                // the box's GitHub App; nil: GitHub is not offered
	Getenv    func(string) string      // the box's configuration, for oauth_setup_state; nil: nothing set
	Now       func() time.Time
	Log       *slog.Logger
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Seed writes the manifests into the catalog (admin edits survive) and the platform seed bindings.
func (s *Service) Seed(ctx context.Context) error {
	now := s.now()
	if err := s.Store.SeedCatalog(ctx, s.Manifests, now); err != nil {
		return fmt.Errorf("seed catalog: %w", err)
	}
	if err := s.Store.SeedPlatformBindings(ctx, catalog.PlatformSeed, now); err != nil {
		return fmt.Errorf("seed platform bindings: %w", err)
	}
	return nil
}

// ListServers lists the catalog: published servers only, or every row for the admin.
func (s *Service) ListServers(ctx context.Context, all bool) ([]orchestrator.MCPServer, error) {
	servers, err := s.Store.ListServers(ctx, !all)
	for i := range servers {
		servers[i].OAuthSetupState = s.SetupState(servers[i])
	}
	return servers, err
}

// PatchServer applies an admin edit of a server's operator-facing copy, its url and its named
// endpoints (null restores the seeded value; an unknown endpoint name is EINVALID naming the known ones).
func (s *Service) PatchServer(ctx context.Context, slug string, p orchestrator.ServerPatch) (orchestrator.MCPServer, error) {
	srv, err := s.server(ctx, slug)
	if err != nil {
		return orchestrator.MCPServer{}, err
	}
	if !p.CopyEdit() && len(p.URL) == 0 && len(p.Endpoints) == 0 {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "nothing to change: send description, limitations, setup_hint, published, url or endpoints")
	}
	if len(p.URL) > 0 && string(p.URL) != "null" {
		var u string
		if err := json.Unmarshal(p.URL, &u); err != nil {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "url must be a string, or null to restore the seeded URL")
		}
		if err := catalog.CheckURL(u); err != nil {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "url: %v", err)
		}
	}
	if len(p.Endpoints) > 0 {
		seeded := s.seededEndpoints(srv)
		known := make([]string, 0, len(seeded))
		for n := range seeded {
			known = append(known, n)
		}
		sort.Strings(known)
		for name, v := range p.Endpoints {
			if _, ok := seeded[name]; !ok {
				list := "none"
				if len(known) > 0 {
					list = strings.Join(known, ", ")
				}
				return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "%s has no endpoint %q; its endpoints are %s", srv.Name, name, list)
			}
			if v != nil {
				if err := catalog.CheckURL(*v); err != nil {
					return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "endpoints.%s: %v", name, err)
				}
			}
		}
	}
	for name, v := range map[string]*string{"description": p.Description, "limitations": p.Limitations, "setup_hint": p.SetupHint} {
		if v != nil && utf8.RuneCountInString(*v) > 4000 {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "%s is %d characters; at most 4000", name, utf8.RuneCountInString(*v))
		}
	}
	if p.Description != nil && strings.TrimSpace(*p.Description) == "" {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "description must not be blank")
	}
	return s.Store.PatchServer(ctx, slug, *p.Normalized(), s.now())
}

// PatchTool applies an admin edit of one published tool's copy (description, published).
func (s *Service) PatchTool(ctx context.Context, slug, name string, p orchestrator.ToolPatch) (orchestrator.MCPServer, error) {
	srv, err := s.server(ctx, slug)
	if err != nil {
		return srv, err
	}
	found := false
	var names []string
	for _, t := range srv.Tools {
		found = found || t.Name == name
		names = append(names, t.Name)
	}
	if !found {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "%s publishes no tool %q; its tools are %s", srv.Name, name, strings.Join(names, ", "))
	}
	if p.Description == nil && p.Published == nil {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "nothing to change: send description or published")
	}
	if p.Description != nil {
		d := strings.TrimSpace(*p.Description)
		if d == "" || utf8.RuneCountInString(d) > 4000 {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "description must be 1 to 4000 characters")
		}
		p.Description = &d
	}
	return s.Store.PatchTool(ctx, slug, name, p, s.now())
}

// seededEndpoints returns the endpoints a server's manifest declares (a custom server has none).
func (s *Service) seededEndpoints(srv orchestrator.MCPServer) orchestrator.Endpoints {
	for _, m := range s.Manifests {
		if m.Slug == srv.Slug {
			return m.Endpoints
		}
	}
	return orchestrator.Endpoints{}
}

// CreateServer adds an instance admin's remote MCP server (see catalog.Custom); a slug of a
// manifest, or of a server already added, is ECONFLICT.
func (s *Service) CreateServer(ctx context.Context, req catalog.CustomRequest) (orchestrator.MCPServer, error) {
	srv, err := catalog.Custom(req)
	if err != nil {
		return srv, err
	}
	for _, m := range s.Manifests {
		if m.Slug == srv.Slug || orchestrator.NamespacedTool(m.Slug, "") == orchestrator.NamespacedTool(srv.Slug, "") {
			return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.ECONFLICT, "%q is the slug of the catalog's %s; pick another", srv.Slug, m.Name)
		}
	}
	out, err := s.Store.CreateServer(ctx, srv, s.now())
	if err != nil {
		return out, err
	}
	s.log().Info("custom MCP server added", "server", out.Slug, "auth", out.Auth)
	return out, nil
}

// server reads a catalog row, naming the known slugs when it does not exist.
func (s *Service) server(ctx context.Context, slug string) (orchestrator.MCPServer, error) {
	srv, err := s.Store.GetServer(ctx, slug)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		var slugs []string
		for _, m := range s.Manifests {
			slugs = append(slugs, m.Slug)
		}
		return srv, orchestrator.Errorf(orchestrator.ENOTFOUND, "no catalog server %q; the servers are %s (GET /api/mcp/servers)", slug, strings.Join(slugs, ", "))
	}
	return srv, err
}

// chain places a scope given by the API, checking the scope name and, for the platform, that no id is given.
func (s *Service) chain(ctx context.Context, scope, id string) (orchestrator.Chain, error) {
	if !slices.Contains(orchestrator.Scopes, scope) {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "scope must be one of %s, got %q", strings.Join(orchestrator.Scopes, ", "), scope)
	}
	if scope == orchestrator.ScopePlatform {
		if id != "" {
			return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "scope_id must be empty for the platform scope, got %q", id)
		}
		return orchestrator.Chain{Scope: orchestrator.ScopePlatform}, nil
	}
	if !orchestrator.ValidID(id) {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "scope_id must be the id of the %s, got %q", scope, id)
	}
	return s.Store.ScopeChain(ctx, scope, id)
}

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
	PinnedPrices
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
	srv, err := s.server(ctx, req.Server)
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
	var v Verifier = Unverified{}
	switch {
	case s.Verifiers[srv.Slug] != nil:
		v = s.Verifiers[srv.Slug]
	case s.local(srv) != nil:
		v = localVerifier{s.local(srv), req.PinnedPrices.ids()}
	case srv.Kind == orchestrator.ServerRemote && s.Remote != nil:
		v = s.Remote
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
	tools = append(tools, listedRemote(s.log(), srv, ver.Listed)...)
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
		Seal:     func(id string) []byte { return s.Box.Seal(plain, SealedFor(id)) },
		Verified: ver.Checked, Tools: tools, Transport: ver.Transport, Now: s.now(),
	})
	clear(plain)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if s.Remote != nil {
		s.Remote.Client.Forget(conn.ID) // a retried login's old session must not outlive its old credentials
	}
	s.log().Info("connection connected", "connection_id", conn.ID, "server", srv.Slug, "scope", owner.Scope, "scope_id", owner.ID(),
		"tools", len(tools), "verified", ver.Checked)
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

// SealedFor is the additional data a connection's credentials are sealed with: they open only on
// that row.
func SealedFor(connectionID string) []byte {
	return []byte("mcp_connections.credentials:" + connectionID)
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
		if err := catalog.CheckSchema(t.InputSchema); err != nil || !validToolName(name) {
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

var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func validToolName(n string) bool { return toolName.MatchString(n) }

// ListConnections lists the connections owned at a scope (every connection when scope is "").
func (s *Service) ListConnections(ctx context.Context, scope, id string) ([]orchestrator.Connection, error) {
	if scope == "" && id == "" {
		return s.Store.ListConnections(ctx, "", "")
	}
	c, err := s.chain(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return s.Store.ListConnections(ctx, c.Scope, c.ID())
}

// GetConnection returns a connection's metadata.
func (s *Service) GetConnection(ctx context.Context, id string) (orchestrator.Connection, error) {
	if !orchestrator.ValidID(id) {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "connection %q not found", id)
	}
	return s.Store.GetConnection(ctx, id)
}

// ConnectionTools lists the tools stored for a connection.
func (s *Service) ConnectionTools(ctx context.Context, id string) ([]orchestrator.ListedTool, error) {
	if _, err := s.GetConnection(ctx, id); err != nil {
		return nil, err
	}
	return s.Store.ListedTools(ctx, id)
}

// DeleteConnection deletes a connection and the bindings that point at it.
func (s *Service) DeleteConnection(ctx context.Context, id string) error {
	if _, err := s.GetConnection(ctx, id); err != nil {
		return err
	}
	if err := s.Store.DeleteConnection(ctx, id); err != nil {
		return err
	}
	if s.Remote != nil {
		s.Remote.Client.Forget(id)
	}
	s.log().Info("connection deleted", "connection_id", id)
	return nil
}

// RefreshConnection relists a connected login now and answers what changed; a relist that fails
// keeps the stored list and is EUPSTREAM naming what the server answered.
func (s *Service) RefreshConnection(ctx context.Context, id string) (orchestrator.ListingDiff, error) {
	conn, err := s.GetConnection(ctx, id)
	if err != nil {
		return orchestrator.ListingDiff{}, err
	}
	if conn.Status != orchestrator.ConnConnected {
		return orchestrator.ListingDiff{}, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is %s: connect it before refreshing its tools", id, conn.Status)
	}
	srv, err := s.server(ctx, conn.Server)
	if err != nil {
		return orchestrator.ListingDiff{}, err
	}
	if ad := s.local(srv); ad != nil {
		return s.refreshLocal(ctx, ad, srv, id)
	}
	if srv.Kind != orchestrator.ServerRemote || s.Remote == nil {
		return orchestrator.ListingDiff{}, orchestrator.Errorf(orchestrator.EINVALID, "%s's tools are not listed by a remote MCP server this orchestrator can reach, so there is nothing to refresh", srv.Name)
	}
	diff, err := s.Remote.Refresh(ctx, id, true)
	if err != nil {
		return orchestrator.ListingDiff{}, errUpstream(id, err)
	}
	if diff == nil {
		return orchestrator.ListingDiff{}, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is no longer connected; nothing was relisted", id)
	}
	return *diff, nil
}

// TestCall calls one listed tool of a connected login for the operator (see Remote.TestCall).
func (s *Service) TestCall(ctx context.Context, id, name string, args json.RawMessage) (TestResult, error) {
	if s.Remote == nil {
		if _, err := s.GetConnection(ctx, id); err != nil {
			return TestResult{}, err
		}
		return TestResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "this orchestrator runs without an MCP client, so a login's tools cannot be called")
	}
	return s.Remote.TestCall(ctx, id, name, args, 0)
}

// BindingRequest is the body of PUT and DELETE /api/bindings.
type BindingRequest struct {
	Scope        string `json:"scope"`
	ScopeID      string `json:"scope_id"`
	CatalogKind  string `json:"catalog_kind"`
	CatalogID    string `json:"catalog_id"`
	Enabled      *bool  `json:"enabled,omitempty"`
	ConnectionID string `json:"connection_id,omitempty"`
}

// PutBinding checks a binding against the catalog and the visibility rules, then writes it.
// Nothing is written when any check fails.
func (s *Service) PutBinding(ctx context.Context, req BindingRequest) (orchestrator.Binding, error) {
	at, err := s.checkKey(ctx, req)
	if err != nil {
		return orchestrator.Binding{}, err
	}
	if req.Enabled == nil {
		return orchestrator.Binding{}, orchestrator.Errorf(orchestrator.EINVALID, "enabled is required: true turns %s on at this scope, false turns it off", req.CatalogID)
	}
	if req.ConnectionID != "" && req.CatalogKind != orchestrator.CatalogMCP {
		return orchestrator.Binding{}, orchestrator.Errorf(orchestrator.EINVALID, "only mcp bindings carry a connection_id; a %s binding never does", req.CatalogKind)
	}
	switch req.CatalogKind {
	case orchestrator.CatalogNativeTool:
		err = s.checkNative(req.CatalogID)
	case orchestrator.CatalogArtifactGrant:
		if !slices.Contains(orchestrator.ArtifactGrants, req.CatalogID) {
			err = orchestrator.Errorf(orchestrator.ENOTFOUND, "no artifact grant %q; the grants are %s", req.CatalogID, strings.Join(orchestrator.ArtifactGrants, ", "))
		}
	case orchestrator.CatalogMCP:
		err = s.checkMCP(ctx, at, req)
	case orchestrator.CatalogMCPTool:
		err = s.checkMCPTool(ctx, at, req.CatalogID)
	}
	if err != nil {
		return orchestrator.Binding{}, err
	}
	b, err := s.Store.PutBinding(ctx, at, orchestrator.Binding{Scope: at.Scope, ScopeID: at.ID(), CatalogKind: req.CatalogKind,
		CatalogID: req.CatalogID, Enabled: *req.Enabled, ConnectionID: req.ConnectionID, UpdatedAt: s.now()})
	if err != nil {
		return b, err
	}
	s.log().Info("binding written", "scope", b.Scope, "scope_id", b.ScopeID, "kind", b.CatalogKind, "id", b.CatalogID, "enabled", b.Enabled, "connection_id", b.ConnectionID)
	return b, nil
}

// DeleteBinding removes one row; the scope then inherits.
func (s *Service) DeleteBinding(ctx context.Context, req BindingRequest) error {
	at, err := s.checkKey(ctx, req)
	if err != nil {
		return err
	}
	if req.Enabled != nil || req.ConnectionID != "" {
		return orchestrator.Errorf(orchestrator.EINVALID, "DELETE /api/bindings takes only scope, scope_id, catalog_kind and catalog_id")
	}
	return s.Store.DeleteBinding(ctx, at, req.CatalogKind, req.CatalogID)
}

// ListBindings lists the rows written at one scope.
func (s *Service) ListBindings(ctx context.Context, scope, id string) ([]orchestrator.Binding, error) {
	at, err := s.chain(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return s.Store.ListBindings(ctx, at)
}

// checkKey checks the identifying fields of a binding and places its scope.
func (s *Service) checkKey(ctx context.Context, req BindingRequest) (orchestrator.Chain, error) {
	if !slices.Contains(orchestrator.CatalogKinds, req.CatalogKind) {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "catalog_kind must be one of %s, got %q", strings.Join(orchestrator.CatalogKinds, ", "), req.CatalogKind)
	}
	if req.CatalogID == "" || len(req.CatalogID) > 200 {
		return orchestrator.Chain{}, orchestrator.Errorf(orchestrator.EINVALID, "catalog_id is required (at most 200 bytes): the tool name, server slug, namespaced tool or grant")
	}
	return s.chain(ctx, req.Scope, req.ScopeID)
}

// checkNative accepts a native tool that bindings decide: one registered in a binding family, or a
// platform-seed tool. report_issue, the browser tools and the code tools are never bindings.
func (s *Service) checkNative(name string) error {
	if t, ok := s.Registry.Get(name); ok {
		if !catalog.IsBindingFamily(t.Family) {
			return orchestrator.Errorf(orchestrator.EINVALID, "%s is not a binding: it is offered by the run's %s rules, never by a binding", name, familyWord(t.Family))
		}
		return nil
	}
	if slices.Contains(catalog.PlatformSeed, name) {
		return nil
	}
	return orchestrator.Errorf(orchestrator.ENOTFOUND, "no native tool %q that bindings decide; see GET /api/agents/{id}/tools for the tools", name)
}

func familyWord(f string) string {
	switch f {
	case orchestrator.FamilyAlways:
		return "always-offered"
	case orchestrator.FamilyBrowser:
		return "config.browser"
	case orchestrator.FamilyCode:
		return "config.coding"
	}
	return f
}

// checkMCP accepts a published server with published tools (a catalog copy or tools listed on the
// binding's connection) when enabling it; a connection_id must be a login of that server visible
// at the scope. Turning a server off, and Pinned prices (which offers State prices, not tools),
// need no tools.
func (s *Service) checkMCP(ctx context.Context, at orchestrator.Chain, req BindingRequest) error {
	srv, err := s.server(ctx, req.CatalogID)
	if err != nil {
		return err
	}
	if srv.Kind == orchestrator.ServerGitHub {
		return orchestrator.Errorf(orchestrator.EINVALID, "%s lists no tools and is not bound: a coding run reaches it through its guild's repositories", srv.Name)
	}
	if !srv.Published {
		return orchestrator.Errorf(orchestrator.EINVALID, "%s is not published in the catalog; an instance admin publishes it with PATCH /api/admin/mcp/servers/%s", srv.Name, srv.Slug)
	}
	published := 0
	for _, t := range srv.Tools {
		if t.Published {
			published++
		}
	}
	// Turning a server off needs no tools; Pinned prices offers State prices, never tools.
	if !*req.Enabled || srv.Config.MaxCoins > 0 {
		published = max(published, 1)
	}
	if req.ConnectionID == "" {
		if published == 0 {
			return orchestrator.Errorf(orchestrator.EINVALID, "%s has no published tools to offer yet; they appear once a connected login lists them", srv.Name)
		}
		return nil
	}
	conn, err := s.GetConnection(ctx, req.ConnectionID)
	if err != nil {
		return err
	}
	if conn.Server != srv.Slug {
		return orchestrator.Errorf(orchestrator.EINVALID, "connection %s is a %s login, not %s", conn.ID, conn.Server, srv.Slug)
	}
	if !Visible(ownerChain(conn), at) {
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "connection %s is owned by %s %s and cannot be bound at %s %s: a login is visible only at its owner and below it",
			conn.ID, conn.Scope, conn.ScopeID, at.Scope, at.ID())
	}
	if published == 0 && conn.ToolCount == 0 {
		return orchestrator.Errorf(orchestrator.EINVALID, "%s has no published tools and connection %s lists none yet", srv.Name, conn.ID)
	}
	return nil
}

// checkMCPTool accepts a namespaced tool listed on a connection visible at the scope.
func (s *Service) checkMCPTool(ctx context.Context, at orchestrator.Chain, name string) error {
	conns, err := s.Store.ConnectionsListing(ctx, name)
	if err != nil {
		return err
	}
	for _, c := range conns {
		if Visible(ownerChain(c), at) {
			return nil
		}
	}
	if len(conns) > 0 {
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s is listed only on logins that %s %s cannot see", name, at.Scope, at.ID())
	}
	return orchestrator.Errorf(orchestrator.ENOTFOUND, "no connection lists a tool named %s; the name is {slug}_{name} as GET /api/mcp/connections/{id}/tools shows it", name)
}

// ownerChain is the chain of a connection's owner.
func ownerChain(c orchestrator.Connection) orchestrator.Chain {
	return orchestrator.Chain{Scope: c.Scope, OrgID: c.OrgID, GuildID: c.GuildID, AgentID: c.AgentID}
}
