package github_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/connectors/github/githubtest"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world: a migrated, seeded database (o1 → g1 → a1, a2), the fake GitHub and the App over it,
// with local sandboxes.
type world struct {
	t     testing.TB
	ctx   context.Context
	pool  *pgxpool.Pool
	store *postgres.Store
	fake  *githubtest.Fake
	svc   *github.Service
	boxes *sandbox.Local
	a1    orchestrator.Agent
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	store := postgres.NewStore(pool)
	manifests, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	if err := (&bindings.Service{Service: &lifecycle.Service{Store: store, Manifests: manifests}, Store: store, Registry: registry.New()}).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.CreateOrg(ctx, orchestrator.Org{ID: "o1", Name: "Acme", CreatedAt: now}))
	must(store.CreateGuild(ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "Builders", CreatedAt: now}))
	for _, id := range []string{"a1", "a2"} {
		must(store.CreateAgent(ctx, orchestrator.Agent{ID: id, GuildID: "g1", Name: id, Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}))
	}
	a1, err := store.GetAgent(ctx, "a1")
	must(err)
	f := githubtest.New(t)
	f.Callback = "http://127.0.0.1:1/api/mcp/oauth/callback"
	cfg := github.FromEnv(envOf(f.Env()))
	boxes := &sandbox.Local{Root: t.TempDir(), BinDir: t.TempDir()}
	svc := &github.Service{Config: cfg, Client: &github.Client{Config: cfg, Backoff: time.Millisecond}, Store: store, Box: box,
		PublicURL: "http://127.0.0.1:1", Sandboxes: boxes}
	return &world{t: t, ctx: ctx, pool: pool, store: store, fake: f, svc: svc, boxes: boxes, a1: a1}
}

// state reads the state out of an authorization URL.
func state(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Query().Get("state") == "" {
		t.Fatalf("no state in %q", raw)
	}
	return u.Query().Get("state")
}

// connect runs Connect and the install callback for user, who reaches installation inst.
func (w *world) connect(owner orchestrator.Chain, user string, inst int64) orchestrator.Connection {
	w.t.Helper()
	b, err := w.svc.Begin(w.ctx, owner)
	if err != nil {
		w.t.Fatal(err)
	}
	res, err := w.svc.HandleCallback(w.ctx, github.CallbackInput{State: state(w.t, b.AuthorizationURL), Code: w.fake.Code(user), InstallationID: itoa(inst), SetupAction: "install"})
	if err != nil || res.Connection == nil || res.Connection.Status != orchestrator.ConnConnected {
		w.t.Fatalf("callback: %+v %v", res, err)
	}
	return *res.Connection
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func (w *world) count(q string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(w.ctx, q, args...).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

var org = orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: "o1"}
var guild = orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: "o1", GuildID: "g1"}

