package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

// TestRecordsBeforeIndexTerms: a record written before migration 0202 is still found by every
// where form (it is read, not narrowed away), and its next write gives it real index terms.
func TestRecordsBeforeIndexTerms(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	if _, err := pool.Exec(ctx, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"); err != nil {
		t.Fatal(err)
	}
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	run := func(before bool) {
		for _, m := range ms {
			if (m.Version < "0202") == before {
				if _, err := pool.Exec(ctx, m.SQL); err != nil {
					t.Fatalf("%s: %v", m.Version, err)
				}
			}
		}
	}
	run(true)
	// A collection and a record as the store wrote them before 0202.
	if _, err := pool.Exec(ctx, `INSERT INTO orgs (id, name) VALUES ('o1', 'O');
		INSERT INTO artifacts (id, kind, level, org_id, key, spec) VALUES ('art_0123456789', 'collection', 'org', 'o1', 'tasks',
			'[{"name":"title","type":"text"},{"name":"n","type":"number"},{"name":"tags","type":"text[]"}]');
		INSERT INTO records (id, collection_id, data, search_text, created_at, updated_at)
			VALUES ('rec_old', 'art_0123456789', '{"title":"Old parser","n":4,"tags":["legacy"]}', E'Old parser\n4\nlegacy', now(), now());
		INSERT INTO record_words (collection_id, word) VALUES ('art_0123456789', 'old'), ('art_0123456789', 'parser'), ('art_0123456789', 'legacy')`); err != nil {
		t.Fatal(err)
	}
	run(false)
	var terms string
	if err := pool.QueryRow(ctx, "SELECT terms::text FROM records WHERE id = 'rec_old'").Scan(&terms); err != nil {
		t.Fatal(err)
	}
	if terms != "'456789:n:~' '456789:tags:~' '456789:title:~'" {
		t.Fatalf("terms of a record from before 0202: %s", terms)
	}
	store := postgres.NewStore(pool)
	coll, err := store.GetCollection(ctx, "art_0123456789")
	if err != nil {
		t.Fatal(err)
	}
	list := func(where ...orchestrator.RecordFilter) int {
		t.Helper()
		total, _, err := store.QueryRecords(ctx, orchestrator.RecordQuery{Collections: map[string]string{coll.ID: coll.Name}, Where: where, Limit: 10, Count: true})
		if err != nil {
			t.Fatal(err)
		}
		return total
	}
	check := func(when string) {
		t.Helper()
		for _, tc := range []struct {
			f    orchestrator.RecordFilter
			want int
		}{
			{orchestrator.RecordFilter{Column: "title", Type: orchestrator.ColText, Op: orchestrator.FilterMatch, Text: "pars"}, 1},
			{orchestrator.RecordFilter{Column: "title", Type: orchestrator.ColText, Op: orchestrator.FilterMatch, Text: "other"}, 0},
			{orchestrator.RecordFilter{Column: "title", Type: orchestrator.ColText, Op: orchestrator.FilterIn, Values: []any{"Old parser"}}, 1},
			{orchestrator.RecordFilter{Column: "n", Type: orchestrator.ColNumber, Op: orchestrator.FilterRange, Gte: 3.0, Lte: 5.0}, 1},
			{orchestrator.RecordFilter{Column: "n", Type: orchestrator.ColNumber, Op: orchestrator.FilterIn, Values: []any{5.0}}, 0},
			{orchestrator.RecordFilter{Column: "tags", Type: orchestrator.ColTextList, Op: orchestrator.FilterMatch, Text: "legac"}, 1},
		} {
			if got := list(tc.f); got != tc.want {
				t.Errorf("%s: where %+v: total %d, want %d", when, tc.f, got, tc.want)
			}
		}
	}
	check("before its next write")
	_, err = store.UpdateRecord(ctx, coll, "rec_old", func(cur map[string]any) (orchestrator.RecordWrite, error) {
		return orchestrator.RecordWrite{Data: cur, SearchText: "Old parser\n4\nlegacy"}, nil
	}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, "SELECT terms::text FROM records WHERE id = 'rec_old'").Scan(&terms); err != nil {
		t.Fatal(err)
	}
	if terms != "'456789:n:#c010000000000000' '456789:tags:wlegacy' '456789:title:=Old parser' '456789:title:wOld' '456789:title:wparser'" {
		t.Fatalf("terms after a write: %s", terms)
	}
	check("after its next write")
}
