package httpapi_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/catalog"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/drive"
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/connectors/github/githubtest"
	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
	"github.com/guildsai/guilds/orchestrator/connectors/mcp"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth"
	"github.com/guildsai/guilds/orchestrator/connectors/oauth/oauthtest"
	"github.com/guildsai/guilds/orchestrator/events"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/identity/oidctest"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/tools/group"
	"github.com/guildsai/guilds/orchestrator/tools/issues"
	"github.com/guildsai/guilds/orchestrator/tools/schedules"
	"github.com/guildsai/guilds/orchestrator/tools/secrets"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The authorization matrix's world: the whole API (every service httpapi serves) over one database,
// with organisations A and B holding one of everything an operation can name, the accounts and
// credentials of the matrix's principals, and the loopback peers the logins need (a token MCP
// server, an OAuth MCP server, Google, GitHub, an OpenID provider).

// side is one organisation's objects by name: org, guild (A1), guild2 (A2), agent (in guild),
// agent2 (in guild2), run (open), closedRun, conn (a token login at the org), pinned (Pinned
// prices at the org), drive (a Drive login at the org, its folder not yet picked), github (a
// GitHub login at guild), note (the guild's), orgNote, collection (the org's, with a record),
// issue (guild's), issue2 (guild2's), schedule (agent's), secret (a name of agent's), member (an
// account with a role at the org). "like" is A or B: whose principals hold roles there.
type side map[string]string

