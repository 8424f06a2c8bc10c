package bindings_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/bindings"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/mcp"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// TestRunOfferKindsAndFlags: with the platform seed bindings, a run offers what the run kind, the
// config flags and the integrations allow.
func TestRunOfferKindsAndFlags(t *testing.T) {
	w := newWorld(t)
	all := map[string]any{"browser": true, "coding": true, "scripting": true, "memory": true}
	none := map[string]any{"browser": false, "coding": false, "scripting": false, "memory": false}
	tests := []struct {
		name   string
		kind   string
		config map[string]any
		tavily bool
		want   []string
	}{
		{"direct, defaults", "direct", nil, false,
			[]string{"group_post", "memory_write", "note_get", "record_list", "report_issue", "schedule_list", "script_run", "secret_request", "secret_store"}},
		{"direct, every flag, search key", "direct", all, true,
			[]string{"browser_snapshot", "group_post", "memory_write", "note_get", "record_list", "report_issue", "schedule_list", "script_run", "secret_request", "secret_store", "shell", "tavily_search"}},
		{"direct, flags off", "direct", none, false,
			[]string{"group_post", "note_get", "record_list", "report_issue", "schedule_list", "secret_request", "secret_store"}},
		{"group", "group", nil, true, []string{"group_post", "memory_write", "note_get", "record_list", "report_issue", "script_run", "secret_store", "tavily_search"}},
		{"schedule", "schedule", nil, false, []string{"group_post", "memory_write", "note_get", "record_list", "report_issue", "script_run", "secret_store"}},
		{"group chat", "group_chat", nil, false, []string{"group_post", "note_get", "record_list", "report_issue", "schedule_list", "script_run", "secret_store"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w.env["TAVILY_API_KEY"] = tt.tavily
			patch, err := orchestrator.ParseConfigPatch(mustJSON(tt.config))
			if err != nil {
				t.Fatal(err)
			}
			run, err := w.runs.StartRun(w.ctx, "a1", runs.StartRequest{Kind: tt.kind, Config: patch})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(run.OfferedTools); !slices.Equal(got, tt.want) {
				t.Fatalf("offered %v\nwant    %v", got, tt.want)
			}
		})
	}
}

// TestRunOfferFollowsBindings: opt-out, re-enable and enable-extra of native tools reach runs.
func TestRunOfferFollowsBindings(t *testing.T) {
	w := newWorld(t)
	w.put("org", "o1", "native_tool", "note_get", false, "")  // opt-out for the organisation
	w.put("agent", "a2", "native_tool", "note_get", true, "") // re-enable for one agent
	w.put("platform", "", "native_tool", "group_post", false, "")
	w.put("guild", "g2", "native_tool", "group_post", true, "") // enable-extra for one guild
	has := func(agent, tool string) bool { return slices.Contains(w.offered(agent, "direct"), tool) }
	tests := []struct {
		agent, tool string
		want        bool
	}{
		{"a1", "note_get", false}, {"a2", "note_get", true}, {"a3", "note_get", false}, {"a9", "note_get", true},
		{"a1", "group_post", false}, {"a3", "group_post", true}, {"a9", "group_post", false},
		{"a1", "report_issue", true}, // always offered
	}
	for _, tt := range tests {
		if got := has(tt.agent, tt.tool); got != tt.want {
			t.Errorf("%s offers %s: %v, want %v", tt.agent, tt.tool, got, tt.want)
		}
	}
}

