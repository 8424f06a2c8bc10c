// Package connections is a connection at work: its credentials opened (in memory only), its
// OAuth tokens renewed under its row's lock, its tools listed and called (remote MCP servers over
// MCPClient, local API adapters over LocalAdapters, confined Google Drive over DriveAPI), and its
// values joined to a run's redaction. The operator's side of a login (Connect, the callback,
// refresh, delete) is connections/lifecycle's; who may call what is the bindings package's.
package connections

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/pipeline"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"golang.org/x/sync/singleflight"
)

// MCPClient is the seam of the MCP client: connectors/mcp implements it over its session pool.
// Errors name the server and what it answered, never a credential.
type MCPClient interface {
	// ListTools lists the login's tools, namespaced ({slug}_{name}), with the transport that worked.
	ListTools(ctx context.Context, l RemoteLogin) (RemoteListing, error)
	// CallTool calls one listed tool (its InputSchema is the listed one) and maps the result to one
	// string; a result the server marks isError is an error whose text is the tool's.
	CallTool(ctx context.Context, l RemoteLogin, t orchestrator.ListedTool, args json.RawMessage) (string, error)
	// Changed reports whether the server sent tools/list_changed since the login's last listing.
	Changed(connectionID string) bool
	// Forget closes the login's session, if any.
	Forget(connectionID string)
}

// RemoteLogin is one login on a remote MCP server as the client needs it.
type RemoteLogin struct {
	ConnectionID string
	Server       orchestrator.MCPServer // slug, URL as in effect, config.header and config.scheme
	Transport    string                 // the transport that worked last; "" tries streamable HTTP first
	Credentials  map[string]string      // opened, in memory only; none for an auth none server
	Bearer       Bearer                 // an OAuth login's token source; nil for other logins
}

// RemoteListing is one tools/list of a login.
type RemoteListing struct {
	Tools     []orchestrator.ListedTool  // RemoteName, Name, Description and InputSchema set
	Skipped   []orchestrator.SkippedTool // what the server listed that the client does not keep, with why
	Transport string
}

// CallerStore is the persistence of Caller; postgres.Store implements it.
type CallerStore interface {
	MCPLogin(ctx context.Context, connectionID, remoteName string) (orchestrator.MCPLogin, error)
	ListedToolNamed(ctx context.Context, connectionID, name string) (orchestrator.ListedTool, error)
	ClaimRelist(ctx context.Context, id string, now, staleBefore time.Time, force bool, lease time.Duration) (bool, error)
	SaveListing(ctx context.Context, w orchestrator.ListingWrite) (orchestrator.ListingDiff, error)
	FailListing(ctx context.Context, id, answer string, retryAt time.Time) error
	SetTransport(ctx context.Context, id, transport string) error
	SetConnectionStatus(ctx context.Context, id, status string, now time.Time) (orchestrator.Connection, error)
}

// DefaultListTTL is how old a stored list may be before a run start relists it (GUILDS_MCP_LIST_TTL).
const DefaultListTTL = 10 * time.Minute

// Relist lease and back-off: a relist holds its login for relistLease; one that failed is not
// tried again by run starts for relistBackoff.
const (
	relistLease   = 45 * time.Second
	relistBackoff = time.Minute
)

// Caller calls a connection's tools: those of remote MCP servers (over Client), of local API
// adapters (Local) and of confined Google Drive logins (Drive), for runs (CallMCP) and the
// operator's Test button (TestCall). It also checks a remote token login by listing its tools
// (Verify) and relists stored lists when they are stale or the server said they changed. Set its
// fields once.
type Caller struct {
	Store  CallerStore
	Box    *sealed.Box
	Client MCPClient
	Local  LocalAdapters    // the local API adapters; nil: a local server's tools cannot be called
	OAuth  *OAuth           // browser OAuth logins; nil: OAuth servers cannot be connected or called
	Drive  DriveAPI         // Google Drive's folder confinement; nil: Drive calls go to its MCP server unconfined
	TTL    time.Duration    // how old a stored list may be at run start; 0 is DefaultListTTL
	Now    func() time.Time // the clock list ages are measured by; nil is time.Now
	Log    *slog.Logger

	flight singleflight.Group
}

