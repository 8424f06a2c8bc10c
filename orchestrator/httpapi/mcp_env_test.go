package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/connectors/mcp"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/jackc/pgx/v5/pgxpool"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcpFake is a real MCP server (mcp-go's own, stateful streamable HTTP) on loopback behind a
// middleware that demands a credential header and counts the JSON-RPC methods it receives.
type mcpFake struct {
	MCP *server.MCPServer
	URL string

	mu         sync.Mutex
	header     string // "" demands nothing
	value      string
	counts     map[string]int
	authFailed atomic.Int64
}

// newMCPFake starts a fake with the tools named (each echoes its required text argument); the
// tool "whoami" answers with the credential header it was sent and "broken" reports isError.
func newMCPFake(t testing.TB, header, value string, tools ...string) *mcpFake {
	t.Helper()
	return startFake(t, false, header, value, tools)
}

// newSSEFake is newMCPFake speaking only the older HTTP+SSE transport (a GET stream at /mcp and
// POSTs to /message); a streamable HTTP initialize POST to /mcp gets 405.
func newSSEFake(t testing.TB, header, value string, tools ...string) *mcpFake {
	t.Helper()
	return startFake(t, true, header, value, tools)
}

func startFake(t testing.TB, sse bool, header, value string, tools []string) *mcpFake {
	f := &mcpFake{header: header, value: value, counts: map[string]int{}}
	f.MCP = server.NewMCPServer("fake", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	for _, name := range tools {
		f.AddTool(name)
	}
	var h http.Handler = server.NewStreamableHTTPServer(f.MCP, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	var sseServer *server.SSEServer
	if sse {
		sseServer = server.NewSSEServer(f.MCP, server.WithSSEEndpoint("/mcp"), server.WithMessageEndpoint("/message"))
		h = sseServer
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		f.mu.Lock()
		f.counts[msg.Method]++
		header, value := f.header, f.value
		f.mu.Unlock()
		if header != "" && r.Header.Get(header) != value {
			f.authFailed.Add(1)
			http.Error(w, "invalid API key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	ts.Start()
	if sseServer != nil {
		server.WithBaseURL(ts.URL)(sseServer)
	}
	// A pooled session keeps its GET stream open: cut the connections, then close.
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	f.URL = ts.URL + "/mcp"
	return f
}

// AddTool adds one tool (servers send tools/list_changed to open sessions).
func (f *mcpFake) AddTool(name string) {
	tool := mcpgo.NewTool(name, mcpgo.WithDescription("The "+name+" tool."), mcpgo.WithString("text", mcpgo.Required(), mcpgo.Description("what to send")),
		mcpgo.WithString("mode", mcpgo.Description("optional")))
	f.MCP.AddTool(tool, func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		switch name {
		case "whoami":
			return mcpgo.NewToolResultText("you sent " + req.Header.Get(f.headerName())), nil
		case "broken":
			return mcpgo.NewToolResultError("upstream quota exhausted"), nil
		}
		return mcpgo.NewToolResultText(name + ": " + req.GetString("text", "") + " mode=" + req.GetString("mode", "unset")), nil
	})
}

func (f *mcpFake) headerName() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.header
}

// setAuth changes the credential the fake demands.
func (f *mcpFake) setAuth(header, value string) {
	f.mu.Lock()
	f.header, f.value = header, value
	f.mu.Unlock()
}

// count is how many requests of a JSON-RPC method the fake received.
func (f *mcpFake) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[method]
}

// clock is an injected clock the tests move by hand.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// mcpEnv is the API wired the way serve wires it (one MCP pool, the Remote behind Connect, run
// starts and calls) over a database and an injected clock.
type mcpEnv struct {
	*env
	mcp    *mcp.Pool
	remote *connections.Caller
	svc    *bindings.Service
	runs   *runs.Service
	clock  *clock
}

// newMCPEnv builds the API over db (a fresh one when nil) and a clock (a new one when nil).
func newMCPEnv(t testing.TB, db *pgxpool.Pool, clk *clock, box *sealed.Box) *mcpEnv {
	t.Helper()
	return newMCPEnvWith(t, db, clk, box, mcp.Config{})
}

// newMCPEnvWith is newMCPEnv with the pool's limits and timeouts from cfg (its logger and OnOpen
// are the env's own).
func newMCPEnvWith(t testing.TB, db *pgxpool.Pool, clk *clock, box *sealed.Box, cfg mcp.Config) *mcpEnv {
	t.Helper()
	if db == nil {
		db = pgtest.NewDB(t)
	}
	if clk == nil {
		clk = newClock()
	}
	e := &env{t: t, pool: db, logs: &syncBuffer{}, order: &seqLog{}}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := postgres.NewStore(db)
	reg := testTools(t, e.order)
	manifests, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	var remote *connections.Caller
	cfg.Logger, cfg.OnOpen = log, func(id string, tr mcp.Transport) { remote.SessionOpened(id, string(tr)) }
	pool := mcp.New(cfg)
	t.Cleanup(func() { pool.Close() })
	remote = &connections.Caller{Store: store, Box: box, Client: mcp.Client{Pool: pool}, Now: clk.Now, Log: log}
	policy := &bindings.Policy{Store: store, Caller: remote, Log: log}
	svc := &bindings.Service{Service: &lifecycle.Service{Store: store, Manifests: manifests, Box: box, Caller: remote, Now: clk.Now, Log: log},
		Store: store, Registry: reg, Policy: policy, Now: clk.Now, Log: log}
	if err := svc.Seed(context.Background()); err != nil {
		t.Fatal(err)
	}
	var names []string // the test tools of binding families are on at the platform, as seed tools are
	for _, tool := range reg.List() {
		if catalog.IsBindingFamily(tool.Family) {
			names = append(names, tool.Name)
		}
	}
	if err := store.SeedPlatformBindings(context.Background(), names, clk.Now()); err != nil {
		t.Fatal(err)
	}
	e.approvals = startApprovals(t, db, store, log)
	rs := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: policy, MCP: remote, Log: log,
		Secrets: connections.ConnectionSecrets{Store: store, Box: box}, Approvals: e.approvals}
	e.runs = rs
	e.app = httpapi.New(guarded(&httpapi.Server{Scopes: store, Runs: rs, Bindings: svc, Artifacts: store, Log: log, Approvals: e.approvals}, store))
	return &mcpEnv{env: e, mcp: pool, remote: remote, svc: svc, runs: rs, clock: clk}
}

// newBox returns a sealing box over a generated key.
func newBox(t testing.TB) *sealed.Box {
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// scopes creates an org, a guild and an agent, returning their ids.
func (e *mcpEnv) scopes() (org, guild, agent string) {
	e.t.Helper()
	o := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})
	g := e.must(201, "POST", "/api/orgs/"+o["id"].(string)+"/guilds", map[string]any{"name": "Builders"})
	a := e.must(201, "POST", "/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": "Ada"})
	return o["id"].(string), g["id"].(string), a["id"].(string)
}

// count runs a counting query.
func (e *mcpEnv) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.env.pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
