package httpapi_test

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
)

// The authorization matrix: every operation of openapi.json, sent by each principal below against
// the objects of organisation A and of organisation B (an operation that names no object is sent
// once), answers the status written in matrixWant, checked live against openapi.json. An operation
// the table does not cover fails the test with the lines to add, and so does a row for one that no
// longer exists. A GET that matrixRequests does not list, naming only objects a side holds, is sent
// anyway and must answer as the read rule of the object its path names (rows by rule, so a new
// listing is covered the day it is documented).
//
// The principals, in the table's column order:
//
//	adm     the bootstrap admin token (GUILDS_ADMIN_TOKEN)
//	ses     an instance admin account's session
//	own     the owner of A (a session)
//	op      an operator of A
//	view    a viewer of A
//	g1      the operator of guild A1 only
//	g1v     the viewer of guild A1 only
//	ownB    the owner of B
//	nobody  an account with no role anywhere
//	pat     an API token narrowed to viewer of A (its maker owns A)
//	key     the agent key of A's agent (in A1)
//	run     the run token of A's open run (of that agent)
//	runX    the run token of A's closed run
//	rev     a revoked API token
//	exp     an expired API token
//	none    no credential
var principals = []string{"adm", "ses", "own", "op", "view", "g1", "g1v", "ownB", "nobody", "pat", "key", "run", "runX", "rev", "exp", "none"}

// viewers are the principals that only read: they never see a secret's name or a call's
// arguments or results.
var viewers = map[string]bool{"view": true, "g1v": true, "pat": true}

// matrixWant is the expected status per operation and principal: one group of codes (one per
// principal) for an operation sent once, else the codes against A's objects, "|", the codes
// against B's; or the name of a rule of ruleRows and the operation's success status ("read
// guild 200"). The rules they follow: outside a principal's reach is 404, the same as an id that
// does not exist; inside it but above its role, 403 naming the role; a runtime credential (key,
// run) reaches only its own agent's or run's routes; a dead or missing credential is 401 on every
// route that needs one.
var matrixWant = map[string]string{
	"approveApproval":       "write scope 200",
	"countPendingApprovals": "list 200",
	"denyApproval":          "write scope 200",
	"getApproval":           "read scope 200",
	"listAgentApprovals":    "read agent 200",
	"listGuildApprovals":    "read guild 200",
	"listOrgApprovals":      "read guild 200",
	"putAgentMemory":        "write agent 200",
	"putNoteOrg":            "write org 201",
	"putNoteGuild":          "write guild 201",
	"putNoteAgent":          "write agent 201",
	"mcpRunMessage":         "write run 200",
	"mcpRunEnd":             "write run 200",
	"mcpEnd":                "403 403 403 403 403 403 403 403 403 403 200 403 401 401 401 401",
	// an agent's files: its operators and its own agent key (not a run's token)
	"getAgentFiles":    "200 200 200 200 403 200 403 404 404 403 200 404 401 401 401 401 | 200 200 404 404 404 404 404 200 404 404 404 404 401 401 401 401",
	"putAgentFile":     "200 200 200 200 403 200 403 404 404 403 200 404 401 401 401 401 | 200 200 404 404 404 404 404 200 404 404 404 404 401 401 401 401",
	"importAgentFiles": "201 201 201 201 403 201 403 404 404 403 201 404 401 401 401 401 | 201 201 404 404 404 404 404 201 404 404 404 404 401 401 401 401",
	// a run's MCP stream without a session is refused as a bad request once the caller may write the run
	"mcpRunStream": "400 400 400 400 403 400 403 404 404 403 400 400 401 401 401 401 | 400 400 404 404 404 404 404 400 404 404 404 404 401 401 401 401",
	// /mcp is an agent key's alone; without a session its stream is a bad request
	"mcpMessage": "403 403 403 403 403 403 403 403 403 403 200 403 401 401 401 401",
	"mcpStream":  "403 403 403 403 403 403 403 403 403 403 400 403 401 401 401 401",
	// columns of a row of codes:  adm ses own op  vie g1  g1v owB nob pat key run rnX rev exp non
	"acceptInvitation":            "public per side 201",
	"accessAgentTools":            "read agent 200",
	"accessGuildTools":            "read guild 200",
	"accessOrganisationTools":     "read org 200",
	"addGuildRepository":          "write guild 201",
	"adminListMcpServers":         "admin 200",
	"callTool":                    "write run 200",
	"closeRun":                    "write run 200",
	"connectMcp":                  "write scope 201",
	"createAccount":               "admin 201",
	"createAgent":                 "write guild 201",
	"createAgentKey":              "write agent 201",
	"createCollectionGuild":       "write guild 201",
	"createCollectionOrg":         "write org 201",
	"createGuild":                 "write org 201",
	"createInvitation":            "201 201 201 403 403 403 403 404 404 403 403 403 401 401 401 401 | 201 201 404 404 404 404 404 201 404 404 403 403 401 401 401 401",
	"createMcpServer":             "admin 201",
	"createOrg":                   "admin 201",
	"createToken":                 "403 201 201 201 201 403 403 404 404 403 403 403 401 401 401 401 | 403 201 404 404 404 404 404 201 404 403 403 403 401 401 401 401",
	"createWebhook":               "write org 201",
	"deactivateAccount":           "admin per side 200",
	"deleteAgent":                 "write agent 200",
	"deleteAgentSecret":           "write agent 200",
	"deleteBinding":               "write scope 200",
	"deleteGuild":                 "write guild 200",
	"deleteGuildMember":           "own org 204",
	"deleteGuildRepository":       "write guild 204",
	"deleteMcpConnection":         "write guild 200",
	"deleteOrg":                   "own org 200",
	"deleteOrgMember":             "own org 204",
	"deleteWebhook":               "write org 200",
	"finishSSO":                   "public 302",
	"getAgent":                    "read agent runtime 200",
	"getAgentMemory":              "read agent 200",
	"getCollection":               "read org 200",
	"getCurrentSession":           "signed in 200",
	"getGuild":                    "read guild 200",
	"getInstance":                 "signed in 200",
	"getMcpConnection":            "read guild 200",
	"getNote":                     "read org 200",
	"getOrg":                      "read guild 200",
	"getRun":                      "read run 200",
	"getWebhook":                  "write org 200",
	"githubInstallations":         "write guild 200",
	"githubPickInstallation":      "write guild 200",
	"githubRepositories":          "read guild 200",
	"githubSelect":                "write guild 200",
	"guildRepositories":           "read guild 200",
	"healthz":                     "public 200",
	"listAccounts":                "admin 200",
	"listAgentKeys":               "write agent 200",
	"listAgentMemoryRevisions":    "read agent 200",
	"listAgentRuns":               "read agent runtime 200",
	"listAgentSchedules":          "read agent 200",
	"listAgentSecrets":            "write agent 200",
	"listAgents":                  "read guild 200",
	"listAudit":                   "admin 200",
	"listBindings":                "read scope 200",
	"listCalls":                   "read run 200",
	"listCollectionRecords":       "read org 200",
	"listCollectionsGuild":        "read guild 200",
	"listCollectionsOrg":          "read org 200",
	"listDriveFolders":            "write org 200",
	"listGroupChat":               "read guild 200",
	"listGuildIssues":             "read guild 200",
	"listGuildMembers":            "read guild 200",
	"listGuilds":                  "read guild 200",
	"listMcpConnectionTools":      "read guild 200",
	"listMcpConnections":          "read scope 200",
	"listMcpServers":              "list 200",
	"listNotesAgent":              "read agent 200",
	"listNotesGuild":              "read guild 200",
	"listNotesOrg":                "read org 200",
	"listOrgAudit":                "own org 200",
	"listOrgIssues":               "read guild 200",
	"listOrgMembers":              "read org 200",
	"listOrgs":                    "list 200",
	"listScheduleFirings":         "read agent 200",
	"listTokens":                  "403 200 200 200 200 200 200 200 200 200 403 403 401 401 401 401",
	"listWebhookDeliveries":       "write org 200",
	"listWebhooks":                "write org 200",
	"metrics":                     "admin 200",
	"nextGeneration":              "write run 200",
	"oauthCallback":               "public per side 200",
	"openapi":                     "public 200",
	"patchGuild":                  "write guild 200",
	"patchOrg":                    "write org 200",
	"patchAgent":                  "write agent 200",
	"patchMcpCatalogTool":         "admin 200",
	"patchMcpServer":              "admin 200",
	"pickDriveFolder":             "write org 200",
	"putAgentSecret":              "write agent 200",
	"putBinding":                  "write scope 200",
	"putCollectionGrant":          "write org 200",
	"putGuildMember":              "own org 200",
	"putOrgMember":                "own org 200",
	"putPinnedCoins":              "write org 200",
	"readyz":                      "public 200",
	"redeliverWebhookDelivery":    "write org 201",
	"refreshMcpConnection":        "write org 200",
	"resolveGuildIssues":          "write guild 200",
	"resolveIssue":                "write guild 200",
	"revokeAgentKey":              "write agent 204",
	"revokeToken":                 "403 404 204 404 404 404 404 404 404 403 403 403 401 401 401 401 | 403 404 404 404 404 404 404 204 404 403 403 403 401 401 401 401",
	"searchConnectionPinnedCoins": "read guild 200",
	"searchPinnedCoins":           "200 200 200 200 403 200 403 200 403 403 403 403 401 401 401 401",
	"signIn":                      "public 201",
	"signOut":                     "own account 204",
	"signOutEverywhere":           "own account 204",
	"startRun":                    "201 201 201 201 403 201 403 404 404 403 201 404 401 401 401 401 | 201 201 404 404 404 404 404 201 404 404 404 404 401 401 401 401",
	"startSSO":                    "public 302",
	"streamEvents":                "signed in 200",
	"testMcpCall":                 "write guild 200",
	"updateAccount":               "admin per side 200",
	"updateWebhook":               "write org 200",
}

