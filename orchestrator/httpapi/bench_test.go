package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// loadResult is what one load phase measured.
type loadResult struct {
	calls     int
	errors    int
	elapsed   time.Duration
	perSecond float64
	p50, p99  time.Duration
	lat       []time.Duration // sorted
}

// merge pools two phases: requests and time add up, percentiles are over all latencies.
func (r loadResult) merge(o loadResult) loadResult {
	m := loadResult{calls: r.calls + o.calls, errors: r.errors + o.errors, elapsed: r.elapsed + o.elapsed}
	m.lat = append(append([]time.Duration(nil), r.lat...), o.lat...)
	slices.Sort(m.lat)
	m.perSecond = float64(m.calls) / m.elapsed.Seconds()
	if len(m.lat) > 0 {
		m.p50 = m.lat[len(m.lat)*50/100]
		m.p99 = m.lat[min(len(m.lat)-1, len(m.lat)*99/100)]
	}
	return m
}

// load runs workers concurrent clients, each sending requests built by mk until dur passes or max
// requests were sent in all, and measures each request's latency.
func load(client *http.Client, workers int, dur time.Duration, max int, mk func(worker int) *http.Request) loadResult {
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	var wg sync.WaitGroup
	sent := make(chan struct{}, max)
	for range max {
		sent <- struct{}{}
	}
	close(sent)
	start := time.Now()
	deadline := start.Add(dur)
	for w := range workers {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			for range sent {
				if time.Now().After(deadline) {
					break
				}
				t0 := time.Now()
				resp, err := client.Do(mk(w))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						bad++
					}
				} else {
					bad++
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	r := loadResult{calls: len(lat), errors: errs, elapsed: elapsed, perSecond: float64(len(lat)) / elapsed.Seconds(), lat: lat}
	if len(lat) > 0 {
		r.p50 = lat[len(lat)*50/100]
		r.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkToolCallRoundTrip measures a tool call over HTTP into PostgreSQL (auth, decode, run
// lock, run read, handler, pipeline, one-transaction insert, JSON answer) under a loopback load
// generator, against GET /healthz (a no-op route) on the same server in the same run. Target:
// at least 1,500 calls/s on 2 cores with p99 at most 20 ms.
func BenchmarkToolCallRoundTrip(b *testing.B) {
	const workers, rounds, phase, maxCalls = 8, 3, 3 * time.Second, 30000
	pool := pgtest.NewDB(b)
	store := postgres.NewStore(pool)
	reg := registry.New()
	reg.MustRegister(registry.Tool{Name: "echo", Family: orchestrator.FamilyNotes, Description: "Echo.",
		Schema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Handler: func(_ context.Context, c *registry.Call) (string, error) { return string(c.Args), nil }})
	log := slog.New(slog.NewJSONHandler(io.Discard, nil)) // production format and level, discarded
	svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: runs.DefaultOffer{}, Log: log}
	app := httpapi.New(guarded(&httpapi.Server{Scopes: store, Runs: svc, Log: log}, store))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer app.Shutdown()
	base := "http://" + ln.Addr().String()

	ctx := context.Background()
	now := time.Now().UTC()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(store.CreateOrg(ctx, orchestrator.Org{ID: "org_b", Name: "b", CreatedAt: now}))
	must(store.CreateGuild(ctx, orchestrator.Guild{ID: "gld_b", OrgID: "org_b", Name: "b", CreatedAt: now}))
	must(store.CreateAgent(ctx, orchestrator.Agent{ID: "agt_b", GuildID: "gld_b", Name: "b", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now}))
	budget := orchestrator.MaxToolCallBudget
	runIDs := make([]string, workers)
	for i := range runIDs {
		run, err := svc.StartRun(ctx, "agt_b", runs.StartRequest{Kind: orchestrator.KindDirect, Budget: &budget})
		must(err)
		runIDs[i] = run.ID
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers,
		DialContext: (&net.Dialer{}).DialContext}}
	body := []byte(`{"name":"echo","arguments":{"text":"hello from the load generator"}}`)
	callReq := func(w int) *http.Request {
		req, _ := http.NewRequest("POST", base+"/api/runs/"+runIDs[w]+"/calls", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	noopReq := func(int) *http.Request {
		req, _ := http.NewRequest("GET", base+"/healthz", nil)
		return req
	}
	b.ResetTimer()
	for range b.N {
		load(client, workers, 500*time.Millisecond, 2000, noopReq) // warm connections and pools
		load(client, workers, 500*time.Millisecond, 2000, callReq)
		// Alternate the two sides so a burst of load from elsewhere on the machine hits both alike.
		var noop, call loadResult
		for range rounds {
			noop = noop.merge(load(client, workers, phase/rounds, maxCalls/rounds, noopReq))
			call = call.merge(load(client, workers, phase/rounds, maxCalls/rounds, callReq))
		}
		if call.errors > 0 || noop.errors > 0 {
			b.Fatalf("%d call and %d no-op requests failed", call.errors, noop.errors)
		}
		b.ReportMetric(call.perSecond, "calls/s")
		b.ReportMetric(ms(call.p50), "call_p50_ms")
		b.ReportMetric(ms(call.p99), "call_p99_ms")
		b.ReportMetric(noop.perSecond, "noop_req/s")
		b.ReportMetric(ms(noop.p50), "noop_p50_ms")
		b.ReportMetric(ms(noop.p99), "noop_p99_ms")
		b.ReportMetric(call.perSecond/noop.perSecond, "x_throughput_vs_noop")
		b.ReportMetric(ms(call.p99)/ms(noop.p99), "x_p99_vs_noop")
		b.Logf("tool call: %.0f calls/s, p50 %.2f ms, p99 %.2f ms (%d calls) | no-op route: %.0f req/s, p50 %.2f ms, p99 %.2f ms | throughput %.2fx of no-op; target >= 1500 calls/s, p99 <= 20 ms: %s",
			call.perSecond, ms(call.p50), ms(call.p99), call.calls, noop.perSecond, ms(noop.p50), ms(noop.p99), call.perSecond/noop.perSecond,
			map[bool]string{true: "met", false: "NOT met"}[call.perSecond >= 1500 && call.p99 <= 20*time.Millisecond])
	}
	var stored int
	must(pool.QueryRow(ctx, "SELECT count(*) FROM tool_calls").Scan(&stored))
	if stored == 0 {
		b.Fatal("no calls stored")
	}
}
