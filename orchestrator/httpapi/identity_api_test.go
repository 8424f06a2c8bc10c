package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// caller is how a test request authenticates: a bearer token, or a session's cookie and CSRF
// token; header and cookies are sent besides.
type caller struct {
	bearer  string
	cookie  string
	csrf    string
	header  map[string]string
	cookies []*http.Cookie
}

func asBearer(t string) caller { return caller{bearer: t} }

// rawBody is a request body sent as it is (a file's bytes), with its content type.
type rawBody struct {
	ctype string
	data  []byte
}

// exchange sends one request as the caller, checked live against openapi.json like every exchange,
// and answers its status, its body and its headers.
func (e *env) exchange(who caller, method, path string, body any) (int, []byte, http.Header) {
	e.t.Helper()
	var sent []byte
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case rawBody:
		sent, ctype = b.data, b.ctype
	default:
		sent, _ = json.Marshal(body)
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(sent))
	req.Header.Set("Content-Type", ctype)
	if who.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+who.bearer)
	}
	if who.cookie != "" {
		req.AddCookie(&http.Cookie{Name: "guilds_session", Value: who.cookie})
	}
	if who.csrf != "" {
		req.Header.Set("X-CSRF-Token", who.csrf)
	}
	for k, v := range who.header {
		req.Header.Set(k, v)
	}
	for _, c := range who.cookies {
		req.AddCookie(c)
	}
	resp, err := e.app.Test(req, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	checkLive(e.t, req, sent, resp.StatusCode, resp.Header, raw)
	return resp.StatusCode, raw, resp.Header
}

// as sends one request as the caller (send) and answers its status, its JSON body (nil for none)
// and its headers.
func (e *env) as(who caller, method, path string, body any) (int, map[string]any, http.Header) {
	e.t.Helper()
	st, raw, h := e.exchange(who, method, path, body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			e.t.Fatalf("%s %s: answer is not a JSON object: %q", method, path, raw)
		}
	}
	return st, out, h
}

// expect is as that fails the test unless the status is want.
func (e *env) expect(want int, who caller, method, path string, body any) map[string]any {
	e.t.Helper()
	st, out, _ := e.as(who, method, path, body)
	if st != want {
		e.t.Fatalf("%s %s: %d, want %d: %v", method, path, st, want, out)
	}
	return out
}

// signIn signs an account in through the API and answers its session.
func (e *env) signIn(email, password string) caller {
	e.t.Helper()
	st, out, h := e.as(caller{}, "POST", "/api/sessions", map[string]any{"email": email, "password": password})
	if st != 201 {
		e.t.Fatalf("sign in %s: %d %v", email, st, out)
	}
	var cookie string
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == "guilds_session" {
			cookie = c.Value
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
				e.t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax, Path=/", c)
			}
		}
	}
	if cookie == "" || out["csrf_token"] == "" {
		e.t.Fatalf("sign in answered no cookie or CSRF token: %v %v", h, out)
	}
	return caller{cookie: cookie, csrf: out["csrf_token"].(string)}
}

const password = "tangerine orbit walrus"