var _ Verifier = (*Caller)(nil)

func (r *Caller) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (r *Caller) ttl() time.Duration {
	if r.TTL > 0 {
		return r.TTL
	}
	return DefaultListTTL
}

func (r *Caller) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

// verifyPrefix starts the pool ids of the throwaway sessions a check or a first listing opens.
const verifyPrefix = "verify_"

// ListID is the pool id of a throwaway listing session, no connection's yet: SessionOpened does
// not record its transport.
func ListID() string { return orchestrator.NewID(strings.TrimSuffix(verifyPrefix, "_")) }

// SessionOpened records the transport a login's new session went over (the pool's OnOpen); the
// sessions Verify opens are no connection's yet and are not recorded.
func (r *Caller) SessionOpened(connectionID, transport string) {
	if strings.HasPrefix(connectionID, verifyPrefix) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Store.SetTransport(ctx, connectionID, transport); err != nil {
		r.log().Warn("MCP: recording the transport of a new session failed", "connection_id", connectionID, "transport", transport, "err", err.Error())
	}
}

// Verify lists the tools of a remote login before anything is written, over a session of its own
// that is closed afterwards: a refusal, or a list the server's rules read as a refused key
// (OpenSea's empty list, or only get_instant_api_key), is the error Connect answers.
func (r *Caller) Verify(ctx context.Context, server orchestrator.MCPServer, creds map[string]string) (Verification, error) {
	l := RemoteLogin{ConnectionID: ListID(), Server: server, Credentials: creds}
	defer r.Client.Forget(l.ConnectionID)
	listing, err := r.Client.ListTools(ctx, l)
	if err != nil {
		return Verification{}, err
	}
	if err := RejectedListing(server, listing.Tools); err != nil {
		return Verification{}, err
	}
	return Verification{Checked: true, Listed: listing.Tools, Skipped: listing.Skipped, Transport: listing.Transport}, nil
}

// RejectedListing applies a server's rules that read a tool list as a refused key.
func RejectedListing(srv orchestrator.MCPServer, tools []orchestrator.ListedTool) error {
	if len(tools) == 0 && srv.Config.RejectEmpty {
		return fmt.Errorf("mcp server %q listed no tools, which means it did not accept the key", srv.Slug)
	}
	if len(srv.Config.RejectOnly) == 0 || len(tools) == 0 {
		return nil
	}
	for _, t := range tools {
		if !slices.Contains(srv.Config.RejectOnly, t.RemoteName) {
			return nil
		}
	}
	return fmt.Errorf("mcp server %q listed only %s, which means it did not accept the key", srv.Slug, strings.Join(srv.Config.RejectOnly, ", "))
}

// ListedRemote shapes a remote listing into the connection's tools: a tool whose namespaced name
// is not a valid tool name, or whose schema cannot be offered, is skipped with a log line.
func ListedRemote(log *slog.Logger, srv orchestrator.MCPServer, tools []orchestrator.ListedTool) []orchestrator.ListedTool {
	out, _ := ShapeRemote(log, srv, tools)
	return out
}