// with returns a copy of the side with the pairs (name, id, ...) set.
func (s side) with(kv ...string) side {
	out := side{}
	for k, v := range s {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// matrixMCPSlug is the custom MCP server the side's token logins connect to.
const matrixMCPSlug = "matrix-mcp"

// matrix is the world of TestAuthorizationMatrix.
type matrix struct {
	*env
	t      *testing.T
	ctx    context.Context
	base   string // the same app on a loopback port, for single sign-on's browser
	gh     *github.Service
	fake   *githubtest.Fake
	google *googletest.Server
	mcp    *mcpFake
	as     *oauthtest.Server
	idp    *oidctest.Provider
	ssoApp oidctest.Client
	hooks  *httptest.Server // receives every webhook delivery: 200

	A, B    side
	acct    map[string]orchestrator.Account    // by role name: ses, own, op, view, g1, g1v, ownB, nobody, maker, memberA, memberB, signer, sso
	ses     map[string]identity.SignedIn       // an account's session, by account id
	pats    map[string]identity.NewTokenAnswer // the maker's viewer tokens, by the organisation they are narrowed to
	keys    map[string]identity.NewKeyAnswer   // an agent's runtime key, by agent id
	runTok  map[string]string                  // a run's token, by run id
	dead    map[string]identity.NewTokenAnswer // the revoked and the expired token
	secrets []string                           // every secret value the world holds: never in an answer but the one minting it
	hidden  map[string]bool                    // what a viewer never sees: secret names, call arguments and results
	minted  []string                           // secrets minted by the matrix's own requests, for the audit log's scan
	cookies []*http.Cookie                     // a request's own cookies besides the caller's (single sign-on's)
	seq     int
}

// signerPassword is the password of the account the sign-in rows sign in with.
const signerPassword = "matrix lantern quarry 42"

// newMatrix builds the world.
func newMatrix(t *testing.T) *matrix {
	t.Helper()
	m := &matrix{t: t, ctx: context.Background(), acct: map[string]orchestrator.Account{}, ses: map[string]identity.SignedIn{},
		pats: map[string]identity.NewTokenAnswer{}, keys: map[string]identity.NewKeyAnswer{}, runTok: map[string]string{},
		dead: map[string]identity.NewTokenAnswer{}, hidden: map[string]bool{}}
	e := &env{t: t, pool: pgtest.NewDB(t), logs: &syncBuffer{}, order: &seqLog{}}
	m.env = e
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := postgres.NewStore(e.pool)
	box := newBox(t)

	// The tools: the platform's own (issues, group chat, schedules, secrets) and echo.
	reg := registry.New()
	sec := &secrets.Service{Store: store, Box: box}
	for _, r := range []interface {
		Register(*registry.Registry) error
	}{&issues.Tools{Store: store}, &group.Tools{Store: store}, &schedules.Tools{Store: store}, sec} {
		if err := r.Register(reg); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register(registry.Tool{Name: "echo", Family: orchestrator.FamilyNotes, Description: "Echo text back.",
		Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		Handler: func(_ context.Context, c *registry.Call) (string, error) {
			var a struct{ Text string }
			err := json.Unmarshal(c.Args, &a)
			return "echo: " + a.Text, err
		}}); err != nil {
		t.Fatal(err)
	}

	// The peers on loopback.
	m.mcp = newMCPFake(t, "", "", "echo") // it takes any key: each side's login sends its own
	m.google = googletest.New(listingMCP())
	t.Cleanup(m.google.Close)
	m.as = oauthMCP(t, newClock())
	m.fake = githubtest.New(t)

	// The catalog, the logins and the bindings, as serve wires them.
	manifests, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	var caller *connections.Caller
	pool := mcp.New(mcp.Config{Logger: log, OnOpen: func(id string, tr mcp.Transport) { caller.SessionOpened(id, string(tr)) }})
	t.Cleanup(func() { pool.Close() })
	caller = &connections.Caller{Store: store, Box: box, Client: mcp.Client{Pool: pool}, Local: coinsAdapter{}, Drive: drive.Drive{},
		OAuth: &connections.OAuth{Store: store, Box: box, Protocol: &oauth.Client{}, Log: log}, Log: log}
	set := integrations.Set{"GMAIL_OAUTH_CLIENT_ID": true, "GMAIL_OAUTH_CLIENT_SECRET": true}
	for k := range m.fake.Env() {
		set[k] = true
	}
	policy := &bindings.Policy{Store: store, Rules: runs.DefaultOffer{Integrations: set}, Caller: caller, Log: log}
	cat := &bindings.Service{Service: &lifecycle.Service{Store: store, Manifests: manifests, Box: box, Caller: caller, Integrations: set,
		Google: lifecycle.GoogleClient{ID: googletest.ClientID, Secret: googletest.ClientSecret}, Log: log},
		Store: store, Registry: reg, Policy: policy, Log: log}
	if err := cat.Seed(m.ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range reg.List() {
		if catalog.IsBindingFamily(tool.Family) {
			names = append(names, tool.Name)
		}
	}
	if err := store.SeedPlatformBindings(m.ctx, names, time.Now()); err != nil {
		t.Fatal(err)
	}

	// The app listens on loopback too: GitHub and the OpenID provider send browsers to it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.base = "http://" + ln.Addr().String()
	ghEnv := m.fake.Env()
	m.gh = github.New(orchestrator.GitHubAppEnv{AppID: ghEnv[github.EnvAppID], Slug: ghEnv[github.EnvSlug], PrivateKey: ghEnv[github.EnvPrivateKey],
		ClientID: ghEnv[github.EnvClientID], ClientSecret: ghEnv[github.EnvClientSecret], APIURL: ghEnv[github.EnvAPIURL], WebURL: ghEnv[github.EnvWebURL],
		CAFile: ghEnv[github.EnvCAFile]}, store, &sandbox.Local{Root: t.TempDir(), BinDir: t.TempDir()}, m.base, log)
	m.gh.Box, cat.GitHub = box, m.gh
	m.fake.Mu.Lock()
	m.fake.Callback = m.base + orchestrator.OAuthCallbackPath
	m.fake.Mu.Unlock()

	// Who is calling, the audit log, and single sign-on against a real OpenID provider.
	e.store, e.ids, e.audit = store, &identity.Service{Store: store, Box: box, Bootstrap: token, Log: log}, &identity.Auditor{Store: store, Log: log}
	actx, stopAudit := context.WithCancel(context.Background())
	audited := make(chan struct{})
	go func() { defer close(audited); e.audit.Run(actx, 5*time.Second) }()
	t.Cleanup(func() { stopAudit(); <-audited })
	m.ssoApp = oidctest.Client{ID: "guilds-matrix", Secret: "matrix-client-secret-0123456789abcdef", RedirectURIs: []string{m.base + "/api/sessions/oidc/callback"}}
	m.idp = oidctest.Start(t, oidctest.Config{Clients: []oidctest.Client{m.ssoApp}, Accounts: map[string]oidctest.Account{
		"sso": {Email: "sso@matrix.example", EmailVerified: true, Name: "Sam Single"}}})
	sso := &identity.SSO{Identity: e.ids, States: store, Config: orchestrator.OIDCConfig{Issuer: m.idp.Issuers[1], ClientID: m.ssoApp.ID, ClientSecret: m.ssoApp.Secret}}

	e.approvals = startApprovals(t, e.pool, store, log)
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: policy, MCP: caller, Tokens: e.ids, Log: log, Approvals: e.approvals,
		Secrets: orchestrator.JoinSecrets(sec, connections.ConnectionSecrets{Store: store, Box: box}, m.gh, e.ids)}
	// The events and webhooks, delivered to a receiver on loopback.
	m.hooks = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	t.Cleanup(m.hooks.Close)
	evs := &events.Service{Store: store, Box: box, AllowPrivate: true, RetryBase: 100 * time.Millisecond, Log: log}
	ectx, stopEvents := context.WithCancel(context.Background())
	evDone := make(chan struct{}, 2)
	go func() {
		defer func() { evDone <- struct{}{} }()
		postgres.Listener{Pool: e.pool, Channel: postgres.EventsChannel}.Listen(ectx, evs.Notify, evs.Live)
	}()
	go func() { defer func() { evDone <- struct{}{} }(); evs.Run(ectx) }()
	t.Cleanup(func() { stopEvents(); <-evDone; <-evDone })

	metrics := prometheus.NewRegistry()
	metrics.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "guilds_matrix_total", Help: "A counter, so /metrics has a line."}))
	e.app = httpapi.New(&httpapi.Server{Scopes: store, Runs: svc, Bindings: cat, Artifacts: store, Platform: store, Secrets: sec, GitHub: m.gh,
		Integrations: set, Metrics: promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}), PublicBaseURL: m.base, Log: log,
		Identity: e.ids, Accounts: store, Places: &identity.Places{Store: store}, Audit: e.audit, SSO: sso, Events: evs, Webhooks: evs,
		Approvals: e.approvals, Files: sandbox.Workspace{Provider: &sandbox.Local{Root: t.TempDir(), BinDir: t.TempDir()}, UploadMax: 1 << 20, ImportMax: 1 << 20}})
	go func() { _ = e.app.Listener(ln) }()
	t.Cleanup(func() { _ = e.app.ShutdownWithTimeout(10 * time.Second) })

	m.build()
	return m
}

