package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/events"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world is an organisation with one agent over a fresh database, and a webhook of the
// organisation on a loopback receiver.
type world struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	box   *sealed.Box
	now   time.Time
	hook  orchestrator.Webhook
	rcv   *counter
}

// counter is a loopback receiver that checks each request's signature and counts each event id.
type counter struct {
	*httptest.Server
	mu     sync.Mutex
	secret []byte
	ids    map[string]int
	order  map[string][]string // run id → its messages' texts, as received
	at     map[string]time.Time
	bad    []string
	notify chan struct{}
}

func newCounter(t testing.TB, secret string) *counter {
	c := &counter{secret: []byte(secret), ids: map[string]int{}, order: map[string][]string{}, at: map[string]time.Time{}, notify: make(chan struct{}, 1)}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now := time.Now()
		var ev struct {
			ID   string `json:"id"`
			Data struct {
				Message struct {
					RunID string `json:"run_id"`
					Text  string `json:"text"`
				} `json:"message"`
			} `json:"data"`
		}
		err := json.Unmarshal(body, &ev)
		c.mu.Lock()
		defer c.mu.Unlock()
		sig := r.Header.Get(events.SignatureHeader)
		var ts int64
		if _, serr := fmt.Sscanf(sig, "t=%d,", &ts); serr != nil || err != nil || events.Signature(c.secret, time.Unix(ts, 0), body) != sig {
			c.bad = append(c.bad, sig)
			w.WriteHeader(400)
			return
		}
		c.ids[ev.ID]++
		c.at[ev.ID] = now
		if run := ev.Data.Message.RunID; run != "" {
			c.order[run] = append(c.order[run], ev.Data.Message.Text)
		}
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{pool: pgtest.NewDB(t), now: time.Now().UTC().Truncate(time.Microsecond)}
	w.store = postgres.NewStore(w.pool)
	box, err := sealed.FromString(sealed.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	w.box = box
	for _, err := range []error{
		w.store.CreateOrg(ctx, orchestrator.Org{ID: "org_1", Name: "Org", CreatedAt: w.now}),
		w.store.CreateGuild(ctx, orchestrator.Guild{ID: "gld_1", OrgID: "org_1", Name: "G", CreatedAt: w.now}),
		w.store.CreateAgent(ctx, orchestrator.Agent{ID: "agt_1", GuildID: "gld_1", Name: "A", Config: orchestrator.DefaultAgentConfig(), CreatedAt: w.now}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	const secret = "whsec_counter_0123456789abcdef"
	w.rcv = newCounter(t, secret)
	admin := &events.Service{Store: w.store, Box: box, AllowPrivate: true}
	url, evs, s := w.rcv.URL, []string{orchestrator.EventGroupPosted}, secret
	if w.hook, err = admin.CreateWebhook(ctx, "org_1", orchestrator.WebhookChange{URL: &url, Events: &evs, Secret: &s}); err != nil {
		t.Fatal(err)
	}
	return w
}

// replica starts an events service on the world's database, as one orchestrator would, until the
// test ends.
func (w *world) replica(t testing.TB) *events.Service {
	svc := &events.Service{Store: w.store, Box: w.box, AllowPrivate: true, RetryBase: 50 * time.Millisecond}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		postgres.Listener{Pool: w.pool, Channel: postgres.EventsChannel}.Listen(ctx, svc.Notify, svc.Live)
	}()
	go func() { defer wg.Done(); svc.Run(ctx) }()
	t.Cleanup(func() { stop(); wg.Wait() })
	return svc
}

// post writes one group.posted event of run (a run of agt_1 it makes when new).
func (w *world) post(t testing.TB, run, text string) {
	t.Helper()
	if _, err := w.store.PostGroupMessage(context.Background(), orchestrator.ChatMessage{GuildID: "gld_1", AgentID: "agt_1", RunID: run, Text: text, CreatedAt: w.now}); err != nil {
		t.Fatal(err)
	}
}

// TestReplicasDeliverEachEventOnce: three replicas delivering one outbox send every event once,
// each run's events in their order.
func TestReplicasDeliverEachEventOnce(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	for range 3 {
		w.replica(t)
	}
	const runs, each = 6, 25
	for r := range runs {
		run := orchestrator.Run{ID: fmt.Sprintf("run_%d", r), AgentID: "agt_1", GuildID: "gld_1", OrgID: "org_1", Kind: orchestrator.KindDirect,
			Status: orchestrator.RunOpen, ToolCallBudget: 10, CreatedAt: w.now}
		if err := w.store.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for r := range runs {
		wg.Go(func() {
			for i := range each {
				w.post(t, fmt.Sprintf("run_%d", r), fmt.Sprint(i))
			}
		})
	}
	wg.Wait()
	deadline := time.After(60 * time.Second)
	for {
		w.rcv.mu.Lock()
		n := len(w.rcv.ids)
		w.rcv.mu.Unlock()
		if n == runs*each {
			break
		}
		select {
		case <-w.rcv.notify:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d of %d events delivered", n, runs*each)
		}
	}
	time.Sleep(200 * time.Millisecond) // a second send of any of them would land by now
	w.rcv.mu.Lock()
	defer w.rcv.mu.Unlock()
	if len(w.rcv.bad) > 0 {
		t.Fatalf("badly signed requests: %v", w.rcv.bad)
	}
	for id, n := range w.rcv.ids {
		if n != 1 {
			t.Fatalf("event %s delivered %d times", id, n)
		}
	}
	for r := range runs {
		got := w.rcv.order[fmt.Sprintf("run_%d", r)]
		for i, text := range got {
			if text != fmt.Sprint(i) {
				t.Fatalf("run_%d's messages arrived as %v", r, got)
			}
		}
	}
}
