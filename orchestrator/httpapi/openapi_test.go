package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// TestOpenAPIMatchesRoutes: every registered route is in the OpenAPI document, and every path and
// method in the document is a registered route.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t, nil)
	doc := e.must(200, "GET", "/api/openapi.json", nil)
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi version %v", doc["openapi"])
	}
	inDoc := map[string]bool{}
	for path, ops := range doc["paths"].(map[string]any) {
		for method := range ops.(map[string]any) {
			inDoc[strings.ToUpper(method)+" "+path] = true
		}
	}
	param := regexp.MustCompile(`:([A-Za-z_]+)`)
	routes := map[string]bool{}
	for _, r := range e.app.GetRoutes(true) {
		if r.Method == "HEAD" || r.Method == "USE" || r.Path == "/" || strings.HasSuffix(r.Path, "*") {
			continue // fiber adds HEAD for every GET; middleware is not a route
		}
		routes[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	if len(routes) < 15 {
		t.Fatalf("only %d routes found: %v", len(routes), routes)
	}
	for r := range routes {
		if !inDoc[r] {
			t.Errorf("route %s is missing from openapi.json", r)
		}
	}
	for r := range inDoc {
		if !routes[r] {
			t.Errorf("openapi.json documents %s, which is not a route", r)
		}
	}
	// Every $ref points at a schema that exists.
	raw, _ := json.Marshal(doc)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, m := range regexp.MustCompile(`"#/components/schemas/([A-Za-z]+)"`).FindAllStringSubmatch(string(raw), -1) {
		if _, ok := schemas[m[1]]; !ok {
			t.Errorf("$ref to missing schema %s", m[1])
		}
	}
}

// doc is the OpenAPI document parsed once by libopenapi, and its validator.
var doc struct {
	once sync.Once
	v    validator.Validator
	err  error
}

// documentValidator returns the validator of openapi.json (a real OpenAPI 3.1 validator:
// libopenapi-validator).
func documentValidator(t testing.TB) validator.Validator {
	t.Helper()
	doc.once.Do(func() {
		spec, err := os.ReadFile("openapi.json")
		if err != nil {
			doc.err = err
			return
		}
		d, err := libopenapi.NewDocument(spec)
		if err != nil {
			doc.err = err
			return
		}
		v, errs := validator.NewValidator(d)
		if len(errs) > 0 {
			doc.err = errors.Join(errs...)
			return
		}
		doc.v = v
	})
	if doc.err != nil {
		t.Fatalf("openapi.json: %v", doc.err)
	}
	return doc.v
}

// TestOpenAPIDocumentIsValid: openapi.json is a valid OpenAPI 3.1 document.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	ok, errs := documentValidator(t).ValidateDocument()
	for _, e := range errs {
		t.Errorf("%s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
		}
	}
	if !ok && len(errs) == 0 {
		t.Fatal("the document is not valid")
	}
}

// checkLive validates one live answer (its status, headers and body) against the document's
// response for the request's operation, and a request the server accepted (sent: its body)
// against the document's request; every request the tests send through env.do comes here.
func checkLive(t testing.TB, req *http.Request, sent []byte, status int, header http.Header, body []byte) {
	t.Helper()
	seen.add(req, status)
	for _, p := range liveProblems(t, req, status, header, body) {
		t.Errorf("%s\n  body: %.600s", p, body)
	}
	if status/100 == 2 {
		for _, p := range requestProblems(t, req, sent) {
			t.Errorf("%s\n  request body: %.600s", p, sent)
		}
	}
}

// requestProblems lists how a request the server accepted disagrees with openapi.json: the
// document must allow what the server takes.
func requestProblems(t testing.TB, req *http.Request, sent []byte) []string {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(sent))
	ok, errs := documentValidator(t).ValidateHttpRequest(r)
	if ok {
		return nil
	}
	var out []string
	for _, e := range errs {
		msg := fmt.Sprintf("%s %s was accepted, but openapi.json refuses the request: %s: %s", req.Method, req.URL.RequestURI(), e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			msg += fmt.Sprintf("\n  at %s: %s", se.FieldPath, se.Reason)
		}
		out = append(out, msg)
	}
	return out
}

// liveProblems lists how an answer disagrees with openapi.json (libopenapi-validator's findings).
func liveProblems(t testing.TB, req *http.Request, status int, header http.Header, body []byte) []string {
	resp := &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	ok, errs := documentValidator(t).ValidateHttpResponse(req, resp)
	if ok {
		return nil
	}
	var out []string
	for _, e := range errs {
		if (e.IsPathMissingError() || e.IsOperationMissingError()) && (status == 401 || status == 404 || status == 405) {
			continue // a test of a path or method the API does not have: refused, as it must be
		}
		msg := fmt.Sprintf("%s %s answered %d, which disagrees with openapi.json: %s: %s", req.Method, req.URL.Path, status, e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			msg += fmt.Sprintf("\n  at %s: %s", se.FieldPath, se.Reason)
		}
		out = append(out, msg)
	}
	return out
}

