package httpapi_test

import (
	"encoding/json"
	"fmt"
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
// the table does not cover fails the test, and so does a row for one that no longer exists.
//
// The principals, in the table's column order:
//
//	adm   the bootstrap admin token (GUILDS_ADMIN_TOKEN)
//	ses   an instance admin account's session
//	own   the owner of A (a session)
//	op    an operator of A
//	view  a viewer of A
//	g1    the operator of guild A1 only
//	ownB  the owner of B
//	pat   an API token narrowed to viewer of A (its maker owns A)
//	key   the agent key of A's agent (in A1)
//	run   the run token of A's open run (of that agent)
//	runX  the run token of A's closed run
//	rev   a revoked API token
//	exp   an expired API token
//	none  no credential
var principals = []string{"adm", "ses", "own", "op", "view", "g1", "ownB", "pat", "key", "run", "runX", "rev", "exp", "none"}

// matrixWant is the expected status per operation and principal: one group of 14 codes for an
// operation sent once, else the codes against A's objects, "|", the codes against B's. The rules
// they follow: outside a principal's reach is 404, the same as an id that does not exist; inside
// it but above its role, 403 naming the role; a runtime credential (key, run) reaches only its own
// agent's or run's routes; a dead or missing credential is 401 on every route that needs one.
var matrixWant = map[string]string{
	//                              adm ses own op  vie g1  owB pat key run rnX rev exp non | adm ses own op  vie g1  owB pat key run rnX rev exp non
	"acceptInvitation":            "201 201 201 201 201 201 201 201 201 201 201 201 201 201 | 201 201 201 201 201 201 201 201 201 201 201 201 201 201",
	"accessAgentTools":            "200 200 200 200 200 200 404 200 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"accessGuildTools":            "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"accessOrganisationTools":     "200 200 200 200 200 403 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"addGuildRepository":          "201 201 201 201 403 201 404 403 404 404 401 401 401 401 | 201 201 404 404 404 404 201 404 404 404 401 401 401 401",
	"adminListMcpServers":         "200 200 403 403 403 403 403 403 403 403 401 401 401 401",
	"callTool":                    "200 200 200 200 403 200 404 403 200 200 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"closeRun":                    "200 200 200 200 403 200 404 403 200 200 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"connectMcp":                  "201 201 201 201 403 201 404 403 403 403 401 401 401 401 | 201 201 404 404 404 404 201 404 403 403 401 401 401 401",
	"createAccount":               "201 201 403 403 403 403 403 403 403 403 401 401 401 401",
	"createAgent":                 "201 201 201 201 403 201 404 403 404 404 401 401 401 401 | 201 201 404 404 404 404 201 404 404 404 401 401 401 401",
	"createAgentKey":              "201 201 201 201 403 201 404 403 403 404 401 401 401 401 | 201 201 404 404 404 404 201 404 404 404 401 401 401 401",
	"createCollectionGuild":       "201 201 201 201 403 201 404 403 404 404 401 401 401 401 | 201 201 404 404 404 404 201 404 404 404 401 401 401 401",
	"createCollectionOrg":         "201 201 201 201 403 403 404 403 404 404 401 401 401 401 | 201 201 404 404 404 404 201 404 404 404 401 401 401 401",
	"createGuild":                 "201 201 201 201 403 403 404 403 404 404 401 401 401 401 | 201 201 404 404 404 404 201 404 404 404 401 401 401 401",
	"createInvitation":            "201 201 201 403 403 403 404 403 403 403 401 401 401 401 | 201 201 404 404 404 404 201 404 403 403 401 401 401 401",
	"createMcpServer":             "201 201 403 403 403 403 403 403 403 403 401 401 401 401",
	"createOrg":                   "201 201 403 403 403 403 403 403 403 403 401 401 401 401",
	"createToken":                 "403 201 201 201 201 403 404 403 403 403 401 401 401 401 | 403 201 404 404 404 404 201 403 403 403 401 401 401 401",
	"deactivateAccount":           "200 200 403 403 403 403 403 403 403 403 401 401 401 401 | 200 200 403 403 403 403 403 403 403 403 401 401 401 401",
	"deleteAgent":                 "200 200 200 200 403 200 404 403 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"deleteAgentSecret":           "200 200 200 200 403 200 404 403 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"deleteBinding":               "200 200 200 200 403 200 404 403 403 403 401 401 401 401 | 200 200 404 404 404 404 200 404 403 403 401 401 401 401",
	"deleteGuild":                 "200 200 200 200 403 200 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"deleteGuildMember":           "204 204 204 403 403 403 404 403 404 404 401 401 401 401 | 204 204 404 404 404 404 204 404 404 404 401 401 401 401",
	"deleteGuildRepository":       "204 204 204 204 403 204 404 403 404 404 401 401 401 401 | 204 204 404 404 404 404 204 404 404 404 401 401 401 401",
	"deleteMcpConnection":         "200 200 200 200 403 200 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"deleteOrg":                   "200 200 200 403 403 403 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"deleteOrgMember":             "204 204 204 403 403 403 404 403 404 404 401 401 401 401 | 204 204 404 404 404 404 204 404 404 404 401 401 401 401",
	"finishSSO":                   "302 302 302 302 302 302 302 302 302 302 302 302 302 302",
	"getAgent":                    "200 200 200 200 200 200 404 200 200 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"getAgentMemory":              "200 200 200 200 200 200 404 200 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"getCollection":               "200 200 200 200 200 404 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"getCurrentSession":           "200 200 200 200 200 200 200 200 200 200 401 401 401 401",
	"getGuild":                    "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"getInstance":                 "200 200 200 200 200 200 200 200 200 200 401 401 401 401",
	"getMcpConnection":            "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"getNote":                     "200 200 200 200 200 404 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"getOrg":                      "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"getRun":                      "200 200 200 200 200 200 404 200 200 200 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"githubInstallations":         "200 200 200 200 403 200 404 403 403 403 401 401 401 401 | 200 200 404 404 404 404 200 404 403 403 401 401 401 401",
	"githubPickInstallation":      "200 200 200 200 403 200 404 403 403 403 401 401 401 401 | 200 200 404 404 404 404 200 404 403 403 401 401 401 401",
	"githubRepositories":          "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"githubSelect":                "200 200 200 200 403 200 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"guildRepositories":           "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"healthz":                     "200 200 200 200 200 200 200 200 200 200 200 200 200 200",
	"listAccounts":                "200 200 403 403 403 403 403 403 403 403 401 401 401 401",
	"listAgentKeys":               "200 200 200 200 403 200 404 403 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listAgentMemoryRevisions":    "200 200 200 200 200 200 404 200 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listAgentSchedules":          "200 200 200 200 200 200 404 200 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listAgentSecrets":            "200 200 200 200 403 200 404 403 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listAgents":                  "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listAudit":                   "200 200 403 403 403 403 403 403 403 403 401 401 401 401",
	"listBindings":                "200 200 200 200 200 200 404 200 403 403 401 401 401 401 | 200 200 404 404 404 404 200 404 403 403 401 401 401 401",
	"listCalls":                   "200 200 200 200 200 200 404 200 200 200 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listCollectionRecords":       "200 200 200 200 200 404 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listCollectionsGuild":        "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listCollectionsOrg":          "200 200 200 200 200 403 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listDriveFolders":            "200 200 200 200 403 403 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listGroupChat":               "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listGuildIssues":             "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listGuildMembers":            "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listGuilds":                  "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listMcpConnectionTools":      "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listMcpConnections":          "200 200 200 200 200 200 404 200 403 403 401 401 401 401 | 200 200 404 404 404 404 200 404 403 403 401 401 401 401",
	"listMcpServers":              "200 200 200 200 200 200 200 200 403 403 401 401 401 401",
	"listNotesAgent":              "200 200 200 200 200 200 404 200 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listNotesGuild":              "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listNotesOrg":                "200 200 200 200 200 403 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listOrgAudit":                "200 200 200 403 403 403 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listOrgIssues":               "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listOrgMembers":              "200 200 200 200 200 403 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listOrgs":                    "200 200 200 200 200 200 200 200 403 403 401 401 401 401",
	"listScheduleFirings":         "200 200 200 200 200 200 404 200 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"listTokens":                  "403 200 200 200 200 200 200 200 403 403 401 401 401 401",
	"metrics":                     "200 200 403 403 403 403 403 403 403 403 401 401 401 401",
	"nextGeneration":              "200 200 200 200 403 200 404 403 200 200 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"oauthCallback":               "200 200 200 200 200 200 200 200 200 200 200 200 200 200 | 200 200 200 200 200 200 200 200 200 200 200 200 200 200",
	"openapi":                     "200 200 200 200 200 200 200 200 200 200 200 200 200 200",
	"patchAgent":                  "200 200 200 200 403 200 404 403 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"patchMcpCatalogTool":         "200 200 403 403 403 403 403 403 403 403 401 401 401 401",
	"patchMcpServer":              "200 200 403 403 403 403 403 403 403 403 401 401 401 401",
	"pickDriveFolder":             "200 200 200 200 403 403 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"putAgentSecret":              "200 200 200 200 403 200 404 403 403 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"putBinding":                  "200 200 200 200 403 200 404 403 403 403 401 401 401 401 | 200 200 404 404 404 404 200 404 403 403 401 401 401 401",
	"putCollectionGrant":          "200 200 200 200 403 404 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"putGuildMember":              "200 200 200 403 403 403 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"putOrgMember":                "200 200 200 403 403 403 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"putPinnedCoins":              "200 200 200 200 403 403 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"readyz":                      "200 200 200 200 200 200 200 200 200 200 200 200 200 200",
	"refreshMcpConnection":        "200 200 200 200 403 403 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"resolveGuildIssues":          "200 200 200 200 403 200 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"resolveIssue":                "200 200 200 200 403 200 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"revokeAgentKey":              "204 204 204 204 403 204 404 403 403 404 401 401 401 401 | 204 204 404 404 404 404 204 404 404 404 401 401 401 401",
	"revokeToken":                 "403 404 204 404 404 404 404 403 403 403 401 401 401 401 | 403 404 404 404 404 404 204 403 403 403 401 401 401 401",
	"searchConnectionPinnedCoins": "200 200 200 200 200 200 404 200 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"searchPinnedCoins":           "200 200 200 200 403 200 200 403 403 403 401 401 401 401",
	"signIn":                      "201 201 201 201 201 201 201 201 201 201 201 201 201 201",
	"signOut":                     "403 204 204 204 204 204 204 403 403 403 401 401 401 401",
	"signOutEverywhere":           "403 204 204 204 204 204 204 403 403 403 401 401 401 401",
	"startRun":                    "201 201 201 201 403 201 404 403 201 404 401 401 401 401 | 201 201 404 404 404 404 201 404 404 404 401 401 401 401",
	"startSSO":                    "302 302 302 302 302 302 302 302 302 302 302 302 302 302",
	"testMcpCall":                 "200 200 200 200 403 200 404 403 404 404 401 401 401 401 | 200 200 404 404 404 404 200 404 404 404 401 401 401 401",
	"updateAccount":               "200 200 403 403 403 403 403 403 403 403 401 401 401 401 | 200 200 403 403 403 403 403 403 403 403 401 401 401 401",
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
	"deleteOrg":   {method: "DELETE", path: "/api/orgs/{org}", prep: func(m *matrix, s side) side { return m.scope(s["like"]) }},
	"createGuild": {method: "POST", path: "/api/orgs/{org}/guilds", body: name("Guild")},
	"listGuilds":  {method: "GET", path: "/api/orgs/{org}/guilds"},
	"getGuild":    {method: "GET", path: "/api/guilds/{guild}"},
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
	"listAudit":    {method: "GET", path: "/api/admin/audit"},
}

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
	case "ses", "own", "op", "view", "g1", "ownB":
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
	case "ses", "own", "op", "view", "g1", "ownB":
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
	for op := range ops {
		if matrixRequests[op].method == "" {
			t.Errorf("openapi.json's operation %s has no request in matrixRequests", op)
		}
		if matrixWant[op] == "" {
			t.Errorf("openapi.json's operation %s has no row in matrixWant", op)
		}
	}
	for op := range matrixRequests {
		if _, ok := ops[op]; !ok {
			t.Errorf("matrixRequests sends %s, which openapi.json no longer documents", op)
		}
	}
	for op := range matrixWant {
		if _, ok := ops[op]; !ok {
			t.Errorf("matrixWant has a row for %s, which openapi.json no longer documents", op)
		}
	}
	m := newMatrix(t)
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	got := map[string]string{}
	var sent []sentRequest
	for _, op := range names {
		rq, doc := matrixRequests[op], ops[op]
		if rq.method == "" {
			continue
		}
		sides := []side{m.A, m.B}
		if rq.sides() == 1 {
			sides = []side{nil}
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
				c.header, c.cookies = map[string]string{"X-Request-Id": id}, m.cookies
				st, raw, h := m.send(c, rq.method, path, body)
				if rq.fresh && accountOf(who) != "" {
					m.forget(accountOf(who))
				}
				codes = append(codes, strconv.Itoa(st))
				if st/100 == 2 || st/100 == 3 {
					m.inspect(op, who, c, raw, h)
				}
				if want := strings.Count(matrixWant[op], "|") + 1; matrixWant[op] != "" && want != len(sides) {
					t.Fatalf("%s: matrixWant has %d groups of codes, but the request is sent %d times per principal", op, want, len(sides))
				}
				sent = append(sent, sentRequest{op: op, who: who, method: rq.method, id: id, status: st, actor: act, carried: c.bearer != "" || c.cookie != ""})
			}
			groups = append(groups, strings.Join(codes, " "))
		}
		got[op] = strings.Join(groups, " | ")
	}
	var wrong []string
	for _, op := range names {
		if got[op] != matrixWant[op] {
			wrong = append(wrong, fmt.Sprintf("%s:\n  want %s\n  got  %s", op, matrixWant[op], got[op]))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d operations answered otherwise than matrixWant (columns %s):\n%s", len(wrong), strings.Join(principals, " "), strings.Join(wrong, "\n"))
		var table strings.Builder
		for _, op := range names {
			fmt.Fprintf(&table, "\t%-30q %q,\n", op+":", got[op])
		}
		t.Logf("the answers as a table:\n%s", table.String())
	}
	m.checkAudit(sent)
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
	if who == "view" || who == "pat" {
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
			if v, ok := out[k].(string); ok && v != "" {
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
			if k != "like" {
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
	case "g1":
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
// through. No row holds a secret the test made or saw minted.
func (m *matrix) checkAudit(sent []sentRequest) {
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
