package httpapi_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/events"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/guildsai/guilds/orchestrator/tools/schedules"
)

// stepClock is the runs' clock: it stands still until a test moves it.
type stepClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *stepClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.at }
func (c *stepClock) Add(d time.Duration) { c.mu.Lock(); c.at = c.at.Add(d); c.mu.Unlock() }

// eventsEnv is the platform API with the outbox delivered: the events service running (woken by
// the database's notices), the runs on a clock the test moves, the guard deciding with the
// bootstrap token as the admin.
type eventsEnv struct {
	*env
	store *postgres.Store
	svc   *runs.Service
	evs   *events.Service
	ids   *identity.Service
	clock *stepClock
	// deliveries is the events service's log.
	deliveries *syncBuffer
}

// eventsOptions vary an eventsEnv: webhooks to private addresses refused, a resolver of its own.
type eventsOptions struct {
	refusePrivate bool
	resolver      events.Resolver
}

func newEventsEnv(t *testing.T, o eventsOptions) *eventsEnv {
	t.Helper()
	e := &eventsEnv{clock: &stepClock{at: time.Now().UTC().Truncate(time.Second)}, deliveries: &syncBuffer{}}
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	e.env = platformEnvWith(t, nil, func(_ *registry.Registry, st *postgres.Store, svc *runs.Service) {
		e.store, e.svc = st, svc
		svc.Now, svc.Messages = e.clock.Now, st
	}, func(srv *httpapi.Server) {
		e.evs = &events.Service{Store: e.store, Box: box, AllowPrivate: !o.refusePrivate, Resolver: o.resolver, RetryBase: 100 * time.Millisecond,
			Log: slog.New(slog.NewJSONHandler(e.deliveries, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		e.ids = &identity.Service{Store: e.store, Box: box, Bootstrap: token}
		e.svc.Tokens = e.ids // runs started here answer their own token
		srv.Events, srv.Webhooks, srv.Identity, srv.Places = e.evs, e.evs, e.ids, e.store
	})
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		postgres.Listener{Pool: e.pool, Channel: postgres.EventsChannel}.Listen(ctx, e.evs.Notify, e.evs.Live)
	}()
	go func() { defer wg.Done(); e.evs.Run(ctx) }()
	t.Cleanup(func() { stop(); wg.Wait() })
	return e
}

// outbox returns every placed event of the stream, in order.
func (e *eventsEnv) outbox() []orchestrator.Event {
	e.t.Helper()
	e.evs.PlaceNow(context.Background())
	evs, err := e.store.EventsAfter(context.Background(), 0, 10000)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// eventData decodes an event's data.
func eventData(t testing.TB, ev orchestrator.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// runClosed returns the reasons of the run.closed events of run in the outbox.
func (e *eventsEnv) closeReasons(run string) []string {
	var out []string
	for _, ev := range e.outbox() {
		if ev.Type == orchestrator.EventRunClosed && ev.RunID == run {
			out = append(out, eventData(e.t, ev)["reason"].(string))
		}
	}
	return out
}

// scheduleFired makes a cron schedule of agent due now and ticks the scheduler on the runs' clock;
// it returns the schedule's id and the run it fired.
func (e *eventsEnv) scheduleFired(agent, instruction string) (string, string) {
	e.t.Helper()
	ctx := context.Background()
	due := e.clock.Now().Add(-time.Second)
	sc, err := e.store.CreateSchedule(ctx, orchestrator.Schedule{ID: orchestrator.NewID(orchestrator.PrefixSchedule), AgentID: agent, Kind: orchestrator.ScheduleCron,
		Cron: "0 3 * * *", Description: "nightly", Instruction: instruction, NextRunAt: &due, CreatedAt: e.clock.Now()})
	if err != nil {
		e.t.Fatal(err)
	}
	if n, err := (&schedules.Scheduler{Store: e.store, Runs: e.svc, Now: e.clock.Now}).Tick(ctx); err != nil || n != 1 {
		e.t.Fatalf("tick: %d %v", n, err)
	}
	firings, err := e.store.ListFirings(ctx, sc.ID)
	if err != nil || len(firings) != 1 {
		e.t.Fatalf("firings %v %v", firings, err)
	}
	return sc.ID, firings[0].RunID
}

// ids lists the "id" of each item of a listing.
func ids(list []any) []string {
	var out []string
	for _, x := range list {
		out = append(out, x.(map[string]any)["id"].(string))
	}
	return out
}

// TestRunsListed: an agent's and a guild's runs list newest first, paged like calls, filtered by
// state, kind and trigger, each with its trigger (the schedule and its instruction, the group
// message) and counts, never a token or the run's snapshot.
func TestRunsListed(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	ctx := context.Background()
	agent := e.must(200, "GET", "/api/agents/"+e.agent(nil), nil)
	id, guild := agent["id"].(string), agent["guild_id"].(string)
	other := e.must(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Bea"})["id"].(string)

	direct := e.run(id, map[string]any{"kind": "direct", "tool_call_budget": 7})
	e.must(200, "POST", "/api/runs/"+direct+"/calls", map[string]any{"name": "say", "arguments": map[string]any{"text": "hi"}})
	e.clock.Add(time.Second)
	m, err := e.store.PostGroupMessage(ctx, orchestrator.ChatMessage{GuildID: guild, Text: "@Ada the build is red", CreatedAt: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	grp := e.must(201, "POST", "/api/agents/"+id+"/runs", map[string]any{"kind": "group", "group_message_id": m.ID})
	if tr := grp["trigger"].(map[string]any); tr["type"] != "group_chat" || tr["message"].(map[string]any)["text"] != "@Ada the build is red" {
		t.Fatalf("group run's trigger %v", tr)
	}
	e.clock.Add(time.Second)
	schedule, fired := e.scheduleFired(id, "Check the **nightly** build.")
	e.clock.Add(time.Second)
	theirs := e.run(other, map[string]any{"kind": "direct"})
	e.must(200, "POST", "/api/runs/"+theirs+"/close", nil)

	page := e.must(200, "GET", "/api/agents/"+id+"/runs", nil)
	if got := ids(page["runs"].([]any)); !slices.Equal(got, []string{fired, grp["id"].(string), direct}) || page["next_after"] != nil {
		t.Fatalf("agent's runs %v next %v", got, page["next_after"])
	}
	raw, _ := json.Marshal(page)
	for _, never := range []string{"token", "offered_tools", `"config"`} {
		if strings.Contains(string(raw), never) {
			t.Fatalf("a listing holds %s: %s", never, raw)
		}
	}
	byID := map[string]map[string]any{}
	for _, r := range page["runs"].([]any) {
		byID[r.(map[string]any)["id"].(string)] = r.(map[string]any)
	}
	s := byID[fired]["trigger"].(map[string]any)
	if s["type"] != "schedule" || s["schedule"].(map[string]any)["id"] != schedule || s["schedule"].(map[string]any)["instruction"] != "Check the **nightly** build." {
		t.Fatalf("fired run's trigger %v", s)
	}
	if d := byID[direct]; d["tool_calls_used"] != 1.0 || d["tool_call_budget"] != 7.0 || d["remaining_tool_calls"] != 6.0 || d["trigger"].(map[string]any)["type"] != "direct" || d["status"] != "open" {
		t.Fatalf("direct run %v", d)
	}

	// Pages of two, then the rest.
	first := e.must(200, "GET", "/api/agents/"+id+"/runs?limit=2", nil)
	if got := ids(first["runs"].([]any)); !slices.Equal(got, []string{fired, grp["id"].(string)}) || first["next_after"] != grp["id"] {
		t.Fatalf("first page %v next %v", got, first["next_after"])
	}
	second := e.must(200, "GET", "/api/agents/"+id+"/runs?limit=2&after="+grp["id"].(string), nil)
	if got := ids(second["runs"].([]any)); !slices.Equal(got, []string{direct}) || second["next_after"] != nil {
		t.Fatalf("second page %v next %v", got, second["next_after"])
	}
	for q, want := range map[string][]string{
		"trigger=schedule":   {fired},
		"trigger=group_chat": {grp["id"].(string)},
		"trigger=direct":     {direct},
		"kind=group":         {grp["id"].(string)},
		"state=closed":       nil,
		"state=open&kind=schedule&trigger=schedule": {fired},
	} {
		if got := ids(e.must(200, "GET", "/api/agents/"+id+"/runs?"+q, nil)["runs"].([]any)); !slices.Equal(got, want) {
			t.Errorf("?%s: %v, want %v", q, got, want)
		}
	}
	all := e.must(200, "GET", "/api/guilds/"+guild+"/runs", nil)["runs"].([]any)
	if got := ids(all); !slices.Equal(got, []string{theirs, fired, grp["id"].(string), direct}) {
		t.Fatalf("guild's runs %v", got)
	}
	closed := e.must(200, "GET", "/api/guilds/"+guild+"/runs?state=closed", nil)["runs"].([]any)
	if len(closed) != 1 || closed[0].(map[string]any)["close_reason"] != "operator" || closed[0].(map[string]any)["closed_at"] == nil {
		t.Fatalf("closed runs %v", closed)
	}

	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/api/agents/agt_nope/runs", 404, "agt_nope"},
		{"/api/guilds/gld_nope/runs", 404, "gld_nope"},
		{"/api/agents/" + id + "/runs?state=idle", 422, "state must be one of open, closed"},
		{"/api/agents/" + id + "/runs?trigger=cron", 422, "trigger must be one of direct, schedule, group_chat"},
		{"/api/agents/" + id + "/runs?kind=chat", 422, "kind must be one of"},
		{"/api/agents/" + id + "/runs?limit=0", 422, "limit must be 1 to 500"},
		{"/api/guilds/" + guild + "/runs?limit=many", 422, "limit must be a whole number"},
		{"/api/agents/" + id + "/runs?after=" + theirs, 422, "names no run of this agent"},
	} {
		if st, out := e.do("GET", tc.path, nil); st != tc.status || !strings.Contains(errMessage(out), tc.want) {
			t.Errorf("GET %s: %d %v, want %d naming %q", tc.path, st, out, tc.status, tc.want)
		}
	}
	// A group message of another guild, or with a kind no group message starts, is refused.
	g2 := e.must(201, "POST", "/api/orgs/"+agent["org_id"].(string)+"/guilds", map[string]any{"name": "Elsewhere"})["id"].(string)
	m2, err := e.store.PostGroupMessage(ctx, orchestrator.ChatMessage{GuildID: g2, Text: "not yours", CreatedAt: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if st, out := e.do("POST", "/api/agents/"+id+"/runs", map[string]any{"kind": "group_chat", "group_message_id": m2.ID}); st != 404 || !strings.Contains(errMessage(out), "not found in guild") {
		t.Fatalf("another guild's message: %d %v", st, out)
	}
	if st, out := e.do("POST", "/api/agents/"+id+"/runs", map[string]any{"kind": "direct", "group_message_id": m.ID}); st != 422 || !strings.Contains(errMessage(out), "kind group or group_chat") {
		t.Fatalf("a direct run with a group message: %d %v", st, out)
	}
}

// TestRunsEndIdleAndMissed: on the runs' clock, a schedule-fired run nobody called within the
// pickup time is closed as missed (its firing says so) while a called one stays; a run without a
// call for the idle time is closed as idle; each close is reported once with its reason, and a
// closed run takes no call.
func TestRunsEndIdleAndMissed(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	e.svc.Idle, e.svc.Pickup = 24*time.Hour, time.Hour
	agent := e.agent(nil)
	direct := e.run(agent, map[string]any{"kind": "direct"})
	missedSchedule, missed := e.scheduleFired(agent, "Nobody will pick this up.")
	_, picked := e.scheduleFired(agent, "This one is picked up.")
	e.clock.Add(59 * time.Minute)
	e.must(200, "POST", "/api/runs/"+picked+"/calls", map[string]any{"name": "say", "arguments": map[string]any{"text": "on it"}})
	if n, err := e.svc.Sweep(context.Background()); err != nil || n != 0 {
		t.Fatalf("sweep before the pickup time: %d %v", n, err)
	}
	e.clock.Add(2 * time.Minute) // 61 minutes after the firings
	if n, err := e.svc.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep after the pickup time closed %d (%v), want the missed run only", n, err)
	}
	if r := e.must(200, "GET", "/api/runs/"+missed, nil); r["status"] != "closed" || r["close_reason"] != "missed" {
		t.Fatalf("missed run %v", r)
	}
	firing := e.must(200, "GET", "/api/agents/"+agent+"/schedules/"+missedSchedule+"/firings", nil)["firings"].([]any)[0].(map[string]any)
	if firing["missed"] != true || firing["close_reason"] != "missed" || firing["run_status"] != "closed" {
		t.Fatalf("the missed run's firing %v", firing)
	}
	for _, open := range []string{direct, picked} {
		if r := e.must(200, "GET", "/api/runs/"+open, nil); r["status"] != "open" {
			t.Fatalf("run %s closed early: %v", open, r)
		}
	}
	// The direct run started 61 minutes ago and was never called; the picked one was called at 59.
	e.clock.Add(24*time.Hour - 60*time.Minute) // 24 h 1 min after the start
	if n, err := e.svc.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep at 24 h closed %d (%v), want the direct run", n, err)
	}
	e.clock.Add(59 * time.Minute) // 24 h 1 min after the picked run's call
	if n, err := e.svc.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep 24 h after the last call closed %d (%v), want the picked run", n, err)
	}
	for _, run := range []string{direct, picked} {
		r := e.must(200, "GET", "/api/runs/"+run, nil)
		if r["status"] != "closed" || r["close_reason"] != "idle" {
			t.Fatalf("idle run %v", r)
		}
		if got := e.closeReasons(run); !slices.Equal(got, []string{"idle"}) {
			t.Fatalf("run %s's run.closed reasons %v", run, got)
		}
	}
	if got := e.closeReasons(missed); !slices.Equal(got, []string{"missed"}) {
		t.Fatalf("missed run's run.closed reasons %v", got)
	}
	if st, out := e.do("POST", "/api/runs/"+direct+"/calls", map[string]any{"name": "say", "arguments": map[string]any{"text": "late"}}); st != 409 {
		t.Fatalf("a call on an idle-closed run: %d %v", st, out)
	}
	// Closing a closed run again keeps its first reason and reports nothing.
	if r := e.must(200, "POST", "/api/runs/"+direct+"/close", nil); r["close_reason"] != "idle" {
		t.Fatalf("closed again: %v", r)
	}
	if got := e.closeReasons(direct); len(got) != 1 {
		t.Fatalf("closing twice reported %v", got)
	}
}

// TestSweepsCloseEachRunOnce: three replicas sweeping the same runs at once close each exactly
// once, counted by their results and by the run.closed events.
func TestSweepsCloseEachRunOnce(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	agent := e.agent(nil)
	const n = 60
	want := map[string]bool{}
	for range n {
		want[e.run(agent, map[string]any{"kind": "direct"})] = true
	}
	e.clock.Add(25 * time.Hour)
	var mu sync.Mutex
	closed := 0
	var wg sync.WaitGroup
	for range 3 {
		replica := &runs.Service{Scopes: e.store, Runs: e.store, Registry: registry.New(), Now: e.clock.Now}
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k, err := replica.Sweep(context.Background())
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				closed += k
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if closed != n {
		t.Fatalf("the sweeps closed %d runs in all, want %d", closed, n)
	}
	reported := map[string]int{}
	for _, ev := range e.outbox() {
		if ev.Type == orchestrator.EventRunClosed {
			reported[ev.RunID]++
		}
	}
	for run := range want {
		if reported[run] != 1 {
			t.Fatalf("run %s reported closed %d times", run, reported[run])
		}
	}
}

// TestDeleteClosesRunsWhenAsked: deleting an agent, guild or organisation with an open run is
// refused with a message naming ?close_runs=true; with it, the runs are closed first (reported
// with the scope's reason) and the scope is deleted.
func TestDeleteClosesRunsWhenAsked(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	for _, tc := range []struct{ level, reason string }{{"agents", "agent_deleted"}, {"guilds", "guild_deleted"}, {"orgs", "org_deleted"}} {
		agent := e.must(200, "GET", "/api/agents/"+e.agent(nil), nil)
		run := e.run(agent["id"].(string), map[string]any{"kind": "direct"})
		id := map[string]string{"agents": agent["id"].(string), "guilds": agent["guild_id"].(string), "orgs": agent["org_id"].(string)}[tc.level]
		st, out := e.do("DELETE", "/api/"+tc.level+"/"+id, nil)
		if st != 409 || !strings.Contains(errMessage(out), run) || !strings.Contains(errMessage(out), "?close_runs=true") {
			t.Fatalf("DELETE %s with an open run: %d %v", tc.level, st, out)
		}
		if st, out := e.do("DELETE", "/api/"+tc.level+"/"+id+"?close_runs=yes", nil); st != 422 || !strings.Contains(errMessage(out), "close_runs must be true or false") {
			t.Fatalf("close_runs=yes: %d %v", st, out)
		}
		e.must(200, "DELETE", "/api/"+tc.level+"/"+id+"?close_runs=true", nil)
		if st, _ := e.do("GET", "/api/agents/"+agent["id"].(string), nil); st != 404 {
			t.Fatalf("agent still there after DELETE %s", tc.level)
		}
		if got := e.closeReasons(run); !slices.Equal(got, []string{tc.reason}) {
			t.Fatalf("DELETE %s?close_runs=true: run.closed reasons %v, want [%s]", tc.level, got, tc.reason)
		}
	}
}

// receipt is one request a webhook receiver took.
type receipt struct {
	ID, Type, RunID string
	Status          int
	Problem         string // why the signature or the body was refused; "" when good
}

// receiver is a webhook receiver on loopback: it checks every request's signature with the
// secret it knows (its own HMAC), answers 500 to its first fail requests, and keeps what it took.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	fail   int
	got    []receipt
	seen   chan struct{}
}

func newReceiver(t *testing.T, secret string, fail int) *receiver {
	r := &receiver{secret: secret, fail: fail, seen: make(chan struct{}, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer func() { r.mu.Unlock(); r.seen <- struct{}{} }()
	rc := receipt{Problem: verify(req.Header.Get("Guilds-Signature"), body, r.secret)}
	var ev struct {
		ID, Type, OrgID string
		CreatedAt       time.Time `json:"created_at"`
		Data            struct {
			Run struct {
				ID string `json:"id"`
			} `json:"run"`
			Message struct {
				RunID string `json:"run_id"`
			} `json:"message"`
		} `json:"data"`
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &ev); err != nil || json.Unmarshal(body, &keys) != nil || len(keys) != 5 || ev.ID == "" || ev.CreatedAt.IsZero() {
		rc.Problem = fmt.Sprintf("body is not one event {id, type, created_at, org_id, data}: %s", body)
	}
	rc.ID, rc.Type, rc.RunID = ev.ID, ev.Type, ev.Data.Run.ID+ev.Data.Message.RunID
	switch {
	case rc.Problem != "":
		rc.Status = 400
	case len(r.got) < r.fail:
		rc.Status = 500
	default:
		rc.Status = 200
	}
	r.got = append(r.got, rc)
	w.WriteHeader(rc.Status)
	fmt.Fprintf(w, "receipt %d", len(r.got))
}

// verify checks a Guilds-Signature header as a receiver would: t within five minutes, and v1 the
// hex HMAC-SHA256 with the secret over "<t>.<body>".
func verify(header string, body []byte, secret string) string {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return "bad or stale t in " + header
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(body)))
	if !hmac.Equal([]byte(sig), []byte(hex.EncodeToString(m.Sum(nil)))) {
		return "signature does not verify: " + header
	}
	return ""
}

// wait blocks until the receiver took n requests (a hang guard, not a speed).
func (r *receiver) wait(t *testing.T, n int) []receipt {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		got := slices.Clone(r.got)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("the receiver took %d requests, want %d: %+v", len(got), n, got)
		}
	}
}

// TestWebhookDeliveredSignedInOrder: a webhook on a real receiver that answers 500 to its first
// two requests gets every event of a run signed, the first one three times under one id, and
// each later event only once the earlier ones were delivered; deliveries list their attempts and
// answers; a redelivery sends the same event id again; the secret is never answered back.
func TestWebhookDeliveredSignedInOrder(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	const secret = "whsec_0123456789abcdef0123456789"
	rcv := newReceiver(t, secret, 2)
	agent := e.must(200, "GET", "/api/agents/"+e.agent(nil), nil)
	org := agent["org_id"].(string)
	hook := e.must(201, "POST", "/api/orgs/"+org+"/webhooks", map[string]any{"url": rcv.URL + "/hooks", "events": []string{"run.started", "run.closed", "group.posted"}, "secret": secret, "description": "runtime"})
	hookID := hook["id"].(string)
	for _, out := range []map[string]any{hook, e.must(200, "GET", "/api/orgs/"+org+"/webhooks/"+hookID, nil), e.must(200, "GET", "/api/orgs/"+org+"/webhooks", nil)} {
		if raw, _ := json.Marshal(out); strings.Contains(string(raw), secret) || strings.Contains(string(raw), `"secret"`) {
			t.Fatalf("the secret was answered back: %s", raw)
		}
	}

	run := e.run(agent["id"].(string), map[string]any{"kind": "direct"})
	for _, text := range []string{"one", "two", "three"} {
		e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "group_post", "arguments": map[string]any{"text": text}})
	}
	e.must(200, "POST", "/api/runs/"+run+"/close", nil)
	got := rcv.wait(t, 7) // 3 attempts of run.started, 3 posts, run.closed

	var order []string
	var want []string
	for _, ev := range e.outbox() {
		if ev.RunID == run {
			want = append(want, ev.ID)
		}
	}
	for _, rc := range got {
		if rc.Problem != "" {
			t.Fatalf("receiver refused a request: %s", rc.Problem)
		}
		if rc.Status == 200 {
			order = append(order, rc.ID)
		}
	}
	if !slices.Equal(order, want) {
		t.Fatalf("delivered in order %v, want the run's events in order %v (requests %+v)", order, want, got)
	}
	if got[0].Type != "run.started" || got[0].ID != got[1].ID || got[1].ID != got[2].ID || got[0].Status != 500 || got[1].Status != 500 || got[2].Status != 200 {
		t.Fatalf("the first event was not retried under one id: %+v", got[:3])
	}

	list := e.must(200, "GET", "/api/orgs/"+org+"/webhooks/"+hookID+"/deliveries", nil)
	ds := list["deliveries"].([]any)
	if len(ds) != 5 || list["next_after"] != nil {
		t.Fatalf("deliveries %v", list)
	}
	first := ds[4].(map[string]any) // newest first
	if first["event_id"] != got[0].ID || first["attempts"] != 3.0 || first["state"] != "delivered" || first["response_status"] != 200.0 || first["response_body"] != "receipt 3" || first["delivered_at"] == nil {
		t.Fatalf("the retried delivery %v", first)
	}
	paged := e.must(200, "GET", fmt.Sprintf("/api/orgs/%s/webhooks/%s/deliveries?limit=2&state=delivered", org, hookID), nil)
	if len(paged["deliveries"].([]any)) != 2 || paged["next_after"] == nil {
		t.Fatalf("a page of 2: %v", paged)
	}

	again := e.must(201, "POST", fmt.Sprintf("/api/orgs/%s/webhooks/%s/deliveries/%d/redeliver", org, hookID, int64(first["id"].(float64))), nil)
	if again["event_id"] != got[0].ID || again["redelivery_of"] != first["id"] || again["state"] != "pending" {
		t.Fatalf("redelivery %v", again)
	}
	if last := rcv.wait(t, 8)[7]; last.ID != got[0].ID || last.Status != 200 {
		t.Fatalf("redelivered %+v, want event %s again", last, got[0].ID)
	}

	// A new secret signs the next deliveries; a disabled webhook gets nothing.
	const secret2 = "whsec_rotated_abcdefabcdefabcdef"
	e.must(200, "PATCH", "/api/orgs/"+org+"/webhooks/"+hookID, map[string]any{"secret": secret2, "events": []string{"run.started"}})
	rcv.mu.Lock()
	rcv.secret = secret2
	rcv.mu.Unlock()
	e.run(agent["id"].(string), map[string]any{"kind": "direct"})
	if rc := rcv.wait(t, 9)[8]; rc.Problem != "" || rc.Type != "run.started" {
		t.Fatalf("after the new secret: %+v", rc)
	}
	off := e.must(200, "PATCH", "/api/orgs/"+org+"/webhooks/"+hookID, map[string]any{"enabled": false})
	if off["enabled"] != false || !slices.Equal(off["events"].([]any), []any{"run.started"}) {
		t.Fatalf("patched %v", off)
	}
	e.run(agent["id"].(string), map[string]any{"kind": "direct"})
	e.evs.PlaceNow(context.Background())
	if n := len(e.must(200, "GET", "/api/orgs/"+org+"/webhooks/"+hookID+"/deliveries?state=pending", nil)["deliveries"].([]any)); n != 0 {
		t.Fatalf("a disabled webhook got %d deliveries", n)
	}

	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"POST", "/api/orgs/" + org + "/webhooks", map[string]any{"url": rcv.URL, "events": []string{"run.started"}}, 422, "secret is required"},
		{"POST", "/api/orgs/" + org + "/webhooks", map[string]any{"url": rcv.URL, "events": []string{"run.begun"}, "secret": secret}, 422, `unknown event type "run.begun"`},
		{"POST", "/api/orgs/" + org + "/webhooks", map[string]any{"url": rcv.URL, "events": []string{}, "secret": secret}, 422, "at least one event type"},
		{"POST", "/api/orgs/" + org + "/webhooks", map[string]any{"url": rcv.URL, "events": []string{"*"}, "secret": "short"}, 422, "secret must be 16 to 512 bytes"},
		{"POST", "/api/orgs/" + org + "/webhooks", map[string]any{"url": "ftp://example.com/x", "events": []string{"*"}, "secret": secret}, 422, "absolute http or https URL"},
		{"POST", "/api/orgs/" + org + "/webhooks", map[string]any{"url": "https://user:pw@example.com/x", "events": []string{"*"}, "secret": secret}, 422, "must not carry credentials"},
		{"POST", "/api/orgs/org_nope/webhooks", map[string]any{"url": rcv.URL, "events": []string{"*"}, "secret": secret}, 404, "org_nope"},
		{"GET", "/api/orgs/org_nope/webhooks", nil, 404, "org_nope"},
		{"GET", "/api/orgs/" + org + "/webhooks/whk_nope", nil, 404, "whk_nope"},
		{"PATCH", "/api/orgs/" + org + "/webhooks/whk_nope", map[string]any{"enabled": true}, 404, "whk_nope"},
		{"PATCH", "/api/orgs/" + org + "/webhooks/" + hookID, map[string]any{"events": []string{"nope"}}, 422, "unknown event type"},
		{"GET", "/api/orgs/" + org + "/webhooks/" + hookID + "/deliveries?state=lost", nil, 422, "state must be pending, delivered or failed"},
		{"GET", "/api/orgs/" + org + "/webhooks/whk_nope/deliveries", nil, 404, "whk_nope"},
		{"POST", "/api/orgs/" + org + "/webhooks/" + hookID + "/deliveries/999999/redeliver", nil, 404, "delivery 999999"},
		{"DELETE", "/api/orgs/" + org + "/webhooks/whk_nope", nil, 404, "whk_nope"},
	} {
		if st, out := e.do(tc.method, tc.path, tc.body); st != tc.status || !strings.Contains(errMessage(out), tc.want) {
			t.Errorf("%s %s: %d %v, want %d naming %q", tc.method, tc.path, st, out, tc.status, tc.want)
		}
	}
	e.must(200, "DELETE", "/api/orgs/"+org+"/webhooks/"+hookID, nil)
	if st, _ := e.do("GET", "/api/orgs/"+org+"/webhooks/"+hookID, nil); st != 404 {
		t.Fatalf("a deleted webhook answers %d", st)
	}
}

