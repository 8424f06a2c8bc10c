package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/shared/benchtest"
	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkAskCallApproved times a call of a tool set to Ask that an automated approver approves
// through the API (it lists the agent's pending requests every millisecond until the call's
// appears, then approves it) against the same call of the same tool On for another agent of the
// same guild, alternating in one run, every request over loopback HTTP on one machine. The
// approver's round trip is its part of the wait: from the request's created_at (stamped by the
// orchestrator) to the approver holding the approve request's answer (finding the request, then
// approving it). What Ask adds beyond it is the median of each Ask call less its approver's round
// trip, less the On call's median. Target: at most 2 ms.
func BenchmarkAskCallApproved(b *testing.B) {
	e := newEnv(b, nil)
	s := newAskSetup(e)
	do := benchAPI(b, e)
	var run struct {
		ID string `json:"id"`
	}
	start := func(agent string) string {
		if err := json.Unmarshal(do("POST", "/api/agents/"+agent+"/runs", []byte(`{"kind":"direct","tool_call_budget":100000}`)), &run); err != nil {
			b.Fatal(err)
		}
		return run.ID
	}
	askRun, onRun := start(s.asking), start(s.onAgent)
	body := []byte(`{"name":"echo","arguments":{"text":"pay 0.1 ETH to the supplier"}}`)
	ask := func() {
		var res struct {
			Result string `json:"result"`
		}
		if err := json.Unmarshal(do("POST", "/api/runs/"+askRun+"/calls", body), &res); err != nil || !strings.HasPrefix(res.Result, "pay 0.1 ETH to the supplier\n\nremaining_tool_calls: ") {
			b.Errorf("the approved call answered %q (%v)", res.Result, err)
		}
	}
	benchAskApproved(b, do, s.asking, "through the API", ask, func() { do("POST", "/api/runs/"+onRun+"/calls", body) })
}

// benchAskApproved times ask, a call of a tool set to Ask for agent asking, approved by the
// automated approver through the API (it lists the agent's pending requests every millisecond until
// the call's appears, then approves it), against on, the same call On, alternating in one run, and
// reports what Ask adds beyond the approver's round trip (from the request's created_at to the
// approve request's answer): the median of each Ask call less its round trip, less on's median.
func benchAskApproved(b *testing.B, do func(method, path string, body []byte) []byte, asking, what string, ask, on func()) {
	var residual, roundTrips []time.Duration
	askCall := func() {
		t0 := time.Now()
		answered := make(chan struct{})
		go func() { ask(); close(answered) }()
		var id string
		for id == "" { // the automated approver: look until the request is there
			var list struct {
				Approvals []struct {
					ID string `json:"id"`
				} `json:"approvals"`
			}
			if err := json.Unmarshal(do("GET", "/api/agents/"+asking+"/approvals?status=pending&limit=1", nil), &list); err != nil {
				b.Fatal(err)
			}
			if len(list.Approvals) > 0 {
				id = list.Approvals[0].ID
			} else {
				time.Sleep(time.Millisecond)
			}
		}
		var d struct {
			Status    string    `json:"status"`
			CreatedAt time.Time `json:"created_at"`
		}
		if err := json.Unmarshal(do("POST", "/api/approvals/"+id+"/approve", nil), &d); err != nil || d.Status != "approved" {
			b.Fatalf("approve %s: %+v %v", id, d, err)
		}
		approvedAt := time.Now()
		<-answered
		took, rt := time.Since(t0), approvedAt.Sub(d.CreatedAt)
		residual, roundTrips = append(residual, took-rt), append(roundTrips, rt)
	}
	for range 20 {
		askCall()
		on()
	}
	b.ResetTimer()
	for range b.N {
		residual, roundTrips = residual[:0], roundTrips[:0]
		m := benchtest.Alternate(200, askCall, on)
		askT, onT := m[0], m[1]
		rt, rest := benchtest.Median(roundTrips), benchtest.Median(residual)
		added := rest - onT
		b.ReportMetric(benchtest.MS(askT), "ask_p50_ms")
		b.ReportMetric(benchtest.MS(onT), "on_p50_ms")
		b.ReportMetric(benchtest.MS(rt), "approver_rt_p50_ms")
		b.ReportMetric(benchtest.MS(added), "added_beyond_approver_ms")
		b.ReportMetric(float64(askT)/float64(onT), "x_vs_on")
		b.ReportMetric(float64(rest)/float64(onT), "x_vs_on_less_approver")
		b.Logf("Ask call approved %s: p50 %.3f ms | the same call On: p50 %.3f ms | the approver's round trip (request made to its approve answered): p50 %.3f ms | Ask beyond the approver: %.3f ms added, %.2fx of On; target <= 2 ms added: %s",
			what, benchtest.MS(askT), benchtest.MS(onT), benchtest.MS(rt), benchtest.MS(added), float64(rest)/float64(onT),
			map[bool]string{true: "met", false: "NOT met"}[added <= 2*time.Millisecond])
	}
}

// BenchmarkAskCallApprovedMCP is BenchmarkAskCallApproved through the MCP endpoints with mcp-go's
// client: the asking agent's /mcp session calls echo (Ask at the guild) while the automated
// approver lists the agent's pending requests through the API every millisecond and approves the
// call's; against the same call On, made by the other agent's client on its run's
// /api/runs/{id}/mcp, alternating in one run over loopback HTTP. What Ask adds beyond the
// approver's round trip is the median of each Ask call less its round trip, less the On call's
// median. Target: at most 2 ms.
func BenchmarkAskCallApprovedMCP(b *testing.B) {
	e := newEnv(b, nil)
	s := newAskSetup(e)
	base := e.serve()
	do := apiAt(b, base)
	key := e.must(201, "POST", "/api/agents/"+s.asking+"/keys", map[string]any{"name": "bench"})["key"].(string)
	var run struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(do("POST", "/api/agents/"+s.onAgent+"/runs", []byte(`{"kind":"direct","tool_call_budget":100000}`)), &run); err != nil {
		b.Fatal(err)
	}
	var notes progressLog
	asking, _ := askMCPClient(b, base+"/mcp?kind=direct&tool_call_budget=100000", key, &notes)
	on, _ := askMCPClient(b, base+"/api/runs/"+run.ID+"/mcp", run.Token, &notes)
	ctx := context.Background()
	req := mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "pay 0.1 ETH to the supplier"}}}
	call := func(c *client.Client) {
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			b.Errorf("tools/call: %+v %v", res, err) // Errorf: it runs on the asking goroutine too
		}
	}
	benchAskApproved(b, do, s.asking, "through MCP", func() { call(asking) }, func() { call(on) })
}