// ruleRows are the rows shared by the operations a route rule of the same kind guards, "ok"
// standing for the operation's success status.
var ruleRows = map[string]string{
	// the instance admin's
	"admin": "ok ok 403 403 403 403 403 403 403 403 403 403 401 401 401 401",
	// the instance admin's, sent against each side's account
	"admin per side": "ok ok 403 403 403 403 403 403 403 403 403 403 401 401 401 401 | ok ok 403 403 403 403 403 403 403 403 403 403 401 401 401 401",
	// any account's listing (filtered), no runtime credential
	"list": "ok ok ok ok ok ok ok ok ok ok 403 403 401 401 401 401",
	// the caller's own sessions (an account's session, or its unnarrowed token)
	"own account": "403 ok ok ok ok ok ok ok ok 403 403 403 401 401 401 401",
	// an owner's change at an organisation (members, the organisation itself, its audit log)
	"own org": "ok ok ok 403 403 403 403 404 404 403 404 404 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// no credential needed
	"public": "ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok",
	// no credential needed, sent against each side
	"public per side": "ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok | ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok",
	// a read of an agent or its runs, which its agent key may make too
	"read agent runtime": "ok ok ok ok ok ok ok 404 404 ok ok 404 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a read of an agent's own objects (its agent key is refused them: they are not its runs)
	"read agent": "ok ok ok ok ok ok ok 404 404 ok 403 404 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a read of a guild's object; also of an organisation itself, its logins and its issue inbox, which a role in one of its guilds reaches (within)
	"read guild": "ok ok ok ok ok ok ok 404 404 ok 404 404 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a read of an organisation's own objects (a guild role does not cover them: 403)
	"read org": "ok ok ok ok ok 403 403 404 404 ok 404 404 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a read of a run (its agent key and its own run token may)
	"read run": "ok ok ok ok ok ok ok 404 404 ok ok ok 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a listing whose query names the scope (runtime credentials refused: 403)
	"read scope": "ok ok ok ok ok ok ok 404 404 ok 403 403 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 403 403 401 401 401 401",
	// any principal, runtime credentials included
	"signed in": "ok ok ok ok ok ok ok ok ok ok ok ok 401 401 401 401",
	// a change to an agent (its agent key is refused)
	"write agent": "ok ok ok ok 403 ok 403 404 404 403 403 404 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a change to a guild's object (a guild operator may)
	"write guild": "ok ok ok ok 403 ok 403 404 404 403 404 404 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a change at an organisation (a guild role does not cover it: 403)
	"write org": "ok ok ok ok 403 403 403 404 404 403 404 404 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a run's call, generation or close (its agent key and its own run token may)
	"write run": "ok ok ok ok 403 ok 403 404 404 403 ok ok 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 404 404 401 401 401 401",
	// a change whose body names the scope (runtime credentials refused: 403)
	"write scope": "ok ok ok ok 403 ok 403 404 404 403 403 403 401 401 401 401 | ok ok 404 404 404 404 404 ok 404 404 403 403 401 401 401 401",
}

// wantOf is the row the operation must answer: its matrixWant entry (a rule's name resolved), ""
// when it has none.
func wantOf(t testing.TB, op string) string {
	w := matrixWant[op]
	if w == "" || w[0] >= '0' && w[0] <= '9' {
		return w
	}
	i := strings.LastIndexByte(w, ' ')
	rule, ok := ruleRows[w[:max(i, 0)]]
	if i < 0 || !ok {
		t.Fatalf("matrixWant[%q] = %q: neither codes nor a rule of ruleRows and a status (\"read guild 200\")", op, w)
	}
	return strings.ReplaceAll(rule, "ok", w[i+1:])
}