// switchResolver answers every name with the addresses it holds now.
type switchResolver struct {
	mu    sync.Mutex
	addrs []netip.Addr
}

func (r *switchResolver) set(a string) {
	r.mu.Lock()
	r.addrs = []netip.Addr{netip.MustParseAddr(a)}
	r.mu.Unlock()
}
func (r *switchResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.addrs), nil
}

// TestWebhookRefusesPrivateAddresses: without GUILDS_WEBHOOK_ALLOW_PRIVATE a webhook URL that
// reaches this box, a private, link-local or CGNAT range is refused at registration; a name that
// resolved to a public address then and to loopback at delivery (DNS rebinding) is refused at
// delivery, and nothing reaches the loopback receiver.
func TestWebhookRefusesPrivateAddresses(t *testing.T) {
	res := &switchResolver{}
	e := newEventsEnv(t, eventsOptions{refusePrivate: true, resolver: res})
	rcv := newReceiver(t, "whsec_0123456789abcdef0123456789", 0)
	agent := e.must(200, "GET", "/api/agents/"+e.agent(nil), nil)
	org := agent["org_id"].(string)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(rcv.URL, "http://"))
	body := func(url string) map[string]any {
		return map[string]any{"url": url, "events": []string{"*"}, "secret": "whsec_0123456789abcdef0123456789"}
	}
	for url, why := range map[string]string{
		rcv.URL:                           "a loopback address of this box",
		"http://[::1]:" + port + "/":      "a loopback address of this box",
		"http://0.0.0.0:" + port + "/":    "an unspecified address",
		"http://10.1.2.3/hook":            "10.0.0.0/8",
		"http://192.168.1.10/hook":        "192.168.0.0/16",
		"http://169.254.169.254/latest":   "169.254.0.0/16",
		"http://[::ffff:172.16.0.9]/hook": "172.16.0.0/12",
		"https://[fd00::1]/hook":          "fc00::/7",
	} {
		st, out := e.do("POST", "/api/orgs/"+org+"/webhooks", body(url))
		if st != 422 || !strings.Contains(errMessage(out), why) || !strings.Contains(errMessage(out), "GUILDS_WEBHOOK_ALLOW_PRIVATE") {
			t.Errorf("%s: %d %v, want 422 naming %q and the way out", url, st, out, why)
		}
	}
	res.set("100.64.7.7")
	if st, out := e.do("POST", "/api/orgs/"+org+"/webhooks", body("https://hooks.example.test/x")); st != 422 || !strings.Contains(errMessage(out), "100.64.0.0/10") {
		t.Fatalf("a name in CGNAT: %d %v", st, out)
	}

	// Public at registration, this box at delivery.
	res.set("93.184.216.34")
	hook := e.must(201, "POST", "/api/orgs/"+org+"/webhooks", body("http://hooks.example.test:"+port+"/x"))
	res.set("127.0.0.1")
	e.run(agent["id"].(string), map[string]any{"kind": "direct"})
	path := "/api/orgs/" + org + "/webhooks/" + hook["id"].(string) + "/deliveries"
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds := e.must(200, "GET", path, nil)["deliveries"].([]any)
		if len(ds) == 1 && ds[0].(map[string]any)["attempts"].(float64) >= 1 && ds[0].(map[string]any)["error"] != "" {
			d := ds[0].(map[string]any)
			if !strings.Contains(d["error"].(string), "resolves to 127.0.0.1, a loopback address") || d["state"] != "pending" || d["response_status"] != nil {
				t.Fatalf("the rebound delivery %v", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refused attempt recorded: %v", ds)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.got) != 0 {
		t.Fatalf("the loopback receiver was reached: %+v", rcv.got)
	}
}

// sseEvent is one event read from the live stream.
type sseEvent struct {
	ID, Type string
	Event    map[string]any
}

// stream is an open GET /api/events read by a plain HTTP client.
type stream struct {
	resp   *http.Response
	events chan sseEvent
}

// openStream opens the live stream of the server at base (followed by a query when it has one)
// with the given headers.
func openStream(t *testing.T, base string, header map[string]string) *stream {
	t.Helper()
	u, q, _ := strings.Cut(base, "?")
	if q != "" {
		q = "?" + q
	}
	req, _ := http.NewRequest("GET", u+"/api/events"+q, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	s := &stream{resp: resp, events: make(chan sseEvent, 1000)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Event)
			case line == "" && ev.ID != "":
				s.events <- ev
				ev = sseEvent{}
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// next returns the stream's next event (a hang guard fails the test after 30 s).
func (s *stream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event on the stream within 30 s")
	}
	return sseEvent{}
}

// serve serves app on a loopback port until the test ends and returns its base URL.
func serve(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(10 * time.Second) })
	return "http://" + ln.Addr().String()
}