// secret returns a fresh random value with a recognisable prefix and keeps it as a secret.
func (m *matrix) secret(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	v := prefix + hex.EncodeToString(b[:])
	m.secrets = append(m.secrets, v)
	return v
}

// next counts, for names that must be unique.
func (m *matrix) next() int { m.seq++; return m.seq }

// must sends as the bootstrap admin and fails unless want answers.
func (m *matrix) must(want int, method, path string, body any) map[string]any {
	m.t.Helper()
	return m.expect(want, asBearer(token), method, path, body)
}

// account makes an account without a password (its sessions are opened directly).
func (m *matrix) account(name string, admin bool) orchestrator.Account {
	m.t.Helper()
	a, err := m.ids.CreateAccount(m.ctx, identity.NewAccount{Email: name + "@matrix.example", Name: "Matrix " + name, InstanceAdmin: admin})
	if err != nil {
		m.t.Fatal(err)
	}
	m.acct[name] = a
	return a
}

// member gives an account a role at a scope.
func (m *matrix) member(acct string, at orchestrator.Chain, role string) {
	m.t.Helper()
	if _, err := m.ids.SetMember(m.ctx, at, m.acct[acct].ID, role); err != nil {
		m.t.Fatal(err)
	}
}

// orgAt, guildAt and agentAt are the chains of a side's objects.
func orgAt(s side) orchestrator.Chain {
	return orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: s["org"]}
}
func guildAt(s side, guild string) orchestrator.Chain {
	return orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: s["org"], GuildID: guild}
}
func agentAt(s side) orchestrator.Chain {
	return orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: s["org"], GuildID: s["guild"], AgentID: s["agent"]}
}

