package notes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/notes"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world is one organisation o1 with guilds g1 (agents a1, a2) and g2 (agent b1), and a second
// organisation o2 with guild h1 (agent c1), over a real PostgreSQL.
type world struct {
	t      *testing.T
	ctx    context.Context
	store  *postgres.Store
	reg    *registry.Registry
	o1, o2 orchestrator.Org
	g1, g2 orchestrator.Guild
	a1, a2 orchestrator.Agent
	b1, c1 orchestrator.Agent
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), store: postgres.NewStore(pgtest.NewDB(t)), reg: registry.New()}
	now := time.Now().UTC().Truncate(time.Microsecond)
	w.o1 = orchestrator.Org{ID: "o1", Name: "One", CreatedAt: now}
	w.o2 = orchestrator.Org{ID: "o2", Name: "Two", CreatedAt: now}
	w.g1 = orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G1", CreatedAt: now}
	w.g2 = orchestrator.Guild{ID: "g2", OrgID: "o1", Name: "G2", CreatedAt: now}
	h1 := orchestrator.Guild{ID: "h1", OrgID: "o2", Name: "H1", CreatedAt: now}
	agent := func(id, guild, org string) orchestrator.Agent {
		return orchestrator.Agent{ID: id, GuildID: guild, OrgID: org, Name: id, Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}
	}
	w.a1, w.a2, w.b1, w.c1 = agent("a1", "g1", "o1"), agent("a2", "g1", "o1"), agent("b1", "g2", "o1"), agent("c1", "h1", "o2")
	for _, o := range []orchestrator.Org{w.o1, w.o2} {
		must(t, w.store.CreateOrg(w.ctx, o))
	}
	for _, g := range []orchestrator.Guild{w.g1, w.g2, h1} {
		must(t, w.store.CreateGuild(w.ctx, g))
	}
	for _, a := range []orchestrator.Agent{w.a1, w.a2, w.b1, w.c1} {
		must(t, w.store.CreateAgent(w.ctx, a))
	}
	tools := &notes.Tools{Store: w.store}
	must(t, tools.Register(w.reg))
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// call runs a note tool as agent a and returns its result and error.
func (w *world) call(a orchestrator.Agent, tool, args string) (string, error) {
	return w.reg.Invoke(w.ctx, tool, &registry.Call{AgentID: a.ID, GuildID: a.GuildID, OrgID: a.OrgID, Args: json.RawMessage(args), Meta: map[string]any{}})
}

// ok runs a call that must succeed.
func (w *world) ok(a orchestrator.Agent, tool, args string) string {
	w.t.Helper()
	out, err := w.call(a, tool, args)
	if err != nil {
		w.t.Fatalf("%s %s as %s: %v", tool, args, a.ID, err)
	}
	return out
}

// fails runs a call that must fail with code, its message containing want.
func (w *world) fails(a orchestrator.Agent, tool, args, code, want string) {
	w.t.Helper()
	out, err := w.call(a, tool, args)
	if err == nil {
		w.t.Fatalf("%s %s as %s: want %s error, got %q", tool, args, a.ID, code, out)
	}
	if code != "" && orchestrator.ErrorCode(err) != code {
		w.t.Fatalf("%s %s as %s: code %s, want %s (%v)", tool, args, a.ID, orchestrator.ErrorCode(err), code, err)
	}
	if !strings.Contains(err.Error(), want) {
		w.t.Fatalf("%s %s as %s: error %q does not say %q", tool, args, a.ID, err, want)
	}
}

// grant writes an artifact_grant binding row at a scope.
func (w *world) grant(at orchestrator.Chain, id string, enabled bool) {
	w.t.Helper()
	_, err := w.store.PutBinding(w.ctx, at, orchestrator.Binding{Scope: at.Scope, ScopeID: at.ID(), CatalogKind: orchestrator.CatalogArtifactGrant, CatalogID: id, Enabled: enabled})
	must(w.t, err)
}

