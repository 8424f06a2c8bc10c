package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/approvals"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestMain runs the tests, then (when every test ran) fails unless each documented operation
// answered at least one success and one refusal checked against openapi.json.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		if miss := unexercised(); len(miss) > 0 {
			fmt.Fprintf(os.Stderr, "openapi.json: %d operations were not checked live (send a test's request through env.do, or name the gap in notYetLive in openapi_test.go, with why):\n  %s\n", len(miss), strings.Join(miss, "\n  "))
			code = 1
		}
		if stale := staleGaps(); len(stale) > 0 {
			fmt.Fprintf(os.Stderr, "openapi.json: checked live now, so remove from notYetLive in openapi_test.go: %s\n", strings.Join(stale, ", "))
		}
	}
	pgtest.Stop()
	os.Exit(code)
}

const token = "test-operator-token-0123456789"

// leakedSecret is the value the "fetch_token" test tool adds to the run's redaction set.
const leakedSecret = "ghs_S3cretTokenValue42xyz"

// env is one API over a fresh database with the test tools registered.
type env struct {
	t     testing.TB
	app   *fiber.App
	pool  *pgxpool.Pool
	logs  *syncBuffer
	order *seqLog
	ids   *identity.Service // who is calling: the test token is the bootstrap admin token
	audit *identity.Auditor // the audit log's writer
	store *postgres.Store
	// approvals holds what calls of Ask tools wait for; a test may set its Wait before its first call.
	approvals *approvals.Service
	runs      *runs.Service   // the API's run service, for a call a test makes directly
	api       *httpapi.Server // what app serves
	url       string          // the app on a loopback listener, once a test served it (send)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// seqLog records, per run, the seq of each call as its handler runs, to check execution order.
type seqLog struct {
	mu   sync.Mutex
	seqs map[string][]int64
}

func (l *seqLog) add(run string, seq int64) {
	l.mu.Lock()
	if l.seqs == nil {
		l.seqs = map[string][]int64{}
	}
	l.seqs[run] = append(l.seqs[run], seq)
	l.mu.Unlock()
}

// testTools registers the tools the tests call: plain, flag-gated, kind-gated, integration-gated,
// always-offered, failing, panicking, and one that fetches a credential.
func testTools(t testing.TB, order *seqLog) *registry.Registry {
	r := registry.New()
	echoSchema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to echo"},"times":{"type":"integer","minimum":1,"maximum":3},"note":{"type":"string","format":"uri"}},"required":["text"],"additionalProperties":false}`)
	empty := json.RawMessage(`{"type":"object","properties":{}}`)
	tools := []registry.Tool{
		{Name: "echo", Family: orchestrator.FamilyNotes, Description: "Echo text back.", Schema: echoSchema,
			Handler: func(_ context.Context, c *registry.Call) (string, error) {
				if order != nil {
					order.add(c.RunID, c.Seq)
				}
				var a struct {
					Text  string `json:"text"`
					Times int    `json:"times"`
				}
				if err := json.Unmarshal(c.Args, &a); err != nil {
					return "", err
				}
				c.Meta["chars"] = len(a.Text)
				return strings.Repeat(a.Text, max(a.Times, 1)), nil
			}},
		{Name: "browser_snapshot", Family: orchestrator.FamilyBrowser, Description: "Page tree.", Schema: empty,
			Handler: func(context.Context, *registry.Call) (string, error) { return "tree", nil }},
		{Name: "schedule_list", Family: orchestrator.FamilySchedules, Description: "Schedules.", Schema: empty,
			Handler: func(context.Context, *registry.Call) (string, error) { return "none", nil }},
		{Name: "tavily_search", Family: orchestrator.FamilySearch, Description: "Web search.", Schema: empty,
			Handler: func(context.Context, *registry.Call) (string, error) { return "results", nil }},
		{Name: "report_issue", Family: orchestrator.FamilyAlways, Description: "File a tooling problem.", Schema: empty,
			Handler: func(context.Context, *registry.Call) (string, error) { return "filed", nil }},
		{Name: "fail", Family: orchestrator.FamilyNotes, Description: "Always fails.", Schema: empty,
			Handler: func(context.Context, *registry.Call) (string, error) { return "", errors.New("disk is full") }},
		{Name: "boom", Family: orchestrator.FamilyNotes, Description: "Panics.", Schema: empty,
			Handler: func(context.Context, *registry.Call) (string, error) { panic("index 7 out of range in frobnicator") }},
		{Name: "fetch_token", Family: orchestrator.FamilyNotes, Description: "Fetches a credential.", Schema: empty,
			Handler: func(_ context.Context, c *registry.Call) (string, error) {
				c.Secrets = append(c.Secrets, leakedSecret)
				c.Meta["token_used"] = leakedSecret
				return "got token " + leakedSecret + " ok", nil
			}},
	}
	for _, tool := range tools {
		if err := r.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// newEnv builds the API; set is which integrations' variables the offer policy and instance view
// see set; each of with completes the server before New (a part the env leaves out).
func newEnv(t testing.TB, set integrations.Set, with ...func(*httpapi.Server)) *env {
	return newEnvWith(t, set, envOptions{with: with})
}

// envOptions change what newEnvWith builds.
type envOptions struct {
	tools       []registry.Tool          // registered besides the test tools
	mcpIdle     time.Duration            // the server's MCPSessionIdle; 0: its default
	log         *syncBuffer              // the log's sink; nil: a fresh one
	registerExt func(*registry.Registry) // registers more tools (a sandbox family)
	with        []func(*httpapi.Server)  // each completes the server before New
}

// newEnvWith is newEnv with options.
func newEnvWith(t testing.TB, set integrations.Set, o envOptions) *env {
	t.Helper()
	e := &env{t: t, pool: pgtest.NewDB(t), logs: &syncBuffer{}, order: &seqLog{}}
	if o.log != nil {
		e.logs = o.log
	}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := postgres.NewStore(e.pool)
	reg := testTools(t, e.order)
	for _, tool := range o.tools {
		if err := reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	if o.registerExt != nil {
		o.registerExt(reg)
	}
	cat, policy := catalogFor(t, store, reg, set, log)
	e.store, e.ids, e.audit = store, &identity.Service{Store: store, Box: cat.Box, Bootstrap: token, Log: log}, &identity.Auditor{Store: store, Log: log}
	actx, stopAudit := context.WithCancel(context.Background())
	audited := make(chan struct{})
	go func() { defer close(audited); e.audit.Run(actx, 5*time.Second) }()
	t.Cleanup(func() { stopAudit(); <-audited })
	e.approvals = startApprovals(t, e.pool, store, log)
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: policy, MCP: cat.Caller, Log: log, Tokens: e.ids,
		Secrets: orchestrator.JoinSecrets(connections.ConnectionSecrets{Store: store, Box: cat.Box}, e.ids), Approvals: e.approvals}
	e.runs = svc
	e.api = &httpapi.Server{Scopes: store, Runs: svc, Bindings: cat, Artifacts: store, Integrations: set, Log: log,
		Identity: e.ids, Accounts: store, Places: &identity.Places{Store: store}, Audit: e.audit, Approvals: e.approvals, MCPSessionIdle: o.mcpIdle}
	for _, w := range o.with {
		w(e.api)
	}
	e.app = httpapi.New(e.api)
	return e
}

// startApprovals makes the approvals service the env's calls of Ask tools wait for, hearing the
// decisions announced through the database as serve does, until the test ends.
func startApprovals(t testing.TB, pool *pgxpool.Pool, store *postgres.Store, log *slog.Logger) *approvals.Service {
	a := &approvals.Service{Store: store, Log: log}
	ctx, stop := context.WithCancel(context.Background())
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		a.Listen(ctx, postgres.Listener{Pool: pool, Channel: postgres.ApprovalsChannel, Log: log})
	}()
	t.Cleanup(func() { a.Stop(); stop(); <-listened })
	return a
}

// do sends one request with the operator token (or the given Authorization) and decodes the answer.
func (e *env) do(method, path string, body any, auth ...string) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	var sent []byte
	switch b := body.(type) {
	case nil:
	case string:
		rd, sent = strings.NewReader(b), []byte(b)
	default:
		sent, _ = json.Marshal(b)
		rd = bytes.NewReader(sent)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	if len(auth) > 0 {
		if auth[0] != "" {
			req.Header.Set("Authorization", auth[0])
		}
	} else {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.app.Test(req, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	checkLive(e.t, req, sent, resp.StatusCode, resp.Header, raw) // every exchange agrees with openapi.json
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		e.t.Fatalf("%s %s: answer is not a JSON object: %q", method, path, raw)
	}
	return resp.StatusCode, out
}

// must is do that fails the test unless the status is want.
func (e *env) must(want int, method, path string, body any) map[string]any {
	e.t.Helper()
	st, out := e.do(method, path, body)
	if st != want {
		e.t.Fatalf("%s %s: status %d, want %d: %v", method, path, st, want, out)
	}
	return out
}

// errCode extracts error.code from an error answer.
func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func errMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// agent creates an org, a guild and an agent and returns the agent's id.
func (e *env) agent(config map[string]any) string {
	e.t.Helper()
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})
	g := e.must(201, "POST", "/api/orgs/"+org["id"].(string)+"/guilds", map[string]any{"name": "Builders"})
	body := map[string]any{"name": "Ada"}
	if config != nil {
		body["config"] = config
	}
	a := e.must(201, "POST", "/api/guilds/"+g["id"].(string)+"/agents", body)
	return a["id"].(string)
}

// run starts a run and returns its id.
func (e *env) run(agentID string, body map[string]any) string {
	e.t.Helper()
	r := e.must(201, "POST", "/api/agents/"+agentID+"/runs", body)
	return r["id"].(string)
}

// offered lists the names of a run answer's offered tools.
func offered(run map[string]any) []string {
	var names []string
	for _, t := range run["offered_tools"].([]any) {
		names = append(names, t.(map[string]any)["name"].(string))
	}
	return names
}

var _ = http.StatusOK

// guarded gives a test server the principal guard's parts: identity with the test's token as the
// bootstrap admin token, and the store's account reads and placements (none without a store).
func guarded(s *httpapi.Server, store *postgres.Store) *httpapi.Server {
	ids := &identity.Service{Bootstrap: token}
	if store != nil {
		ids.Store, s.Accounts, s.Places = store, store, store
	}
	s.Identity = ids
	return s
}