// ShapeRemote is ListedRemote naming each tool it skipped, with why.
func ShapeRemote(log *slog.Logger, srv orchestrator.MCPServer, tools []orchestrator.ListedTool) (out []orchestrator.ListedTool, skipped []orchestrator.SkippedTool) {
	out = make([]orchestrator.ListedTool, 0, len(tools))
	skip := func(t orchestrator.ListedTool, reason string) {
		log.Warn("MCP tool skipped", "server", srv.Slug, "tool", Clip(t.Name, 100), "reason", reason)
		skipped = append(skipped, orchestrator.SkippedTool{Name: Clip(t.RemoteName, 200), Reason: reason})
	}
	for _, t := range tools {
		if !ValidToolName(t.Name) {
			skip(t, fmt.Sprintf("its name %q is not a valid tool name (^[a-z][a-z0-9_]{0,63}$)", Clip(t.Name, 100)))
			continue
		}
		if err := catalog.CheckSchema(t.InputSchema); err != nil {
			skip(t, "its input schema cannot be offered: "+err.Error())
			continue
		}
		shaped, err := registry.ShapeSchema(t.InputSchema)
		if err != nil {
			skip(t, "its input schema cannot be shaped for a model: "+err.Error())
			continue
		}
		t.OfferedSchema, t.DefaultOff = shaped, srv.Config.IsDefaultOff(t.RemoteName)
		if srv.Slug == DriveSlug {
			t = driveTool(t)
			if t.OfferedSchema, err = registry.ShapeSchema(t.InputSchema); err != nil {
				skip(t, "its rewritten schema cannot be shaped for a model: "+err.Error())
				continue
			}
		}
		out = append(out, t)
	}
	return out, skipped
}

// Clip shortens s to about n bytes for a log line or a stored error, on a UTF-8 boundary.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// Login reads a connection's login: its server as in effect and its opened credentials.
func (r *Caller) Login(ctx context.Context, connectionID, remoteName string) (orchestrator.MCPLogin, RemoteLogin, error) {
	row, err := r.Store.MCPLogin(ctx, connectionID, remoteName)
	if err != nil {
		return row, RemoteLogin{}, err
	}
	creds, err := openCredentials(r.Box, connectionID, row.Sealed)
	clear(row.Sealed)
	if err != nil {
		return row, RemoteLogin{}, err
	}
	if u := row.Server.Endpoints["mcp"]; row.Server.Slug == DriveSlug && u != "" {
		row.Server.URL = u // Drive's MCP server is its named mcp endpoint
	}
	l := RemoteLogin{ConnectionID: connectionID, Server: row.Server, Transport: row.Connection.Transport, Credentials: creds}
	if row.Server.Auth == orchestrator.AuthOAuth && r.OAuth != nil {
		l.Bearer = r.OAuth.bearer(connectionID, creds["access_token"])
	}
	return row, l, nil
}

// openCredentials opens a connection's sealed credentials (none sealed: none).
func openCredentials(box *sealed.Box, connectionID string, b []byte) (map[string]string, error) {
	if len(b) == 0 {
		return map[string]string{}, nil
	}
	if box == nil {
		return nil, fmt.Errorf("connection %s holds credentials but %s is not set, so they cannot be opened", connectionID, sealed.KeyVar)
	}
	plain, err := box.Open(b, SealedFor(connectionID))
	if err != nil {
		return nil, fmt.Errorf("open the credentials of connection %s: %w", connectionID, err)
	}
	defer clear(plain)
	var creds map[string]string
	if err := json.Unmarshal(plain, &creds); err != nil {
		return nil, fmt.Errorf("credentials of connection %s do not decode", connectionID)
	}
	return creds, nil
}

// Stale reports whether a connected login's stored list must be relisted at run start: it is
// older than the TTL, or the server said its list changed.
func (r *Caller) Stale(c orchestrator.Connection) (stale, changed bool) {
	changed = r.Client.Changed(c.ID)
	return changed || c.ListedAt == nil || r.now().Sub(*c.ListedAt) >= r.ttl(), changed
}