// TestConnectFlows: install then authorize, the setup redirect, the picker, an approval request,
// and every refusal (forged or replayed state, an id that is not a number or not the user's).
func TestConnectFlows(t *testing.T) {
	w := newWorld(t)
	w.fake.AddInstall(7, "acme")
	w.fake.AddInstall(8, "other")
	w.fake.LoginAs("octo", 7)

	// No login yet: the install URL.
	b, err := w.svc.Begin(w.ctx, org)
	if err != nil || !strings.HasPrefix(b.AuthorizationURL, w.fake.WebURL()+"/apps/guilds-test/installations/new?state=") || b.Connection.Status != orchestrator.ConnPending {
		t.Fatalf("begin %+v %v", b, err)
	}
	st := state(t, b.AuthorizationURL)
	// The setup redirect without a code starts user authorization with the same state.
	res, err := w.svc.HandleCallback(w.ctx, github.CallbackInput{State: st, InstallationID: "7", SetupAction: "install"})
	if err != nil || !strings.HasPrefix(res.Redirect, w.fake.WebURL()+"/login/oauth/authorize?") || state(t, res.Redirect) != st {
		t.Fatalf("setup redirect %+v %v", res, err)
	}
	// An id the user cannot reach is refused, and the new pending connection is deleted.
	_, err = w.svc.HandleCallback(w.ctx, github.CallbackInput{State: st, Code: w.fake.Code("octo"), InstallationID: "8"})
	if orchestrator.ErrorCode(err) != orchestrator.EFORBIDDEN || !strings.Contains(err.Error(), "installation 8") {
		t.Fatalf("unreachable installation: %v", err)
	}
	if n := w.count(`SELECT count(*) FROM mcp_connections WHERE server_slug = 'github'`); n != 0 {
		t.Fatalf("%d github connections after a refusal", n)
	}

	for _, tc := range []struct {
		name string
		in   func(st string) github.CallbackInput
		code string
		frag string
	}{
		{"forged state", func(string) github.CallbackInput {
			return github.CallbackInput{State: "forged", Code: w.fake.Code("octo")}
		}, orchestrator.EINVALID, "forged or replayed"},
		{"installation id not a number", func(st string) github.CallbackInput {
			return github.CallbackInput{State: st, Code: w.fake.Code("octo"), InstallationID: "7; DROP TABLE"}
		}, orchestrator.EINVALID, "is not a number"},
		{"bad code", func(st string) github.CallbackInput { return github.CallbackInput{State: st, Code: "nope"} }, orchestrator.EINVALID, "refused the login code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := w.svc.Begin(w.ctx, org)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.svc.HandleCallback(w.ctx, tc.in(state(t, b.AuthorizationURL)))
			if orchestrator.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.frag) {
				t.Fatalf("got %v, want %s %q", err, tc.code, tc.frag)
			}
		})
	}
	w.pool.Exec(w.ctx, `DELETE FROM mcp_connections WHERE server_slug = 'github'`)

	// An approval request leaves the login pending with a page saying so.
	b, _ = w.svc.Begin(w.ctx, org)
	res, err = w.svc.HandleCallback(w.ctx, github.CallbackInput{State: state(t, b.AuthorizationURL), SetupAction: "request"})
	if err != nil || !strings.Contains(res.Page, "approval") || !strings.Contains(res.Page, "Connect GitHub again") {
		t.Fatalf("request %+v %v", res, err)
	}
	// The state is found through the cookie when GitHub drops it; the only installation is taken.
	conn := func() orchestrator.Connection {
		res, err := w.svc.HandleCallback(w.ctx, github.CallbackInput{Cookie: state(t, b.AuthorizationURL), Code: w.fake.Code("octo")})
		if err != nil || res.Connection == nil {
			t.Fatalf("cookie callback %+v %v", res, err)
		}
		return *res.Connection
	}()
	if conn.Status != orchestrator.ConnConnected || conn.AccountHint != "acme" || conn.ToolCount != 0 {
		t.Fatalf("connected %+v", conn)
	}
	if n := w.count(`SELECT count(*) FROM bindings WHERE catalog_id = 'github' AND enabled AND connection_id = $1 AND scope = 'org'`, conn.ID); n != 1 {
		t.Fatalf("enabled binding rows %d", n)
	}
	// Replayed: the state was used.
	_, err = w.svc.HandleCallback(w.ctx, github.CallbackInput{State: state(t, b.AuthorizationURL), Code: w.fake.Code("octo")})
	if orchestrator.ErrorCode(err) != orchestrator.EINVALID {
		t.Fatalf("replay: %v", err)
	}

	// The organisation has a login now: a guild's Connect goes to user authorization, and a user
	// reaching two installations gets the picker.
	w.fake.LoginAs("octo", 7, 8)
	b, err = w.svc.Begin(w.ctx, guild)
	if err != nil || !strings.HasPrefix(b.AuthorizationURL, w.fake.WebURL()+"/login/oauth/authorize?") {
		t.Fatalf("second begin %+v %v", b, err)
	}
	st = state(t, b.AuthorizationURL)
	res, err = w.svc.HandleCallback(w.ctx, github.CallbackInput{State: st, Code: w.fake.Code("octo")})
	if err != nil || len(res.Picker) != 2 || res.Connection != nil {
		t.Fatalf("picker %+v %v", res, err)
	}
	list, err := w.svc.Picker(w.ctx, st)
	if err != nil || len(list) != 2 {
		t.Fatalf("picker list %+v %v", list, err)
	}
	if _, err := w.svc.Pick(w.ctx, st, 99); orchestrator.ErrorCode(err) != orchestrator.EINVALID {
		t.Fatalf("pick 99: %v", err)
	}
	gc, err := w.svc.Pick(w.ctx, st, 8)
	if err != nil || gc.AccountHint != "other" || gc.Scope != orchestrator.ScopeGuild {
		t.Fatalf("pick %+v %v", gc, err)
	}
	if _, err := w.svc.Picker(w.ctx, st); err == nil {
		t.Fatal("the picker outlived its state")
	}
	// A connected login at the same owner is a 409.
	if _, err := w.svc.Begin(w.ctx, guild); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT {
		t.Fatalf("begin over a connected login: %v", err)
	}
}

// TestNotSetUp: without the App, Begin is EINVALID with setup_state unsupported naming the variables.
func TestNotSetUp(t *testing.T) {
	w := newWorld(t)
	env := w.fake.Env()
	delete(env, github.EnvClientSecret)
	delete(env, github.EnvSlug)
	w.svc.Config = github.FromEnv(envOf(env))
	_, err := w.svc.Begin(w.ctx, org)
	if orchestrator.ErrorCode(err) != orchestrator.EINVALID || !strings.Contains(err.Error(), "setup_state: unsupported") ||
		!strings.Contains(err.Error(), "GITHUB_APP_SLUG, GITHUB_APP_CLIENT_SECRET") {
		t.Fatalf("not set up: %v", err)
	}
	if n := w.count(`SELECT count(*) FROM mcp_connections`); n != 0 {
		t.Fatalf("%d connections written", n)
	}
}