// asRule writes a row as a rule of ruleRows and its status when one fits, else as it is.
func asRule(row string) string {
	names := make([]string, 0, len(ruleRows))
	for n := range ruleRows {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, ok := range []string{"200", "201", "204", "302"} {
		for _, n := range names {
			if strings.ReplaceAll(ruleRows[n], "ok", ok) == row {
				return n + " " + ok
			}
		}
	}
	return row
}

// pathKinds names the side's object a path parameter stands for, by the segment before it.
var pathKinds = map[string]string{"orgs": "org", "guilds": "guild", "agents": "agent", "runs": "run", "connections": "conn",
	"collections": "collection", "notes": "note", "issues": "issue", "schedules": "schedule", "secrets": "secret", "accounts": "member",
	"members": "member", "webhooks": "webhook", "deliveries": "delivery"}

// readRule is the rule of ruleRows a GET is expected to answer by, by the kind of the first object
// its path names (an organisation's logins are read by a role in any of its guilds; an issue is
// its guild's; accounts are the instance admin's).
var readRule = map[string]string{"org": "read org", "guild": "read guild", "agent": "read agent", "run": "read run", "conn": "read guild",
	"issue": "read guild", "collection": "read org", "note": "read org", "member": "admin"}

// byRule is how the matrix sends an operation matrixRequests does not list, and the rule it must
// answer by: a GET whose parameters all name objects a side holds, read with the least role over
// the first (a route that names none: any signed-in account's listing). Anything else answers
// why not: a request that changes state needs its own objects and body, written by hand.
func byRule(doc string) (request, string, error) {
	method, path, _ := strings.Cut(doc, " ")
	kinds := []string{}
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if !strings.HasPrefix(seg, "{") {
			continue
		}
		k := ""
		if i > 0 {
			k = pathKinds[segs[i-1]]
		}
		if k == "" {
			return request{method: method, path: path}, "", fmt.Errorf("its parameter %s follows %q, which names no object of a side (pathKinds)", seg, segs[max(i-1, 0)])
		}
		segs[i] = "{" + k + "}"
		kinds = append(kinds, k)
	}
	rq := request{method: method, path: strings.Join(segs, "/")}
	rule := "list"
	if len(kinds) > 0 {
		rule = readRule[kinds[0]]
	}
	if method != "GET" {
		rule = strings.Replace(rule, "read ", "write ", 1)
		if rule == "list" {
			rule = "write scope"
		}
		if _, ok := ruleRows[rule]; !ok {
			rule = ""
		}
		return rq, rule, fmt.Errorf("it changes state, so it needs objects of its own and a body")
	}
	if _, ok := ruleRows[rule]; !ok {
		return rq, "", fmt.Errorf("no rule of ruleRows reads a %s (readRule)", kinds[0])
	}
	return rq, rule, nil
}

// request is how the matrix sends one operation: the path (with the side's objects in braces, and
// any query), the body, the fresh objects a request acts on (destructive ones get their own, so
// one principal's success does not change another's answer), and whether the caller's credential
// is minted anew (the request may end it).
type request struct {
	method, path string
	body         func(m *matrix, s side) any
	prep         func(m *matrix, s side) side
	fresh        bool
	names        bool // the body names the side's objects: sent against A's and B's
	once         bool // names no object of A or B although the path has braces
	stream       bool // answers a stream: sent over loopback, its status read from its headers
	mcpSession   bool // needs an MCP session of the caller's own: opened first by an initialize to the same path
}

// sides is how many times a request is sent per principal: against A and B, or once.
func (rq request) sides() int {
	if rq.once || !strings.Contains(rq.path, "{") && !rq.names {
		return 1
	}
	return 2
}

// name is a body naming something new.
func name(what string) func(*matrix, side) any {
	return func(m *matrix, _ side) any { return map[string]any{"name": fmt.Sprintf("%s %d", what, m.next())} }
}

// fixed is a body that does not depend on the side.
func fixed(body map[string]any) func(*matrix, side) any {
	return func(*matrix, side) any { return body }
}