// Refresh relists a connected login and stores the list: force relists now (the refresh route, a
// list_changed notice); otherwise only a list older than the TTL that no other orchestrator on this
// database is relisting is relisted. Concurrent callers for one login share one relist. It returns
// the diff, or nil when it did not relist. A failure keeps the stored list, records what the server
// answered on the connection and is the error.
func (r *Caller) Refresh(ctx context.Context, connectionID string, force bool) (*orchestrator.ListingDiff, error) {
	key := connectionID
	if force {
		key += "|force"
	}
	ctx = context.WithoutCancel(ctx) // shared by every waiter: the pool's own deadlines bound it
	v, err, _ := r.flight.Do(key, func() (any, error) {
		now := r.now()
		ok, err := r.Store.ClaimRelist(ctx, connectionID, now, now.Add(-r.ttl()), force, relistLease)
		if err != nil || !ok {
			return (*orchestrator.ListingDiff)(nil), err
		}
		row, login, err := r.Login(ctx, connectionID, "")
		if err != nil {
			if ferr := r.Store.FailListing(ctx, connectionID, Clip(err.Error(), 2000), now.Add(relistBackoff)); ferr != nil {
				r.log().Error("MCP relist: recording the failure failed", "connection_id", connectionID, "err", ferr.Error())
			}
			return nil, err
		}
		listing, err := r.Client.ListTools(ctx, login)
		if err == nil {
			err = RejectedListing(row.Server, listing.Tools)
		}
		if err != nil {
			if ferr := r.Store.FailListing(ctx, connectionID, Clip(err.Error(), 2000), now.Add(relistBackoff)); ferr != nil {
				r.log().Error("MCP relist: recording the failure failed", "connection_id", connectionID, "err", ferr.Error())
			}
			return nil, err
		}
		tools, skipped := ShapeRemote(r.log(), row.Server, listing.Tools)
		diff, err := r.Store.SaveListing(ctx, orchestrator.ListingWrite{Server: row.Server, ConnectionID: connectionID,
			Tools: tools, Transport: listing.Transport, Now: now})
		if err != nil {
			return nil, err
		}
		diff.Skipped = append(listing.Skipped, skipped...)
		r.log().Info("MCP tools relisted", "connection_id", connectionID, "server", row.Server.Slug, "tools", len(listing.Tools),
			"added", len(diff.Added), "removed", len(diff.Removed), "changed", len(diff.Changed), "forced", force)
		return &diff, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*orchestrator.ListingDiff), nil
}

// CallMCP calls an offered MCP tool of a run through the login the run's snapshot names.
func (r *Caller) CallMCP(ctx context.Context, run orchestrator.Run, t orchestrator.OfferedTool, args json.RawMessage) (string, error) {
	row, login, err := r.Login(ctx, t.ConnectionID, t.RemoteName)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		return "", fmt.Errorf("%s cannot be called: its login %s was deleted after the run started", t.Name, t.ConnectionID)
	}
	if err != nil {
		return "", err
	}
	if err := r.callable(row, t.Name, t.ConnectionID); err != nil {
		return "", err
	}
	if row.Tool.Name == "" {
		return "", fmt.Errorf("%s cannot be called: %s no longer lists %s (its list was refreshed after the run started)", t.Name, row.Server.Name, t.RemoteName)
	}
	if r.Serves(row.Server) {
		return r.callLocal(ctx, row, login, row.Tool, args, &run)
	}
	if r.Confined(row.Server) {
		return r.callDrive(ctx, row, login, row.Tool, args, &run)
	}
	return r.Client.CallTool(ctx, login, row.Tool, args)
}

// CheckMCPArgs checks a call's arguments against the listed schema of an offered MCP tool as a
// call would, without calling it (a call of a tool resolved Ask checks before it asks): nil, an
// *registry.ArgsError, or why the tool cannot be called now.
func (r *Caller) CheckMCPArgs(ctx context.Context, t orchestrator.OfferedTool, args json.RawMessage) error {
	row, err := r.Store.MCPLogin(ctx, t.ConnectionID, t.RemoteName)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		return fmt.Errorf("%s cannot be called: its login %s was deleted after the run started", t.Name, t.ConnectionID)
	}
	if err != nil {
		return err
	}
	clear(row.Sealed)
	if err := r.callable(row, t.Name, t.ConnectionID); err != nil {
		return err
	}
	if row.Tool.Name == "" {
		return fmt.Errorf("%s cannot be called: %s no longer lists %s (its list was refreshed after the run started)", t.Name, row.Server.Name, t.RemoteName)
	}
	_, err = checkedArgs(row.Tool, args)
	return err
}

