package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// PrefixConnection is the id prefix of connections.
const PrefixConnection = "conn"

// Binding scopes, walked in this order by the resolution.
const (
	ScopePlatform = "platform"
	ScopeOrg      = "org"
	ScopeGuild    = "guild"
	ScopeAgent    = "agent"
)

// Scopes lists the binding scopes from the widest to the narrowest.
var Scopes = []string{ScopePlatform, ScopeOrg, ScopeGuild, ScopeAgent}

// Catalog kinds a binding may name.
const (
	CatalogNativeTool    = "native_tool"    // a native tool of the registry, by name
	CatalogMCP           = "mcp"            // an MCP server or local adapter, by slug
	CatalogMCPTool       = "mcp_tool"       // one listed tool, by its namespaced name {slug}_{name}
	CatalogArtifactGrant = "artifact_grant" // read_guild, read_org, write_guild, write_org
)

// CatalogKinds lists the valid catalog kinds.
var CatalogKinds = []string{CatalogNativeTool, CatalogMCP, CatalogMCPTool, CatalogArtifactGrant}

// ArtifactGrants are the catalog ids of artifact_grant bindings.
var ArtifactGrants = []string{"read_guild", "read_org", "write_guild", "write_org"}

// Connection statuses.
const (
	ConnPending      = "pending"
	ConnConnected    = "connected"
	ConnDisconnected = "disconnected"
)

// Server auth kinds.
const (
	AuthNone  = "none"
	AuthToken = "token"
	AuthOAuth = "oauth"
)

// Server kinds: a remote MCP server, a local adapter calling a REST API, or the GitHub App.
const (
	ServerRemote = "remote"
	ServerLocal  = "local"
	ServerGitHub = "github"
)

// Copy sources of catalog rows: the manifest seed, an instance admin's edit, or a remote listing.
const (
	CopySeed   = "seed"
	CopyAdmin  = "admin"
	CopyListed = "listed"
)

// MCPServer is one catalog row: a remote MCP server, a local adapter, or GitHub.
type MCPServer struct {
	Slug        string        `json:"slug"`
	Name        string        `json:"name"`
	Kind        string        `json:"kind"`
	Transport   string        `json:"transport"`
	URL         string        `json:"url"`
	Auth        string        `json:"auth"`
	Config      ServerConfig  `json:"config"`
	Endpoints   Endpoints     `json:"endpoints"` // named upstream URLs besides url: the seeded value or the admin's
	Custom      bool          `json:"custom"`    // added by an instance admin, not from a manifest
	Description string        `json:"description"`
	Limitations string        `json:"limitations"`
	SetupHint   string        `json:"setup_hint"`
	SeedsTools  bool          `json:"seeds_tools"`
	Published   bool          `json:"published"`
	CopySource  string        `json:"copy_source"`
	Tools       []CatalogTool `json:"tools"`
	UpdatedAt   time.Time     `json:"updated_at"`
	// OAuthSetupState is not_applicable, dynamic, configured or unsupported (set by the service).
	OAuthSetupState string `json:"oauth_setup_state,omitempty"`
}

// ServerConfig is a server's connect configuration: the fields its token form collects and the
// rules that write new listed tools Off at the connection owner.
type ServerConfig struct {
	Fields          []CredentialField `json:"fields"`
	DefaultOff      []string          `json:"default_off,omitempty"`       // remote names listed Off on first appearance
	DefaultOffMatch string            `json:"default_off_match,omitempty"` // case-insensitive substring: names containing it are listed Off
	MaxCoins        int               `json:"max_coins,omitempty"`         // Pinned prices: how many coins a login may pin
	Header          string            `json:"header,omitempty"`            // token servers: the header carrying the key; "" is Authorization
	Scheme          string            `json:"scheme,omitempty"`            // token servers: the word before the key; "" is Bearer on Authorization, none elsewhere
	RejectEmpty     bool              `json:"reject_empty,omitempty"`      // an empty tool list means the key was rejected (OpenSea)
	RejectOnly      []string          `json:"reject_only,omitempty"`       // a list of only these remote names means the key was rejected (OpenSea)
}

