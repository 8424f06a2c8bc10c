package records_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/records"
	"github.com/jackc/pgx/v5/pgxpool"
)

// benchRecords is the size of the benchmark collection.
const benchRecords = 100000

// benchReps is how many timed calls each side makes.
const benchReps = 40

// benchWorld is a collection of 100,000 tasks granted to agent a1's guild.
type benchWorld struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	reg   *registry.Registry
	agent orchestrator.Agent
	coll  orchestrator.Collection
}

func newBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	ctx := context.Background()
	pool := pgtest.NewDB(b)
	store := postgres.NewStore(pool)
	now := time.Now().UTC().Truncate(time.Microsecond)
	a := orchestrator.Agent{ID: "a1", GuildID: "g1", OrgID: "o1", Name: "a1", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{
		store.CreateOrg(ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}),
		store.CreateGuild(ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}),
		store.CreateAgent(ctx, a),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	coll, err := store.CreateCollection(ctx, orchestrator.Collection{Name: "tasks", Level: orchestrator.LevelOrg, OrgID: "o1", Columns: taskColumns, CreatedAt: now})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.PutCollectionGrant(ctx, orchestrator.CollectionGrant{CollectionID: coll.ID, GuildID: "g1", Access: orchestrator.AccessWrite, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	// 100,000 tasks whose words, statuses, priorities and dates spread over the collection; the
	// stored form is the one record_add writes (data, search_text, unique_value).
	_, err = pool.Exec(ctx, `
		WITH w AS (SELECT ARRAY['parser','benchmark','release','kubernetes','login','report','offsite','schema','cache','index',
			'migration','dashboard','invoice','backup','latency','upgrade','review','deploy','payment','search'] AS words)
		INSERT INTO records (id, collection_id, data, search_text, unique_value, created_at, updated_at)
		SELECT 'rec_' || lpad(i::text, 8, '0'), $1, d, concat_ws(E'\n', d->>'title', d->>'status', d->>'priority', d->>'due', d->>'owner', d->'tags'->>0, d->>'ref'),
			d->>'ref', t, t
		FROM (SELECT i, timestamptz '2026-01-01' + i * interval '1 minute' AS t,
			jsonb_build_object(
				'title', initcap(w.words[1 + (i * 7) % 20]) || ' ' || w.words[1 + (i * 13) % 20] || ' ' || w.words[1 + (i / 20) % 20] || ' ' || i,
				'status', (ARRAY['open', 'closed', 'in review', 'blocked'])[1 + i % 4],
				'priority', i % 10,
				'due', to_char(timestamptz '2026-01-01' + (i % 365) * interval '1 day', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
				'done', i % 7 = 0,
				'owner', 'agt_' || (i % 50),
				'tags', jsonb_build_array(w.words[1 + (i * 3) % 20]),
				'ref', 'T-' || i) AS d
			FROM generate_series(1, $2::int) AS i, w) s`, coll.ID, benchRecords)
	if err != nil {
		b.Fatal(err)
	}
	// The vocabulary record_add keeps: words of 3+ characters with a letter, from text and text[] values.
	_, err = pool.Exec(ctx, `INSERT INTO record_words (collection_id, word)
		SELECT DISTINCT $1, w FROM records r, regexp_split_to_table(lower(concat_ws(' ', r.data->>'title', r.data->>'status', r.data->'tags'->>0, r.data->>'ref')), '[^[:alnum:]]+') AS w
		WHERE r.collection_id = $1 AND length(w) >= 3 AND w ~ '[[:alpha:]]'
		ON CONFLICT DO NOTHING`, coll.ID)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE records, record_words"); err != nil {
		b.Fatal(err)
	}
	reg := registry.New()
	if err := (&records.Tools{Store: store}).Register(reg); err != nil {
		b.Fatal(err)
	}
	return &benchWorld{ctx: ctx, pool: pool, reg: reg, agent: a, coll: coll}
}