// callable says why a login's tools cannot be called now (nil when they can).
func (r *Caller) callable(row orchestrator.MCPLogin, name, connectionID string) error {
	switch {
	case row.Server.Kind == orchestrator.ServerLocal && !r.Serves(row.Server):
		return fmt.Errorf("%s is a tool of the %s connector (login %s), whose local adapter is not built in this orchestrator yet, so it cannot be called. Use another offered tool, or call report_issue if you need this one",
			name, row.Server.Slug, connectionID)
	case row.Server.Kind != orchestrator.ServerRemote && row.Server.Kind != orchestrator.ServerLocal:
		return fmt.Errorf("%s cannot be called: %s offers no tools", name, row.Server.Name)
	case row.Connection.Status != orchestrator.ConnConnected && row.Connection.DisconnectReason != "":
		return fmt.Errorf("%s cannot be called: the %s login %s is %s: %s", name, row.Server.Name, connectionID, row.Connection.Status, row.Connection.DisconnectReason)
	case row.Connection.Status != orchestrator.ConnConnected:
		return fmt.Errorf("%s cannot be called: the %s login %s is %s; connect it again", name, row.Server.Name, connectionID, row.Connection.Status)
	}
	return nil
}

// TestResult is the answer of a test call: the mapped result, redacted against the login's
// credentials and byte-capped.
type TestResult struct {
	Result  string `json:"result"`
	IsError bool   `json:"is_error"`
}

// TestCall calls one listed tool of a connected login for the operator, by the name the model
// sees: an unknown connection or tool is ENOTFOUND, a login that is not connected ECONFLICT.
func (r *Caller) TestCall(ctx context.Context, connectionID, name string, args json.RawMessage, limit int) (TestResult, error) {
	if !orchestrator.ValidID(connectionID) {
		return TestResult{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "connection %q not found", connectionID)
	}
	row, err := r.Store.MCPLogin(ctx, connectionID, "")
	if err != nil {
		return TestResult{}, err
	}
	if row.Connection.Status != orchestrator.ConnConnected {
		return TestResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is %s: connect it before testing its tools", connectionID, row.Connection.Status)
	}
	tool, err := r.Store.ListedToolNamed(ctx, connectionID, name)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		return TestResult{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "connection %s lists no tool %q; GET /api/mcp/connections/%s/tools lists them", connectionID, name, connectionID)
	}
	if err != nil {
		return TestResult{}, err
	}
	if err := r.callable(row, name, connectionID); err != nil {
		return TestResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "%v", err)
	}
	_, login, err := r.Login(ctx, connectionID, "")
	if err != nil {
		return TestResult{}, err
	}
	var out string
	if r.Serves(row.Server) {
		out, err = r.callLocal(ctx, row, login, tool, args, nil)
	} else if r.Confined(row.Server) {
		out, err = r.callDrive(ctx, row, login, tool, args, nil)
	} else {
		out, err = r.Client.CallTool(ctx, login, tool, args)
	}
	res := TestResult{Result: out}
	if err != nil {
		res = TestResult{Result: "ERROR: " + err.Error(), IsError: true}
	}
	vals := make([]string, 0, len(login.Credentials))
	for _, v := range login.Credentials {
		vals = append(vals, v)
	}
	res.Result = capText(pipeline.NewRedactor(vals).Redact(res.Result), limit)
	return res, nil
}

// capText cuts s to at most limit bytes on a UTF-8 boundary, saying so.
func capText(s string, limit int) string {
	if limit <= 0 {
		limit = 64 << 10
	}
	if len(s) <= limit {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	note := fmt.Sprintf("\n[result cut at the %d-byte cap: %d bytes in all]", limit, len(s))
	keep := max(limit-len(note), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return strings.ToValidUTF8(s[:keep], "\uFFFD") + note
}

var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ValidToolName reports whether n can be offered as a tool name: lower-case letters, digits and _,
// at most 64, starting with a letter.
func ValidToolName(n string) bool { return toolName.MatchString(n) }