func TestWriteGetFindDelete(t *testing.T) {
	w := newWorld(t)
	if got := w.ok(w.a1, "note_write", `{"level":"guild","key":"plan.md","content":"# Plan\nShip the parser on Friday.\nThen the benchmarks."}`); got != "wrote guild/plan.md (created, 54 chars)" {
		t.Fatalf("write: %q", got)
	}
	if got := w.ok(w.a1, "note_write", `{"level":"guild","key":"plan.md","content":"# Plan\nShip the parser on Monday."}`); !strings.Contains(got, "replaced") {
		t.Fatalf("rewrite: %q", got)
	}
	w.ok(w.a1, "note_write", `{"level":"agent","key":"todo.md","content":"call the parser team"}`)
	// a2 shares the guild note; a1's agent note is its own.
	if got := w.ok(w.a2, "note_get", `{"path":"guild/plan.md"}`); !strings.HasPrefix(got, "guild/plan.md · updated ") || !strings.HasSuffix(got, "\n\n# Plan\nShip the parser on Monday.") {
		t.Fatalf("get as a2: %q", got)
	}
	w.fails(w.a2, "note_get", `{"path":"agent/todo.md"}`, orchestrator.ENOTFOUND, "no note agent/todo.md")
	w.fails(w.b1, "note_get", `{"path":"guild/plan.md"}`, orchestrator.ENOTFOUND, "no note guild/plan.md")

	list := w.ok(w.a1, "note_find", `{}`)
	if !strings.HasPrefix(list, "2 notes, newest change first:") || !strings.Contains(list, "agent/todo.md") || !strings.Contains(list, "guild/plan.md") {
		t.Fatalf("list: %q", list)
	}
	if got := w.ok(w.a1, "note_find", `{"level":"agent"}`); strings.Contains(got, "guild/") || !strings.Contains(got, "agent/todo.md") {
		t.Fatalf("level agent: %q", got)
	}
	w.ok(w.a1, "note_delete", `{"path":"agent/todo.md"}`)
	w.fails(w.a1, "note_get", `{"path":"agent/todo.md"}`, orchestrator.ENOTFOUND, "no note agent/todo.md")
	w.fails(w.a1, "note_delete", `{"path":"agent/todo.md"}`, orchestrator.ENOTFOUND, "no note agent/todo.md")
}

// TestReachDefaultsAndBindings: defaults (org write off), then rows at every scope of the walk.
func TestReachDefaultsAndBindings(t *testing.T) {
	w := newWorld(t)
	w.fails(w.a1, "note_write", `{"level":"org","key":"policy.md","content":"x"}`, orchestrator.EFORBIDDEN, "write_org grant is off")
	// The organisation turns org write on: every agent of o1 may write, not those of o2.
	w.grant(orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: "o1"}, notes.GrantWriteOrg, true)
	w.ok(w.a1, "note_write", `{"level":"org","key":"policy.md","content":"Every release needs a changelog."}`)
	if got := w.ok(w.b1, "note_get", `{"path":"org/policy.md"}`); !strings.Contains(got, "changelog") {
		t.Fatalf("b1 reads org note: %q", got)
	}
	w.fails(w.c1, "note_get", `{"path":"org/policy.md"}`, orchestrator.ENOTFOUND, "no note org/policy.md")
	// Guild g2 turns org read off; its agent b1 no longer reads or finds org notes.
	w.grant(orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: "o1", GuildID: "g2"}, notes.GrantReadOrg, false)
	w.fails(w.b1, "note_get", `{"path":"org/policy.md"}`, orchestrator.ENOTFOUND, "read_org grant is off")
	w.fails(w.b1, "note_find", `{"level":"org"}`, orchestrator.ENOTFOUND, "read_org grant is off")
	if got := w.ok(w.b1, "note_find", `{"query":"changelog"}`); !strings.HasPrefix(got, "no note matches") {
		t.Fatalf("b1 finds org note without read_org: %q", got)
	}
	// Agent a2 loses guild write; a1 keeps it. Guild read stays.
	w.grant(orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: "o1", GuildID: "g1", AgentID: "a2"}, notes.GrantWriteGuild, false)
	w.fails(w.a2, "note_write", `{"level":"guild","key":"x.md","content":"x"}`, orchestrator.EFORBIDDEN, "write_guild grant is off")
	w.fails(w.a2, "note_delete", `{"path":"guild/x.md"}`, orchestrator.EFORBIDDEN, "write_guild grant is off")
	w.ok(w.a1, "note_write", `{"level":"guild","key":"x.md","content":"x"}`)
	w.ok(w.a2, "note_get", `{"path":"guild/x.md"}`)
	// The agent's own notes need no grant: a platform row turning guild read off does not touch them.
	w.grant(orchestrator.Chain{Scope: orchestrator.ScopePlatform}, notes.GrantReadGuild, false)
	w.fails(w.a2, "note_get", `{"path":"guild/x.md"}`, orchestrator.ENOTFOUND, "read_guild grant is off")
	w.ok(w.a2, "note_write", `{"level":"agent","key":"mine.md","content":"mine"}`)
	w.ok(w.a2, "note_get", `{"path":"agent/mine.md"}`)
	// ...and a guild row re-enables what the platform turned off.
	w.grant(orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: "o1", GuildID: "g1"}, notes.GrantReadGuild, true)
	w.ok(w.a2, "note_get", `{"path":"guild/x.md"}`)
}