// matrixRequests are the requests, by operationId.
var matrixRequests = map[string]request{
	"healthz":     {method: "GET", path: "/healthz"},
	"readyz":      {method: "GET", path: "/readyz"},
	"metrics":     {method: "GET", path: "/metrics"},
	"openapi":     {method: "GET", path: "/api/openapi.json"},
	"getInstance": {method: "GET", path: "/api/instance"},

	"createOrg":   {method: "POST", path: "/api/orgs", body: name("Org")},
	"listOrgs":    {method: "GET", path: "/api/orgs"},
	"getOrg":      {method: "GET", path: "/api/orgs/{org}"},
	"patchOrg":    {method: "PATCH", path: "/api/orgs/{org}", body: name("Renamed org")},
	"deleteOrg":   {method: "DELETE", path: "/api/orgs/{org}", prep: func(m *matrix, s side) side { return m.scope(s["like"]) }},
	"createGuild": {method: "POST", path: "/api/orgs/{org}/guilds", body: name("Guild")},
	"listGuilds":  {method: "GET", path: "/api/orgs/{org}/guilds"},
	"getGuild":    {method: "GET", path: "/api/guilds/{guild}"},
	"patchGuild":  {method: "PATCH", path: "/api/guilds/{guild}", body: name("Renamed guild")},
	"deleteGuild": {method: "DELETE", path: "/api/guilds/{guild}", prep: func(m *matrix, s side) side { return m.guildLike(s) }},
	"createAgent": {method: "POST", path: "/api/guilds/{guild}/agents", body: name("Agent")},
	"listAgents":  {method: "GET", path: "/api/guilds/{guild}/agents"},
	"getAgent":    {method: "GET", path: "/api/agents/{agent}"},
	"patchAgent":  {method: "PATCH", path: "/api/agents/{agent}", body: name("Renamed")},
	"deleteAgent": {method: "DELETE", path: "/api/agents/{agent}", prep: func(m *matrix, s side) side {
		return s.with("agent", m.must(201, "POST", "/api/guilds/"+s["guild"]+"/agents", map[string]any{"name": "Doomed"})["id"].(string))
	}},

	"startRun": {method: "POST", path: "/api/agents/{agent}/runs", body: fixed(map[string]any{"kind": "direct"})},
	"getRun":   {method: "GET", path: "/api/runs/{run}"},
	"closeRun": {method: "POST", path: "/api/runs/{run}/close", prep: func(m *matrix, s side) side { return s.with("run", m.run(s)) }},
	"callTool": {method: "POST", path: "/api/runs/{run}/calls", body: func(m *matrix, _ side) any {
		return map[string]any{"name": "echo", "arguments": map[string]any{"text": m.arg()}}
	}},
	"listCalls":      {method: "GET", path: "/api/runs/{run}/calls"},
	"nextGeneration": {method: "POST", path: "/api/runs/{run}/generations"},

	"listMcpServers":      {method: "GET", path: "/api/mcp/servers"},
	"adminListMcpServers": {method: "GET", path: "/api/admin/mcp/servers"},
	"createMcpServer": {method: "POST", path: "/api/admin/mcp/servers", body: func(m *matrix, _ side) any {
		return map[string]any{"slug": fmt.Sprintf("made-%d", m.next()), "name": "Made", "url": m.mcp.URL, "auth": "none"}
	}},
	"patchMcpServer":      {method: "PATCH", path: "/api/admin/mcp/servers/" + matrixMCPSlug, body: fixed(map[string]any{"description": "The matrix's server."})},
	"patchMcpCatalogTool": {method: "PATCH", path: "/api/admin/mcp/servers/coingecko/tools/trending", body: fixed(map[string]any{"published": true})},

	"connectMcp": {method: "POST", names: true, path: "/api/mcp/connections", body: func(m *matrix, s side) any {
		return map[string]any{"server": "coingecko", "scope": "agent", "scope_id": s["agent"], "credentials": map[string]any{"api_key": m.secret("CG-connect-")}}
	}, prep: func(m *matrix, s side) side {
		return s.with("agent", m.must(201, "POST", "/api/guilds/"+s["guild"]+"/agents", map[string]any{"name": "Connected"})["id"].(string))
	}},
	"listMcpConnections":     {method: "GET", path: "/api/mcp/connections?scope=org&scope_id={org}"},
	"getMcpConnection":       {method: "GET", path: "/api/mcp/connections/{conn}"},
	"deleteMcpConnection":    {method: "DELETE", path: "/api/mcp/connections/{conn}", prep: func(m *matrix, s side) side { return s.with("conn", m.coingecko(s)) }},
	"listMcpConnectionTools": {method: "GET", path: "/api/mcp/connections/{conn}/tools"},
	"refreshMcpConnection":   {method: "POST", path: "/api/mcp/connections/{conn}/refresh"},
	"testMcpCall": {method: "POST", path: "/api/mcp/connections/{conn}/call", body: func(m *matrix, _ side) any {
		return map[string]any{"name": strings.ReplaceAll(matrixMCPSlug, "-", "_") + "_echo", "arguments": map[string]any{"text": m.arg()}}
	}},
	"searchPinnedCoins":           {method: "POST", path: "/api/mcp/pinned-prices/search", body: func(m *matrix, _ side) any { return map[string]any{"api_key": m.secret("CG-search-"), "q": "Bit"} }},
	"searchConnectionPinnedCoins": {method: "GET", path: "/api/mcp/connections/{pinned}/pinned-prices/search?q=Eth"},
	"putPinnedCoins":              {method: "PUT", path: "/api/mcp/connections/{pinned}/pinned-prices", body: fixed(map[string]any{"coins": knownCoins})},
	"listDriveFolders":            {method: "GET", path: "/api/mcp/connections/{drive}/drive/folders"},
	"pickDriveFolder": {method: "PUT", path: "/api/mcp/connections/{drive}/drive/folder", body: fixed(map[string]any{"id": googletest.SharedPlans}),
		prep: func(m *matrix, s side) side { m.pending(s["drive"]); return s }},

	"putBinding": {method: "PUT", names: true, path: "/api/bindings", body: func(_ *matrix, s side) any {
		return map[string]any{"scope": "agent", "scope_id": s["agent"], "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": true}
	}},
	"deleteBinding": {method: "DELETE", names: true, path: "/api/bindings", body: func(_ *matrix, s side) any {
		return map[string]any{"scope": "agent", "scope_id": s["agent"], "catalog_kind": "native_tool", "catalog_id": "echo"}
	}, prep: func(m *matrix, s side) side {
		s = s.with("agent", m.agentIn(s))
		m.must(200, "PUT", "/api/bindings", map[string]any{"scope": "agent", "scope_id": s["agent"], "catalog_kind": "native_tool", "catalog_id": "echo", "enabled": true})
		return s
	}},
	"listBindings":            {method: "GET", path: "/api/bindings?scope=agent&scope_id={agent}"},
	"accessOrganisationTools": {method: "GET", path: "/api/orgs/{org}/tools"},
	"accessGuildTools":        {method: "GET", path: "/api/guilds/{guild}/tools"},
	"accessAgentTools":        {method: "GET", path: "/api/agents/{agent}/tools"},

	"createCollectionOrg": {method: "POST", path: "/api/orgs/{org}/collections", body: func(m *matrix, _ side) any {
		return map[string]any{"name": fmt.Sprintf("org_table_%d", m.next()), "columns": []map[string]any{{"name": "title", "type": "text"}}}
	}},
	"listCollectionsOrg": {method: "GET", path: "/api/orgs/{org}/collections"},
	"createCollectionGuild": {method: "POST", path: "/api/guilds/{guild}/collections", body: func(m *matrix, _ side) any {
		return map[string]any{"name": fmt.Sprintf("guild_table_%d", m.next()), "columns": []map[string]any{{"name": "title", "type": "text"}}}
	}},
	"listCollectionsGuild":     {method: "GET", path: "/api/guilds/{guild}/collections"},
	"getCollection":            {method: "GET", path: "/api/collections/{collection}"},
	"putCollectionGrant":       {method: "PUT", path: "/api/collections/{collection}/grants", body: func(_ *matrix, s side) any { return map[string]any{"guild_id": s["guild"], "access": "read"} }},
	"listCollectionRecords":    {method: "GET", path: "/api/collections/{collection}/records"},
	"listNotesOrg":             {method: "GET", path: "/api/orgs/{org}/notes"},
	"listNotesGuild":           {method: "GET", path: "/api/guilds/{guild}/notes"},
	"listNotesAgent":           {method: "GET", path: "/api/agents/{agent}/notes"},
	"getNote":                  {method: "GET", path: "/api/notes/{orgNote}"},
	"getAgentMemory":           {method: "GET", path: "/api/agents/{agent}/memory"},
	"listAgentMemoryRevisions": {method: "GET", path: "/api/agents/{agent}/memory/revisions"},

	"listGuildIssues":    {method: "GET", path: "/api/guilds/{guild}/issues"},
	"listOrgIssues":      {method: "GET", path: "/api/orgs/{org}/issues"},
	"resolveIssue":       {method: "POST", path: "/api/issues/{issue}/resolve"},
	"resolveGuildIssues": {method: "POST", path: "/api/guilds/{guild}/issues/resolve"},
	"putAgentSecret": {method: "PUT", path: "/api/agents/{agent}/secrets/{secret}", body: func(m *matrix, _ side) any {
		return map[string]any{"value": m.secret("secret-value-")}
	}},
	"deleteAgentSecret": {method: "DELETE", path: "/api/agents/{agent}/secrets/{secret}", prep: func(m *matrix, s side) side {
		n := fmt.Sprintf("MATRIX_DOOMED_%d", m.next())
		m.hidden[n] = true
		m.must(200, "PUT", "/api/agents/"+s["agent"]+"/secrets/"+n, map[string]any{"value": m.secret("doomed-value-")})
		return s.with("secret", n)
	}},
	"listAgentSecrets":    {method: "GET", path: "/api/agents/{agent}/secrets"},
	"listGroupChat":       {method: "GET", path: "/api/guilds/{guild}/chat"},
	"listAgentSchedules":  {method: "GET", path: "/api/agents/{agent}/schedules"},
	"listScheduleFirings": {method: "GET", path: "/api/agents/{agent}/schedules/{schedule}/firings"},

	"oauthCallback": {method: "GET", path: "/api/mcp/oauth/callback?state={state}&code={code}&installation_id={installation}&setup_action=install",
		prep: func(m *matrix, s side) side {
			st, _ := m.githubBegin("agent", m.agentIn(s))
			return s.with("state", st, "code", m.fake.Code("octo"), "installation", map[string]string{"A": "55", "B": "56"}[s["like"]])
		}},
	"githubInstallations": {method: "GET", path: "/api/mcp/oauth/github-installation?state={state}", prep: func(m *matrix, s side) side {
		return s.with("state", m.githubPicker(s))
	}},
	"githubPickInstallation": {method: "POST", names: true, path: "/api/mcp/oauth/github-installation", body: func(_ *matrix, s side) any {
		return map[string]any{"state": s["state"], "installation_id": map[string]int{"A": 55, "B": 56}[s["like"]]}
	}, prep: func(m *matrix, s side) side { return s.with("state", m.githubPicker(s)) }},
	"githubRepositories": {method: "GET", path: "/api/mcp/connections/{github}/github/repositories"},
	"githubSelect": {method: "PUT", path: "/api/mcp/connections/{github}/github/selected", body: func(m *matrix, s side) any {
		owner := map[string]string{"A": "acme-a", "B": "acme-b"}[s["like"]]
		return map[string]any{"repositories": []any{map[string]any{"name": "api", "url": m.fake.WebURL() + "/" + owner + "/api"}}}
	}},
	"guildRepositories": {method: "GET", path: "/api/guilds/{guild}/repositories"},
	"addGuildRepository": {method: "POST", path: "/api/guilds/{guild}/repositories", body: func(m *matrix, _ side) any {
		n := m.next()
		return map[string]any{"name": fmt.Sprintf("extra%d", n), "url": fmt.Sprintf("https://git.example.com/extra%d.git", n)}
	}},
	"deleteGuildRepository": {method: "DELETE", path: "/api/guilds/{guild}/repositories?id={repo}", prep: func(m *matrix, s side) side {
		n := m.next()
		r, err := m.gh.AddGuildRepository(m.ctx, s["guild"], github.Pick{Name: fmt.Sprintf("doomed%d", n), URL: fmt.Sprintf("https://git.example.com/doomed%d.git", n)})
		if err != nil {
			m.t.Fatal(err)
		}
		return s.with("repo", r.ID)
	}},

	"startSSO": {method: "GET", path: "/api/sessions/oidc?return_to=/"},
	"finishSSO": {method: "GET", path: "{callback}", once: true, prep: func(m *matrix, s side) side {
		cb, cookies := m.ssoCallback()
		s = s.with("callback", cb)
		m.cookies = cookies
		return s
	}},

	"createAccount": {method: "POST", path: "/api/accounts", body: func(m *matrix, _ side) any {
		n := m.next()
		return map[string]any{"email": fmt.Sprintf("new%d@matrix.example", n), "name": "New"}
	}},
	"listAccounts":      {method: "GET", path: "/api/accounts"},
	"updateAccount":     {method: "PATCH", path: "/api/accounts/{member}", body: name("Member")},
	"deactivateAccount": {method: "DELETE", path: "/api/accounts/{member}", prep: func(m *matrix, s side) side { return s.with("member", m.memberOf(s)) }},
	"listOrgMembers":    {method: "GET", path: "/api/orgs/{org}/members"},
	"putOrgMember":      {method: "PUT", path: "/api/orgs/{org}/members/{member}", body: fixed(map[string]any{"role": "viewer"})},
	"deleteOrgMember":   {method: "DELETE", path: "/api/orgs/{org}/members/{member}", prep: func(m *matrix, s side) side { return s.with("member", m.memberOf(s)) }},
	"listGuildMembers":  {method: "GET", path: "/api/guilds/{guild}/members"},
	"putGuildMember":    {method: "PUT", path: "/api/guilds/{guild}/members/{member}", body: fixed(map[string]any{"role": "viewer"})},
	"deleteGuildMember": {method: "DELETE", path: "/api/guilds/{guild}/members/{member}", prep: func(m *matrix, s side) side {
		id := m.memberOf(s)
		if _, err := m.ids.SetMember(m.ctx, guildAt(s, s["guild"]), id, "viewer"); err != nil {
			m.t.Fatal(err)
		}
		return s.with("member", id)
	}},
	"createInvitation": {method: "POST", names: true, path: "/api/invitations", body: func(m *matrix, s side) any {
		return map[string]any{"email": fmt.Sprintf("invited%d@matrix.example", m.next()), "scope": map[string]any{"kind": "org", "id": s["org"]}, "role": "viewer"}
	}},
	"acceptInvitation": {method: "POST", names: true, path: "/api/invitations/accept", body: func(m *matrix, s side) any {
		return map[string]any{"token": s["invitation"], "name": "Invitee", "password": signerPassword}
	}, prep: func(m *matrix, s side) side {
		_, tok, err := m.ids.Invite(m.ctx, adminPrincipal, fmt.Sprintf("invitee%d@matrix.example", m.next()), orgAt(s), "viewer")
		if err != nil {
			m.t.Fatal(err)
		}
		m.secrets = append(m.secrets, tok)
		return s.with("invitation", tok)
	}},
	"signIn":            {method: "POST", path: "/api/sessions", body: fixed(map[string]any{"email": "signer@matrix.example", "password": signerPassword})},
	"signOutEverywhere": {method: "DELETE", path: "/api/sessions", fresh: true},
	"getCurrentSession": {method: "GET", path: "/api/sessions/current"},
	"signOut":           {method: "DELETE", path: "/api/sessions/current", fresh: true},
	"createToken": {method: "POST", names: true, path: "/api/tokens", body: func(m *matrix, s side) any {
		return map[string]any{"name": fmt.Sprintf("ci %d", m.next()), "role": "viewer", "scope": map[string]any{"kind": "org", "id": s["org"]}}
	}},
	"listTokens": {method: "GET", path: "/api/tokens"},
	"revokeToken": {method: "DELETE", path: "/api/tokens/{token}", prep: func(m *matrix, s side) side {
		return s.with("token", m.mintFor(map[string]string{"A": "own", "B": "ownB"}[s["like"]], s["org"]).ID)
	}},
	"createAgentKey": {method: "POST", path: "/api/agents/{agent}/keys", body: name("runtime")},
	"listAgentKeys":  {method: "GET", path: "/api/agents/{agent}/keys"},
	"revokeAgentKey": {method: "DELETE", path: "/api/agents/{agent}/keys/{keyID}", prep: func(m *matrix, s side) side {
		return s.with("keyID", m.must(201, "POST", "/api/agents/"+s["agent"]+"/keys", map[string]any{"name": "doomed"})["id"].(string))
	}},
	"listOrgAudit": {method: "GET", path: "/api/orgs/{org}/audit"},

	"streamEvents": {method: "GET", path: "/api/events", stream: true},
	"createWebhook": {method: "POST", path: "/api/orgs/{org}/webhooks", body: func(m *matrix, _ side) any {
		return map[string]any{"url": m.hooks.URL + "/made", "events": []string{"run.closed"}, "secret": m.secret("whsec_made_")}
	}},
	"updateWebhook":            {method: "PATCH", path: "/api/orgs/{org}/webhooks/{webhook}", body: fixed(map[string]any{"description": "renamed"})},
	"deleteWebhook":            {method: "DELETE", path: "/api/orgs/{org}/webhooks/{webhook}", prep: func(m *matrix, s side) side { return s.with("webhook", m.webhook(s)) }},
	"redeliverWebhookDelivery": {method: "POST", path: "/api/orgs/{org}/webhooks/{webhook}/deliveries/{delivery}/redeliver"},
	"listAudit":                {method: "GET", path: "/api/admin/audit"},

	"getAgentFiles": {method: "GET", path: "/api/agents/{agent}/files?path=notes.txt"},
	"putAgentFile": {method: "PUT", path: "/api/agents/{agent}/files?path=put.txt", body: func(m *matrix, _ side) any {
		return rawBody{ctype: "text/plain", data: fmt.Appendf(nil, "upload %d", m.next())}
	}},
	"importAgentFiles": {method: "POST", path: "/api/agents/{agent}/files/import?path={dir}", prep: func(m *matrix, s side) side {
		return s.with("dir", fmt.Sprintf("imported%d", m.next()))
	}, body: func(m *matrix, _ side) any {
		return rawBody{ctype: "application/gzip", data: tgz(m.t, &tar.Header{Name: fmt.Sprintf("file%d.txt", m.next()), Typeflag: tar.TypeReg, Mode: 0o644})}
	}},
	"putNoteOrg":     {method: "PUT", path: "/api/orgs/{org}/notes/{noteKey}", body: fixed(map[string]any{"content": "seeded"}), prep: func(m *matrix, s side) side { return s.with("noteKey", fmt.Sprintf("seeded%d.md", m.next())) }},
	"putNoteGuild":   {method: "PUT", path: "/api/guilds/{guild}/notes/{noteKey}", body: fixed(map[string]any{"content": "seeded"}), prep: func(m *matrix, s side) side { return s.with("noteKey", fmt.Sprintf("seeded%d.md", m.next())) }},
	"putNoteAgent":   {method: "PUT", path: "/api/agents/{agent}/notes/{noteKey}", body: fixed(map[string]any{"content": "seeded"}), prep: func(m *matrix, s side) side { return s.with("noteKey", fmt.Sprintf("seeded%d.md", m.next())) }},
	"putAgentMemory": {method: "PUT", path: "/api/agents/{agent}/memory", body: fixed(map[string]any{"content": "seeded memory"})},

	"mcpRunMessage": {method: "POST", path: "/api/runs/{run}/mcp", body: fixed(mcpInitialize)},
	"mcpRunStream":  {method: "GET", path: "/api/runs/{run}/mcp"},
	"mcpRunEnd":     {method: "DELETE", path: "/api/runs/{run}/mcp", mcpSession: true},
	"mcpMessage":    {method: "POST", path: "/mcp", body: fixed(mcpInitialize)},
	"mcpStream":     {method: "GET", path: "/mcp"},
	"mcpEnd":        {method: "DELETE", path: "/mcp", mcpSession: true},

	"listOrgApprovals":      {method: "GET", path: "/api/orgs/{org}/approvals"},
	"listGuildApprovals":    {method: "GET", path: "/api/guilds/{guild}/approvals"},
	"listAgentApprovals":    {method: "GET", path: "/api/agents/{agent}/approvals"},
	"countPendingApprovals": {method: "GET", path: "/api/approvals/pending"},
	"getApproval":           {method: "GET", path: "/api/approvals/{approval}"},
	"approveApproval": {method: "POST", path: "/api/approvals/{approval}/approve", prep: func(m *matrix, s side) side {
		return s.with("approval", m.approval(s))
	}},
	"denyApproval": {method: "POST", path: "/api/approvals/{approval}/deny", body: fixed(map[string]any{"reason": "not now"}), prep: func(m *matrix, s side) side {
		return s.with("approval", m.approval(s))
	}},
}

