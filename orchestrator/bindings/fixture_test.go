package bindings_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world is a migrated, seeded database with two organisations:
// o1 → g1 (a1, a2) and g2 (a3); o2 → g9 (a9).
type world struct {
	t      testing.TB
	ctx    context.Context
	pool   *pgxpool.Pool
	store  *postgres.Store
	svc    *bindings.Service
	policy *bindings.Policy
	runs   *runs.Service
	reg    *registry.Registry
	box    *sealed.Box
	env    integrations.Set
	o1, o2 orchestrator.Org
	g1, g2 orchestrator.Guild
	g9     orchestrator.Guild
	a1, a2 orchestrator.Agent
	a3, a9 orchestrator.Agent
}

// nativeTools registers one tool per family the offer decides, plus report_issue.
func nativeTools(t testing.TB) *registry.Registry {
	reg := registry.New()
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	h := func(_ context.Context, c *registry.Call) (string, error) { return "ran " + string(c.Args), nil }
	for _, tl := range []struct{ name, family string }{
		{"note_get", orchestrator.FamilyNotes}, {"record_list", orchestrator.FamilyRecords}, {"memory_write", orchestrator.FamilyMemory},
		{"script_run", orchestrator.FamilyScripts}, {"schedule_list", orchestrator.FamilySchedules}, {"secret_store", orchestrator.FamilySecrets},
		{"secret_request", orchestrator.FamilySecrets}, {"tavily_search", orchestrator.FamilySearch}, {"group_post", orchestrator.FamilyGroup},
		{"browser_snapshot", orchestrator.FamilyBrowser}, {"shell", orchestrator.FamilyCode}, {"report_issue", orchestrator.FamilyAlways},
	} {
		if err := reg.Register(registry.Tool{Name: tl.name, Family: tl.family, Description: "Test tool " + tl.name + ".", Schema: schema, Handler: h}); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	w := &world{t: t, ctx: ctx, pool: pool, store: postgres.NewStore(pool), reg: nativeTools(t), env: integrations.Set{}}
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	w.box = box
	manifests, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	w.policy = &bindings.Policy{Store: w.store, Rules: runs.DefaultOffer{Integrations: w.env}}
	w.svc = &bindings.Service{Service: &lifecycle.Service{Store: w.store, Manifests: manifests, Box: box, Integrations: w.env},
		Store: w.store, Registry: w.reg, Policy: w.policy}
	if err := w.svc.Seed(ctx); err != nil {
		t.Fatal(err)
	}
	w.runs = &runs.Service{Scopes: w.store, Runs: w.store, Registry: w.reg, Offer: w.policy}
	now := time.Now().UTC().Truncate(time.Microsecond)
	mk := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	w.o1 = orchestrator.Org{ID: "o1", Name: "Acme", CreatedAt: now}
	w.o2 = orchestrator.Org{ID: "o2", Name: "Other", CreatedAt: now}
	mk(w.store.CreateOrg(ctx, w.o1))
	mk(w.store.CreateOrg(ctx, w.o2))
	w.g1 = orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "Builders", CreatedAt: now}
	w.g2 = orchestrator.Guild{ID: "g2", OrgID: "o1", Name: "Sellers", CreatedAt: now}
	w.g9 = orchestrator.Guild{ID: "g9", OrgID: "o2", Name: "Elsewhere", CreatedAt: now}
	for _, g := range []orchestrator.Guild{w.g1, w.g2, w.g9} {
		mk(w.store.CreateGuild(ctx, g))
	}
	agent := func(id, guild string) orchestrator.Agent {
		a := orchestrator.Agent{ID: id, GuildID: guild, Name: id, Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}
		mk(w.store.CreateAgent(ctx, a))
		got, err := w.store.GetAgent(ctx, id)
		mk(err)
		return got
	}
	w.a1, w.a2, w.a3, w.a9 = agent("a1", "g1"), agent("a2", "g1"), agent("a3", "g2"), agent("a9", "g9")
	return w
}

// connect is a token Connect that must succeed.
func (w *world) connect(server, scope, id string, creds map[string]string) orchestrator.Connection {
	w.t.Helper()
	c, err := w.svc.Connect(w.ctx, lifecycle.ConnectRequest{Server: server, Scope: scope, ScopeID: id, Credentials: creds})
	if err != nil {
		w.t.Fatalf("connect %s at %s %s: %v", server, scope, id, err)
	}
	return c
}

// put writes a binding that must succeed.
func (w *world) put(scope, id, kind, cat string, enabled bool, conn string) {
	w.t.Helper()
	if _, err := w.svc.PutBinding(w.ctx, bindings.BindingRequest{Scope: scope, ScopeID: id, CatalogKind: kind, CatalogID: cat, Enabled: &enabled, ConnectionID: conn}); err != nil {
		w.t.Fatalf("put %s %s %s at %s %s: %v", kind, cat, map[bool]string{true: "on", false: "off"}[enabled], scope, id, err)
	}
}

// count returns the number of rows of a table, to prove a refused request wrote nothing.
func (w *world) count(table string) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(w.ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// offered starts a run and returns the names it offers.
func (w *world) offered(agent, kind string) []string {
	w.t.Helper()
	run, err := w.runs.StartRun(w.ctx, agent, runs.StartRequest{Kind: kind})
	if err != nil {
		w.t.Fatalf("start %s run of %s: %v", kind, agent, err)
	}
	return names(run.OfferedTools)
}

func names(ts []orchestrator.OfferedTool) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// wantErr checks err has the code and message fragment.
func wantErr(t testing.TB, err error, code, fragment string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s with %q", code, fragment)
	}
	var e *orchestrator.Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Message, fragment) {
		t.Fatalf("got %v (code %s), want %s with %q", err, orchestrator.ErrorCode(err), code, fragment)
	}
}

var cgKey = map[string]string{"api_key": "CG-pro-key-0123456789"}

func mustJSON(v any) []byte {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
