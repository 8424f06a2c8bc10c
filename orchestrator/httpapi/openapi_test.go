package httpapi_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
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