// mcpInitialize is an MCP client's first message.
var mcpInitialize = map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
	"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "matrix", "version": "1"}}}

// matrixGaps are the operations not under the matrix yet, and why: each is to get its request and
// row.
var matrixGaps = map[string]string{}

// adminPrincipal is the bootstrap admin, for fixtures made through the identity service.
var adminPrincipal = identityAdmin()

// placeholder is a side's object named in a path.
var placeholder = regexp.MustCompile(`\{([A-Za-z0-9]+)\}`)

// fill puts the side's objects into a path.
func fill(t testing.TB, path string, s side) string {
	return placeholder.ReplaceAllStringFunc(path, func(p string) string {
		k := p[1 : len(p)-1]
		v, ok := s[k]
		if !ok {
			t.Fatalf("%s names %s, which the side does not hold", path, p)
		}
		if k == "callback" {
			return v
		}
		return url.QueryEscape(v)
	})
}

// actor is who the audit log must name for a request: the credential's kind, and its id or
// account when known.
type actor struct{ kind, id, account string }

// principal is the caller for who with the A side a (the fresh objects of a request on A, or A
// itself), and the actor the audit log names.
func (m *matrix) principal(who string, a side) (caller, actor) {
	m.t.Helper()
	get := func(k string) string {
		if v := a[k]; v != "" {
			return v
		}
		return m.A[k]
	}
	switch who {
	case "adm":
		return asBearer(token), actor{kind: orchestrator.CredentialBootstrap}
	case "ses", "own", "op", "view", "g1", "g1v", "ownB", "nobody":
		return m.session(who), actor{kind: orchestrator.CredentialSession, account: m.acct[who].ID}
	case "pat":
		t := m.pat(get("org"))
		return asBearer(t.Token), actor{kind: orchestrator.CredentialToken, id: t.ID, account: m.acct["maker"].ID}
	case "key":
		k := m.key(get("agent"))
		return asBearer(k.Key), actor{kind: orchestrator.CredentialAgentKey, id: k.ID}
	case "run":
		return asBearer(m.runTok[get("run")]), actor{kind: orchestrator.CredentialRunToken, id: get("run")}
	case "runX":
		return asBearer(m.runTok[get("closedRun")]), actor{kind: "anonymous"}
	case "rev", "exp":
		return asBearer(m.dead[who].Token), actor{kind: "anonymous"}
	}
	return caller{}, actor{kind: "anonymous"}
}

