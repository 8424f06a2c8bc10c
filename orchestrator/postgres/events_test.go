package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

// scopes makes org_1, gld_1 and agt_1.
func scopes(t *testing.T, s *postgres.Store) time.Time {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	must(t, s.CreateOrg(ctx, orchestrator.Org{ID: "org_1", Name: "Org", CreatedAt: now}))
	must(t, s.CreateGuild(ctx, orchestrator.Guild{ID: "gld_1", OrgID: "org_1", Name: "G", CreatedAt: now}))
	must(t, s.CreateAgent(ctx, orchestrator.Agent{ID: "agt_1", GuildID: "gld_1", Name: "A", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now}))
	return now
}

// TestEventsPlacedInCommitOrder: an event written first but committed last is placed after the
// one committed before it, so a reader that saw the later-written event and resumes after it still
// gets the one committed late.
func TestEventsPlacedInCommitOrder(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := postgres.NewStore(pool)
	now := scopes(t, s)
	slow, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	if _, err := slow.Exec(ctx, `INSERT INTO events (id, type, org_id, data, created_at) VALUES ('evt_slow', 'group.posted', 'org_1', '{}', $1)`, now); err != nil {
		t.Fatal(err)
	}
	fast, err := s.PostGroupMessage(ctx, orchestrator.ChatMessage{GuildID: "gld_1", Text: "fast", CreatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PlaceEvents(ctx, 100, now); err != nil || n != 1 {
		t.Fatalf("placed %d (%v), want the committed event only", n, err)
	}
	seen, err := s.EventsAfter(ctx, 0, 100)
	if err != nil || len(seen) != 1 || eventText(t, seen[0]) != "fast" {
		t.Fatalf("stream %+v %v", seen, err)
	}
	must(t, slow.Commit(ctx))
	if n, err := s.PlaceEvents(ctx, 100, now); err != nil || n != 1 {
		t.Fatalf("placed %d (%v) after the slow commit", n, err)
	}
	rest, err := s.EventsAfter(ctx, seen[0].Pos, 100)
	if err != nil || len(rest) != 1 || rest[0].ID != "evt_slow" || rest[0].Pos != seen[0].Pos+1 {
		t.Fatalf("resuming after %d (message %d) gave %+v %v", seen[0].Pos, fast.ID, rest, err)
	}
	if last, err := s.LastEventPos(ctx); err != nil || last != rest[0].Pos {
		t.Fatalf("last position %d %v", last, err)
	}
}

func eventText(t *testing.T, ev orchestrator.Event) string {
	var d struct {
		Message struct{ Text string } `json:"message"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d.Message.Text
}

// TestPlacersTakeTurns: writers and several placers at once place every event exactly once, at
// positions 1..n with no gap, each writer's events in the order it wrote them.
func TestPlacersTakeTurns(t *testing.T) {
	ctx := context.Background()
	s := postgres.NewStore(pgtest.NewDB(t))
	now := scopes(t, s)
	const writers, each = 4, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.PostGroupMessage(ctx, orchestrator.ChatMessage{GuildID: "gld_1", Text: fmt.Sprintf("%d/%03d", w, i), CreatedAt: now}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	stop := make(chan struct{})
	var placers sync.WaitGroup
	var mu sync.Mutex
	placed := 0
	for range 3 {
		placers.Go(func() {
			for {
				n, err := s.PlaceEvents(ctx, 7, now)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				placed += n
				mu.Unlock()
				select {
				case <-stop:
					if n == 0 {
						return
					}
				default:
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	placers.Wait()
	if placed != writers*each {
		t.Fatalf("placed %d events in all, want %d", placed, writers*each)
	}
	evs, err := s.EventsAfter(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	last := map[byte]string{}
	for i, ev := range evs {
		if ev.Pos != int64(i+1) {
			t.Fatalf("event %d at position %d", i, ev.Pos)
		}
		text := eventText(t, ev)
		if text <= last[text[0]] {
			t.Fatalf("writer %c's %s placed after its %s", text[0], text, last[text[0]])
		}
		last[text[0]] = text
	}
	if len(evs) != writers*each {
		t.Fatalf("%d events in the stream", len(evs))
	}
}

// TestDeliveriesClaimedOnceInRunOrder: claimers at once take every delivery exactly once, and a
// run's delivery only after its run's earlier one was recorded.
func TestDeliveriesClaimedOnceInRunOrder(t *testing.T) {
	ctx := context.Background()
	s := postgres.NewStore(pgtest.NewDB(t))
	now := scopes(t, s)
	if _, err := s.CreateWebhook(ctx, orchestrator.Webhook{ID: "whk_1", OrgID: "org_1", URL: "https://hooks.example/x", Events: []string{"*"}, Enabled: true, CreatedAt: now}, []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	const runs, each = 8, 6
	for r := range runs {
		run := orchestrator.Run{ID: fmt.Sprintf("run_%d", r), AgentID: "agt_1", GuildID: "gld_1", OrgID: "org_1", Kind: orchestrator.KindDirect,
			Status: orchestrator.RunOpen, ToolCallBudget: 10, CreatedAt: now}
		must(t, s.CreateRun(ctx, run))
		for i := range each - 1 {
			if _, err := s.PostGroupMessage(ctx, orchestrator.ChatMessage{GuildID: "gld_1", AgentID: "agt_1", RunID: run.ID, Text: fmt.Sprint(i), CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := s.PlaceEvents(ctx, 1000, now); err != nil || n != runs*each {
		t.Fatalf("placed %d %v", n, err)
	}
	var mu sync.Mutex
	claimed := map[int64]int{}
	last := map[string]int64{} // the position of each run's latest claimed delivery
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for idle := 0; idle < 20; {
				at := time.Now()
				batch, err := s.ClaimDeliveries(ctx, at, at.Add(time.Minute), 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(batch) == 0 {
					idle++
					time.Sleep(5 * time.Millisecond)
					continue
				}
				idle = 0
				inBatch := map[string]bool{}
				for _, d := range batch {
					mu.Lock()
					claimed[d.ID]++
					if d.Event.Pos < last[d.Event.RunID] || inBatch[d.Event.RunID] {
						t.Errorf("run %s: delivery at %d claimed out of order (after %d, or beside another of its run)", d.Event.RunID, d.Event.Pos, last[d.Event.RunID])
					}
					last[d.Event.RunID], inBatch[d.Event.RunID] = d.Event.Pos, true
					mu.Unlock()
					status := 200
					if err := s.RecordDelivery(ctx, orchestrator.DeliveryOutcome{ID: d.ID, At: time.Now(), Delivered: true, Status: &status}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(claimed) != runs*each {
		t.Fatalf("%d deliveries claimed, want %d", len(claimed), runs*each)
	}
	for id, n := range claimed {
		if n != 1 {
			t.Fatalf("delivery %d claimed %d times", id, n)
		}
	}
}

// TestConnectionDisconnectedReported: a login moving to disconnected is reported once, with its
// reason, its server and owner, and never its credentials.
func TestConnectionDisconnectedReported(t *testing.T) {
	ctx := context.Background()
	s := postgres.NewStore(pgtest.NewDB(t))
	now := scopes(t, s)
	srv := orchestrator.MCPServer{Slug: "plain", Name: "Plain", Kind: orchestrator.ServerRemote, Transport: "http",
		URL: "https://plain.example/mcp", Auth: orchestrator.AuthToken, Published: true}
	must(t, s.SeedCatalog(ctx, []orchestrator.MCPServer{srv}, now))
	srv, err := s.GetServer(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	const key = "plain-api-key-0123456789"
	c, err := s.Connect(ctx, orchestrator.ConnectWrite{Server: srv, Owner: orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: "org_1", GuildID: "gld_1"},
		NewID: "conn_1", AccountHint: "ops@example.com", Seal: func(string) []byte { return []byte(key) }, Verified: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.SetConnectionStatus(ctx, c.ID, orchestrator.ConnDisconnected, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PlaceEvents(ctx, 100, now); err != nil {
		t.Fatal(err)
	}
	evs, err := s.EventsAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []orchestrator.Event
	for _, ev := range evs {
		if ev.Type == orchestrator.EventConnectionDisconnected {
			got = append(got, ev)
		}
	}
	if len(got) != 1 {
		t.Fatalf("disconnecting twice reported %d events", len(got))
	}
	var d struct {
		Reason     string
		Connection struct {
			ID, Server  string
			AccountHint string `json:"account_hint"`
		}
	}
	if err := json.Unmarshal(got[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Reason != orchestrator.DisconnectCredentialsRefused || d.Connection.ID != c.ID || d.Connection.Server != "plain" || d.Connection.AccountHint != "ops@example.com" || got[0].GuildID != "gld_1" || got[0].OrgID != "org_1" {
		t.Fatalf("event %s", got[0].Data)
	}
	if strings.Contains(string(got[0].Data), key) {
		t.Fatalf("the event carries the credentials: %s", got[0].Data)
	}
}