// build makes the accounts, organisations A and B with their objects, and the dead tokens.
func (m *matrix) build() {
	m.account("ses", true)
	for _, n := range []string{"own", "op", "view", "g1", "g1v", "ownB", "nobody", "maker", "memberA", "memberB"} {
		m.account(n, false)
	}
	signer, err := m.ids.CreateAccount(m.ctx, identity.NewAccount{Email: "signer@matrix.example", Name: "Matrix signer", Password: signerPassword})
	if err != nil {
		m.t.Fatal(err)
	}
	m.acct["signer"] = signer
	m.account("sso", false)
	m.secrets = append(m.secrets, signerPassword)
	m.must(201, "POST", "/api/admin/mcp/servers", map[string]any{"slug": matrixMCPSlug, "name": "Matrix MCP", "url": m.mcp.URL, "auth": "token", "header": "X-Matrix-Key", "scheme": ""})
	m.must(200, "PATCH", "/api/admin/mcp/servers/notion", map[string]any{"url": m.as.Resource})
	m.must(200, "PATCH", "/api/admin/mcp/servers/drive", map[string]any{"endpoints": m.google.DriveEndpoints()})
	m.fake.AddRepo(githubtest.Repo{ID: 101, Owner: "acme-a", Name: "api"})
	m.fake.AddRepo(githubtest.Repo{ID: 201, Owner: "acme-b", Name: "api"})
	m.fake.AddInstall(55, "acme-a", 101)
	m.fake.AddInstall(56, "acme-b", 201)
	m.fake.LoginAs("octo", 55, 56)
	m.A, m.B = m.side("A"), m.side("B")

	// The revoked and the expired token: the maker's, narrowed to viewer of A.
	m.dead["rev"] = m.mintPAT(m.A["org"])
	if err := m.ids.RevokeToken(m.ctx, m.acct["maker"].ID, m.dead["rev"].ID); err != nil {
		m.t.Fatal(err)
	}
	m.dead["exp"] = m.mintPAT(m.A["org"])
	if _, err := m.pool.Exec(m.ctx, "UPDATE api_tokens SET expires_at = now() - interval '1 minute' WHERE id = $1", m.dead["exp"].ID); err != nil {
		m.t.Fatal(err)
	}
}

// scope makes an organisation with two guilds and an agent in each, and gives the side's
// principals their roles there: in an A-like one, the owner, the operator, the viewer and the
// token maker at the organisation, the guild operator and the guild viewer at its first guild; in
// a B-like one, B's owner. The account with no role holds none anywhere.
func (m *matrix) scope(like string) side {
	m.t.Helper()
	s := side{"like": like}
	s["org"] = m.must(201, "POST", "/api/orgs", map[string]any{"name": "Org " + like})["id"].(string)
	s["guild"] = m.must(201, "POST", "/api/orgs/"+s["org"]+"/guilds", map[string]any{"name": "Guild " + like + "1"})["id"].(string)
	s["guild2"] = m.must(201, "POST", "/api/orgs/"+s["org"]+"/guilds", map[string]any{"name": "Guild " + like + "2"})["id"].(string)
	s["agent"] = m.must(201, "POST", "/api/guilds/"+s["guild"]+"/agents", map[string]any{"name": "Agent " + like + "1"})["id"].(string)
	s["agent2"] = m.must(201, "POST", "/api/guilds/"+s["guild2"]+"/agents", map[string]any{"name": "Agent " + like + "2"})["id"].(string)
	if like == "A" {
		for acct, role := range map[string]string{"own": "owner", "op": "operator", "view": "viewer", "maker": "owner", "memberA": "viewer"} {
			m.member(acct, orgAt(s), role)
		}
		m.member("g1", guildAt(s, s["guild"]), "operator")
		m.member("g1v", guildAt(s, s["guild"]), "viewer")
	} else {
		m.member("ownB", orgAt(s), "owner")
		m.member("memberB", orgAt(s), "viewer")
	}
	s["member"] = m.acct["member"+like].ID
	return s
}