// accountOf is the account behind a session or token principal ("" for others).
func accountOf(who string) string {
	switch who {
	case "ses", "own", "op", "view", "g1", "g1v", "ownB", "nobody":
		return who
	case "pat":
		return "maker"
	}
	return ""
}

// sentRequest is one request the matrix sent, for the audit log's check.
type sentRequest struct {
	op, who, method, id string
	status              int
	actor               actor
	carried             bool
}

// TestAuthorizationMatrix sends every operation as every principal against A's and B's objects and
// checks each status against matrixWant; every successful answer is searched for what its
// principal may not see (another organisation's ids, a viewer's hidden names and arguments, any
// secret but the one it mints); then every request that changed state or was refused with a
// credential is one audit row naming its operation, actor and status, and no audit row holds a
// secret.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	ops := documentedOps(t)
	reqs, rules := map[string]request{}, map[string]string{}
	for op := range matrixGaps {
		if _, ok := ops[op]; !ok {
			t.Errorf("matrixGaps names %s, which openapi.json no longer documents: remove it", op)
		}
	}
	for op, doc := range ops {
		if why := matrixGaps[op]; why != "" {
			t.Logf("%s (%s) is not under the matrix yet: %s", op, doc, why)
			continue
		}
		rq, ok := matrixRequests[op]
		if !ok {
			var rule string
			var err error
			if rq, rule, err = byRule(doc); err != nil {
				row := rule + " " + successOf(rq.method)
				if rule == "" {
					row = "<a code per principal: " + strings.Join(principals, " ") + ">"
				}
				t.Errorf("openapi.json's operation %s (%s) has no request in matrixRequests, and the matrix cannot send it by rule: %v. Add to matrixRequests\n\t%q: {method: %q, path: %q, body: func(m *matrix, s side) any { ... }, prep: func(m *matrix, s side) side { ... }},\n"+
					"(braces name a side's objects; prep makes fresh ones for a request that deletes or closes what it names) and to matrixWant\n\t%q: %q,\n"+
					"(a rule of ruleRows and the success status, or the codes; the test prints what each principal got once it is sent)", op, doc, err, op, rq.method, rq.path, op, row)
				continue
			}
			rules[op] = rule
		}
		reqs[op] = rq
		if matrixWant[op] != "" {
			wantOf(t, op) // a rule's name must resolve
		}
	}
	for op := range matrixRequests {
		if _, ok := ops[op]; !ok {
			t.Errorf("matrixRequests sends %s, which openapi.json no longer documents: remove it", op)
		}
	}
	for op := range matrixWant {
		if _, ok := ops[op]; !ok {
			t.Errorf("matrixWant has a row for %s, which openapi.json no longer documents: remove it", op)
		}
	}
	m := newMatrix(t)
	names := make([]string, 0, len(reqs))
	for op := range reqs {
		names = append(names, op)
	}
	sort.Strings(names)
	got, want := map[string]string{}, map[string]string{}
	var sent []sentRequest
	for _, op := range names {
		rq, doc := reqs[op], ops[op]
		want[op] = wantOf(t, op)
		if want[op] == "" && rules[op] != "" {
			want[op] = strings.ReplaceAll(ruleRows[rules[op]], "ok", "200")
		}
		sides := []side{m.A, m.B}
		if rq.sides() == 1 {
			sides = []side{nil}
		}
		if n := strings.Count(want[op], "|") + 1; want[op] != "" && n != len(sides) {
			t.Fatalf("%s: matrixWant has %d groups of codes, but the request is sent %d times per principal", op, n, len(sides))
		}
		var groups []string
		for i, base := range sides {
			var codes []string
			for _, who := range principals {
				s := base
				if s == nil {
					s = m.A
				}
				m.cookies = nil
				if rq.prep != nil {
					s = rq.prep(m, s)
				}
				a := m.A
				if i == 0 {
					a = s
				}
				if rq.fresh && accountOf(who) != "" {
					m.forget(accountOf(who))
				}
				c, act := m.principal(who, a)
				if publicOp(op) {
					act = publicActor(m, op)
				}
				path := fill(t, rq.path, s)
				if p, _, _ := strings.Cut(path, "?"); operationOf(rq.method, p) != doc {
					t.Fatalf("%s: %s %s is not the documented %s", op, rq.method, path, doc)
				}
				var body any
				if rq.body != nil {
					body = rq.body(m, s)
				}
				id := fmt.Sprintf("matrix-%06d", m.next())
				c.header, c.cookies = nil, m.cookies
				if rq.mcpSession {
					c.header = map[string]string{"Mcp-Session-Id": m.mcpSession(c, path)}
				}
				c.header = maps.Clone(c.header)
				if c.header == nil {
					c.header = map[string]string{}
				}
				c.header["X-Request-Id"] = id
				var st int
				var raw []byte
				var h http.Header
				if rq.stream {
					st, h = m.stream(c, path)
				} else {
					st, raw, h = m.exchange(c, rq.method, path, body)
				}
				if rq.fresh && accountOf(who) != "" {
					m.forget(accountOf(who))
				}
				codes = append(codes, strconv.Itoa(st))
				if st/100 == 2 || st/100 == 3 {
					m.inspect(op, who, c, raw, h)
				}
				sent = append(sent, sentRequest{op: op, who: who, method: rq.method, id: id, status: st, actor: act, carried: c.bearer != "" || c.cookie != ""})
			}
			groups = append(groups, strings.Join(codes, " "))
		}
		got[op] = strings.Join(groups, " | ")
	}
	var wrong []string
	for _, op := range names {
		switch {
		case got[op] == want[op]:
		case matrixWant[op] == "" && rules[op] != "":
			wrong = append(wrong, fmt.Sprintf("%s (%s) has no row in matrixWant, and by rule (%s) it should answer\n  want %s\n  got  %s\n"+
				"  if its route's rule is right, add to matrixWant\n\t%q: %q,", op, ops[op], rules[op], want[op], got[op], op, asRule(got[op])))
		case matrixWant[op] == "":
			wrong = append(wrong, fmt.Sprintf("%s (%s) has no row in matrixWant; if these answers are right, add\n\t%q: %q,", op, ops[op], op, asRule(got[op])))
		default:
			wrong = append(wrong, fmt.Sprintf("%s (matrixWant %q):\n  want %s\n  got  %s", op, matrixWant[op], want[op], got[op]))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d operations answered otherwise than matrixWant (columns %s):\n%s", len(wrong), strings.Join(principals, " "), strings.Join(wrong, "\n"))
		var table strings.Builder
		for _, op := range names {
			fmt.Fprintf(&table, "\t%-30q %q,\n", op+":", asRule(got[op]))
		}
		t.Logf("the answers as a table:\n%s", table.String())
	}
	m.checkAudit(sent, ops)
}