// TestRunOfferMCP: each enabled server by its login's status, overlays, relogins and refusals.
func TestRunOfferMCP(t *testing.T) {
	w := newWorld(t)
	guild := w.connect("coingecko", "guild", "g1", cgKey)
	mcpOf := func(agent string) []string {
		var out []string
		for _, n := range w.offered(agent, "direct") {
			if strings.HasPrefix(n, "coingecko_") {
				out = append(out, n)
			}
		}
		return out
	}
	all := []string{"coingecko_chart", "coingecko_coin", "coingecko_movers", "coingecko_new", "coingecko_prices", "coingecko_search", "coingecko_supply", "coingecko_trending"}
	if got := mcpOf("a1"); !slices.Equal(got, all) {
		t.Fatalf("guild login + guild binding gives members the listed tools: %v", got)
	}
	if got := mcpOf("a3"); len(got) != 0 {
		t.Fatalf("another guild's agent got %v", got)
	}
	// Tool overlay Off at the agent; server Off at a2 with a tool On there (no punch through).
	w.put("agent", "a1", "mcp_tool", "coingecko_new", false, "")
	w.put("agent", "a2", "mcp", "coingecko", false, "")
	w.put("agent", "a2", "mcp_tool", "coingecko_coin", true, "")
	if got := mcpOf("a1"); len(got) != 7 || slices.Contains(got, "coingecko_new") {
		t.Fatalf("tool overlay off: %v", got)
	}
	if got := mcpOf("a2"); len(got) != 0 {
		t.Fatalf("server off at the agent: %v", got)
	}
	// A tool an admin unpublished from the catalog is not offered.
	if _, err := w.svc.PatchTool(w.ctx, "coingecko", "trending", orchestrator.ToolPatch{Published: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if got := mcpOf("a1"); len(got) != 6 || slices.Contains(got, "coingecko_trending") {
		t.Fatalf("unpublished tool offered: %v", got)
	}
	if _, err := w.svc.PatchTool(w.ctx, "coingecko", "trending", orchestrator.ToolPatch{Published: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	// The snapshot records the login and the remote name of each MCP tool.
	run, err := w.runs.StartRun(w.ctx, "a1", runs.StartRequest{Kind: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	var coin orchestrator.OfferedTool
	for _, tl := range run.OfferedTools {
		if tl.Name == "coingecko_coin" {
			coin = tl
		}
	}
	if coin.ConnectionID != guild.ID || coin.RemoteName != "coin" || coin.Server != "coingecko" || !strings.Contains(string(coin.InputSchema), `"id"`) {
		t.Fatalf("snapshot of coingecko_coin: %+v", coin)
	}
	// Without an MCP caller the call answers so, never a made-up result.
	res, err := w.runs.Call(w.ctx, run.ID, runs.CallRequest{Name: "coingecko_coin", Arguments: []byte(`{"id":"bitcoin"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Result, "ERROR: coingecko_coin is the coin tool of the coingecko connector") || !strings.Contains(res.Result, "runs without an MCP client") {
		t.Fatalf("MCP call result %q", res.Result)
	}
	// With the MCP client, a local adapter's tool says its adapter is not built yet.
	pool := mcp.New(mcp.Config{})
	defer pool.Close()
	w.runs.MCP = &connections.Caller{Store: w.store, Box: w.box, Client: mcp.Client{Pool: pool}}
	res, err = w.runs.Call(w.ctx, run.ID, runs.CallRequest{Name: "coingecko_coin", Arguments: []byte(`{"id":"bitcoin"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Result, "ERROR: coingecko_coin is a tool of the coingecko connector") || !strings.Contains(res.Result, "local adapter is not built in this orchestrator yet") {
		t.Fatalf("adapter call result %q", res.Result)
	}
	w.runs.MCP = nil
	// A tool the snapshot lacks is refused, native or MCP.
	for _, name := range []string{"coingecko_new", "browser_snapshot", "x_search"} {
		res, err = w.runs.Call(w.ctx, run.ID, runs.CallRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.Result, `ERROR: tool "`+name+`" is not offered on this run`) {
			t.Fatalf("%s outside the snapshot: %q", name, res.Result)
		}
	}
	// Override-login: a1 logs in itself; its run uses its own login.
	mine := w.connect("coingecko", "agent", "a1", map[string]string{"api_key": "CG-mine"})
	w.put("agent", "a1", "mcp", "coingecko", true, mine.ID)
	run, err = w.runs.StartRun(w.ctx, "a1", runs.StartRequest{Kind: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range run.OfferedTools {
		if strings.HasPrefix(tl.Name, "coingecko_") && tl.ConnectionID != mine.ID {
			t.Fatalf("%s uses %s, want the agent's relogin %s", tl.Name, tl.ConnectionID, mine.ID)
		}
	}
	// Pending: the run starts without the server's tools. Disconnected: the generation does not start.
	if _, err := w.store.SetConnectionStatus(w.ctx, guild.ID, orchestrator.ConnPending, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := mcpOf("a2"); len(got) != 0 {
		t.Fatal(got)
	}
	w.put("agent", "a2", "mcp", "coingecko", true, "")
	if got := mcpOf("a2"); len(got) != 0 {
		t.Fatalf("pending login offered %v", got)
	}
	if _, err := w.store.SetConnectionStatus(w.ctx, guild.ID, orchestrator.ConnDisconnected, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, err = w.runs.StartRun(w.ctx, "a2", runs.StartRequest{Kind: "direct"})
	wantErr(t, err, orchestrator.ECONFLICT, "MCP server CoinGecko (login "+guild.ID+", owned by guild g1) is enabled for agent a2 but its login is disconnected")
	// The agent with its own connected login is not affected; turning the server off lets a2 start.
	if got := mcpOf("a1"); len(got) != 7 {
		t.Fatalf("a1's relogin: %v", got)
	}
	w.put("agent", "a2", "mcp", "coingecko", false, "")
	w.offered("a2", "direct")
}

// TestNextGenerationDropsWhatIsNowOff: at a later turn a native tool that is now off leaves the
// offer (binding off, search key gone, agent flag false); nothing is added; MCP tools stay; a
// disconnected enabled login stops the generation.
func TestNextGenerationDropsWhatIsNowOff(t *testing.T) {
	w := newWorld(t)
	w.env["TAVILY_API_KEY"] = true
	w.connect("coingecko", "agent", "a1", cgKey)
	w.put("agent", "a1", "native_tool", "group_post", false, "")
	run, err := w.runs.StartRun(w.ctx, "a1", runs.StartRequest{Kind: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	start := names(run.OfferedTools)
	if !slices.Contains(start, "tavily_search") || !slices.Contains(start, "script_run") || slices.Contains(start, "group_post") {
		t.Fatalf("start offer %v", start)
	}
	gen, err := w.runs.NextGeneration(w.ctx, run.ID)
	if err != nil || len(gen.Dropped) != 0 {
		t.Fatalf("nothing changed: %v %v", gen.Dropped, err)
	}
	w.put("agent", "a1", "native_tool", "note_get", false, "")  // a binding turned off
	w.put("agent", "a1", "native_tool", "group_post", true, "") // turned on: not added mid-run
	delete(w.env, "TAVILY_API_KEY")                             // the key is gone
	off := false
	if _, err := w.store.UpdateAgent(w.ctx, "a1", orchestrator.AgentPatch{Config: orchestrator.ConfigPatch{Scripting: &off}}); err != nil {
		t.Fatal(err)
	}
	gen, err = w.runs.NextGeneration(w.ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gen.Dropped, []string{"note_get", "script_run", "tavily_search"}) {
		t.Fatalf("dropped %v", gen.Dropped)
	}
	now := names(gen.Run.OfferedTools)
	if slices.Contains(now, "group_post") || !slices.Contains(now, "coingecko_coin") || !slices.Contains(now, "report_issue") {
		t.Fatalf("offer after the turn %v", now)
	}
	stored, err := w.runs.GetRun(w.ctx, run.ID)
	if err != nil || !slices.Equal(names(stored.OfferedTools), now) {
		t.Fatalf("stored offer %v", names(stored.OfferedTools))
	}
	res, err := w.runs.Call(w.ctx, run.ID, runs.CallRequest{Name: "note_get"})
	if err != nil || !strings.HasPrefix(res.Result, `ERROR: tool "note_get" is not offered`) {
		t.Fatalf("dropped tool still callable: %q %v", res.Result, err)
	}
	conns, _ := w.svc.ListConnections(w.ctx, "agent", "a1")
	if _, err := w.store.SetConnectionStatus(w.ctx, conns[0].ID, orchestrator.ConnDisconnected, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, err = w.runs.NextGeneration(w.ctx, run.ID)
	wantErr(t, err, orchestrator.ECONFLICT, "CoinGecko")
	if _, err := w.runs.CloseRun(w.ctx, run.ID, orchestrator.CloseOperator); err != nil {
		t.Fatal(err)
	}
	_, err = w.runs.NextGeneration(w.ctx, run.ID)
	wantErr(t, err, orchestrator.ECONFLICT, "is closed")
}

// TestAccessViews: what each tool resolves to at a scope and which scope decided it.
func TestAccessViews(t *testing.T) {
	w := newWorld(t)
	c := w.connect("coingecko", "guild", "g1", cgKey)
	w.put("org", "o1", "native_tool", "note_get", false, "")
	w.put("agent", "a1", "native_tool", "note_get", true, "")
	w.put("agent", "a1", "mcp_tool", "coingecko_new", false, "")
	view := func(scope, id string) bindings.Access {
		v, err := w.svc.Access(w.ctx, scope, id)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	native := func(v bindings.Access, name string) bindings.NativeAccess {
		for _, n := range v.Native {
			if n.Name == name {
				return n
			}
		}
		t.Fatalf("%s missing from the %s view", name, v.Scope)
		return bindings.NativeAccess{}
	}
	server := func(v bindings.Access, slug string) bindings.ServerAccess {
		for _, s := range v.Servers {
			if s.Slug == slug {
				return s
			}
		}
		t.Fatalf("%s missing", slug)
		return bindings.ServerAccess{}
	}
	org, guild, agent := view("org", "o1"), view("guild", "g1"), view("agent", "a1")
	if n := native(org, "note_get"); n.Enabled || n.DecidedBy != "org" || n.Reason != "turned off by the org binding" {
		t.Fatalf("org note_get %+v", n)
	}
	if n := native(agent, "note_get"); !n.Enabled || n.DecidedBy != "agent" || !n.Offered {
		t.Fatalf("agent note_get %+v", n)
	}
	if n := native(agent, "tavily_search"); !n.Enabled || n.DecidedBy != "platform" || n.Offered || n.Reason != "not offered: the web-search integration is off: set TAVILY_API_KEY" {
		t.Fatalf("agent tavily_search %+v", n)
	}
	if n := native(agent, "browser_snapshot"); n.Binding || n.Offered || n.Reason != "not offered: config.browser is false" {
		t.Fatalf("agent browser_snapshot %+v", n)
	}
	if n := native(agent, "secret_request"); n.Group != "Secrets" || native(agent, "secret_store").Group != "Secrets" {
		t.Fatalf("secret tools group %+v", n)
	}
	if n := native(agent, "note_write"); !n.Binding || n.Offered || n.Family != "notes" || !strings.Contains(n.Reason, "not wired") {
		t.Fatalf("unregistered seed tool %+v", n)
	}
	if s := server(org, "coingecko"); s.Enabled || s.DecidedBy != "" || len(s.Tools) != 8 {
		t.Fatalf("org coingecko %+v", s)
	}
	if s := server(guild, "coingecko"); !s.Enabled || s.DecidedBy != "guild" || s.ConnectionID != c.ID || s.ConnectionStatus != "connected" {
		t.Fatalf("guild coingecko %+v", s)
	}
	s := server(agent, "coingecko")
	for _, tl := range s.Tools {
		want := bindings.ToolAccess{Name: tl.Name, Enabled: true, Overlay: "inherit", DecidedBy: "guild"}
		if tl.Name == "coingecko_new" {
			want = bindings.ToolAccess{Name: tl.Name, Enabled: false, Overlay: "off", DecidedBy: "agent"}
		}
		if tl != want {
			t.Fatalf("agent %+v, want %+v", tl, want)
		}
	}
	if g := server(agent, "github"); len(g.Tools) != 0 || g.Note == "" {
		t.Fatalf("github %+v", g)
	}
	if _, err := w.svc.Access(w.ctx, "agent", "a404"); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Fatalf("missing agent: %v", err)
	}
}