// TestEventStreamResumes: the live stream, read by a plain HTTP client, carries each event with
// its position, type and body as it happens; a client that reconnects with Last-Event-ID gets the
// events it missed, once, and nothing before; an invalid Last-Event-ID or type is refused.
func TestEventStreamResumes(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	base := serve(t, e.app)
	auth := map[string]string{"Authorization": "Bearer " + token}
	agent := e.agent(nil)
	before := e.run(agent, map[string]any{"kind": "direct"}) // happened before the stream opened: not sent
	e.outbox()

	s := openStream(t, base, auth)
	run := e.run(agent, map[string]any{"kind": "direct"})
	e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "group_post", "arguments": map[string]any{"text": "hello"}})
	started, posted := s.next(t), s.next(t)
	if started.Type != "run.started" || started.Event["type"] != "run.started" || started.Event["data"].(map[string]any)["run"].(map[string]any)["id"] != run {
		t.Fatalf("first event %+v (the run started before the stream was %s)", started, before)
	}
	if posted.Type != "group.posted" || posted.Event["data"].(map[string]any)["message"].(map[string]any)["text"] != "hello" {
		t.Fatalf("second event %+v", posted)
	}
	s.resp.Body.Close()

	// While nobody listens.
	e.must(200, "POST", "/api/runs/"+run+"/close", nil)
	later := e.run(agent, map[string]any{"kind": "schedule"})
	resumed := openStream(t, base, map[string]string{"Authorization": auth["Authorization"], "Last-Event-ID": posted.ID})
	closed, next := resumed.next(t), resumed.next(t)
	if closed.Type != "run.closed" || closed.Event["data"].(map[string]any)["reason"] != "operator" || next.Type != "run.started" ||
		next.Event["data"].(map[string]any)["run"].(map[string]any)["id"] != later {
		t.Fatalf("resumed with %+v then %+v", closed, next)
	}
	if a, _ := strconv.Atoi(posted.ID); a >= mustAtoi(t, closed.ID) {
		t.Fatalf("positions go backwards: %s then %s", posted.ID, closed.ID)
	}
	// ?types narrows it; after= stands for Last-Event-ID.
	narrow := openStream(t, base+"?types=run.closed&after=0", auth)
	if ev := narrow.next(t); ev.Type != "run.closed" || ev.ID != closed.ID {
		t.Fatalf("?types=run.closed&after=0 gave %+v first, want %s", ev, closed.ID)
	}

	for _, tc := range []struct {
		path   string
		header string
		want   string
	}{
		{"/api/events", "forty-two", "Last-Event-ID (or after) must be the id of an event"},
		{"/api/events?after=-3", "", "Last-Event-ID (or after) must be the id of an event"},
		{"/api/events?types=run.begun", "", `unknown event type \"run.begun\"`},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if tc.header != "" {
			req.Header.Set("Last-Event-ID", tc.header)
		}
		resp, err := e.app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		checkLive(t, req, nil, resp.StatusCode, resp.Header, raw)
		if resp.StatusCode != 422 || !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s (Last-Event-ID %q): %d %s", tc.path, tc.header, resp.StatusCode, raw)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestShutdownEndsStreams: an open stream does not hold the server's shutdown: it ends at once.
func TestShutdownEndsStreams(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.app.Listener(ln) }()
	s := openStream(t, "http://"+ln.Addr().String(), map[string]string{"Authorization": "Bearer " + token})
	e.run(e.agent(nil), map[string]any{"kind": "direct"})
	if ev := s.next(t); ev.Type != "run.started" {
		t.Fatalf("stream gave %+v", ev)
	}
	done := make(chan error, 1)
	go func() { done <- e.app.ShutdownWithTimeout(time.Minute) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second): // far above normal, far below the minute it would wait
		t.Fatal("an open stream held the shutdown")
	}
	if _, ok := <-s.events; ok {
		t.Fatal("the stream still gives events after the shutdown")
	}
	<-served
}

