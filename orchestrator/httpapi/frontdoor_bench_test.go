package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// benchDoor is an API on a loopback port over a fresh database, with tools native tools
// registered (echo and tools-1 more), and one open run offering them.
type benchDoor struct {
	base  string
	runID string
	hc    *http.Client
}

func newBenchDoor(b *testing.B, tools int) *benchDoor {
	pool := pgtest.NewDB(b)
	store := postgres.NewStore(pool)
	reg := registry.New()
	reg.MustRegister(registry.Tool{Name: "echo", Family: orchestrator.FamilyNotes, Description: "Echo.",
		Schema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Handler: func(_ context.Context, c *registry.Call) (string, error) { return string(c.Args), nil }})
	for i := 1; i < tools; i++ {
		reg.MustRegister(registry.Tool{Name: fmt.Sprintf("tool_%02d", i), Family: orchestrator.FamilyNotes,
			Description: fmt.Sprintf("Tool number %d of the benchmark: reads a record by key and answers it as text.", i),
			Schema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string","description":"the record's key"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"how many, default 20"}},"required":["key"]}`),
			Handler: func(context.Context, *registry.Call) (string, error) { return "ok", nil }})
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil)) // production format and level, discarded
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: runs.DefaultOffer{}, Log: log}
	app := httpapi.New(guarded(&httpapi.Server{Scopes: store, Runs: svc, Log: log}, store))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	b.Cleanup(func() { _ = app.Shutdown() })
	ctx := context.Background()
	now := time.Now().UTC()
	for _, err := range []error{
		store.CreateOrg(ctx, orchestrator.Org{ID: "org_b", Name: "b", CreatedAt: now}),
		store.CreateGuild(ctx, orchestrator.Guild{ID: "gld_b", OrgID: "org_b", Name: "b", CreatedAt: now}),
		store.CreateAgent(ctx, orchestrator.Agent{ID: "agt_b", GuildID: "gld_b", Name: "b", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now}),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	budget := orchestrator.MaxToolCallBudget
	run, err := svc.StartRun(ctx, "agt_b", runs.StartRequest{Kind: orchestrator.KindDirect, Budget: &budget})
	if err != nil {
		b.Fatal(err)
	}
	if len(run.OfferedTools) < tools {
		b.Fatalf("the run offers %d tools, want %d", len(run.OfferedTools), tools)
	}
	return &benchDoor{base: "http://" + ln.Addr().String(), runID: run.ID, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}}
}

// send makes one request with the operator token and fails unless it answers 200 holding want.
func (d *benchDoor) send(b *testing.B, method, path, sid string, body []byte, want string) {
	req, _ := http.NewRequest(method, d.base+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(raw, []byte(want)) {
		b.Fatalf("%s %s: %d %.300s", method, path, resp.StatusCode, raw)
	}
}

// open starts an MCP session on the run.
func (d *benchDoor) open(b *testing.B) string {
	body, _ := json.Marshal(initialize(1))
	req, _ := http.NewRequest("POST", d.base+"/api/runs/"+d.runID+"/mcp", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		b.Fatalf("initialize: %d", resp.StatusCode)
	}
	return sid
}

// medianOf times f n times and answers the median.
func medianOf(n int, f func(i int)) time.Duration {
	lat := make([]time.Duration, n)
	for i := range n {
		t0 := time.Now()
		f(i)
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	return lat[n/2]
}

// BenchmarkFrontDoorCall: one client calls a native tool over MCP (tools/call in one session, a
// JSON answer) and over REST (POST /api/runs/{id}/calls with a call_id, as the MCP call has one),
// alternating in rounds, in one run on one server. Target: MCP at most 1.1x REST (median).
func BenchmarkFrontDoorCall(b *testing.B) {
	const rounds, per = 5, 200
	d := newBenchDoor(b, 1)
	sid := d.open(b)
	seq := 0
	rest := func(int) {
		seq++
		d.send(b, "POST", "/api/runs/"+d.runID+"/calls", "", fmt.Appendf(nil, `{"name":"echo","call_id":"rest-%d","arguments":{"text":"hello"}}`, seq), "remaining_tool_calls")
	}
	viaMCP := func(int) {
		seq++
		d.send(b, "POST", "/api/runs/"+d.runID+"/mcp", sid, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`, seq), "remaining_tool_calls")
	}
	b.ResetTimer()
	for range b.N {
		medianOf(per, rest) // warm connections, pools and caches
		medianOf(per, viaMCP)
		var restLat, mcpLat []time.Duration
		for range rounds {
			restLat = append(restLat, medianOf(per, rest))
			mcpLat = append(mcpLat, medianOf(per, viaMCP))
		}
		slices.Sort(restLat)
		slices.Sort(mcpLat)
		r, m := restLat[rounds/2], mcpLat[rounds/2]
		ratio := float64(m) / float64(r)
		b.ReportMetric(ms(r), "rest_call_ms")
		b.ReportMetric(ms(m), "mcp_call_ms")
		b.ReportMetric(ratio, "x_mcp_vs_rest")
		b.Logf("native call, median of %d rounds of %d: REST %.3f ms, MCP %.3f ms: %.3fx; target <= 1.1x: %s",
			rounds, per, ms(r), ms(m), ratio, map[bool]string{true: "met", false: "NOT met"}[ratio <= 1.1])
	}
}

// BenchmarkFrontDoorToolsList: tools/list of a 60-tool run against reading the run (GET
// /api/runs/{id}, which carries the same offer), alternating in rounds. Target: at most 2 ms added.
func BenchmarkFrontDoorToolsList(b *testing.B) {
	const rounds, per = 5, 200
	d := newBenchDoor(b, 60)
	sid := d.open(b)
	read := func(int) { d.send(b, "GET", "/api/runs/"+d.runID, "", nil, "tool_59") }
	list := func(i int) {
		d.send(b, "POST", "/api/runs/"+d.runID+"/mcp", sid, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i), "tool_59")
	}
	b.ResetTimer()
	for range b.N {
		medianOf(per, read)
		medianOf(per, list)
		var readLat, listLat []time.Duration
		for range rounds {
			readLat = append(readLat, medianOf(per, read))
			listLat = append(listLat, medianOf(per, list))
		}
		slices.Sort(readLat)
		slices.Sort(listLat)
		r, l := readLat[rounds/2], listLat[rounds/2]
		added := ms(l - r)
		b.ReportMetric(ms(r), "read_run_ms")
		b.ReportMetric(ms(l), "tools_list_ms")
		b.ReportMetric(added, "added_ms")
		b.ReportMetric(float64(l)/float64(r), "x_list_vs_read")
		b.Logf("60-tool run, median of %d rounds of %d: GET the run %.3f ms, tools/list %.3f ms: %+.3f ms (%.2fx); target <= 2 ms added: %s",
			rounds, per, ms(r), ms(l), added, float64(l)/float64(r), map[bool]string{true: "met", false: "NOT met"}[added <= 2])
	}
}