// TestAccountsMembersAndSessions: the instance admin makes accounts and gives them roles; each
// signs in and sees exactly its organisation; a session's writes need its CSRF token; sign-out
// and deactivation end the sessions.
func TestAccountsMembersAndSessions(t *testing.T) {
	e := newEnv(t, nil)
	admin := asBearer(token)
	orgA := e.must(201, "POST", "/api/orgs", map[string]any{"name": "A"})["id"].(string)
	orgB := e.must(201, "POST", "/api/orgs", map[string]any{"name": "B"})["id"].(string)
	guildA := e.must(201, "POST", "/api/orgs/"+orgA+"/guilds", map[string]any{"name": "A1"})["id"].(string)

	owner := e.expect(201, admin, "POST", "/api/accounts", map[string]any{"email": "Owner@Example.com", "name": "Olga", "password": password})
	if owner["email"] != "owner@example.com" || owner["has_password"] != true || owner["instance_admin"] != false {
		t.Fatalf("account %v", owner)
	}
	viewer := e.expect(201, admin, "POST", "/api/accounts", map[string]any{"email": "viewer@example.com", "name": "Vic", "password": password})
	e.expect(409, admin, "POST", "/api/accounts", map[string]any{"email": "owner@example.com", "name": "Again", "password": password})
	e.expect(422, admin, "POST", "/api/accounts", map[string]any{"email": "short@example.com", "name": "Short", "password": "short"})
	if list := e.expect(200, admin, "GET", "/api/accounts", nil)["accounts"].([]any); len(list) != 2 {
		t.Fatalf("accounts %v", list)
	}
	e.expect(200, admin, "PATCH", "/api/accounts/"+viewer["id"].(string), map[string]any{"name": "Victor"})
	e.expect(200, admin, "PUT", "/api/orgs/"+orgA+"/members/"+owner["id"].(string), map[string]any{"role": "owner"})
	e.expect(422, admin, "PUT", "/api/orgs/"+orgA+"/members/"+viewer["id"].(string), map[string]any{"role": "boss"})

	// The owner signs in and sees A only; B is out of reach (404, as for an id that does not exist).
	ses := e.signIn("owner@example.com", password)
	if cur := e.expect(200, ses, "GET", "/api/sessions/current", nil); cur["credential"] != "session" || cur["csrf_token"] != ses.csrf {
		t.Fatalf("current %v", cur)
	}
	if orgs := e.expect(200, ses, "GET", "/api/orgs", nil)["orgs"].([]any); len(orgs) != 1 || orgs[0].(map[string]any)["id"] != orgA {
		t.Fatalf("the owner of A lists %v", orgs)
	}
	e.expect(404, ses, "GET", "/api/orgs/"+orgB, nil)
	e.expect(404, ses, "GET", "/api/orgs/org_doesnotexist00000000", nil)
	e.expect(403, ses, "POST", "/api/accounts", map[string]any{"email": "x@example.com", "name": "X"})
	// A write with the cookie but without its CSRF token is refused; with it, it goes through.
	st, out, _ := e.as(caller{cookie: ses.cookie}, "PUT", "/api/guilds/"+guildA+"/members/"+viewer["id"].(string), map[string]any{"role": "viewer"})
	if st != 403 || !strings.Contains(errMessage(out), "X-CSRF-Token") {
		t.Fatalf("a write without the CSRF token: %d %v", st, out)
	}
	e.expect(200, ses, "PUT", "/api/guilds/"+guildA+"/members/"+viewer["id"].(string), map[string]any{"role": "viewer"})
	members := e.expect(200, ses, "GET", "/api/guilds/"+guildA+"/members", nil)["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["email"] != "viewer@example.com" {
		t.Fatalf("guild members %v", members)
	}
	if m := e.expect(200, ses, "GET", "/api/orgs/"+orgA+"/members", nil)["members"].([]any); len(m) != 1 {
		t.Fatalf("org members %v", m)
	}

	// An org role can be taken away like a guild's.
	e.expect(200, admin, "PUT", "/api/orgs/"+orgA+"/members/"+viewer["id"].(string), map[string]any{"role": "viewer"})
	e.expect(204, ses, "DELETE", "/api/orgs/"+orgA+"/members/"+viewer["id"].(string), nil)

	// The viewer of guild A1 reads the guild, not the org's own objects, and cannot write.
	vs := e.signIn("viewer@example.com", password)
	e.expect(200, vs, "GET", "/api/guilds/"+guildA, nil)
	e.expect(200, vs, "GET", "/api/orgs/"+orgA, nil)          // its organisation, as the place its guild sits
	e.expect(403, vs, "GET", "/api/orgs/"+orgA+"/notes", nil) // its org is in reach; the org's own notes need a role there
	e.expect(403, vs, "POST", "/api/guilds/"+guildA+"/agents", map[string]any{"name": "Nope"})
	e.expect(403, vs, "PUT", "/api/guilds/"+guildA+"/members/"+owner["id"].(string), map[string]any{"role": "viewer"})

	// Removing a role takes effect on the next request.
	e.expect(204, ses, "DELETE", "/api/guilds/"+guildA+"/members/"+viewer["id"].(string), nil)
	e.expect(404, vs, "GET", "/api/guilds/"+guildA, nil)
	e.expect(404, ses, "DELETE", "/api/guilds/"+guildA+"/members/"+viewer["id"].(string), nil)

	// Signing out ends one session; signing out everywhere ends them all.
	e.expect(204, vs, "DELETE", "/api/sessions/current", nil)
	e.expect(401, vs, "GET", "/api/sessions/current", nil)
	other := e.signIn("owner@example.com", password)
	e.expect(204, ses, "DELETE", "/api/sessions", nil)
	e.expect(401, other, "GET", "/api/orgs", nil)

	// A deactivated account signs in no more; its sessions end.
	again := e.signIn("owner@example.com", password)
	deact := e.expect(200, admin, "DELETE", "/api/accounts/"+owner["id"].(string), nil)
	if deact["deactivated"] != true {
		t.Fatalf("deactivated %v", deact)
	}
	e.expect(401, again, "GET", "/api/orgs", nil)
	e.expect(401, caller{}, "POST", "/api/sessions", map[string]any{"email": "owner@example.com", "password": password})
	e.expect(401, caller{}, "POST", "/api/sessions", map[string]any{"email": "owner@example.com", "password": "wrong password!!"})
}

