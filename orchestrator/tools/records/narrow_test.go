package records_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/recordquery"
	"github.com/guildsai/guilds/orchestrator/tools/records"
)

// narrowWords are the words of the random records: ASCII, digits, mixed case, and letters whose
// case folding differs between Go and PostgreSQL (ß, the Kelvin sign, dotted İ).
var narrowWords = []string{"parser", "Parser", "PARSERS", "reparse", "kubernetes", "Kubernetis", "login", "log1n", "2026",
	"straße", "STRASSE", "\u212Aelvin", "İstanbul", "istanbul", "café", "cafe", "x", "ab", "abc", "release", "rel-ease", "v2.0"}

// TestNarrowingKeepsEveryMatch: on random records (some written before index terms existed, some
// with words too long to index), every random where term finds through the index exactly what the
// exact test alone finds, with the same total.
func TestNarrowingKeepsEveryMatch(t *testing.T) {
	w := newWorld(t)
	coll := w.collection("tasks", "g1", taskColumns...)
	rng := rand.New(rand.NewPCG(7, 11))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	statuses := []string{"open", "closed", "in review", "it's", `back\slash`, "Open"}
	for i := range 240 {
		body := map[string]any{"title": pick(narrowWords) + " " + pick(narrowWords) + fmt.Sprintf(" %d", i), "ref": fmt.Sprintf("T-%d", i)}
		if i%17 == 0 {
			body["title"] = body["title"].(string) + " " + strings.Repeat("parser", 40) // a word too long to index
		}
		if rng.IntN(5) > 0 {
			body["status"] = pick(statuses)
		}
		if rng.IntN(5) > 0 {
			body["priority"] = []float64{-3, -0.5, 0, 1, 2, 2.5, 3, 7, 1e6, -1e-9}[rng.IntN(10)]
		}
		if rng.IntN(4) > 0 {
			body["due"] = fmt.Sprintf("2026-%02d-%02dT%02d:00:00Z", 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24))
		}
		if rng.IntN(3) > 0 {
			body["done"] = rng.IntN(2) == 0
		}
		if rng.IntN(3) > 0 {
			body["owner"] = fmt.Sprintf("agt_%d", rng.IntN(5))
		}
		if rng.IntN(3) > 0 {
			body["tags"] = []string{pick(narrowWords), pick(narrowWords)}
		}
		doc, _ := json.Marshal(body)
		w.ok(w.a1, "record_add", `{"collection":"tasks","body":`+string(doc)+`}`)
	}
	// Records written before migration 0202 carry the unindexed marker of every column.
	if _, err := w.pool.Exec(w.ctx, `UPDATE records r SET terms = array_to_tsvector(ARRAY(
		SELECT right(r.collection_id, 6) || ':' || (c->>'name') || ':~' FROM artifacts a, jsonb_array_elements(a.spec) c WHERE a.id = r.collection_id))
		WHERE r.id IN (SELECT id FROM records ORDER BY id LIMIT 25)`); err != nil {
		t.Fatal(err)
	}
	store := postgres.NewStore(w.pool)
	terms := []func() string{
		func() string {
			s := pick(narrowWords)
			if n := len([]rune(s)); n > 3 && rng.IntN(2) == 0 { // an inner part of a word
				r := []rune(s)
				a := rng.IntN(n - 2)
				s = string(r[a : a+2+rng.IntN(n-a-1)])
			}
			if rng.IntN(3) == 0 {
				s = strings.ToUpper(s)
			}
			if rng.IntN(4) == 0 {
				s += " " + pick(narrowWords)
			}
			return `"title":` + jsonString(s)
		},
		func() string { // one edit away from a stored word: matched by similar spelling
			r := []rune(pick(narrowWords))
			for len(r) < 2 {
				r = []rune(pick(narrowWords))
			}
			i := rng.IntN(len(r))
			switch rng.IntN(4) {
			case 0:
				r[i] = 'q'
			case 1:
				r = append(r[:i:i], r[i+1:]...)
			case 2:
				r = append(r[:i:i], append([]rune{'z'}, r[i:]...)...)
			default:
				if i+1 < len(r) {
					r[i], r[i+1] = r[i+1], r[i]
				}
			}
			return `"title":` + jsonString(string(r))
		},
		func() string { return `"tags":` + jsonString(pick(narrowWords)) },
		func() string { return `"status":` + jsonString(pick(statuses)) },
		func() string {
			return `"status":[` + jsonString(pick(statuses)) + `,` + jsonString(pick(statuses)) + `]`
		},
		func() string { return fmt.Sprintf(`"priority":%v`, []float64{-3, 0, 2, 2.5, 4}[rng.IntN(5)]) },
		func() string {
			return fmt.Sprintf(`"priority":{"gte":%v,"lte":%v}`, []float64{-5, -0.5, 0, 2}[rng.IntN(4)], []float64{-1, 0, 2.5, 7, 1e9}[rng.IntN(5)])
		},
		func() string { return fmt.Sprintf(`"priority":{"gte":%v}`, []float64{-1e-9, 1, 3}[rng.IntN(3)]) },
		func() string {
			return fmt.Sprintf(`"due":{"gte":"2026-%02d-01","lte":"2026-%02d-15T12:00:00Z"}`, 1+rng.IntN(6), 4+rng.IntN(8))
		},
		func() string { return `"due":{"lte":"2026-02-10"}` },
		func() string { return fmt.Sprintf(`"done":%v`, rng.IntN(2) == 0) },
		func() string { return fmt.Sprintf(`"owner":["agt_%d","agt_%d"]`, rng.IntN(5), rng.IntN(5)) },
		func() string { return `"due":null` },
		func() string { return `"tags":null` },
	}
	narrowed, found := 0, 0
	for range 300 {
		n := 1 + rng.IntN(3)
		var parts []string
		seen := map[string]bool{}
		for len(parts) < n {
			p := terms[rng.IntN(len(terms))]()
			col := strings.SplitN(p, ":", 2)[0]
			if !seen[col] {
				seen[col] = true
				parts = append(parts, p)
			}
		}
		where := "{" + strings.Join(parts, ",") + "}"
		q, problems := records.BuildList(coll, json.RawMessage(where), "", "", "", 100, 0)
		if len(problems) > 0 {
			t.Fatalf("where %s: %v", where, problems)
		}
		q, err := recordquery.Resolve(w.ctx, w.pool, q)
		if err != nil {
			t.Fatal(err)
		}
		plain := q
		plain.Where = slices.Clone(q.Where)
		for i := range plain.Where {
			if len(plain.Where[i].Narrow) > 0 {
				narrowed++
			}
			plain.Where[i].Narrow = nil
		}
		got, want := matchingIDs(t, w, q), matchingIDs(t, w, plain)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("where %s: through the index %d records %v, exact test alone %d records %v", where, len(got), got, len(want), want)
		}
		total, recs, err := store.QueryRecords(w.ctx, q)
		if err != nil || total != len(want) || len(recs) != min(len(want), 100) {
			t.Fatalf("where %s: total %d (%d records), want %d: %v", where, total, len(recs), len(want), err)
		}
		if len(want) > 0 {
			found++
		}
	}
	if narrowed < 200 || found < 100 {
		t.Fatalf("too few narrowed terms (%d) or non-empty results (%d): the test proves little", narrowed, found)
	}
}

// matchingIDs runs a prepared query's WHERE directly and returns the ids it selects, sorted.
func matchingIDs(t *testing.T, w *world, q orchestrator.RecordQuery) []string {
	t.Helper()
	where, args := recordquery.Where(q)
	rows, err := w.pool.Query(w.ctx, "SELECT r.id FROM records r WHERE "+where+" ORDER BY r.id", args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