// invoke calls a record tool the way a run does.
func (w *benchWorld) invoke(b *testing.B, tool, args string) string {
	out, err := w.reg.Invoke(w.ctx, tool, &registry.Call{AgentID: w.agent.ID, GuildID: w.agent.GuildID, OrgID: w.agent.OrgID, Args: json.RawMessage(args), Meta: map[string]any{}})
	if err != nil {
		b.Fatalf("%s %s: %v", tool, args, err)
	}
	return out
}

// rawSQL runs the query's SQL directly, the statement QueryRecords sends, and reads the rows.
func (w *benchWorld) rawSQL(b *testing.B, q orchestrator.RecordQuery, where string, args []any, order string) int {
	counted := "NULL::bigint"
	if q.Count {
		counted = "count(*) OVER ()"
	}
	rows, err := w.pool.Query(w.ctx, "SELECT r.id, r.data, r.created_at, r.updated_at, r.collection_id, "+counted+" FROM records r WHERE "+where+
		" ORDER BY "+order+fmt.Sprintf(" LIMIT %d OFFSET %d", q.Limit, q.Offset), args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, cid string
		var data []byte
		var c, u time.Time
		var total *int64
		if err := rows.Scan(&id, &data, &c, &u, &cid, &total); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}

func median(d []time.Duration) float64 {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// compare times the tool call and the raw SQL alternately, benchReps times each, and reports the medians and their ratio.
func compare(b *testing.B, w *benchWorld, label, tool, args string, q orchestrator.RecordQuery) {
	q, err := postgres.NewStore(w.pool).ResolveSpelling(w.ctx, q) // the tool does this lookup on every call
	if err != nil {
		b.Fatal(err)
	}
	where, sqlArgs := postgres.RecordQuerySQL(q)
	order := postgres.RecordOrder(q)
	for range 3 { // warm the caches and the connection pool on both sides
		w.invoke(b, tool, args)
		w.rawSQL(b, q, where, sqlArgs, order)
	}
	var viaTool, viaSQL []time.Duration
	for range benchReps {
		start := time.Now()
		w.invoke(b, tool, args)
		viaTool = append(viaTool, time.Since(start))
		start = time.Now()
		w.rawSQL(b, q, where, sqlArgs, order)
		viaSQL = append(viaSQL, time.Since(start))
	}
	t, r := median(viaTool), median(viaSQL)
	b.ReportMetric(t, "median_ms")
	b.ReportMetric(r, "sql_median_ms")
	b.ReportMetric(t/r, "x_vs_sql")
	b.Logf("%s on %d records: tool %.2f ms, same SQL direct %.2f ms (median of %d), %.2fx", label, benchRecords, t, r, benchReps, t/r)
}

// threeTerms are the where terms of both benchmarks: exact values, a range, and a substring.
const threeTerms = `{"status":["open","in review"],"priority":{"gte":2,"lte":6},"title":"parser"}`

// BenchmarkRecordList: record_list with three where terms on 100,000 records, against its SQL run directly.
func BenchmarkRecordList(b *testing.B) {
	w := newBenchWorld(b)
	q, problems := records.BuildList(w.coll, json.RawMessage(threeTerms), "", "", "", 0, 0)
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	b.ResetTimer()
	for range b.N {
		compare(b, w, "record_list, 3 where terms", "record_list", `{"collection":"tasks","where":`+threeTerms+`}`, q)
	}
}

// BenchmarkRecordSearch: record_search (websearch words) narrowed by three where terms on 100,000 records, against its SQL run directly.
func BenchmarkRecordSearch(b *testing.B) {
	w := newBenchWorld(b)
	q, problems := records.BuildList(w.coll, json.RawMessage(threeTerms), "", "", "", 0, 0)
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	q.Count, q.Search = false, "parser or release"
	b.ResetTimer()
	for range b.N {
		compare(b, w, "record_search, words + 3 where terms", "record_search", `{"query":"parser or release","collection":"tasks","where":`+threeTerms+`}`, q)
	}
}
