package records_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/postgres/recordquery"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/records"
	"github.com/jackc/pgx/v5"
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
	if err := loadTasks(ctx, pool, coll, benchRecords); err != nil {
		b.Fatal(err)
	}
	reg := registry.New()
	if err := (&records.Tools{Store: store}).Register(reg); err != nil {
		b.Fatal(err)
	}
	return &benchWorld{ctx: ctx, pool: pool, reg: reg, agent: a, coll: coll}
}

// benchWords are the words of the benchmark's titles and tags.
var benchWords = []string{"parser", "benchmark", "release", "kubernetes", "login", "report", "offsite", "schema", "cache", "index",
	"migration", "dashboard", "invoice", "backup", "latency", "upgrade", "review", "deploy", "payment", "search"}

// benchTask is task i of the benchmark collection: words, statuses, priorities and dates spread
// over the collection (a title word is "parser" in about one record in ten).
func benchTask(i int) map[string]any {
	title := benchWords[(i*7)%20]
	return map[string]any{
		"title":    strings.ToUpper(title[:1]) + title[1:] + " " + benchWords[(i*13)%20] + " " + benchWords[(i/20)%20] + " " + strconv.Itoa(i),
		"status":   []string{"open", "closed", "in review", "blocked"}[i%4],
		"priority": float64(i % 10),
		"due":      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%365).Format(orchestrator.DatetimeLayout),
		"done":     i%7 == 0,
		"owner":    "agt_" + strconv.Itoa(i%50),
		"tags":     []any{benchWords[(i*3)%20]},
		"ref":      "T-" + strconv.Itoa(i),
	}
}

// loadTasks writes n tasks into coll in bulk, in the stored form record_add writes (data,
// search_text, unique_value, index terms, and the collection's spelling words and stored words),
// and analyzes the tables.
func loadTasks(ctx context.Context, pool *pgxpool.Pool, coll orchestrator.Collection, n int) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE load (id text, data jsonb, search_text text, unique_value text, at timestamptz, lexemes text[])`); err != nil {
		return err
	}
	spelling, vocab, keys := map[string]bool{}, map[string]bool{}, map[string]bool{}
	rows := make([][]any, 0, n)
	for i := 1; i <= n; i++ {
		data := benchTask(i)
		w := records.Write(coll, data)
		ix := recordquery.Terms(coll, data)
		for _, s := range w.Words {
			spelling[s] = true
		}
		for _, s := range ix.Words {
			vocab[s] = true
		}
		for _, s := range ix.Keys {
			keys[s] = true
		}
		doc, err := json.Marshal(data)
		if err != nil {
			return err
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		rows = append(rows, []any{fmt.Sprintf("rec_%08d", i), string(doc), w.SearchText, *w.UniqueValue, at, ix.Lexemes})
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"load"}, []string{"id", "data", "search_text", "unique_value", "at", "lexemes"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `INSERT INTO records (id, collection_id, data, search_text, unique_value, created_at, updated_at, terms)
		SELECT id, $1, data, search_text, unique_value, at, at, array_to_tsvector(lexemes) FROM load ORDER BY at`, coll.ID); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `WITH w AS (INSERT INTO record_words (collection_id, word) SELECT $1, unnest($2::text[])),
		v AS (INSERT INTO record_vocab (collection_id, word) SELECT $1, unnest($3::text[]))
		INSERT INTO record_keys (collection_id, key) SELECT $1, unnest($4::text[])`, coll.ID, sortedSet(spelling), sortedSet(vocab), sortedSet(keys)); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "VACUUM ANALYZE records, record_words, record_vocab, record_keys")
	return err
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
	q, err := recordquery.Resolve(w.ctx, w.pool, q) // the tool does this lookup on every call
	if err != nil {
		b.Fatal(err)
	}
	where, sqlArgs := recordquery.Where(q)
	order := recordquery.Order(q)
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

// BenchmarkRecordAdd: the cost index terms add to record_add on a collection of 100,000 records.
// After: the store's add (index terms, stored words and keys included) with migration 0202's
// schema; before: the statements the store sent before 0202 (spelling words, then the record),
// run on the same database once 0202's column, index and tables are dropped. The two sides run
// one after the other (the schema changes in between), so the load may differ between them.
func BenchmarkRecordAdd(b *testing.B) {
	w := newBenchWorld(b)
	store := postgres.NewStore(w.pool)
	n := benchRecords
	next := func() orchestrator.RecordWrite {
		n++
		data := benchTask(n)
		data["ref"] = "B-" + strconv.Itoa(n)
		return records.Write(w.coll, data)
	}
	keep := func(map[string]any) orchestrator.RecordWrite {
		b.Fatal("unexpected merge")
		return orchestrator.RecordWrite{}
	}
	b.ResetTimer()
	for range b.N {
		var after, before, viaTool []time.Duration
		for range 3 { // warm up
			if _, _, err := store.AddRecord(w.ctx, w.coll, next(), keep, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		for range benchReps {
			start := time.Now()
			if _, _, err := store.AddRecord(w.ctx, w.coll, next(), keep, time.Now()); err != nil {
				b.Fatal(err)
			}
			after = append(after, time.Since(start))
			n++
			task := benchTask(n)
			task["ref"] = "C-" + strconv.Itoa(n)
			body, _ := json.Marshal(task)
			start = time.Now()
			w.invoke(b, "record_add", `{"collection":"tasks","body":`+string(body)+`}`)
			viaTool = append(viaTool, time.Since(start))
		}
		for _, sql := range []string{"ALTER TABLE records DROP COLUMN terms", "DROP TABLE record_vocab, record_keys", "VACUUM ANALYZE records"} {
			if _, err := w.pool.Exec(w.ctx, sql); err != nil {
				b.Fatal(err)
			}
		}
		for range 3 + benchReps {
			start := time.Now()
			if err := addBefore0202(w, next()); err != nil {
				b.Fatal(err)
			}
			before = append(before, time.Since(start))
		}
		before = before[3:]
		a, o, t := median(after), median(before), median(viaTool)
		b.ReportMetric(a, "add_median_ms")
		b.ReportMetric(o, "add_before_0202_median_ms")
		b.ReportMetric(a/o, "x_vs_before")
		b.ReportMetric(t, "tool_add_median_ms")
		b.Logf("record_add on %d records: store add %.2f ms with index terms, %.2f ms before 0202 (median of %d each), %.2fx; through the tool %.2f ms",
			benchRecords, a, o, benchReps, a/o, t)
	}
}

// addBefore0202 is the store's add of a record with a unique value as it was before migration
// 0202: the spelling words, then the record unless a live one holds the value.
func addBefore0202(w *benchWorld, rw orchestrator.RecordWrite) error {
	data, err := json.Marshal(rw.Data)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(w.ctx, w.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(w.ctx, "INSERT INTO record_words (collection_id, word) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING", w.coll.ID, rw.Words); err != nil {
			return err
		}
		_, err := tx.Exec(w.ctx, `INSERT INTO records AS r (id, collection_id, data, search_text, unique_value, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			ON CONFLICT (collection_id, unique_value) WHERE deleted_at IS NULL AND unique_value IS NOT NULL DO NOTHING
			RETURNING r.id, r.data, r.created_at, r.updated_at`, orchestrator.NewID(orchestrator.PrefixRecord), w.coll.ID, data, rw.SearchText, *rw.UniqueValue, time.Now())
		return err
	})
}
