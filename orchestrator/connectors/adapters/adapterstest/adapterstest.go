// Package adapterstest holds what the adapters' tests share: a loopback fake of a provider's REST
// API that checks the credential header on every request, and golden files updated with -update.
package adapterstest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// update rewrites golden files instead of comparing them.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Golden compares got with testdata/<name>.golden, or writes it under -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden dir: %v", err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatalf("write golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s (run go test -update to write it): %v", path, err)
	}
	if string(want) != got+"\n" {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// Testdata reads testdata/<name>, failing the test when it is missing.
func Testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("testdata: %v", err)
	}
	return b
}

// Fake is a provider on loopback: routes by "METHOD /path" (a path may end in /* to match a
// prefix), a credential check on every request, and the requests it saw.
type Fake struct {
	*httptest.Server
	mu       sync.Mutex
	routes   map[string]http.HandlerFunc
	Check    func(r *http.Request) bool // true when the request carries the login's credentials
	Requests []*http.Request            // every request, in order (bodies are not kept)
	Denied   int                        // requests that failed Check
	Deny     []byte                     // the body of the 401 a request failing Check gets; nil is {"error":"invalid api key"}
}

// NewFake starts a fake that answers 401 {"error":"invalid api key"} to a request failing check.
func NewFake(t testing.TB, check func(r *http.Request) bool) *Fake {
	f := &Fake{routes: map[string]http.HandlerFunc{}, Check: check}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// Handle adds a route, e.g. "GET /api/v3/ping".
func (f *Fake) Handle(route string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = h
}

// JSON adds a route answering a fixed JSON body.
func (f *Fake) JSON(route string, status int, body []byte) {
	f.Handle(route, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}

// Last returns the last request the fake saw.
func (f *Fake) Last() *http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.Requests) == 0 {
		return nil
	}
	return f.Requests[len(f.Requests)-1]
}

// CheckLast fails t unless the fake's last request went to path with every query value given.
func (f *Fake) CheckLast(t testing.TB, path string, query map[string]string) {
	t.Helper()
	r := f.Last()
	if r == nil || r.URL.Path != path {
		t.Fatalf("last request %v, want path %s", r, path)
	}
	for k, v := range query {
		if got := r.URL.Query().Get(k); got != v {
			t.Errorf("query %s=%q, want %q", k, got, v)
		}
	}
}

// Count is the number of requests seen.
func (f *Fake) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Requests)
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.Requests = append(f.Requests, r.Clone(r.Context()))
	ok := f.Check == nil || f.Check(r)
	deny := f.Deny
	if !ok {
		f.Denied++
	}
	h := f.routes[r.Method+" "+r.URL.Path]
	if h == nil {
		best := ""
		for k, v := range f.routes {
			if p, found := strings.CutSuffix(k, "*"); found && strings.HasPrefix(r.Method+" "+r.URL.Path, p) && len(p) > len(best) {
				best, h = p, v
			}
		}
	}
	f.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		body := deny
		if body == nil {
			body = []byte(`{"error":"invalid api key"}`)
		}
		_, _ = w.Write(body)
		return
	}
	if h == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"error":"no route %s %s"}`, r.Method, r.URL.Path)
		return
	}
	h(w, r)
}

// Series builds a JSON array of n [ms, value] pairs from start, step ms apart, for chart fakes.
func Series(n int, start, step int64, value func(i int) float64) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%d,%v]", start+int64(i)*step, value(i))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// CoinGecko is CoinGecko Pro on loopback accepting key: ping, and a search whose one coin is
// named after the key it was sent (an echo, so redaction can be seen), plus simple/price for
// Pinned prices.
func CoinGecko(t testing.TB, key string) *Fake {
	f := NewFake(t, func(r *http.Request) bool { return r.Header.Get("x-cg-pro-api-key") == key })
	f.Deny = []byte(`{"status":{"error_code":10002,"error_message":"API Key Missing"}}`)
	f.JSON("GET /api/v3/ping", 200, []byte(`{"gecko_says":"(V3) To the Moon!"}`))
	f.Handle("GET /api/v3/search", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"coins": []any{map[string]any{"id": "bitcoin", "name": "Bitcoin " + r.Header.Get("x-cg-pro-api-key"), "symbol": "BTC", "market_cap_rank": 1}}})
	})
	f.Handle("GET /api/v3/simple/price", func(w http.ResponseWriter, r *http.Request) {
		out := map[string]any{}
		for _, id := range strings.Split(r.URL.Query().Get("ids"), ",") {
			if id == "bitcoin" || id == "ethereum" {
				out[id] = map[string]any{"usd": 67187.3, "usd_24h_change": -1.25, "last_updated_at": 1711843200}
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	return f
}