// guildLike makes another guild in the side's organisation with the side's guild roles (the
// guild operator's and the guild viewer's, in A).
func (m *matrix) guildLike(s side) side {
	m.t.Helper()
	g := m.must(201, "POST", "/api/orgs/"+s["org"]+"/guilds", map[string]any{"name": "Fresh guild"})["id"].(string)
	if s["like"] == "A" {
		m.member("g1", guildAt(s, g), "operator")
		m.member("g1v", guildAt(s, g), "viewer")
	}
	return s.with("guild", g)
}

// run starts a run of the side's agent and keeps its token.
func (m *matrix) run(s side) string {
	m.t.Helper()
	r := m.must(201, "POST", "/api/agents/"+s["agent"]+"/runs", map[string]any{"kind": "direct", "tool_call_budget": 10000})
	id := r["id"].(string)
	m.runTok[id] = r["token"].(string)
	m.secrets = append(m.secrets, m.runTok[id])
	return id
}

// approval makes a pending approval request of a call of the side's open run, the call started and
// waiting as an Ask call's would be.
func (m *matrix) approval(s side) string {
	m.t.Helper()
	args := json.RawMessage(`{"text":"approve me"}`)
	sum := sha256.Sum256(args)
	now := time.Now().UTC().Truncate(time.Microsecond)
	call := orchestrator.ToolCall{RunID: s["run"], CallID: orchestrator.NewID(orchestrator.PrefixCall), Name: "echo", Arguments: args,
		RequestHash: hex.EncodeToString(sum[:]), StartedAt: now}
	seq, err := m.store.StartCall(m.ctx, call)
	if err != nil {
		m.t.Fatal(err)
	}
	a := orchestrator.Approval{ID: orchestrator.NewID(orchestrator.PrefixApproval), RunID: s["run"], Seq: seq, CallID: call.CallID,
		AgentID: s["agent"], GuildID: s["guild"], OrgID: s["org"], Tool: "echo", Arguments: args, ArgumentsSHA256: hex.EncodeToString(sum[:]),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := m.store.CreateApproval(m.ctx, a); err != nil {
		m.t.Fatal(err)
	}
	return a.ID
}

// mcpSession opens an MCP session as c at path (a run's endpoint or /mcp) and answers its id, or
// a made-up one when c may not open one there.
func (m *matrix) mcpSession(c caller, path string) string {
	m.t.Helper()
	st, _, h := m.exchange(c, "POST", path, mcpInitialize)
	if sid := h.Get("Mcp-Session-Id"); st == 200 && sid != "" {
		return sid
	}
	return "mcp-session-of-nobody"
}

// side makes an organisation and one of everything in it.
func (m *matrix) side(like string) side {
	m.t.Helper()
	s := m.scope(like)
	lower := strings.ToLower(like)
	now := time.Now().UTC().Truncate(time.Microsecond)

	// A webhook of the organisation's run starts, then runs: an open one that made a call, and a
	// closed one.
	s["webhook"] = m.webhook(s)
	s["run"] = m.run(s)
	args := "matrix call arguments of " + like
	m.hidden[args] = true
	m.must(200, "POST", "/api/runs/"+s["run"]+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": args}})
	s["closedRun"] = m.run(s)
	m.must(200, "POST", "/api/runs/"+s["closedRun"]+"/close", nil)
	m.key(s["agent"])
	s["delivery"] = m.delivery(s)

	// The agent's secret, memory, a schedule; the guild's chat and issues; notes; a collection.
	s["secret"] = "MATRIX_SECRET_" + like
	m.hidden[s["secret"]] = true
	m.must(200, "PUT", "/api/agents/"+s["agent"]+"/secrets/"+s["secret"], map[string]any{"value": m.secret("secret-value-")})
	agent := orchestrator.Agent{ID: s["agent"], GuildID: s["guild"], OrgID: s["org"]}
	for i, content := range []string{"first memory", "second memory"} {
		if _, _, err := m.store.WriteMemory(m.ctx, agent, content, now.Add(time.Duration(i)*time.Second)); err != nil {
			m.t.Fatal(err)
		}
	}
	next := now.Add(time.Hour)
	sc, err := m.store.CreateSchedule(m.ctx, orchestrator.Schedule{ID: orchestrator.NewID(orchestrator.PrefixSchedule), AgentID: s["agent"], Kind: orchestrator.ScheduleCron,
		Cron: "0 9 * * *", Description: "daily", Instruction: "Look at the inbox.", NextRunAt: &next, CreatedAt: now})
	if err != nil {
		m.t.Fatal(err)
	}
	s["schedule"] = sc.ID
	if _, err := m.store.PostGroupMessage(m.ctx, orchestrator.ChatMessage{GuildID: s["guild"], AgentID: s["agent"], RunID: s["run"], Text: "hello guild", CreatedAt: now}); err != nil {
		m.t.Fatal(err)
	}
	for k, g := range map[string]string{"issue": s["guild"], "issue2": s["guild2"]} {
		is, err := m.store.CreateIssue(m.ctx, orchestrator.Issue{ID: orchestrator.NewID(orchestrator.PrefixIssue), GuildID: g, Kind: "other", Message: "a tool misbehaved", CreatedAt: now})
		if err != nil {
			m.t.Fatal(err)
		}
		s[k] = is.ID
	}
	for k, a := range map[string]orchestrator.Artifact{
		"note":    {Level: "guild", OrgID: s["org"], GuildID: s["guild"], Key: "plan.md", Content: "guild plan of " + like},
		"orgNote": {Level: "org", OrgID: s["org"], Key: "policy.md", Content: "org policy of " + like},
	} {
		n, _, err := m.store.PutNote(m.ctx, a, now)
		if err != nil {
			m.t.Fatal(err)
		}
		s[k] = n.ID
	}
	coll := m.must(201, "POST", "/api/orgs/"+s["org"]+"/collections", map[string]any{"name": "tasks", "columns": []map[string]any{{"name": "title", "type": "text"}}})
	s["collection"] = coll["id"].(string)
	s["approval"] = m.approval(s)
	m.must(200, "PUT", "/api/agents/"+s["agent"]+"/files?path=notes.txt", rawBody{ctype: "text/plain", data: []byte("the agent's notes of " + like)})
	c, err := m.store.GetCollection(m.ctx, s["collection"])
	if err != nil {
		m.t.Fatal(err)
	}
	if _, _, err := m.store.AddRecord(m.ctx, c, orchestrator.RecordWrite{Data: map[string]any{"title": "ship it"}, SearchText: "ship it", Words: []string{"ship"}}, nil, now); err != nil {
		m.t.Fatal(err)
	}

	// Logins: a token login of the loopback MCP server, Pinned prices, Drive (signed in at
	// Google, its folder not picked), GitHub at the guild; a binding at the agent.
	key := m.secret("mcp-key-" + lower + "-")
	s["conn"] = m.must(201, "POST", "/api/mcp/connections", map[string]any{"server": matrixMCPSlug, "scope": "org", "scope_id": s["org"], "credentials": map[string]any{"api_key": key}})["id"].(string)
	s["pinned"] = m.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "pinned_prices", "scope": "org", "scope_id": s["org"],
		"credentials": map[string]any{"api_key": m.secret("CG-matrix-")}, "coins": []map[string]string{{"id": "bitcoin", "symbol": "btc", "name": "Bitcoin"}}})["id"].(string)
	start := m.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "drive", "scope": "org", "scope_id": s["org"]})
	s["drive"] = start["connection"].(map[string]any)["id"].(string)
	if st, body := m.page(browse(m.t, start["authorization_url"].(string))); st != 200 || !strings.Contains(body, "Signed in") {
		m.t.Fatalf("Drive's callback: %d %s", st, body)
	}
	s["github"] = m.github(s, s["guild"], map[string]string{"A": "55", "B": "56"}[like])
	m.must(200, "PUT", "/api/bindings", map[string]any{"scope": "agent", "scope_id": s["agent"], "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": true})
	return s
}

