package httpapi_test

import (
	"strings"
	"testing"
)

// TestRenameScopes: PATCH /api/orgs/{id} and /api/guilds/{id} rename with the create routes' own
// rules; a viewer of the organisation is refused (403), an account outside it gets 404.
func TestRenameScopes(t *testing.T) {
	e := newEnv(t, nil)
	admin := asBearer(token)
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := e.must(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "Research"})["id"].(string)
	if out := e.must(200, "PATCH", "/api/orgs/"+org, map[string]any{"name": "Acme Corp"}); out["name"] != "Acme Corp" || out["id"] != org {
		t.Fatalf("rename org: %v", out)
	}
	if out := e.must(200, "GET", "/api/orgs/"+org, nil); out["name"] != "Acme Corp" {
		t.Fatalf("the renamed org reads %v", out)
	}
	if out := e.must(200, "PATCH", "/api/guilds/"+guild, map[string]any{"name": "R&D"}); out["name"] != "R&D" || out["org_id"] != org {
		t.Fatalf("rename guild: %v", out)
	}
	for _, tc := range []struct {
		path string
		body any
		want int
		says string
	}{
		{"/api/orgs/" + org, map[string]any{"name": "   "}, 422, "organisation name must not be blank"},
		{"/api/guilds/" + guild, map[string]any{"name": strings.Repeat("x", 201)}, 422, "guild name must be 1 to 200 characters"},
		{"/api/guilds/" + guild, map[string]any{"title": "x"}, 422, `unknown field "title"`},
		{"/api/orgs/org_missing", map[string]any{"name": "x"}, 404, "not found"},
		{"/api/guilds/gld_missing", map[string]any{"name": "x"}, 404, "not found"},
	} {
		st, out := e.do("PATCH", tc.path, tc.body)
		if st != tc.want || !strings.Contains(errMessage(out), tc.says) {
			t.Errorf("PATCH %s %v: %d %v, want %d saying %q", tc.path, tc.body, st, out, tc.want, tc.says)
		}
	}
	viewer := e.expect(201, admin, "POST", "/api/accounts", map[string]any{"email": "vic@example.com", "name": "Vic", "password": password})
	e.expect(200, admin, "PUT", "/api/orgs/"+org+"/members/"+viewer["id"].(string), map[string]any{"role": "viewer"})
	vs := e.signIn("vic@example.com", password)
	e.expect(403, vs, "PATCH", "/api/orgs/"+org, map[string]any{"name": "Mine"})
	e.expect(403, vs, "PATCH", "/api/guilds/"+guild, map[string]any{"name": "Mine"})
	other := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Other"})["id"].(string)
	e.expect(404, vs, "PATCH", "/api/orgs/"+other, map[string]any{"name": "Mine"})
	if out := e.must(200, "GET", "/api/orgs/"+org, nil); out["name"] != "Acme Corp" {
		t.Fatalf("refused renames changed the name: %v", out)
	}
}

// TestDeleteNamesOpenRuns: a delete refused for open runs lists them in open_runs.
func TestDeleteNamesOpenRuns(t *testing.T) {
	e := newEnv(t, nil)
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	guild := e.must(201, "POST", "/api/orgs/"+org+"/guilds", map[string]any{"name": "R"})["id"].(string)
	agent := e.must(201, "POST", "/api/guilds/"+guild+"/agents", map[string]any{"name": "Ada"})["id"].(string)
	run := e.run(agent, map[string]any{"kind": "direct"})
	st, out := e.do("DELETE", "/api/guilds/"+guild, nil)
	open, _ := out["error"].(map[string]any)["open_runs"].([]any)
	if st != 409 || len(open) != 1 || open[0] != run {
		t.Fatalf("DELETE with run %s open: %d %v", run, st, out)
	}
}
