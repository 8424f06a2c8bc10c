package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
)

func TestCollectionsAPI(t *testing.T) {
	e := newEnv(t, nil)
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	g1 := e.must(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "G1"})["id"].(string)
	a1 := e.must(201, "POST", "/api/guilds/"+g1+"/agents", map[string]any{"name": "A1"})["id"].(string)
	other := e.agent(nil) // an agent of another organisation

	cols := []map[string]any{{"name": "title", "type": "text", "required": true}, {"name": "ref", "type": "id", "unique": true}, {"name": "tags", "type": "text[]"}}
	c := e.must(201, "POST", "/api/orgs/"+org+"/collections", map[string]any{"name": "tasks", "columns": cols})
	id := c["id"].(string)
	if c["level"] != "org" || c["org_id"] != org || len(c["columns"].([]any)) != 3 {
		t.Fatalf("created: %v", c)
	}
	// Every problem of a definition at once; names are unique across the organisation and its guilds.
	st, out := e.do("POST", "/api/guilds/"+g1+"/collections", map[string]any{"name": "Bad Name", "columns": []map[string]any{
		{"name": "id", "type": "text"}, {"name": "x", "type": "float"}, {"name": "a", "type": "text", "unique": true}, {"name": "b", "type": "boolean", "unique": true}}})
	msg := errMessage(out)
	for _, want := range []string{"collection rejected", `name "Bad Name" must match`, `"id" is reserved`, `type "float" is not one of text, number, datetime, boolean, id, text[]`, "a boolean column cannot be unique", "at most one column may be unique, got a, b"} {
		if st != 422 || !strings.Contains(msg, want) {
			t.Fatalf("bad definition: %d %q does not say %q", st, msg, want)
		}
	}
	if st, out := e.do("POST", "/api/guilds/"+g1+"/collections", map[string]any{"name": "tasks", "columns": cols}); st != 409 || !strings.Contains(errMessage(out), "already exists in the organisation") {
		t.Fatalf("duplicate name: %d %v", st, out)
	}
	gc := e.must(201, "POST", "/api/guilds/"+g1+"/collections", map[string]any{"name": "log", "columns": []map[string]any{{"name": "line", "type": "text"}}})
	if gc["level"] != "guild" || gc["guild_id"] != g1 {
		t.Fatalf("guild collection: %v", gc)
	}
	if got := e.must(200, "GET", "/api/orgs/"+org+"/collections", nil)["collections"].([]any); len(got) != 1 {
		t.Fatalf("org collections: %v", got)
	}
	if got := e.must(200, "GET", "/api/guilds/"+g1+"/collections", nil)["collections"].([]any); len(got) != 1 {
		t.Fatalf("guild collections: %v", got)
	}
	e.must(404, "GET", "/api/orgs/org_missing/collections", nil)

	// Grants.
	for _, tc := range []struct {
		path string
		body map[string]any
		code int
		want string
	}{
		{"/api/collections/" + id + "/grants", map[string]any{"access": "read"}, 422, "exactly one of agent_id"},
		{"/api/collections/" + id + "/grants", map[string]any{"agent_id": a1, "guild_id": g1, "access": "read"}, 422, "exactly one of agent_id"},
		{"/api/collections/" + id + "/grants", map[string]any{"guild_id": g1, "access": "admin"}, 422, "access must be none, read or write"},
		{"/api/collections/" + id + "/grants", map[string]any{"agent_id": other, "access": "read"}, 422, "cannot reach collection tasks"},
		{"/api/collections/" + gc["id"].(string) + "/grants", map[string]any{"guild_id": g1, "access": "read"}, 422, "guild grants apply to organisation tables"},
		{"/api/collections/" + id + "/grants", map[string]any{"agent_id": "agt_missing", "access": "read"}, 404, "agt_missing"},
		{"/api/collections/art_missing/grants", map[string]any{"guild_id": g1, "access": "read"}, 404, "art_missing"},
	} {
		st, out := e.do("PUT", tc.path, tc.body)
		if st != tc.code || !strings.Contains(errMessage(out), tc.want) {
			t.Errorf("PUT %s %v: %d %v, want %d saying %q", tc.path, tc.body, st, out, tc.code, tc.want)
		}
	}
	e.must(200, "PUT", "/api/collections/"+id+"/grants", map[string]any{"guild_id": g1, "access": "write"})
	got := e.must(200, "PUT", "/api/collections/"+id+"/grants", map[string]any{"agent_id": a1, "access": "none"})
	grants := got["grants"].([]any)
	if len(grants) != 2 || grants[0].(map[string]any)["agent_id"] != a1 || grants[0].(map[string]any)["access"] != "none" || grants[1].(map[string]any)["access"] != "write" {
		t.Fatalf("grants: %v", grants)
	}
	e.must(200, "PUT", "/api/collections/"+id+"/grants", map[string]any{"agent_id": a1, "access": "read"})
	if g := e.must(200, "GET", "/api/collections/"+id, nil)["grants"].([]any); len(g) != 2 || g[0].(map[string]any)["access"] != "read" {
		t.Fatalf("grant replaced: %v", g)
	}

	// Records, read by the operator.
	store := postgres.NewStore(e.pool)
	coll, err := store.GetCollection(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for i, title := range []string{"one", "two", "three"} {
		if _, _, err := store.AddRecord(context.Background(), coll, orchestrator.RecordWrite{Data: map[string]any{"title": title}, SearchText: title},
			nil, time.Date(2026, 3, 1, 9, i, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
	}
	recs := e.must(200, "GET", "/api/collections/"+id+"/records?limit=2", nil)
	if recs["total"].(float64) != 3 || len(recs["records"].([]any)) != 2 || recs["records"].([]any)[0].(map[string]any)["title"] != "three" {
		t.Fatalf("records: %v", recs)
	}
	if st, out := e.do("GET", "/api/collections/"+id+"/records?limit=9999", nil); st != 422 || !strings.Contains(errMessage(out), "limit must be an integer from 0 to 500") {
		t.Fatalf("limit: %d %v", st, out)
	}
	// A search: one word as a substring, else words; the total counts the matches.
	for q, want := range map[string][]string{"thr": {"three"}, "o": {"two", "one"}, "one": {"one"}, "four": {}} {
		got := e.must(200, "GET", "/api/collections/"+id+"/records?q="+q, nil)
		var titles []string
		for _, r := range got["records"].([]any) {
			titles = append(titles, r.(map[string]any)["title"].(string))
		}
		if got["total"].(float64) != float64(len(want)) || strings.Join(titles, ",") != strings.Join(want, ",") {
			t.Errorf("records?q=%s: total %v, %v; want %v", q, got["total"], titles, want)
		}
	}
	if st, out := e.do("GET", "/api/collections/"+id+"/records?q="+strings.Repeat("a", 501), nil); st != 422 || !strings.Contains(errMessage(out), "q is 501 characters; at most 500") {
		t.Fatalf("a long q: %d %v", st, out)
	}
}

func TestNotesAndMemoryAPI(t *testing.T) {
	e := newEnv(t, nil)
	agentID := e.agent(nil)
	a := e.must(200, "GET", "/api/agents/"+agentID, nil)
	agent := orchestrator.Agent{ID: agentID, GuildID: a["guild_id"].(string), OrgID: a["org_id"].(string)}
	store := postgres.NewStore(e.pool)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	n, _, err := store.PutNote(ctx, orchestrator.Artifact{Level: "guild", OrgID: agent.OrgID, GuildID: agent.GuildID, Key: "plan.md", Content: "# Plan"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.PutNote(ctx, orchestrator.Artifact{Level: "agent", OrgID: agent.OrgID, GuildID: agent.GuildID, AgentID: agentID, Key: "me.md", Content: "mine"}, now); err != nil {
		t.Fatal(err)
	}
	list := e.must(200, "GET", "/api/guilds/"+agent.GuildID+"/notes", nil)["notes"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["path"] != "guild/plan.md" || list[0].(map[string]any)["chars"].(float64) != 6 || list[0].(map[string]any)["content"] != nil {
		t.Fatalf("guild notes: %v", list)
	}
	if list := e.must(200, "GET", "/api/agents/"+agentID+"/notes", nil)["notes"].([]any); len(list) != 1 {
		t.Fatalf("agent notes: %v", list)
	}
	if list := e.must(200, "GET", "/api/orgs/"+agent.OrgID+"/notes", nil)["notes"].([]any); len(list) != 0 {
		t.Fatalf("org notes: %v", list)
	}
	if got := e.must(200, "GET", "/api/notes/"+n.ID, nil); got["content"] != "# Plan" || got["path"] != "guild/plan.md" {
		t.Fatalf("note: %v", got)
	}
	e.must(404, "GET", "/api/notes/art_missing", nil)

	// Memory: empty before the first write, then the newest content and revisions newest first.
	if m := e.must(200, "GET", "/api/agents/"+agentID+"/memory", nil); m["content"] != "" || m["updated_at"] != nil || m["max_chars"].(float64) != 12000 {
		t.Fatalf("memory before a write: %v", m)
	}
	for i, content := range []string{"first", "second", "third"} {
		if _, _, err := store.WriteMemory(ctx, agent, content, now.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if m := e.must(200, "GET", "/api/agents/"+agentID+"/memory", nil); m["content"] != "third" || m["chars"].(float64) != 5 {
		t.Fatalf("memory: %v", m)
	}
	revs := e.must(200, "GET", "/api/agents/"+agentID+"/memory/revisions", nil)["revisions"].([]any)
	if len(revs) != 2 || revs[0].(map[string]any)["content"] != "second" || revs[1].(map[string]any)["content"] != "first" {
		t.Fatalf("revisions: %v", revs)
	}
	e.must(404, "GET", "/api/agents/agt_missing/memory", nil)
	e.must(404, "GET", "/api/agents/agt_missing/memory/revisions", nil)
}

// TestSeedNotesAndMemory (issue 33): an operator writes notes at each level and an agent's memory
// through the API, under the tools' rules: created then replaced, a bad key refused with a valid
// one suggested, past the limits refused, the memory's previous version archived; another agent's
// key reaches neither (404), the agent's own key may not write them (403).
func TestSeedNotesAndMemory(t *testing.T) {
	e := newEnv(t, nil)
	agentID := e.agent(nil)
	a := e.must(200, "GET", "/api/agents/"+agentID, nil)
	org, guild := a["org_id"].(string), a["guild_id"].(string)
	other := e.must(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Bob"})["id"].(string)

	n := e.must(201, "PUT", "/api/orgs/"+org+"/notes/policy.md", map[string]any{"content": "# Policy\nNever pay twice."})
	if n["path"] != "org/policy.md" || n["org_id"] != org || n["content"] != "# Policy\nNever pay twice." {
		t.Fatalf("created %v", n)
	}
	again := e.must(200, "PUT", "/api/orgs/"+org+"/notes/policy.md", map[string]any{"content": "# Policy v2"})
	if again["id"] != n["id"] || again["content"] != "# Policy v2" {
		t.Fatalf("replaced %v", again)
	}
	if got := e.must(200, "GET", "/api/notes/"+n["id"].(string), nil); got["content"] != "# Policy v2" {
		t.Fatalf("read back %v", got)
	}
	if g := e.must(201, "PUT", "/api/guilds/"+guild+"/notes/my%20plan.md", map[string]any{"content": "ship"}); g["path"] != "guild/my plan.md" || g["guild_id"] != guild {
		t.Fatalf("guild note %v", g)
	}
	if g := e.must(201, "PUT", "/api/agents/"+agentID+"/notes/me.md", map[string]any{"content": "mine"}); g["path"] != "agent/me.md" || g["agent_id"] != agentID {
		t.Fatalf("agent note %v", g)
	}
	if list := e.must(200, "GET", "/api/agents/"+agentID+"/notes", nil)["notes"].([]any); len(list) != 1 {
		t.Fatalf("agent notes %v", list)
	}
	for key, says := range map[string]string{"a%2Fb.md": "a-b.md", "plan.txt": "plan.txt.md", ".hidden.md": "hidden.md"} {
		if st, out := e.do("PUT", "/api/guilds/"+guild+"/notes/"+key, map[string]any{"content": "x"}); st != 422 || !strings.Contains(errMessage(out), says) {
			t.Fatalf("key %s: %d %v", key, st, out)
		}
	}
	if st, out := e.do("PUT", "/api/guilds/"+guild+"/notes/big.md", map[string]any{"content": strings.Repeat("é", orchestrator.NoteMaxChars+1)}); st != 422 || !strings.Contains(errMessage(out), "a note holds at most 200000") {
		t.Fatalf("a note past the limit: %d %v", st, out)
	}
	e.must(404, "PUT", "/api/orgs/org_missing/notes/x.md", map[string]any{"content": "x"})
	e.must(422, "PUT", "/api/orgs/"+org+"/notes/x.md", map[string]any{"text": "x"})

	// Memory: written, replaced with the previous version archived, limited like memory_write.
	if m := e.must(200, "PUT", "/api/agents/"+agentID+"/memory", map[string]any{"content": "Customer prefers email."}); m["content"] != "Customer prefers email." || m["chars"].(float64) != 23 {
		t.Fatalf("memory %v", m)
	}
	e.must(200, "PUT", "/api/agents/"+agentID+"/memory", map[string]any{"content": "Customer prefers phone."})
	if m := e.must(200, "GET", "/api/agents/"+agentID+"/memory", nil); m["content"] != "Customer prefers phone." {
		t.Fatalf("memory read back %v", m)
	}
	if revs := e.must(200, "GET", "/api/agents/"+agentID+"/memory/revisions", nil)["revisions"].([]any); len(revs) != 1 || revs[0].(map[string]any)["content"] != "Customer prefers email." {
		t.Fatalf("revisions %v", revs)
	}
	if st, out := e.do("PUT", "/api/agents/"+agentID+"/memory", map[string]any{"content": strings.Repeat("a", orchestrator.MemoryMaxChars+1)}); st != 422 || !strings.Contains(errMessage(out), "memory holds at most 12000") {
		t.Fatalf("memory past the limit: %d %v", st, out)
	}
	e.must(404, "PUT", "/api/agents/agt_missing/memory", map[string]any{"content": "x"})

	key := e.must(201, "POST", "/api/agents/"+agentID+"/keys", map[string]any{"name": "runtime"})["key"].(string)
	e.expect(404, asBearer(key), "PUT", "/api/agents/"+other+"/memory", map[string]any{"content": "x"})
	e.expect(404, asBearer(key), "PUT", "/api/agents/"+other+"/notes/x.md", map[string]any{"content": "x"})
	e.expect(403, asBearer(key), "PUT", "/api/agents/"+agentID+"/memory", map[string]any{"content": "x"})
}