// github connects GitHub at a guild of the side to the installation and answers the connection.
func (m *matrix) github(s side, guild, installation string) string {
	m.t.Helper()
	st, id := m.githubBegin("guild", guild)
	res, err := m.gh.HandleCallback(m.ctx, github.CallbackInput{State: st, Code: m.fake.Code("octo"), InstallationID: installation, SetupAction: "install"})
	if err != nil || res.Connection == nil {
		m.t.Fatalf("GitHub's callback: %+v %v", res, err)
	}
	return id
}

// githubBegin starts a GitHub Connect at a scope and answers its state and connection.
func (m *matrix) githubBegin(scope, id string) (string, string) {
	m.t.Helper()
	out := m.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "github", "scope": scope, "scope_id": id})
	u, err := url.Parse(out["authorization_url"].(string))
	if err != nil || u.Query().Get("state") == "" {
		m.t.Fatalf("GitHub's Connect answered %v", out)
	}
	m.secrets = append(m.secrets, u.Query().Get("state"))
	return u.Query().Get("state"), out["connection"].(map[string]any)["id"].(string)
}

// githubPicker leaves a GitHub Connect at a new agent of the side's guild waiting for its
// installation to be picked.
func (m *matrix) githubPicker(s side) string {
	m.t.Helper()
	st, _ := m.githubBegin("agent", m.agentIn(s))
	res, err := m.gh.HandleCallback(m.ctx, github.CallbackInput{State: st, Code: m.fake.Code("octo")})
	if err != nil || len(res.Picker) < 2 {
		m.t.Fatalf("GitHub's callback left no picker: %+v %v", res, err)
	}
	return st
}