// TestTokensKeysAndRunTokens: an API token reaches what its maker does and no more; an agent key
// starts its agent's runs; a run token works for its run only and stops when the run closes; every
// one of them is shown once and revocable.
func TestTokensKeysAndRunTokens(t *testing.T) {
	e := newEnv(t, nil)
	admin := asBearer(token)
	agentA := e.agent(nil)
	a := e.must(200, "GET", "/api/agents/"+agentA, nil)
	agentB := e.agent(nil)
	acct := e.expect(201, admin, "POST", "/api/accounts", map[string]any{"email": "op@example.com", "name": "Opal", "password": password})
	e.expect(200, admin, "PUT", "/api/orgs/"+a["org_id"].(string)+"/members/"+acct["id"].(string), map[string]any{"role": "operator"})
	ses := e.signIn("op@example.com", password)

	// API tokens: made by a session (not by a token), no wider than the maker.
	e.expect(403, admin, "POST", "/api/tokens", map[string]any{"name": "from the bootstrap token"})
	e.expect(403, ses, "POST", "/api/tokens", map[string]any{"name": "owner", "role": "owner", "scope": map[string]any{"kind": "org", "id": a["org_id"]}})
	tok := e.expect(201, ses, "POST", "/api/tokens", map[string]any{"name": "ci", "role": "viewer", "scope": map[string]any{"kind": "org", "id": a["org_id"]}})
	pat := tok["token"].(string)
	if !strings.HasPrefix(pat, "gld_pat_") || !strings.HasPrefix(pat, tok["prefix"].(string)) {
		t.Fatalf("token %v", tok)
	}
	listed := e.expect(200, ses, "GET", "/api/tokens", nil)["tokens"].([]any)
	if raw, _ := json.Marshal(listed); len(listed) != 1 || strings.Contains(string(raw), pat) {
		t.Fatalf("the token list %s shows the token, or not one token", raw)
	}
	e.expect(200, asBearer(pat), "GET", "/api/agents/"+agentA, nil)
	e.expect(403, asBearer(pat), "PATCH", "/api/agents/"+agentA, map[string]any{"name": "Renamed"})
	e.expect(404, asBearer(pat), "GET", "/api/agents/"+agentB, nil)
	e.expect(403, asBearer(pat), "POST", "/api/tokens", map[string]any{"name": "from a token"})

	// Agent keys: made by an operator of the agent; good for that agent's runs and nothing else.
	key := e.expect(201, ses, "POST", "/api/agents/"+agentA+"/keys", map[string]any{"name": "runtime"})
	k := key["key"].(string)
	if keys := e.expect(200, ses, "GET", "/api/agents/"+agentA+"/keys", nil)["keys"].([]any); len(keys) != 1 {
		t.Fatalf("keys %v", keys)
	}
	e.expect(404, asBearer(k), "POST", "/api/agents/"+agentB+"/runs", map[string]any{"kind": "direct"})
	e.expect(403, asBearer(k), "GET", "/api/agents/"+agentA+"/secrets", nil)
	e.expect(403, asBearer(k), "GET", "/api/orgs", nil)
	run := e.expect(201, asBearer(k), "POST", "/api/agents/"+agentA+"/runs", map[string]any{"kind": "direct"})
	rt, _ := run["token"].(string)
	if !strings.HasPrefix(rt, "gld_run_") {
		t.Fatalf("a run start answers no run token: %v", run)
	}
	runID := run["id"].(string)
	if got := e.expect(200, asBearer(rt), "GET", "/api/runs/"+runID, nil); got["token"] != nil {
		t.Fatalf("GET /api/runs shows the token: %v", got)
	}
	// The run token calls its run's tools, and its value is masked in what they answer.
	res := e.expect(200, asBearer(rt), "POST", "/api/runs/"+runID+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": "my token is " + rt}})
	if r := res["result"].(string); strings.Contains(r, rt) || strings.Contains(r, k) {
		t.Fatalf("a credential reached a result: %q", r)
	}
	other := e.run(agentA, map[string]any{"kind": "direct"})
	e.expect(404, asBearer(rt), "GET", "/api/runs/"+other, nil)
	e.expect(404, asBearer(rt), "GET", "/api/agents/"+agentA, nil)
	e.expect(200, asBearer(k), "GET", "/api/runs/"+other, nil)
	e.expect(200, asBearer(rt), "POST", "/api/runs/"+runID+"/close", nil)
	e.expect(401, asBearer(rt), "GET", "/api/runs/"+runID, nil)

	// Revocations take effect on the next request.
	e.expect(204, ses, "DELETE", "/api/agents/"+agentA+"/keys/"+key["id"].(string), nil)
	e.expect(401, asBearer(k), "GET", "/api/agents/"+agentA, nil)
	e.expect(204, ses, "DELETE", "/api/tokens/"+tok["id"].(string), nil)
	e.expect(401, asBearer(pat), "GET", "/api/agents/"+agentA, nil)
	e.expect(404, ses, "DELETE", "/api/tokens/"+tok["id"].(string)+"x", nil)

	// Malformed credentials say what was wrong.
	for _, bad := range []caller{asBearer("gld_pat_short"), asBearer("ghp_somebodyelsestoken"), {cookie: "not-a-session"}} {
		if st, out, _ := e.as(bad, "GET", "/api/orgs", nil); st != 401 || errMessage(out) == "" {
			t.Fatalf("%+v: %d %v", bad, st, out)
		}
	}
}

// TestInvitationsAndAudit: an owner invites an email; the link makes the account and signs it in,
// once; every write is in the organisation's audit log, which holds no secret.
func TestInvitationsAndAudit(t *testing.T) {
	e := newEnv(t, nil)
	admin := asBearer(token)
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "A"})["id"].(string)
	owner := e.expect(201, admin, "POST", "/api/accounts", map[string]any{"email": "owner@example.com", "name": "Olga", "password": password})
	e.expect(200, admin, "PUT", "/api/orgs/"+org+"/members/"+owner["id"].(string), map[string]any{"role": "owner"})
	ses := e.signIn("owner@example.com", password)
	inv := e.expect(201, ses, "POST", "/api/invitations", map[string]any{"email": "new@example.com", "scope": map[string]any{"kind": "org", "id": org}, "role": "viewer"})
	url := inv["url"].(string)
	i := strings.Index(url, "token=")
	if i < 0 {
		t.Fatalf("invitation url %q", url)
	}
	invToken := url[i+len("token="):]
	st, out, h := e.as(caller{}, "POST", "/api/invitations/accept", map[string]any{"token": invToken, "name": "Newt", "password": password})
	if st != 201 || out["account"].(map[string]any)["email"] != "new@example.com" || !strings.Contains(h.Get("Set-Cookie"), "guilds_session=") {
		t.Fatalf("accept: %d %v", st, out)
	}
	e.expect(409, caller{}, "POST", "/api/invitations/accept", map[string]any{"token": invToken, "name": "Again", "password": password})
	newt := e.signIn("new@example.com", password)
	e.expect(200, newt, "GET", "/api/orgs/"+org, nil)
	e.expect(403, newt, "POST", "/api/invitations", map[string]any{"email": "x@example.com", "scope": map[string]any{"kind": "org", "id": org}, "role": "viewer"})
	e.expect(403, newt, "GET", "/api/orgs/"+org+"/audit", nil)

	// The audit log: the writes above, and the refused ones, with who made them; never a secret.
	rows := e.expect(200, ses, "GET", "/api/orgs/"+org+"/audit", nil)["entries"].([]any)
	ops := map[string]int{}
	for _, r := range rows {
		ops[r.(map[string]any)["operation"].(string)] = int(r.(map[string]any)["status"].(float64))
	}
	for op, status := range map[string]int{"putOrgMember": 200, "createInvitation": 403} {
		if ops[op] != status && !(op == "createInvitation" && ops[op] == 201) {
			t.Fatalf("audit rows %v: want %s answered %d", ops, op, status)
		}
	}
	raw, _ := json.Marshal(rows)
	for _, secret := range []string{password, invToken, newt.cookie, ses.cookie, ses.csrf} {
		if strings.Contains(string(raw), secret) {
			t.Fatal("the audit log holds a secret")
		}
	}
	all := e.expect(200, admin, "GET", "/api/admin/audit?limit=500", nil)["entries"].([]any)
	if len(all) < len(rows) {
		t.Fatalf("the admin's log has %d rows, the org's %d", len(all), len(rows))
	}
	byActor := e.expect(200, admin, "GET", "/api/admin/audit?actor="+owner["id"].(string), nil)["entries"].([]any)
	for _, r := range byActor {
		if r.(map[string]any)["account_id"] != owner["id"] {
			t.Fatalf("actor filter %v", r)
		}
	}
	if !slices.ContainsFunc(byActor, func(r any) bool { return r.(map[string]any)["operation"] == "createInvitation" }) {
		t.Fatalf("the owner's invitation is not in the log: %v", byActor)
	}
	e.expect(422, admin, "GET", "/api/admin/audit?since=yesterday", nil)
}
