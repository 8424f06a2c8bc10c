package search_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/search"
)

// fake is a local Tavily: POST /search with Bearer auth, answering the configured status and body,
// recording every request.
type fake struct {
	mu     sync.Mutex
	reqs   []map[string]any
	auths  []string
	status int
	body   string
	delay  time.Duration
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	f.mu.Lock()
	f.reqs = append(f.reqs, m)
	f.auths = append(f.auths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	status, body, delay := f.status, f.body, f.delay
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

const okBody = `{"query":"q","results":[
{"title":"Go 1.26 released","url":"https://go.dev/blog/go1.26","content":"The Go team   is happy\nto announce Go 1.26.","score":0.9},
{"title":"Release notes","url":"https://go.dev/doc/go1.26","content":"` + "x" + `","score":0.5}],"response_time":1.2}`

func TestTavilySearch(t *testing.T) {
	f := &fake{status: 200, body: okBody}
	srv := httptest.NewServer(f)
	defer srv.Close()
	reg := registry.New()
	tv := &search.Tavily{Key: "tvly-KEY123", BaseURL: srv.URL}
	if err := tv.Register(reg); err != nil {
		t.Fatal(err)
	}
	call := func(args string) (string, *registry.Call, error) {
		c := &registry.Call{Args: json.RawMessage(args), Meta: map[string]any{}}
		out, err := reg.Invoke(context.Background(), "tavily_search", c)
		return out, c, err
	}
	out, c, err := call(`{"query":"  what is new in Go 1.26  "}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "1. Go 1.26 released\n   https://go.dev/blog/go1.26\n   The Go team is happy to announce Go 1.26.\n\n2. Release notes\n   https://go.dev/doc/go1.26\n   x\n"
	if out != want {
		t.Fatalf("result:\n%s\nwant:\n%s", out, want)
	}
	if len(c.Secrets) != 1 || c.Secrets[0] != "tvly-KEY123" || c.Meta["results"] != 2 {
		t.Fatalf("secrets %q meta %v", c.Secrets, c.Meta)
	}
	f.mu.Lock()
	auth0, req0 := f.auths[0], f.reqs[0]
	f.mu.Unlock()
	if auth0 != "POST /search Bearer tvly-KEY123" {
		t.Fatalf("request line %q", auth0)
	}
	if r := req0; r["query"] != "what is new in Go 1.26" || r["search_depth"] != "advanced" || r["max_results"] != float64(5) {
		t.Fatalf("request body %v", r)
	}

	for _, tc := range []struct {
		name, args, body string
		status           int
		delay            time.Duration
		want             string
	}{
		{"unauthorized", `{"query":"x"}`, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`, 401, 0, "tavily answered HTTP 401: Unauthorized: missing or invalid API key."},
		{"string detail", `{"query":"x"}`, `{"detail":"Rate limit"}`, 429, 0, "HTTP 429: Rate limit"},
		{"not json", `{"query":"x"}`, `<html>`, 200, 0, "not its JSON"},
		{"timeout", `{"query":"x"}`, okBody, 200, 2 * time.Second, "did not answer within 300ms"},
		{"empty query", `{"query":"   "}`, okBody, 200, 0, "query is empty"},
		{"long query", `{"query":"` + strings.Repeat("a", 401) + `"}`, okBody, 200, 0, "at most 400"},
		{"too many", `{"query":"x","max_results":21}`, okBody, 200, 0, "max_results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.mu.Lock()
			f.status, f.body, f.delay = tc.status, tc.body, tc.delay
			f.mu.Unlock()
			if tc.delay > 0 { // a short deadline stands in for the 30 s one only here: a loaded machine may take longer for the rest
				tv.Timeout = 300 * time.Millisecond
				defer func() { tv.Timeout = 0 }()
			}
			_, _, err := call(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}

	// Without the key the call is refused before any request.
	count := func() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.reqs) }
	n := count()
	noKey := registry.New()
	if err := (&search.Tavily{BaseURL: srv.URL}).Register(noKey); err != nil {
		t.Fatal(err)
	}
	_, err = noKey.Invoke(context.Background(), "tavily_search", &registry.Call{Args: json.RawMessage(`{"query":"x"}`), Meta: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), search.KeyVar) || count() != n {
		t.Fatalf("no key: %v (requests %d → %d)", err, n, count())
	}
	// The key joins the redaction set of runs that offer the tool, and only those.
	v, _ := tv.RunSecretValues(context.Background(), orchestrator.Run{OfferedTools: []orchestrator.OfferedTool{{Name: "tavily_search"}}})
	w, _ := tv.RunSecretValues(context.Background(), orchestrator.Run{})
	if len(v) != 1 || v[0] != "tvly-KEY123" || len(w) != 0 {
		t.Fatalf("run secrets %q %q", v, w)
	}
}