// session is the account's session (opened once, and again after forget).
func (m *matrix) session(acct string) caller {
	m.t.Helper()
	a := m.acct[acct]
	in, ok := m.ses[a.ID]
	if !ok {
		var err error
		if in, err = m.ids.OpenSession(m.ctx, a, "192.0.2.1", "matrix"); err != nil {
			m.t.Fatal(err)
		}
		m.ses[a.ID] = in
		m.secrets = append(m.secrets, in.Cookie, in.CSRF)
	}
	return caller{cookie: in.Cookie, csrf: in.CSRF}
}

// forget drops what is kept of the account's session and tokens, so the next use opens and mints
// new ones (after a request that may have ended them).
func (m *matrix) forget(acct string) {
	delete(m.ses, m.acct[acct].ID)
	if acct == "maker" {
		m.pats = map[string]identity.NewTokenAnswer{}
	}
}

// mintPAT mints the maker's API token narrowed to viewer of the organisation.
func (m *matrix) mintPAT(org string) identity.NewTokenAnswer {
	m.t.Helper()
	p, err := m.ids.Authenticate(m.ctx, identity.Presented{Cookie: m.session("maker").cookie})
	if err != nil {
		m.t.Fatal(err)
	}
	tok, err := m.ids.MintToken(m.ctx, p, identity.TokenRequest{Name: "viewer of " + org, Role: orchestrator.RoleViewer,
		Scope: &identity.TokenScope{Kind: orchestrator.ScopeOrg, ID: org}, ScopeAt: orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: org}})
	if err != nil {
		m.t.Fatal(err)
	}
	m.secrets = append(m.secrets, tok.Token)
	return tok
}

// pat is the maker's token narrowed to viewer of the organisation (minted once per organisation).
func (m *matrix) pat(org string) identity.NewTokenAnswer {
	tok, ok := m.pats[org]
	if !ok {
		tok = m.mintPAT(org)
		m.pats[org] = tok
	}
	return tok
}

// key is the agent's runtime key (minted once per agent).
func (m *matrix) key(agent string) identity.NewKeyAnswer {
	m.t.Helper()
	k, ok := m.keys[agent]
	if !ok {
		out := m.must(201, "POST", "/api/agents/"+agent+"/keys", map[string]any{"name": "runtime"})
		k = identity.NewKeyAnswer{AgentKey: orchestrator.AgentKey{ID: out["id"].(string), AgentID: agent}, Key: out["key"].(string)}
		m.keys[agent] = k
		m.secrets = append(m.secrets, k.Key)
	}
	return k
}