// seen records, per documented operation ("GET /api/orgs/{id}"), the classes of live answers
// checked against the document (2 for a success, 4 for a refusal).
var seen = &answersSeen{m: map[string]map[int]bool{}}

type answersSeen struct {
	mu sync.Mutex
	m  map[string]map[int]bool
}

// add records one answer under the operation whose path template matches the request.
func (a *answersSeen) add(req *http.Request, status int) {
	op := operationOf(req.Method, req.URL.Path)
	if op == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m[op] == nil {
		a.m[op] = map[int]bool{}
	}
	a.m[op][status/100] = true
}

// operations are the document's operations as method and path template, with a pattern each.
var operations = sync.OnceValue(func() map[string]*regexp.Regexp {
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	raw, err := os.ReadFile("openapi.json")
	if err == nil {
		err = json.Unmarshal(raw, &d)
	}
	if err != nil {
		panic(err)
	}
	out := map[string]*regexp.Regexp{}
	param := regexp.MustCompile(`\\\{[A-Za-z_]+\\\}`)
	for path, ops := range d.Paths {
		re := regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(path), "[^/]+") + "$")
		for m := range ops {
			if m == "parameters" {
				continue
			}
			out[strings.ToUpper(m)+" "+path] = re
		}
	}
	return out
})

// operationOf names the documented operation of a request, "" for none; a literal segment wins
// over a parameter (GET /api/mcp/servers over GET /api/mcp/{x}).
func operationOf(method, path string) string {
	best := ""
	for op, re := range operations() {
		if strings.HasPrefix(op, method+" ") && re.MatchString(path) && (best == "" || strings.Count(op, "{") < strings.Count(best, "{")) {
			best = op
		}
	}
	return best
}

// notYetLive are the operations whose success no test of this package checks against the
// document yet, and why; the lead's list of gaps, kept exact by unexercised.
var notYetLive = map[string]string{
	"GET /api/guilds/{id}/repositories":                 "needs the GitHub App fake (connectors/github/githubtest) wired into an httpapi env",
	"POST /api/guilds/{id}/repositories":                "needs the GitHub App fake",
	"DELETE /api/guilds/{id}/repositories":              "needs the GitHub App fake",
	"GET /api/mcp/connections/{id}/github/repositories": "needs the GitHub App fake",
	"PUT /api/mcp/connections/{id}/github/selected":     "needs the GitHub App fake",
	"GET /api/mcp/oauth/github-installation":            "needs the GitHub App fake",
	"POST /api/mcp/oauth/github-installation":           "needs the GitHub App fake",
	"GET /api/mcp/oauth/callback":                       "its success is an HTML page after a real authorization-server exchange (oauth_env_test.go drives it outside env.do)",
	"GET /metrics":                                      "the httpapi test servers serve no metrics",
	"GET /api/events":                                   "its success is a stream that stays open (text/event-stream): events_env_test.go reads it with a plain HTTP client on a loopback port, outside env.do",
}