// Endpoints maps the names of a server's upstream URLs to the URLs.
type Endpoints map[string]string

// PublishesListed reports whether the server's published tool copy comes from remote listings
// (Notion, Drive, Sentry, OpenSea, Etherscan, custom servers) rather than its manifest (Cigale).
func (s MCPServer) PublishesListed() bool { return s.Kind == ServerRemote && !s.SeedsTools }

// CredentialField is one field of a server's token form.
type CredentialField struct {
	Name     string `json:"name"`
	Label    string `json:"label"`
	Required bool   `json:"required"`
	Help     string `json:"help,omitempty"`
}

// IsDefaultOff reports whether a newly listed tool of this server is written Off at the owner scope.
func (c ServerConfig) IsDefaultOff(remoteName string) bool {
	for _, n := range c.DefaultOff {
		if n == remoteName {
			return true
		}
	}
	return c.DefaultOffMatch != "" && strings.Contains(strings.ToLower(remoteName), strings.ToLower(c.DefaultOffMatch))
}

// CatalogTool is one tool of the published catalog copy.
type CatalogTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	DefaultOff  bool            `json:"default_off"`
	Published   bool            `json:"published"`
	CopySource  string          `json:"copy_source"`
	Requires    string          `json:"-"` // a credential field that must be set for a connection to list it
}