// successOf is the usual success status of a method's operation.
func successOf(method string) string {
	switch method {
	case "POST":
		return "201"
	case "DELETE":
		return "204"
	}
	return "200"
}

// documentedOps reads openapi.json's operations: operationId → "METHOD /path".
func documentedOps(t testing.TB) map[string]string {
	t.Helper()
	var d struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	raw, err := os.ReadFile("openapi.json")
	if err == nil {
		err = json.Unmarshal(raw, &d)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for path, ops := range d.Paths {
		for method, o := range ops {
			if method == "parameters" {
				continue
			}
			if o.OperationID == "" {
				t.Fatalf("openapi.json: %s %s has no operationId", method, path)
			}
			out[o.OperationID] = strings.ToUpper(method) + " " + path
		}
	}
	return out
}

// inspect searches a successful answer for what its principal may not see: any secret of the world
// (but the caller's own), for a viewer the names of secrets and the arguments and results of calls,
// and the ids of objects outside its reach. New secrets it mints are kept for the audit's scan.
func (m *matrix) inspect(op, who string, c caller, raw []byte, h http.Header) {
	m.t.Helper()
	text := string(raw)
	for _, s := range m.secrets {
		if s != "" && s != c.csrf && s != c.cookie && strings.Contains(text, s) {
			m.t.Errorf("%s answered %s a secret of the world: %.300s", op, who, text)
		}
	}
	if viewers[who] {
		for s := range m.hidden {
			if strings.Contains(text, s) {
				m.t.Errorf("%s showed %s (a viewer) %q: %.300s", op, who, s, text)
			}
		}
	}
	if publicOp(op) {
		return // an answer about the one who signs in, whoever else the request carried
	}
	for _, id := range m.unreachable(who) {
		if strings.Contains(text, id) {
			m.t.Errorf("%s showed %s %s, outside its reach: %.300s", op, who, id, text)
		}
	}
	var out map[string]any
	if json.Unmarshal(raw, &out) == nil {
		for _, k := range []string{"token", "key", "csrf_token", "url"} {
			if v, ok := out[k].(string); ok && v != "" && (k != "key" || strings.HasPrefix(v, "gld_")) { // a note's key is its name, not a credential
				m.minted = append(m.minted, v)
			}
		}
	}
	for _, ck := range (&http.Response{Header: h}).Cookies() {
		if ck.Value != "" {
			m.minted = append(m.minted, ck.Value)
		}
	}
}

// unreachable lists the ids of objects outside who's reach.
func (m *matrix) unreachable(who string) []string {
	ids := func(s side, keys ...string) []string {
		var out []string
		for _, k := range keys {
			if v := s[k]; v != "" {
				out = append(out, v)
			}
		}
		return out
	}
	every := func(s side) []string {
		var out []string
		for k, v := range s {
			if k != "like" && k != "delivery" { // a delivery's id is a small number: found anywhere
				out = append(out, v)
			}
		}
		return out
	}
	switch who {
	case "own", "op", "view", "pat":
		return every(m.B)
	case "ownB":
		return every(m.A)
	case "nobody":
		return append(every(m.A), every(m.B)...)
	case "g1", "g1v":
		return append(every(m.B), ids(m.A, "guild2", "agent2", "issue2", "orgNote", "collection")...)
	case "key", "run":
		out := append(every(m.B), ids(m.A, "guild2", "agent2", "issue", "issue2", "note", "orgNote", "collection", "member")...)
		if who == "run" {
			out = append(out, m.A["closedRun"])
		}
		return out
	}
	return nil
}

// checkAudit flushes the audit log and checks it against the requests: one row for each that
// changed state (or tried to), each refused one that carried a credential and each single
// sign-on callback, naming the operation, the status and the actor; none for a read that went
// through. Every documented operation that changes state went through at least once and so wrote
// its row. No row holds a secret the test made or saw minted.
func (m *matrix) checkAudit(sent []sentRequest, ops map[string]string) {
	m.t.Helper()
	m.audit.Flush(m.ctx)
	rows, err := m.pool.Query(m.ctx, `SELECT request_id, operation, status, actor_kind, actor_id, account_id FROM audit_log WHERE request_id LIKE 'matrix-%'`)
	if err != nil {
		m.t.Fatal(err)
	}
	type row struct {
		op                string
		status            int
		kind, id, account string
		n                 int
	}
	byID := map[string]*row{}
	for rows.Next() {
		var id string
		var r row
		if err := rows.Scan(&id, &r.op, &r.status, &r.kind, &r.id, &r.account); err != nil {
			m.t.Fatal(err)
		}
		if prev := byID[id]; prev != nil {
			prev.n++
			continue
		}
		r.n = 1
		byID[id] = &r
	}
	if err := rows.Err(); err != nil {
		m.t.Fatal(err)
	}
	written, tried := map[string]bool{}, map[string]bool{}
	for _, s := range sent {
		tried[s.op] = true
		if r := byID[s.id]; r != nil && s.status/100 == 2 && r.op == s.op {
			written[s.op] = true
		}
	}
	for op, doc := range ops {
		if tried[op] && !strings.HasPrefix(doc, "GET ") && !written[op] {
			m.t.Errorf("%s (%s) changes state, but no request of the matrix went through and wrote its audit row", op, doc)
		}
	}
	for _, s := range sent {
		refused := s.status == 401 || s.status == 403 || s.status == 404
		want := s.method != "GET" || (refused && s.carried) || s.op == "finishSSO"
		r := byID[s.id]
		switch {
		case !want && r != nil:
			m.t.Errorf("%s by %s (%d) is in the audit log, though it read and went through", s.op, s.who, s.status)
		case want && r == nil:
			m.t.Errorf("%s by %s (%d) is not in the audit log", s.op, s.who, s.status)
		case want && (r.n != 1 || r.op != s.op || r.status != s.status):
			m.t.Errorf("%s by %s (%d): the audit log has %d rows, the first %+v", s.op, s.who, s.status, r.n, *r)
		case want && (s.status != 401 || publicOp(s.op)) && (r.kind != s.actor.kind || s.actor.id != "" && r.id != s.actor.id ||
			s.actor.account != "" && r.account != s.actor.account):
			m.t.Errorf("%s by %s (%d): the audit row names %s %s (account %s), want %+v", s.op, s.who, s.status, r.kind, r.id, r.account, s.actor)
		}
	}
	scan := append(append([]string{}, m.secrets...), m.minted...)
	for s := range m.hidden {
		if !strings.HasPrefix(s, "MATRIX_") { // a secret's name may be an audit row's target; arguments never
			scan = append(scan, s)
		}
	}
	for _, s := range []string{"guild plan of A", "org policy of A", "guild plan of B", "org policy of B"} {
		scan = append(scan, s)
	}
	for _, s := range scan {
		var n int
		if err := m.pool.QueryRow(m.ctx, `SELECT count(*) FROM audit_log a WHERE strpos(a::text, $1) > 0`, s).Scan(&n); err != nil {
			m.t.Fatal(err)
		}
		if n > 0 {
			m.t.Errorf("%d audit rows hold a secret or a content the test made (%d characters, starting %.6q)", n, len(s), s)
		}
	}
	var total int
	if err := m.pool.QueryRow(m.ctx, `SELECT count(*) FROM audit_log`).Scan(&total); err != nil {
		m.t.Fatal(err)
	}
	m.t.Logf("%d requests, %d audit rows searched for %d secrets", len(sent), total, len(scan))
}

// publicActor is who a public operation's audit row names: the account it signs in, else nobody.
func publicActor(m *matrix, op string) actor {
	switch op {
	case "signIn":
		return actor{kind: orchestrator.CredentialSession, account: m.acct["signer"].ID}
	case "finishSSO":
		return actor{kind: orchestrator.CredentialSession, account: m.acct["sso"].ID}
	case "acceptInvitation":
		return actor{kind: orchestrator.CredentialSession}
	}
	return actor{kind: "anonymous"}
}

// publicOp reports whether an operation needs no credential (its audit row is anonymous).
func publicOp(op string) bool {
	switch op {
	case "signIn", "acceptInvitation", "oauthCallback", "startSSO", "finishSSO", "openapi":
		return true
	}
	return false
}

// TestMatrixByRule: an operation matrixRequests does not list is sent by rule when it is a GET
// naming objects a side holds, and is refused with what to add otherwise.
func TestMatrixByRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc, path, rule, err string
	}{
		{"GET /api/guilds/{id}/events", "/api/guilds/{guild}/events", "read guild", ""},
		{"GET /api/runs/{id}/events", "/api/runs/{run}/events", "read run", ""},
		{"GET /api/agents/{id}/files/{name}", "", "", "follows \"files\""},
		{"GET /api/orgs/{id}/approvals", "/api/orgs/{org}/approvals", "read org", ""},
		{"GET /api/approvals", "/api/approvals", "list", ""},
		{"POST /api/agents/{id}/files", "/api/agents/{agent}/files", "write agent", "changes state"},
		{"DELETE /api/collections/{id}", "/api/collections/{collection}", "write org", "changes state"},
	} {
		rq, rule, err := byRule(tc.doc)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || rule != tc.rule || tc.path != "" && rq.path != tc.path {
				t.Errorf("byRule(%q) = %q %q %v, want the error %q and the rule %q", tc.doc, rq.path, rule, err, tc.err, tc.rule)
			}
			continue
		}
		if err != nil || rq.path != tc.path || rule != tc.rule || rq.method != "GET" {
			t.Errorf("byRule(%q) = %+v %q %v, want GET %s by %q", tc.doc, rq, rule, err, tc.path, tc.rule)
		}
		if _, ok := ruleRows[rule]; !ok {
			t.Errorf("byRule(%q) answered %q, which ruleRows lacks", tc.doc, rule)
		}
	}
	for n, row := range ruleRows {
		for _, g := range strings.Split(row, "|") {
			if got := len(strings.Fields(g)); got != len(principals) {
				t.Errorf("ruleRows[%q] has %d codes in a group, want one per principal (%d)", n, got, len(principals))
			}
		}
	}
	for op := range matrixWant {
		for _, g := range strings.Split(wantOf(t, op), "|") {
			if got := len(strings.Fields(g)); got != len(principals) {
				t.Errorf("matrixWant[%q] has %d codes in a group, want one per principal (%d)", op, got, len(principals))
			}
		}
	}
}