// TestEventStreamShowsWhatThePrincipalMaySee: a guild's viewer sees its guild's events and not
// another guild's, nor the secret events a viewer may not read; an organisation's operator sees
// every event of the organisation; an agent's key sees its agent's events only, a run's token its
// run's.
func TestEventStreamShowsWhatThePrincipalMaySee(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	ctx := context.Background()
	mine := e.must(200, "GET", "/api/agents/"+e.agent(nil), nil)
	org, guild := mine["org_id"].(string), mine["guild_id"].(string)
	g2 := e.must(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Elsewhere"})["id"].(string)
	theirs := e.must(201, "POST", "/api/guilds/"+g2+"/agents", map[string]any{"name": "Zed"})["id"].(string)
	sibling := e.must(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Sib"})["id"].(string)

	person := func(email string, at orchestrator.Chain, role string) string {
		a, err := e.ids.CreateAccount(ctx, identity.NewAccount{Email: email, Name: email})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.ids.SetMember(ctx, at, a.ID, role); err != nil {
			t.Fatal(err)
		}
		s, err := e.ids.OpenSession(ctx, a, "127.0.0.1", "test")
		if err != nil {
			t.Fatal(err)
		}
		return httpapi.SessionCookie + "=" + s.Cookie
	}
	viewer := person("viewer@example.com", orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: org, GuildID: guild}, orchestrator.RoleViewer)
	operator := person("operator@example.com", orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: org}, orchestrator.RoleOperator)
	key, err := e.ids.MintAgentKey(ctx, identity.Principal{Kind: orchestrator.CredentialBootstrap, Admin: true},
		orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: org, GuildID: guild, AgentID: mine["id"].(string)}, "runtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, e.app)
	streams := map[string]*stream{
		"viewer":   openStream(t, base, map[string]string{"Cookie": viewer}),
		"operator": openStream(t, base, map[string]string{"Cookie": operator}),
		"key":      openStream(t, base, map[string]string{"Authorization": "Bearer " + key.Key}),
	}

	started := e.must(201, "POST", "/api/agents/"+mine["id"].(string)+"/runs", map[string]any{"kind": "direct"}) // my agent: all of them
	r1 := started["id"].(string)
	// The run's own token follows that run only (from the stream's start: after=0).
	streams["run token"] = openStream(t, base+"?after=0", map[string]string{"Authorization": "Bearer " + started["token"].(string)})
	r2 := e.run(sibling, map[string]any{"kind": "direct"}) // my guild: viewer and operator
	r3 := e.run(theirs, map[string]any{"kind": "direct"})  // another guild: the operator
	e.must(200, "POST", "/api/runs/"+r1+"/calls", map[string]any{"name": "secret_request", "arguments": map[string]any{"name": "DEPLOY_KEY", "reason": "to deploy"}})
	last := e.run(mine["id"].(string), map[string]any{"kind": "direct"}) // the end marker of the others
	e.must(200, "POST", "/api/runs/"+r1+"/close", nil)                   // the run token's end marker

	want := map[string][]string{
		"viewer":    {"run.started " + r1, "run.started " + r2, "run.started " + last},
		"operator":  {"run.started " + r1, "run.started " + r2, "run.started " + r3, "secret.requested " + r1, "run.started " + last},
		"key":       {"run.started " + r1, "secret.requested " + r1, "run.started " + last},
		"run token": {"run.started " + r1, "secret.requested " + r1, "run.closed " + r1},
	}
	for who, s := range streams {
		var got []string
		end := "run.started " + last
		if who == "run token" {
			end = "run.closed " + r1
		}
		for len(got) == 0 || got[len(got)-1] != end {
			ev := s.next(t)
			run := ev.Event["data"].(map[string]any)
			if r, ok := run["run"].(map[string]any); ok {
				got = append(got, ev.Type+" "+r["id"].(string))
			} else {
				got = append(got, ev.Type+" "+run["request"].(map[string]any)["run_id"].(string))
			}
		}
		if !slices.Equal(got, want[who]) {
			t.Errorf("%s saw %v, want %v", who, got, want[who])
		}
	}
	// The agent's key lists its agent's runs, and no other agent's or guild's.
	get := func(path, header, value string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set(header, value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for path, want := range map[string]int{"/api/agents/" + mine["id"].(string) + "/runs": 200, "/api/agents/" + sibling + "/runs": 404, "/api/guilds/" + guild + "/runs": 404} {
		if st := get(path, "Authorization", "Bearer "+key.Key); st != want {
			t.Errorf("agent key GET %s: %d, want %d", path, st, want)
		}
	}
	for path, want := range map[string]int{"/api/guilds/" + guild + "/runs": 200, "/api/guilds/" + g2 + "/runs": 404, "/api/orgs/" + org + "/webhooks": 403} {
		if st := get(path, "Cookie", viewer); st != want {
			t.Errorf("guild viewer GET %s: %d, want %d", path, st, want)
		}
	}
	if st := get("/api/orgs/"+org+"/webhooks", "Cookie", operator); st != 200 {
		t.Errorf("org operator lists webhooks: %d", st)
	}
}

// TestEventsWrittenWithWhatTheyReport: the platform tools' events are written in their call's
// transaction (a refused call leaves none), secret events name the secret and never carry its
// value, and the operator's answer to a request is reported.
func TestEventsWrittenWithWhatTheyReport(t *testing.T) {
	e := newEventsEnv(t, eventsOptions{})
	agent := e.agent(nil)
	run := e.run(agent, map[string]any{"kind": "direct"})
	call := func(name string, args map[string]any) {
		e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": name, "arguments": args})
	}
	call("secret_request", map[string]any{"name": "DEPLOY_KEY", "reason": "to deploy the site"})
	call("report_issue", map[string]any{"kind": "api", "message": "the registry answered 502"})
	call("group_post", map[string]any{"text": "deployed"})
	call("group_post", map[string]any{"text": ""}) // refused: nothing is posted, nothing reported
	const value = "s3cret-deploy-key-value-42"
	e.must(200, "PUT", "/api/agents/"+agent+"/secrets/DEPLOY_KEY", map[string]any{"value": value})

	var types []string
	for _, ev := range e.outbox() {
		types = append(types, ev.Type)
		if strings.Contains(string(ev.Data), value) {
			t.Fatalf("event %s carries the secret's value: %s", ev.Type, ev.Data)
		}
		d := eventData(t, ev)
		switch ev.Type {
		case "secret.requested", "secret.answered":
			r := d["request"].(map[string]any)
			if r["name"] != "DEPLOY_KEY" || r["run_id"] != run || ev.RunID != run || ev.AgentID != agent {
				t.Fatalf("%s %v", ev.Type, d)
			}
		case "issue.reported":
			if d["issue"].(map[string]any)["message"] != "the registry answered 502" {
				t.Fatalf("issue event %v", d)
			}
		}
	}
	if want := []string{"run.started", "secret.requested", "issue.reported", "group.posted", "secret.answered"}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
}