// Connection is one login for one catalog server, owned at a scope. Its credentials never leave
// the orchestrator: this type does not carry them.
type Connection struct {
	ID          string          `json:"id"`
	Server      string          `json:"server"`
	Scope       string          `json:"scope"`
	ScopeID     string          `json:"scope_id"`
	OrgID       string          `json:"org_id,omitempty"`
	GuildID     string          `json:"guild_id,omitempty"`
	AgentID     string          `json:"agent_id,omitempty"`
	Status      string          `json:"status"`
	AccountHint string          `json:"account_hint"`
	Settings    json.RawMessage `json:"settings"`
	VerifiedAt  *time.Time      `json:"verified_at"`
	ListedAt    *time.Time      `json:"listed_at"`  // when the tool list was last written (the last refresh)
	ListError   string          `json:"list_error"` // what the last failed listing answered; "" after a success
	Transport   string          `json:"transport"`  // remote MCP servers: the transport that worked (streamable-http or sse)
	ToolCount   int             `json:"tool_count"`
	// DisconnectReason says why a disconnected login was disconnected by the orchestrator rather
	// than its provider ("" otherwise, and once it connects again).
	DisconnectReason string    `json:"disconnect_reason,omitempty"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
	// SkippedTools are the tools the server listed that Connect could not offer, each with why;
	// only Connect's answer carries them (a refresh's answer has its own).
	SkippedTools []SkippedTool `json:"skipped_tools,omitempty"`
}

// ListedTool is one tool listed on a connection.
type ListedTool struct {
	RemoteName    string          `json:"remote_name"`
	Name          string          `json:"name"` // {slug}_{remote_name}, dots as _
	Description   string          `json:"description"`
	InputSchema   json.RawMessage `json:"input_schema"`
	OfferedSchema json.RawMessage `json:"-"`
	DefaultOff    bool            `json:"-"` // written Off at the connection owner on first appearance
}

// Owner is the chain of the connection's owner.
func (c Connection) Owner() Chain {
	return Chain{Scope: c.Scope, OrgID: c.OrgID, GuildID: c.GuildID, AgentID: c.AgentID}
}

// Binding is one row: at this scope, this catalog item is on or off (and for mcp, through which
// login); a native_tool or mcp_tool row that is on may ask: each call waits for an operator's approval.
type Binding struct {
	Scope        string    `json:"scope"`
	ScopeID      string    `json:"scope_id"`
	CatalogKind  string    `json:"catalog_kind"`
	CatalogID    string    `json:"catalog_id"`
	Enabled      bool      `json:"enabled"`
	Ask          bool      `json:"ask,omitempty"` // Ask: on, with an operator's approval of each call
	ConnectionID string    `json:"connection_id,omitempty"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Chain is where a scope sits: its organisation, guild and agent (empty above the scope).
type Chain struct {
	Scope   string `json:"scope"`
	OrgID   string `json:"org_id,omitempty"`
	GuildID string `json:"guild_id,omitempty"`
	AgentID string `json:"agent_id,omitempty"`
}

// ID returns the id of the chain's own scope ("" for the platform).
func (c Chain) ID() string {
	switch c.Scope {
	case ScopeOrg:
		return c.OrgID
	case ScopeGuild:
		return c.GuildID
	case ScopeAgent:
		return c.AgentID
	}
	return ""
}

// Contains reports whether scope s with id is part of the chain: the platform, or the chain's own
// organisation, guild or agent.
func (c Chain) Contains(scope, id string) bool {
	switch scope {
	case ScopePlatform:
		return true
	case ScopeOrg:
		return c.OrgID != "" && c.OrgID == id
	case ScopeGuild:
		return c.GuildID != "" && c.GuildID == id
	case ScopeAgent:
		return c.AgentID != "" && c.AgentID == id
	}
	return false
}

// ChainReader places a scope by its id; postgres.Store implements it.
type ChainReader interface {
	// ScopeChain places a scope: its organisation, guild and agent. A missing one is ENOTFOUND.
	ScopeChain(ctx context.Context, scope, id string) (Chain, error)
}

// PlaceScope places a scope the API names, checking the scope and, for the platform, that no id
// is given.
func PlaceScope(ctx context.Context, r ChainReader, scope, id string) (Chain, error) {
	if !slices.Contains(Scopes, scope) {
		return Chain{}, Errorf(EINVALID, "scope must be one of %s, got %q", strings.Join(Scopes, ", "), scope)
	}
	if scope == ScopePlatform {
		if id != "" {
			return Chain{}, Errorf(EINVALID, "scope_id must be empty for the platform scope, got %q", id)
		}
		return Chain{Scope: ScopePlatform}, nil
	}
	if !ValidID(id) {
		return Chain{}, Errorf(EINVALID, "scope_id must be the id of the %s, got %q", scope, id)
	}
	return r.ScopeChain(ctx, scope, id)
}

// NamespacedTool is the name the model sees for a server's tool: {slug}_{name}, lower-cased, each
// character outside [a-z0-9_] (dots, a custom slug's hyphens) as _, and shortened by
// FitToolName when it is longer than MaxToolName.
func NamespacedTool(slug, remoteName string) string {
	b := make([]byte, 0, len(slug)+1+len(remoteName))
	for _, r := range slug + "_" + remoteName {
		switch {
		case r >= 'A' && r <= 'Z':
			b = append(b, byte(r-'A'+'a'))
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b = append(b, byte(r))
		default:
			b = append(b, '_')
		}
	}
	return FitToolName(string(b))
}

// MaxToolName is the longest tool name a model is offered (the providers' limit).
const MaxToolName = 64

// FitToolName returns name when it has at most MaxToolName bytes, else its deterministic short
// form: its first 55 bytes, "_", and the first 8 hex digits of the SHA-256 of the whole name. The
// same name always gets the same short form (bindings and a run's offer stay put across relists),
// and two names that share the first 55 bytes differ by their digests. name is ASCII [a-z0-9_].
func FitToolName(name string) string {
	if len(name) <= MaxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:MaxToolName-9] + "_" + hex.EncodeToString(sum[:4])
}