// readTokens reads the agent's token file from its local sandbox.
func (w *world) readTokens(agent string) map[string]string {
	w.t.Helper()
	raw, err := os.ReadFile(filepath.Join(w.boxes.Root, agent, "run", github.TokenFile))
	if err != nil {
		w.t.Fatal(err)
	}
	var f struct {
		Tokens []struct{ Host, Repository, Token, Expires_at string }
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, t := range f.Tokens {
		if t.Host != w.svc.Config.GitHost() {
			w.t.Fatalf("token host %q, want %q", t.Host, w.svc.Config.GitHost())
		}
		out[t.Repository] = t.Token
	}
	return out
}

// TestTokens: the selection (checked, mirrored into the guild), scoped tokens at generation start
// into the token file, renames, refresh before a shell call, rate limits, and removal.
func TestTokens(t *testing.T) {
	w := newWorld(t)
	for _, r := range []githubtest.Repo{{ID: 11, Owner: "acme", Name: "api"}, {ID: 12, Owner: "acme", Name: "web"}, {ID: 13, Owner: "acme", Name: "secret"}} {
		w.fake.AddRepo(r)
	}
	w.fake.AddInstall(7, "acme", 11, 12, 13)
	w.fake.LoginAs("octo", 7)
	conn := w.connect(guild, "octo", 7)

	repos, err := w.svc.Repositories(w.ctx, conn.ID)
	if err != nil || len(repos) != 3 {
		t.Fatalf("repositories %+v %v", repos, err)
	}
	_, err = w.svc.Select(w.ctx, conn.ID, []github.Pick{{URL: w.fake.WebURL() + "/acme/api"}, {URL: w.fake.WebURL() + "/acme/nope"}})
	if orchestrator.ErrorCode(err) != orchestrator.EINVALID || !strings.Contains(err.Error(), "/acme/nope") {
		t.Fatalf("unreachable pick: %v", err)
	}
	sel, err := w.svc.Select(w.ctx, conn.ID, []github.Pick{{URL: w.fake.WebURL() + "/acme/api.git"}, {Name: "acme/web"}})
	if err != nil || len(sel) != 2 || sel[0].GitHubID != 11 || sel[1].GitHubID != 12 {
		t.Fatalf("select %+v %v", sel, err)
	}
	gr, err := w.svc.GuildRepositories(w.ctx, "g1")
	if err != nil || len(gr.Repositories) != 2 || len(gr.Logins) != 1 {
		t.Fatalf("guild repositories %+v %v", gr, err)
	}

	// Generation start: one token limited to 11 and 12, in the token file for both.
	before := len(w.fake.Requests)
	got, err := w.svc.Prepare(w.ctx, w.a1)
	if err != nil || len(got) != 2 {
		t.Fatalf("prepare %+v %v", got, err)
	}
	if req := w.fake.LastRequest(); len(w.fake.Requests) != before+1 || !slices.Equal(req.RepositoryIDs, []int64{11, 12}) {
		t.Fatalf("token requests %+v", w.fake.Requests[before:])
	}
	toks := w.readTokens("a1")
	if len(toks) != 2 || toks["acme/api"] == "" || toks["acme/api"] != toks["acme/web"] {
		t.Fatalf("token file %v", toks)
	}
	secrets, err := w.svc.RunSecretValues(w.ctx, orchestrator.Run{AgentID: "a1"})
	if err != nil || !slices.Equal(secrets, []string{toks["acme/api"]}) {
		t.Fatalf("redaction set %v %v", len(secrets), err)
	}
	// The token is stored sealed only.
	if n := w.count(`SELECT count(*) FROM github_agent_tokens WHERE position($1::bytea in sealed) > 0 OR repositories::text LIKE '%' || $2 || '%'`, []byte(toks["acme/api"]), toks["acme/api"]); n != 0 {
		t.Fatal("a token is stored in the clear")
	}

	// A shell call with fresh tokens: the git environment, no new token.
	call := &registry.Call{AgentID: "a1"}
	env, err := w.svc.ShellEnv(w.ctx, call)
	if err != nil || !slices.Contains(env, "GIT_CONFIG_VALUE_0=") || !slices.Contains(call.Secrets, toks["acme/api"]) || len(w.fake.Requests) != before+1 {
		t.Fatalf("shell env %v %v", env, err)
	}

	// Renamed on GitHub: the next start records the current name and URL (by id).
	w.fake.Mu.Lock()
	w.fake.Repos[12].Owner, w.fake.Repos[12].Name = "acme-renamed", "website"
	w.fake.TokenTTL = 5 * time.Minute // and the next token is close to expiry
	w.fake.Mu.Unlock()
	if _, err := w.svc.Prepare(w.ctx, w.a1); err != nil {
		t.Fatal(err)
	}
	sel, _ = w.svc.Selection(w.ctx, conn.ID)
	gr, _ = w.svc.GuildRepositories(w.ctx, "g1")
	if sel[1].FullName != "acme-renamed/website" || sel[1].URL != w.fake.WebURL()+"/acme-renamed/website" ||
		!slices.ContainsFunc(gr.Repositories, func(r orchestrator.GuildRepository) bool { return r.URL == w.fake.WebURL()+"/acme-renamed/website" }) {
		t.Fatalf("after a rename: %+v %+v", sel, gr.Repositories)
	}
	old := w.readTokens("a1")["acme/api"]
	if _, ok := w.readTokens("a1")["acme-renamed/website"]; !ok {
		t.Fatal("the token file does not name the renamed repository")
	}
	// Within 10 minutes of expiry: the shell call replaces it first.
	w.fake.Mu.Lock()
	w.fake.TokenTTL = 0
	w.fake.Mu.Unlock()
	call = &registry.Call{AgentID: "a1"}
	if _, err := w.svc.ShellEnv(w.ctx, call); err != nil {
		t.Fatal(err)
	}
	if now := w.readTokens("a1")["acme/api"]; now == old || !slices.Contains(call.Secrets, now) || !slices.Contains(call.Secrets, old) {
		t.Fatal("a token near expiry was not replaced before the shell call")
	}

	// Rate-limited twice: the start fails naming the login, which stays connected.
	w.fake.Mu.Lock()
	w.fake.TokenFaults = []int{429, 4031}
	w.fake.Mu.Unlock()
	_, err = w.svc.Prepare(w.ctx, w.a1)
	if orchestrator.ErrorCode(err) != orchestrator.EUPSTREAM || !strings.Contains(err.Error(), conn.ID) || !strings.Contains(err.Error(), "stays connected") {
		t.Fatalf("rate limited: %v", err)
	}
	if c, _ := w.store.GetConnection(w.ctx, conn.ID); c.Status != orchestrator.ConnConnected {
		t.Fatalf("after a rate limit the login is %s", c.Status)
	}

	// A repository the installation no longer reaches is named.
	w.fake.Mu.Lock()
	w.fake.Installs[7].Repos = []int64{12, 13}
	w.fake.Mu.Unlock()
	_, err = w.svc.Prepare(w.ctx, w.a1)
	if orchestrator.ErrorCode(err) != orchestrator.ECONFLICT || !strings.Contains(err.Error(), "no longer reaches acme/api") {
		t.Fatalf("unreached repository: %v", err)
	}

	// Uninstalled: 404 disconnects the login and this start and the next fail naming it.
	w.fake.Mu.Lock()
	w.fake.Installs[7].Removed = true
	w.fake.Mu.Unlock()
	_, err = w.svc.Prepare(w.ctx, w.a1)
	if orchestrator.ErrorCode(err) != orchestrator.ECONFLICT || !strings.Contains(err.Error(), conn.ID) || !strings.Contains(err.Error(), "removed or suspended") {
		t.Fatalf("removed: %v", err)
	}
	if c, _ := w.store.GetConnection(w.ctx, conn.ID); c.Status != orchestrator.ConnDisconnected {
		t.Fatalf("after removal the login is %s", c.Status)
	}
	if _, err := w.svc.Prepare(w.ctx, w.a1); orchestrator.ErrorCode(err) != orchestrator.ECONFLICT || !strings.Contains(err.Error(), "is disconnected") {
		t.Fatalf("next start: %v", err)
	}

	// Deleting the login deletes the guild repositories added through it.
	if _, err := w.pool.Exec(w.ctx, `DELETE FROM mcp_connections WHERE id = $1`, conn.ID); err != nil {
		t.Fatal(err)
	}
	if n := w.count(`SELECT count(*) FROM guild_repositories WHERE guild_id = 'g1'`); n != 0 {
		t.Fatalf("%d guild repositories outlived their login", n)
	}
	// A shell call whose token is due after its login was deleted drops it instead of failing.
	w.svc.Now = func() time.Time { return time.Now().Add(time.Hour) }
	call = &registry.Call{AgentID: "a1"}
	if _, err := w.svc.ShellEnv(w.ctx, call); err != nil {
		t.Fatalf("shell after the login was deleted: %v", err)
	}
	if toks := w.readTokens("a1"); len(toks) != 0 {
		t.Fatalf("the token file still holds %d tokens", len(toks))
	}
}
