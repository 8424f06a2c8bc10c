package records_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/postgres/recordquery"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/records"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world is organisation o1 with guilds g1 (agents a1, a2) and g2 (agent b1), over a real PostgreSQL.
type world struct {
	t          *testing.T
	ctx        context.Context
	pool       *pgxpool.Pool
	store      *postgres.Store
	reg        *registry.Registry
	a1, a2, b1 orchestrator.Agent
	clock      time.Time
}

func newWorld(t *testing.T) *world {
	t.Helper()
	pool := pgtest.NewDB(t)
	w := &world{t: t, ctx: context.Background(), pool: pool, store: postgres.NewStore(pool), reg: registry.New(),
		clock: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	now := time.Now().UTC().Truncate(time.Microsecond)
	agent := func(id, guild string) orchestrator.Agent {
		return orchestrator.Agent{ID: id, GuildID: guild, OrgID: "o1", Name: id, Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}
	}
	w.a1, w.a2, w.b1 = agent("a1", "g1"), agent("a2", "g1"), agent("b1", "g2")
	must(t, w.store.CreateOrg(w.ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}))
	must(t, w.store.CreateGuild(w.ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G1", CreatedAt: now}))
	must(t, w.store.CreateGuild(w.ctx, orchestrator.Guild{ID: "g2", OrgID: "o1", Name: "G2", CreatedAt: now}))
	for _, a := range []orchestrator.Agent{w.a1, w.a2, w.b1} {
		must(t, w.store.CreateAgent(w.ctx, a))
	}
	var mu sync.Mutex
	tools := &records.Tools{Store: w.store, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		w.clock = w.clock.Add(time.Minute) // every write one minute after the last
		return w.clock
	}}
	must(t, tools.Register(w.reg))
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// collection creates a collection: an organisation table when guild is "", else that guild's own.
func (w *world) collection(name, guild string, cols ...orchestrator.Column) orchestrator.Collection {
	w.t.Helper()
	must(w.t, orchestrator.ValidateCollection(name, cols))
	c := orchestrator.Collection{Name: name, Level: orchestrator.LevelOrg, OrgID: "o1", Columns: cols, CreatedAt: time.Now().UTC()}
	if guild != "" {
		c.Level, c.GuildID = orchestrator.LevelGuild, guild
	}
	c, err := w.store.CreateCollection(w.ctx, c)
	must(w.t, err)
	return c
}

func (w *world) grant(c orchestrator.Collection, agent, guild, access string) {
	w.t.Helper()
	_, err := w.store.PutCollectionGrant(w.ctx, orchestrator.CollectionGrant{CollectionID: c.ID, AgentID: agent, GuildID: guild, Access: access, UpdatedAt: time.Now()})
	must(w.t, err)
}

func (w *world) call(a orchestrator.Agent, tool, args string) (string, error) {
	return w.reg.Invoke(w.ctx, tool, &registry.Call{AgentID: a.ID, GuildID: a.GuildID, OrgID: a.OrgID, Args: json.RawMessage(args), Meta: map[string]any{}})
}

// ok runs a call that must succeed and decodes its JSON answer.
func (w *world) ok(a orchestrator.Agent, tool, args string) map[string]any {
	w.t.Helper()
	out, err := w.call(a, tool, args)
	if err != nil {
		w.t.Fatalf("%s %s as %s: %v", tool, args, a.ID, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		w.t.Fatalf("%s answer is not JSON: %q", tool, out)
	}
	return m
}

func (w *world) fails(a orchestrator.Agent, tool, args, code string, want ...string) {
	w.t.Helper()
	out, err := w.call(a, tool, args)
	if err == nil {
		w.t.Fatalf("%s %s as %s: want %s, got %q", tool, args, a.ID, code, out)
	}
	if orchestrator.ErrorCode(err) != code {
		w.t.Fatalf("%s %s as %s: code %s, want %s: %v", tool, args, a.ID, orchestrator.ErrorCode(err), code, err)
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			w.t.Fatalf("%s %s as %s: error %q does not say %q", tool, args, a.ID, err, s)
		}
	}
}

// ids lists the value of column col of each record of an answer, in order.
func ids(m map[string]any, col string) []string {
	var out []string
	for _, r := range m["records"].([]any) {
		out = append(out, fmt.Sprint(r.(map[string]any)[col]))
	}
	return out
}

var taskColumns = []orchestrator.Column{
	{Name: "title", Type: orchestrator.ColText, Required: true},
	{Name: "status", Type: orchestrator.ColText},
	{Name: "priority", Type: orchestrator.ColNumber},
	{Name: "due", Type: orchestrator.ColDatetime},
	{Name: "done", Type: orchestrator.ColBoolean},
	{Name: "owner", Type: orchestrator.ColID},
	{Name: "tags", Type: orchestrator.ColTextList},
	{Name: "ref", Type: orchestrator.ColText, Unique: true},
}

func TestReach(t *testing.T) {
	w := newWorld(t)
	org := w.collection("tasks", "", taskColumns...)
	own := w.collection("g1-log", "g1", orchestrator.Column{Name: "line", Type: orchestrator.ColText, Required: true})
	addTask := `{"collection":"tasks","body":{"title":"x"}}`
	addLog := `{"collection":"g1-log","body":{"line":"x"}}`
	// Ungranted organisation table: 404 for everyone, and the error names what the agent can reach.
	w.fails(w.a1, "record_list", `{"collection":"tasks"}`, orchestrator.ENOTFOUND, `collection "tasks" not found (404); your collections are g1-log`)
	w.fails(w.b1, "record_add", addTask, orchestrator.ENOTFOUND, "no collection is granted to you")
	// The guild's own table: its agents write, other guilds' agents do not see it.
	w.ok(w.a1, "record_add", addLog)
	w.ok(w.a2, "record_list", `{"collection":"g1-log"}`)
	w.fails(w.b1, "record_list", `{"collection":"g1-log"}`, orchestrator.ENOTFOUND, "not found (404)")
	// Guild read on the organisation table: read, and a write is 403.
	w.grant(org, "", "g1", orchestrator.AccessRead)
	w.ok(w.a1, "record_list", `{"collection":"tasks"}`)
	w.fails(w.a1, "record_add", addTask, orchestrator.EFORBIDDEN, "read-only for you (403)")
	w.fails(w.a1, "record_remove", `{"collection":"tasks","id":"rec_x"}`, orchestrator.EFORBIDDEN, "(403)")
	w.fails(w.b1, "record_list", `{"collection":"tasks"}`, orchestrator.ENOTFOUND, "(404)")
	// Guild write: agents of g1 add.
	w.grant(org, "", "g1", orchestrator.AccessWrite)
	w.ok(w.a1, "record_add", addTask)
	// An agent's own row decides over its guild's: none keeps a2 out, read makes b1 a reader.
	w.grant(org, "a2", "", orchestrator.AccessNone)
	w.fails(w.a2, "record_list", `{"collection":"tasks"}`, orchestrator.ENOTFOUND, "(404)")
	w.fails(w.a2, "record_search", `{"query":"x","collection":"tasks"}`, orchestrator.ENOTFOUND, "(404)")
	w.grant(org, "b1", "", orchestrator.AccessRead)
	w.ok(w.b1, "record_list", `{"collection":"tasks"}`)
	w.fails(w.b1, "record_update", `{"collection":"tasks","id":"rec_x","body":{"title":"y"}}`, orchestrator.EFORBIDDEN, "(403)")
	// ...also on the guild's own table: a2 read-only there, b1 invited to write.
	w.grant(own, "a2", "", orchestrator.AccessRead)
	w.fails(w.a2, "record_add", addLog, orchestrator.EFORBIDDEN, "(403)")
	w.grant(own, "b1", "", orchestrator.AccessWrite)
	// b1 is not in g1: the guild table is not among the tables it may name.
	w.fails(w.b1, "record_add", addLog, orchestrator.ENOTFOUND, "(404)")
	// Searching without collection covers only what is readable: a2 sees the guild log, not tasks.
	got := w.ok(w.a2, "record_search", `{"query":"x"}`)
	if cs := ids(got, "collection"); len(cs) != 1 || cs[0] != "g1-log" {
		t.Fatalf("a2 search covers %v, want only g1-log", cs)
	}
	got = w.ok(w.a1, "record_search", `{"query":"x"}`)
	if cs := ids(got, "collection"); len(cs) != 2 {
		t.Fatalf("a1 search covers %v, want tasks and g1-log", cs)
	}
}

func TestAddRejectsEveryProblemAtOnce(t *testing.T) {
	w := newWorld(t)
	w.collection("tasks", "g1", taskColumns...)
	w.fails(w.a1, "record_add", `{"collection":"tasks","body":{"titel":"x","priority":"high","due":"next week","done":"yes","owner":"a b","tags":"x"}}`,
		orchestrator.EINVALID,
		"record rejected (422)",
		`unknown column "titel" (the columns of tasks are title (text), status (text)`,
		`priority (number) must be a number, got the string "high"`,
		`due (datetime) must be an ISO 8601 timestamp`,
		`done (boolean) must be true or false`,
		`owner (id) must be 1 to 200 bytes without spaces`,
		`tags (text[]) must be an array of strings`,
		`title (text) is required`)
	w.fails(w.a1, "record_add", `{"collection":"tasks","body":{"title":null}}`, orchestrator.EINVALID, "title is required and cannot be null")
	w.fails(w.a1, "record_add", `{"collection":"tasks","body":{"title":"x","tags":["a",3]}}`, orchestrator.EINVALID, "tags (text[]) item 1 must be a string")
	if got := w.ok(w.a1, "record_list", `{"collection":"tasks"}`); got["total"].(float64) != 0 {
		t.Fatalf("a rejected add wrote a record: %v", got)
	}
	rec := w.ok(w.a1, "record_add", `{"collection":"tasks","body":{"title":"Ship","priority":2,"due":"2026-03-05T10:00:00+02:00","done":false,"owner":"agt_1","tags":["release"],"status":null}}`)["record"].(map[string]any)
	if !strings.HasPrefix(rec["id"].(string), "rec_") || rec["collection"] != "tasks" || rec["due"] != "2026-03-05T08:00:00.000000Z" || rec["priority"].(float64) != 2 {
		t.Fatalf("record: %v", rec)
	}
	if _, ok := rec["status"]; ok {
		t.Fatalf("a null on add stored a value: %v", rec)
	}
}

// seedTasks adds six tasks and returns their ids by title.
func seedTasks(w *world, a orchestrator.Agent) map[string]string {
	out := map[string]string{}
	for _, body := range []string{
		`{"title":"Kubernetes upgrade","status":"open","priority":1,"due":"2026-03-01","done":false,"owner":"agt_1","tags":["infra","urgent"],"ref":"T-1"}`,
		`{"title":"Write the parser","status":"open","priority":3,"due":"2026-03-10","done":false,"owner":"agt_2","tags":["code"],"ref":"T-2"}`,
		`{"title":"Parser benchmarks","status":"in review","priority":2,"due":"2026-04-01","done":false,"owner":"agt_2","tags":["code","perf"],"ref":"T-3"}`,
		`{"title":"Quarterly report","status":"closed","priority":5,"due":"2026-02-01","done":true,"owner":"agt_3","ref":"T-4"}`,
		`{"title":"Fix login bug on mobile","status":"open","priority":2,"done":false,"tags":["bug"],"ref":"T-5"}`,
		`{"title":"Plan the offsite","status":"open","ref":"T-6"}`,
	} {
		rec := w.ok(a, "record_add", `{"collection":"tasks","body":`+body+`}`)["record"].(map[string]any)
		out[rec["title"].(string)] = rec["id"].(string)
	}
	return out
}

func titles(m map[string]any) []string {
	out := ids(m, "title")
	sort.Strings(out)
	return out
}

func TestWhereForms(t *testing.T) {
	w := newWorld(t)
	w.collection("tasks", "g1", taskColumns...)
	seedTasks(w, w.a1)
	for _, tc := range []struct {
		name, where string
		want        []string
	}{
		{"text substring", `{"title":"parse"}`, []string{"Parser benchmarks", "Write the parser"}},
		{"text substring, case-insensitive", `{"title":"KUBER"}`, []string{"Kubernetes upgrade"}},
		{"text similar spelling", `{"title":"Kubernetis"}`, []string{"Kubernetes upgrade"}},
		{"every word, by substring or similar spelling", `{"title":"kubernetis upgrde"}`, []string{"Kubernetes upgrade"}},
		{"every word, in any order", `{"title":"mobile login"}`, []string{"Fix login bug on mobile"}},
		{"every word must match", `{"title":"mobile parser"}`, nil},
		{"text exact values", `{"status":["open","closed"]}`, []string{"Fix login bug on mobile", "Kubernetes upgrade", "Plan the offsite", "Quarterly report", "Write the parser"}},
		{"text exact is exact", `{"status":["ope"]}`, nil},
		{"array item substring", `{"tags":"infr"}`, []string{"Kubernetes upgrade"}},
		{"array item similar", `{"tags":"perff"}`, []string{"Parser benchmarks"}},
		{"number exact", `{"priority":2}`, []string{"Fix login bug on mobile", "Parser benchmarks"}},
		{"number values", `{"priority":[1,5]}`, []string{"Kubernetes upgrade", "Quarterly report"}},
		{"number range", `{"priority":{"gte":2,"lte":3}}`, []string{"Fix login bug on mobile", "Parser benchmarks", "Write the parser"}},
		{"number open range", `{"priority":{"gte":3}}`, []string{"Quarterly report", "Write the parser"}},
		{"datetime exact", `{"due":"2026-03-10T00:00:00Z"}`, []string{"Write the parser"}},
		{"datetime range", `{"due":{"gte":"2026-03-01","lte":"2026-03-31T23:59:59Z"}}`, []string{"Kubernetes upgrade", "Write the parser"}},
		{"boolean", `{"done":true}`, []string{"Quarterly report"}},
		{"id", `{"owner":"agt_2"}`, []string{"Parser benchmarks", "Write the parser"}},
		{"id is exact", `{"owner":"agt"}`, nil},
		{"null: missing value", `{"due":null}`, []string{"Fix login bug on mobile", "Plan the offsite"}},
		{"null on a list", `{"tags":null}`, []string{"Plan the offsite", "Quarterly report"}},
		{"three terms", `{"status":["open"],"priority":{"lte":3},"tags":"code"}`, []string{"Write the parser"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w.ok(w.a1, "record_list", `{"collection":"tasks","where":`+tc.where+`}`)
			if fmt.Sprint(titles(got)) != fmt.Sprint(tc.want) || int(got["total"].(float64)) != len(tc.want) {
				t.Fatalf("where %s: got %v (total %v), want %v", tc.where, titles(got), got["total"], tc.want)
			}
			if len(tc.want) == 0 {
				hint := got["hint"].(map[string]any)
				if hint["size"].(float64) != 6 || hint["newest_change"] == nil || len(hint["columns"].([]any)) != len(taskColumns) {
					t.Fatalf("empty narrowed result without a proper hint: %v", got)
				}
			} else if _, ok := got["hint"]; ok {
				t.Fatalf("hint on a non-empty result: %v", got)
			}
		})
	}
}

func TestWhereRejected(t *testing.T) {
	w := newWorld(t)
	w.collection("tasks", "g1", taskColumns...)
	for _, tc := range []struct {
		args string
		want []string
	}{
		{`{"collection":"tasks","where":{"colour":"red","tags":["a"],"done":"yes","priority":{"gt":1}}}`,
			[]string{"list rejected (422)", `where: unknown column "colour"`, "where tags (text[]): got an array; it takes a string (an item by substring or similar spelling) or null (missing); exact values do not apply to an array column",
				"where done (boolean): done (boolean) must be true or false", `where priority (number): unknown range key "gt" (use gte and lte)`}},
		{`{"collection":"tasks","where":{"title":"a","status":"b","priority":1,"due":null,"done":true,"owner":"x","tags":"y","ref":"z","title2":1}}`,
			[]string{"where has 9 terms; at most 8"}},
		{`{"collection":"tasks","limit":101}`, []string{"limit 101 is out of range; use 1 to 100"}},
		{`{"collection":"tasks","since":"yesterday"}`, []string{`since "yesterday" is not an ISO timestamp`}},
		{`{"collection":"tasks","order":{"column":"tags"}}`, []string{"tags is an array column and has no order"}},
		{`{"collection":"tasks","order":{"column":"colour"}}`, []string{`order: unknown column "colour"`}},
		{`{"collection":"tasks","where":{"title":""}}`, []string{"the string is empty"}},
		{`{"collection":"tasks","where":{"due":{"gte":"soon"}}}`, []string{"gte: due (datetime) must be an ISO 8601 timestamp"}},
	} {
		w.fails(w.a1, "record_list", tc.args, orchestrator.EINVALID, tc.want...)
	}
	w.fails(w.a1, "record_search", `{"query":"x","where":{"title":"x"}}`, orchestrator.EINVALID, "where needs collection")
	w.fails(w.a1, "record_search", `{"query":"x","limit":500}`, orchestrator.EINVALID, "limit 500 is out of range")
}

func TestSearchGrammar(t *testing.T) {
	w := newWorld(t)
	w.collection("tasks", "g1", taskColumns...)
	seedTasks(w, w.a1)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{`parser`, []string{"Parser benchmarks", "Write the parser"}},
		{`"write the parser"`, []string{"Write the parser"}},
		{`"the parser write"`, nil},
		{`parser -benchmarks`, []string{"Write the parser"}},
		{`kubernetes or offsite`, []string{"Kubernetes upgrade", "Plan the offsite"}},
		{`bug mobile`, []string{"Fix login bug on mobile"}},
		{`ubernet`, []string{"Kubernetes upgrade"}}, // a single token is a substring
		{`T-4`, []string{"Quarterly report"}},
		{`urgent`, []string{"Kubernetes upgrade"}}, // array items are searched
		{`Kubernetis`, nil},                        // never fuzzy: similar spelling is record_list's where
		{`kubernetis upgrade`, nil},
	} {
		got := w.ok(w.a1, "record_search", `{"query":`+jsonString(tc.query)+`}`)
		if fmt.Sprint(titles(got)) != fmt.Sprint(tc.want) {
			t.Errorf("query %s: got %v, want %v", tc.query, titles(got), tc.want)
		}
	}
	got := w.ok(w.a1, "record_search", `{"query":"parser","collection":"tasks","where":{"status":["open"]}}`)
	if fmt.Sprint(titles(got)) != "[Write the parser]" {
		t.Fatalf("search with where: %v", titles(got))
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestSinceOrderOffset(t *testing.T) {
	w := newWorld(t)
	w.collection("tasks", "g1", taskColumns...)
	idsByTitle := seedTasks(w, w.a1) // written 09:01 .. 09:06
	// Newest change first by default, paged by limit and offset with a true total.
	p1 := w.ok(w.a1, "record_list", `{"collection":"tasks","limit":4}`)
	p2 := w.ok(w.a1, "record_list", `{"collection":"tasks","limit":4,"offset":4}`)
	if p1["total"].(float64) != 6 || p2["total"].(float64) != 6 || len(ids(p1, "id")) != 4 || len(ids(p2, "id")) != 2 {
		t.Fatalf("pages: %v / %v", p1, p2)
	}
	if first := ids(p1, "title")[0]; first != "Plan the offsite" {
		t.Fatalf("newest first: %s", first)
	}
	if p3 := w.ok(w.a1, "record_list", `{"collection":"tasks","offset":10}`); p3["total"].(float64) != 6 || len(p3["records"].([]any)) != 0 {
		t.Fatalf("past the end: %v", p3)
	}
	// A change moves a record to the end of a since listing, oldest change first.
	w.ok(w.a1, "record_update", `{"collection":"tasks","id":"`+idsByTitle["Write the parser"]+`","body":{"status":"closed"}}`) // 09:07
	got := w.ok(w.a1, "record_list", `{"collection":"tasks","since":"2026-03-01T09:04:00Z"}`)
	if fmt.Sprint(ids(got, "title")) != "[Fix login bug on mobile Plan the offsite Write the parser]" {
		t.Fatalf("since: %v", ids(got, "title"))
	}
	if got := w.ok(w.a1, "record_list", `{"collection":"tasks","since":"2026-03-01T10:00:00+01:00","where":{"title":"nothing"}}`); got["hint"] == nil {
		t.Fatalf("since without matches carries no hint: %v", got)
	}
	// Orders without ties, by title, created_at and updated_at.
	for _, tc := range []struct{ order, want string }{
		{`{"column":"title"}`, "[Fix login bug on mobile Kubernetes upgrade Parser benchmarks Plan the offsite Quarterly report Write the parser]"},
		{`{"column":"created_at"}`, "[Kubernetes upgrade Write the parser Parser benchmarks Quarterly report Fix login bug on mobile Plan the offsite]"},
		{`{"column":"updated_at","direction":"desc"}`, "[Write the parser Plan the offsite Fix login bug on mobile Quarterly report Parser benchmarks Kubernetes upgrade]"},
	} {
		got := w.ok(w.a1, "record_list", `{"collection":"tasks","order":`+tc.order+`}`)
		if fmt.Sprint(ids(got, "title")) != tc.want {
			t.Errorf("order %s: %v, want %s", tc.order, ids(got, "title"), tc.want)
		}
	}
	// Orders with ties and missing values: values in order, missing last, ties by id in the same direction.
	for _, tc := range []struct {
		column string
		desc   bool
	}{{"priority", false}, {"priority", true}, {"due", false}, {"due", true}} {
		dir := "asc"
		if tc.desc {
			dir = "desc"
		}
		got := w.ok(w.a1, "record_list", `{"collection":"tasks","order":{"column":"`+tc.column+`","direction":"`+dir+`"}}`)["records"].([]any)
		for i := 1; i < len(got); i++ {
			a, b := got[i-1].(map[string]any), got[i].(map[string]any)
			av, aok := a[tc.column]
			bv, bok := b[tc.column]
			var cmp int
			switch {
			case !aok && !bok:
				cmp = 0
			case !aok:
				t.Fatalf("order %s %s: a missing value before a present one: %v", tc.column, dir, got)
			case !bok:
				continue
			default:
				cmp = strings.Compare(fmt.Sprintf("%020v", av), fmt.Sprintf("%020v", bv))
				if tc.desc {
					cmp = -cmp
				}
			}
			idCmp := strings.Compare(a["id"].(string), b["id"].(string))
			if tc.desc {
				idCmp = -idCmp
			}
			if cmp > 0 || (cmp == 0 && idCmp > 0) {
				t.Fatalf("order %s %s: %v before %v", tc.column, dir, a, b)
			}
		}
	}
	byID := w.ok(w.a1, "record_list", `{"collection":"tasks","order":{"column":"id"}}`)
	if got := ids(byID, "id"); !sort.StringsAreSorted(got) {
		t.Fatalf("order by id: %v", got)
	}
}

func TestUpdateAndRemove(t *testing.T) {
	w := newWorld(t)
	w.collection("tasks", "g1", taskColumns...)
	byTitle := seedTasks(w, w.a1)
	id := byTitle["Write the parser"]
	got := w.ok(w.a1, "record_update", `{"collection":"tasks","id":"`+id+`","body":{"status":null,"priority":3,"tags":["code","go"]}}`)
	rec := got["record"].(map[string]any)
	if _, ok := rec["status"]; ok || fmt.Sprint(rec["tags"]) != "[code go]" || rec["title"] != "Write the parser" {
		t.Fatalf("update: %v", rec)
	}
	if fmt.Sprint(got["warnings"]) != "[priority already had this value; nothing changed there]" {
		t.Fatalf("warnings: %v", got["warnings"])
	}
	w.fails(w.a1, "record_update", `{"collection":"tasks","id":"`+id+`","body":{"title":null,"colour":"red","priority":"x"}}`, orchestrator.EINVALID,
		"update rejected (422)", "title is required and cannot be null", `unknown column "colour"`, "priority (number) must be a number")
	w.fails(w.a1, "record_update", `{"collection":"tasks","id":"`+id+`","body":{}}`, orchestrator.EINVALID, "body is empty")
	w.fails(w.a1, "record_update", `{"collection":"tasks","id":"`+id+`","body":{"ref":"T-1"}}`, orchestrator.ECONFLICT, "record "+byTitle["Kubernetes upgrade"]+` already holds "T-1"`)
	w.fails(w.a1, "record_update", `{"collection":"tasks","id":"rec_nope","body":{"title":"x"}}`, orchestrator.ENOTFOUND, "no live record rec_nope in collection tasks (404)")
	// Remove is soft: the record leaves lists and search, and its unique value is free again.
	if got := w.ok(w.a1, "record_remove", `{"collection":"tasks","id":"`+byTitle["Kubernetes upgrade"]+`"}`); got["removed"] != byTitle["Kubernetes upgrade"] {
		t.Fatalf("remove: %v", got)
	}
	w.fails(w.a1, "record_remove", `{"collection":"tasks","id":"`+byTitle["Kubernetes upgrade"]+`"}`, orchestrator.ENOTFOUND, "(404)")
	if got := w.ok(w.a1, "record_search", `{"query":"kubernetes"}`); len(got["records"].([]any)) != 0 {
		t.Fatalf("removed record still found: %v", got)
	}
	again := w.ok(w.a1, "record_add", `{"collection":"tasks","body":{"title":"Kubernetes upgrade, again","ref":"T-1"}}`)
	if again["note"] != nil || again["record"].(map[string]any)["id"] == byTitle["Kubernetes upgrade"] {
		t.Fatalf("a removed record's unique value merged: %v", again)
	}
	if got := w.ok(w.a1, "record_list", `{"collection":"tasks"}`); got["total"].(float64) != 6 {
		t.Fatalf("total after remove and add: %v", got["total"])
	}
}

func TestUniqueMerge(t *testing.T) {
	w := newWorld(t)
	w.collection("tasks", "g1", taskColumns...)
	first := w.ok(w.a1, "record_add", `{"collection":"tasks","body":{"title":"Ship","status":"open","ref":"T-9"}}`)["record"].(map[string]any)
	got := w.ok(w.a2, "record_add", `{"collection":"tasks","body":{"title":"Ship it","priority":1,"ref":"T-9"}}`)
	rec := got["record"].(map[string]any)
	if got["note"] != "merged into existing record "+first["id"].(string) || rec["id"] != first["id"] || rec["title"] != "Ship it" || rec["status"] != "open" || rec["priority"].(float64) != 1 {
		t.Fatalf("merge: %v", got)
	}
}

// TestConcurrentUniqueAdds: many agents add the same unique value at once; one live record results.
func TestConcurrentUniqueAdds(t *testing.T) {
	w := newWorld(t)
	w.collection("tasks", "g1", taskColumns...)
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	notes, seen := 0, map[string]bool{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := w.call(w.a1, "record_add", fmt.Sprintf(`{"collection":"tasks","body":{"title":"t%d","ref":"SAME","priority":%d}}`, i, i))
			if err != nil {
				t.Error(err)
				return
			}
			var m map[string]any
			_ = json.Unmarshal([]byte(out), &m)
			mu.Lock()
			defer mu.Unlock()
			seen[m["record"].(map[string]any)["id"].(string)] = true
			if m["note"] != nil {
				notes++
			}
		}()
	}
	wg.Wait()
	got := w.ok(w.a1, "record_list", `{"collection":"tasks"}`)
	if got["total"].(float64) != 1 || len(seen) != 1 || notes != n-1 {
		t.Fatalf("total %v, %d distinct ids, %d merge notes; want 1, 1, %d", got["total"], len(seen), notes, n-1)
	}
}

func FuzzBuildList(f *testing.F) {
	coll := orchestrator.Collection{ID: "c", Name: "tasks", Columns: taskColumns}
	for _, s := range []string{`{"title":"x"}`, `{"priority":{"gte":1,"lte":"2"}}`, `{"tags":["a"]}`, `{"due":[null]}`, `[]`, `null`, `{"done":{"gte":true}}`, `{"owner":[1e999]}`, `{"x":1}`} {
		f.Add([]byte(s), "2026-01-01", "priority", 20)
	}
	f.Fuzz(func(t *testing.T, where []byte, since, order string, limit int) {
		q, problems := records.BuildList(coll, where, since, order, "asc", limit, 0)
		if len(problems) == 0 {
			if len(q.Where) > records.MaxWhereTerms || q.Limit < 1 || q.Limit > records.MaxLimit {
				t.Fatalf("accepted %s limit %d: %+v", where, limit, q)
			}
			sql, args := recordquery.Where(q)
			if strings.Count(sql, "$") < len(args) {
				t.Fatalf("arguments without placeholders: %s %v", sql, args)
			}
		}
	})
}