// unexercised lists the operations that document a success or a refusal no live answer checked,
// the successes in notYetLive excepted.
func unexercised() []string {
	var d struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	raw, err := os.ReadFile("openapi.json")
	if err == nil {
		err = json.Unmarshal(raw, &d)
	}
	if err != nil {
		return []string{err.Error()}
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	var out []string
	for path, ops := range d.Paths {
		for m, op := range ops {
			if m == "parameters" {
				continue
			}
			name := strings.ToUpper(m) + " " + path
			var miss []string
			for class, what := range map[int]string{2: "success", 4: "refusal (4xx)"} {
				documented := false
				for code := range op.Responses {
					documented = documented || strings.HasPrefix(code, strconv.Itoa(class))
				}
				if documented && !seen.m[name][class] && (class != 2 || notYetLive[name] == "") {
					miss = append(miss, what)
				}
			}
			if len(miss) > 0 {
				sort.Strings(miss)
				out = append(out, name+": no "+strings.Join(miss, ", no "))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestLiveCheckCatchesDisagreements: the live check refuses an answer the document does not
// allow: an undocumented status, a missing required field, an unknown error code, a wrong type.
func TestLiveCheckCatchesDisagreements(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/api/orgs/org_x", 418, `{"error":{"code":"EINVALID","message":"teapot"}}`},
		{"GET", "/api/orgs/org_x", 200, `{"id":"org_x"}`},
		{"GET", "/api/orgs/org_x", 404, `{"error":{"code":"ENOPE","message":"x"}}`},
		{"GET", "/api/orgs", 200, `{"orgs":[{"id":1}]}`},
	} {
		req, _ := http.NewRequest(tc.method, "http://127.0.0.1:8080"+tc.path, nil)
		h := http.Header{"Content-Type": []string{"application/json"}}
		if problems := liveProblems(t, req, tc.status, h, []byte(tc.body)); len(problems) == 0 {
			t.Errorf("%s %s %d %s passed the live check", tc.method, tc.path, tc.status, tc.body)
		}
	}
}

// TestEveryOperationRefusesAsDocumented: every documented operation, asked without the token and
// then about ids that do not exist (with a malformed body where it takes one), answers what the
// document lists for it; so each has a refusal checked live.
func TestEveryOperationRefusesAsDocumented(t *testing.T) {
	e := platformEnv(t, nil, nil)
	param := regexp.MustCompile(`\{[A-Za-z_]+\}`)
	ops := make([]string, 0, len(operations()))
	for op := range operations() {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		method, path, _ := strings.Cut(op, " ")
		p := param.ReplaceAllString(path, "nope-0")
		var body any
		if method == "POST" || method == "PUT" || method == "PATCH" {
			body = "{"
		}
		e.raw(method, p, body, false)
		e.raw(method, p, body, true)
		if body == nil {
			continue
		}
		// A field the server refuses as unknown, the document must refuse too.
		const extra = `{"zz_unknown_field":1}`
		st, answer, req := e.rawAnswer(method, p, extra)
		if st == 422 && strings.Contains(string(answer), `unknown field \"zz_unknown_field\"`) && !bodyRefused(t, req, []byte(extra), "zz_unknown_field") {
			t.Errorf("%s refuses the unknown field zz_unknown_field, but openapi.json allows it: give its request schema additionalProperties: false", op)
		}
	}
}

// bodyRefused reports whether openapi.json refuses sent as the request's body for a problem that
// names field.
func bodyRefused(t testing.TB, req *http.Request, sent []byte, field string) bool {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(sent))
	_, errs := documentValidator(t).ValidateHttpRequest(r)
	for _, e := range errs {
		for _, se := range e.SchemaValidationErrors {
			if strings.Contains(e.Message, "request body") && strings.Contains(se.Reason, field) {
				return true
			}
		}
	}
	return false
}

// raw sends one request (with the operator token when withToken) and checks the answer, whatever
// its type, against the document.
func (e *env) raw(method, path string, body any, withToken bool) int {
	e.t.Helper()
	var rd io.Reader
	var sent []byte
	if b, ok := body.(string); ok {
		rd, sent = strings.NewReader(b), []byte(b)
	}
	req, _ := http.NewRequest(method, "http://127.0.0.1:8080"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if withToken {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.app.Test(req, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	checkLive(e.t, req, sent, resp.StatusCode, resp.Header, raw)
	return resp.StatusCode
}

// rawAnswer sends body with the operator token, checks the answer against the document, and
// returns its status, its body and the request.
func (e *env) rawAnswer(method, path, body string) (int, []byte, *http.Request) {
	e.t.Helper()
	req, _ := http.NewRequest(method, "http://127.0.0.1:8080"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.app.Test(req, -1)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	checkLive(e.t, req, []byte(body), resp.StatusCode, resp.Header, raw)
	return resp.StatusCode, raw, req
}

// TestPatchAgentAnswersWhatGetReads: PATCH of an agent answers updated_at as stored (microseconds),
// the same value GET reads back.
func TestPatchAgentAnswersWhatGetReads(t *testing.T) {
	e := newEnv(t, nil)
	id := e.agent(nil)
	for range 3 {
		patched := e.must(200, "PATCH", "/api/agents/"+id, map[string]any{"name": "Renamed"})
		got := e.must(200, "GET", "/api/agents/"+id, nil)
		if patched["updated_at"] != got["updated_at"] {
			t.Fatalf("PATCH answered updated_at %v, GET reads %v", patched["updated_at"], got["updated_at"])
		}
	}
}

// TestNestedUnknownFieldsRefusedByBoth: a column with an unknown field is refused by the server
// and by openapi.json's Column (additionalProperties: false).
func TestNestedUnknownFieldsRefusedByBoth(t *testing.T) {
	e := platformEnv(t, nil, nil)
	org := e.must(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})["id"].(string)
	const body = `{"name":"tasks","columns":[{"name":"title","type":"text","zz_unknown_field":true}]}`
	st, answer, req := e.rawAnswer("POST", "/api/orgs/"+org+"/collections", body)
	if st != 422 || !strings.Contains(string(answer), "zz_unknown_field") {
		t.Fatalf("the server took a column's unknown field: %d %s", st, answer)
	}
	if !bodyRefused(t, req, []byte(body), "zz_unknown_field") {
		t.Fatal("openapi.json allows a column's unknown field the server refuses")
	}
}

// staleGaps lists the operations notYetLive names whose success a test checked after all.
func staleGaps() []string {
	seen.mu.Lock()
	defer seen.mu.Unlock()
	var out []string
	for name := range notYetLive {
		if seen.m[name][2] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