// ssoCallback signs the sso account in at the provider and answers the callback the provider sent
// the browser to (not yet followed) with the browser's cookies for it.
func (m *matrix) ssoCallback() (string, []*http.Cookie) {
	m.t.Helper()
	b := oidctest.NewBrowser()
	resp, err := b.Client.Get(m.base + "/api/sessions/oidc?return_to=/")
	if err != nil {
		m.t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || loc == "" {
		m.t.Fatalf("single sign-on's start answered %d", resp.StatusCode)
	}
	cb := b.SignIn(m.t, loc, "sso", false, func(u *url.URL) bool { return "http://"+u.Host == m.base && u.Path == "/api/sessions/oidc/callback" })
	base, _ := url.Parse(m.base + "/api/sessions/oidc/callback")
	return cb.RequestURI(), b.Client.Jar.Cookies(base)
}

// agentIn makes another agent in the side's guild.
func (m *matrix) agentIn(s side) string {
	m.t.Helper()
	return m.must(201, "POST", "/api/guilds/"+s["guild"]+"/agents", map[string]any{"name": fmt.Sprintf("Agent %d", m.next())})["id"].(string)
}

// coingecko connects CoinGecko at a new agent of the side's guild and answers the connection.
func (m *matrix) coingecko(s side) string {
	m.t.Helper()
	return m.must(201, "POST", "/api/mcp/connections", map[string]any{"server": "coingecko", "scope": "agent", "scope_id": m.agentIn(s),
		"credentials": map[string]any{"api_key": m.secret("CG-doomed-")}})["id"].(string)
}

// pending puts a Drive login back to waiting for its folder, so each pick picks.
func (m *matrix) pending(id string) {
	m.t.Helper()
	if _, err := m.pool.Exec(m.ctx, "UPDATE mcp_connections SET status = 'pending' WHERE id = $1", id); err != nil {
		m.t.Fatal(err)
	}
}

// memberOf makes an account holding the viewer role at the side's organisation.
func (m *matrix) memberOf(s side) string {
	m.t.Helper()
	n := fmt.Sprintf("member%d", m.next())
	m.account(n, false)
	m.member(n, orgAt(s), orchestrator.RoleViewer)
	return m.acct[n].ID
}

// mintFor mints an API token of the account, narrowed to viewer of the organisation.
func (m *matrix) mintFor(acct, org string) identity.NewTokenAnswer {
	m.t.Helper()
	p, err := m.ids.Authenticate(m.ctx, identity.Presented{Cookie: m.session(acct).cookie})
	if err != nil {
		m.t.Fatal(err)
	}
	tok, err := m.ids.MintToken(m.ctx, p, identity.TokenRequest{Name: "doomed", Role: orchestrator.RoleViewer,
		Scope: &identity.TokenScope{Kind: orchestrator.ScopeOrg, ID: org}, ScopeAt: orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: org}})
	if err != nil {
		m.t.Fatal(err)
	}
	m.secrets = append(m.secrets, tok.Token)
	return tok
}

// arg is a call's argument text: hidden from viewers, never in the audit log.
func (m *matrix) arg() string {
	a := fmt.Sprintf("matrix call argument %d", m.next())
	m.hidden[a] = true
	return a
}

// identityAdmin is the bootstrap admin's principal.
func identityAdmin() identity.Principal {
	return identity.Principal{Kind: orchestrator.CredentialBootstrap, Admin: true}
}

// webhook registers a webhook of the side's organisation for run starts, to the receiver.
func (m *matrix) webhook(s side) string {
	m.t.Helper()
	return m.must(201, "POST", "/api/orgs/"+s["org"]+"/webhooks", map[string]any{"url": m.hooks.URL + "/hooks", "events": []string{"run.started"},
		"secret": m.secret("whsec_matrix_")})["id"].(string)
}

// delivery waits for the side's webhook's first delivery and answers its id.
func (m *matrix) delivery(s side) string {
	m.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ds := m.must(200, "GET", "/api/orgs/"+s["org"]+"/webhooks/"+s["webhook"]+"/deliveries", nil)["deliveries"].([]any)
		if len(ds) > 0 {
			return fmt.Sprintf("%.0f", ds[0].(map[string]any)["id"].(float64))
		}
	}
	m.t.Fatal("the side's webhook had no delivery within 15 s")
	return ""
}

// stream sends a request whose answer is a stream (server-sent events) over loopback and answers
// its status once its headers arrive, closing it.
func (m *matrix) stream(who caller, path string) (int, http.Header) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", m.base+path, nil)
	if err != nil {
		m.t.Fatal(err)
	}
	if who.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+who.bearer)
	}
	if who.cookie != "" {
		req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: who.cookie})
	}
	for k, v := range who.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}