// ServerPatch is an instance admin's edit of a server's operator-facing copy and upstream URLs:
// nil fields stay. URL is raw JSON so that null (restore the seeded URL) differs from absent; an
// endpoint set to null is restored to its seeded value.
type ServerPatch struct {
	Description *string            `json:"description"`
	Limitations *string            `json:"limitations"`
	SetupHint   *string            `json:"setup_hint"`
	Published   *bool              `json:"published"`
	URL         json.RawMessage    `json:"url"`
	Endpoints   map[string]*string `json:"endpoints"`
}

// ServerMovedReason is why a server's logins are disconnected when an instance admin changes its
// URL or an endpoint: their credentials were verified against the old host only.
const ServerMovedReason = "an instance admin changed the server's URL or an endpoint; its stored credentials were verified against the old host only and are not sent to the new one: connect the login again, which verifies them there"

// CopyEdit reports whether the patch changes the operator-facing copy (which marks the row an admin edit).
func (p ServerPatch) CopyEdit() bool {
	return p.Description != nil || p.Limitations != nil || p.SetupHint != nil || p.Published != nil
}

// ToolPatch is an instance admin's edit of one published catalog tool: nil fields stay.
type ToolPatch struct {
	Description *string `json:"description"`
	Published   *bool   `json:"published"`
}

// ConnectWrite is what a successful token Connect stores, in one transaction: the connection
// (created, or a pending or disconnected one retried), its sealed credentials, its listed tools, the
// default-off overlays of new tools at the owner scope, and the enabled binding at the owner scope.
type ConnectWrite struct {
	Server      MCPServer
	Owner       Chain
	NewID       string                           // the id a new connection gets
	AccountHint string                           // shown in place of the credentials
	Settings    json.RawMessage                  // non-secret settings (pinned coins)
	Seal        func(connectionID string) []byte // seals the credentials, bound to the row's id
	Verified    bool                             // a live check accepted the credentials
	Tools       []ListedTool                     // the tools the connection lists
	Transport   string                           // remote MCP servers: the transport the listing went over
	Now         time.Time
}

// ListingWrite is a relist of a connected login: its tools replace the stored ones, new tools
// the server's rules name get an Off overlay at the owner, and a server that publishes as listed
// gets them as its published copy.
type ListingWrite struct {
	Server       MCPServer
	ConnectionID string
	Tools        []ListedTool
	Transport    string
	Now          time.Time
}

// ListingDiff is what a relist changed, by namespaced name, and the tools it could not list.
type ListingDiff struct {
	Added   []string      `json:"added"`
	Removed []string      `json:"removed"`
	Changed []string      `json:"changed"`           // description or input schema differ
	Skipped []SkippedTool `json:"skipped,omitempty"` // listed by the server but not offered, each with why
}

// SkippedTool is a tool a server listed that is not offered, and why (its schema is not one a model
// can be given, it requires task augmentation, the entry is malformed, ...).
type SkippedTool struct {
	Name   string `json:"name"` // the server's name for it
	Reason string `json:"reason"`
}

// MCPLogin is what a call of one listed tool needs, read in one round trip: the connection, its
// server (URL the admin's when set), its sealed credentials and the tool's listed input schema.
type MCPLogin struct {
	Connection Connection
	Server     MCPServer
	Sealed     []byte
	Tool       ListedTool
}

// Resolution is everything the walk needs for one chain, read in one round trip: the binding rows
// at its scopes and the connections those rows name, with their listed tools.
type Resolution struct {
	Rows        []Binding
	Connections map[string]ResolvedConnection
}

// ResolvedConnection is a connection named by a binding of the chain, with its server and tools.
type ResolvedConnection struct {
	Connection
	ServerName      string
	ServerKind      string
	ServerAuth      string
	ServerPublished bool
	Tools           []ListedTool
}

// Normalized returns the patch with copy fields trimmed of surrounding space.
func (p ServerPatch) Normalized() *ServerPatch {
	for _, f := range []**string{&p.Description, &p.Limitations, &p.SetupHint} {
		if *f != nil {
			v := strings.TrimSpace(**f)
			*f = &v
		}
	}
	return &p
}