// TestMemoryNotReachable: the memory archive (the agent's memory row and its revisions) is not a note.
func TestMemoryNotReachable(t *testing.T) {
	w := newWorld(t)
	for _, content := range []string{"remember the parser", "remember the parser twice"} {
		if _, _, err := w.store.WriteMemory(w.ctx, w.a1, content, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.ok(w.a1, "note_find", `{}`); got != "no notes yet; note_write creates one" {
		t.Fatalf("note_find lists memory: %q", got)
	}
	if got := w.ok(w.a1, "note_find", `{"query":"parser"}`); !strings.HasPrefix(got, "no note matches") {
		t.Fatalf("note_find finds memory: %q", got)
	}
	w.fails(w.a1, "note_get", `{"path":"agent/memory.md"}`, orchestrator.ENOTFOUND, "no note agent/memory.md")
	w.fails(w.a1, "note_delete", `{"path":"agent/memory.md"}`, orchestrator.ENOTFOUND, "no note agent/memory.md")
	// A note may be called memory.md; it is a note, and the memory stays as it was.
	w.ok(w.a1, "note_write", `{"level":"agent","key":"memory.md","content":"a note"}`)
	if mem, err := w.store.GetMemory(w.ctx, w.a1.ID); err != nil || mem.Content != "remember the parser twice" {
		t.Fatalf("memory after a note named memory.md: %+v %v", mem, err)
	}
}

func TestResolve(t *testing.T) {
	row := func(scope, id string, on bool) orchestrator.Binding {
		return orchestrator.Binding{Scope: scope, CatalogKind: orchestrator.CatalogArtifactGrant, CatalogID: id, Enabled: on}
	}
	for _, tc := range []struct {
		name string
		rows []orchestrator.Binding
		want notes.Grants
	}{
		{"empty chain: defaults", nil, notes.Defaults},
		{"platform turns org write on", []orchestrator.Binding{row("platform", "write_org", true)}, notes.Grants{ReadGuild: true, ReadOrg: true, WriteGuild: true, WriteOrg: true}},
		{"agent beats guild whatever the order", []orchestrator.Binding{row("agent", "read_guild", true), row("guild", "read_guild", false)}, notes.Defaults},
		{"guild opt-out", []orchestrator.Binding{row("org", "read_guild", true), row("guild", "read_guild", false)}, notes.Grants{ReadOrg: true, WriteGuild: true}},
		{"other kinds ignored", []orchestrator.Binding{{Scope: "agent", CatalogKind: orchestrator.CatalogNativeTool, CatalogID: "read_org", Enabled: false}}, notes.Defaults},
		{"all off at org", []orchestrator.Binding{row("org", "read_guild", false), row("org", "read_org", false), row("org", "write_guild", false)}, notes.Grants{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := notes.Resolve(tc.rows); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSearchGrammar(t *testing.T) {
	w := newWorld(t)
	for key, content := range map[string]string{
		"alpha.md": "The quick brown fox jumps over the lazy dog",
		"beta.md":  "A brown bear sleeps; no fox here today",
		"gamma.md": "Postgres tuning: shared_buffers and work_mem",
	} {
		w.ok(w.a1, "note_write", `{"level":"guild","key":"`+key+`","content":"`+content+`"}`)
	}
	for _, tc := range []struct{ query, want, not string }{
		{`"quick brown"`, "alpha.md", "beta.md"},
		{`brown -quick`, "beta.md", "alpha.md"},
		{`bear or tuning`, "beta.md", "alpha.md"},
		{`bear or tuning`, "gamma.md", "alpha.md"},
		{`buffers`, "gamma.md", "alpha.md"}, // a single token matches inside shared_buffers
		{`ump`, "alpha.md", "gamma.md"},     // and inside jumps
		{`gamma`, "gamma.md", "beta.md"},    // the key is searched too
	} {
		got := w.ok(w.a1, "note_find", `{"query":`+jsonString(tc.query)+`}`)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("query %s: want %s and not %s, got %q", tc.query, tc.want, tc.not, got)
		}
	}
	if got := w.ok(w.a1, "note_find", `{"query":"tunning"}`); !strings.HasPrefix(got, "no note matches") {
		t.Errorf("search is never fuzzy: %q", got)
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestBadInput(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct{ tool, args, want string }{
		{"note_write", `{"level":"guild","key":"a/b.md","content":"x"}`, "contains a slash; notes have no folders: use a file name such as a-b.md"},
		{"note_write", `{"level":"guild","key":"plan.txt","content":"x"}`, "must be a file name ending in .md"},
		{"note_write", `{"level":"guild","key":".md","content":"x"}`, "must be a file name ending in .md"},
		{"note_write", `{"level":"guild","key":"","content":"x"}`, "key is empty"},
		{"note_write", `{"level":"agent","key":"x.md","content":"` + strings.Repeat("a", orchestrator.NoteMaxChars+1) + `"}`, "a note holds at most 200000"},
		{"note_get", `{"path":"plan.md"}`, "must be level/key"},
		{"note_get", `{"path":"team/plan.md"}`, "must be level/key"},
		{"note_get", `{"path":"guild/sub/plan.md"}`, "contains a slash"},
		{"note_delete", `{"path":"guild/plan"}`, "ending in .md"},
	} {
		w.fails(w.a1, tc.tool, tc.args, orchestrator.EINVALID, tc.want)
	}
	// Both problems at once, nothing written.
	_, err := w.call(w.a1, "note_write", `{"level":"guild","key":"a/b","content":"`+strings.Repeat("é", orchestrator.NoteMaxChars+1)+`"}`)
	if err == nil || !strings.Contains(err.Error(), "at most 200000") || !strings.Contains(err.Error(), "contains a slash") {
		t.Fatalf("want both problems, got %v", err)
	}
	if got := w.ok(w.a1, "note_find", `{}`); got != "no notes yet; note_write creates one" {
		t.Fatalf("something was written: %q", got)
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"guild/plan.md", "agent/a.md", "org/../x.md", "guild/", "/x.md", "agent/.md", "agent/\x00.md", "org/a\\b.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		level, key, err := notes.ParsePath(p)
		if err != nil {
			return
		}
		if level+"/"+key != p || strings.ContainsAny(key, `/\`) || !strings.HasSuffix(key, ".md") {
			t.Fatalf("accepted %q as %s / %s", p, level, key)
		}
	})
}
