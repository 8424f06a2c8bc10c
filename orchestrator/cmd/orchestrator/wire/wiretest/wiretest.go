// Package wiretest serves the orchestrator's graph, as `orchestrator serve` builds it, for end-to-end
// tests of the packages it joins: the API on a loopback port over a test database, until the test
// ends.
package wiretest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire"
	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// Token is the operator token of every API Serve starts.
const Token = "wiretest-token-7c1f02"

// Log is a goroutine-safe writer for the orchestrator's log.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }

// String returns what was logged so far.
func (l *Log) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// Served is a running API.
type Served struct {
	API  string // its base URL, http://127.0.0.1:port
	Addr string // its address, 127.0.0.1:port
	Log  *Log   // its operational log
}

// Serve reads the configuration from env (the environment's variables, nothing else; a fresh test
// database when DATABASE_URL is unset, the test's own folder when GUILDS_DATA_DIR is, a uid range
// of the test process's own when GUILDS_SANDBOX_UID_BASE is), builds the graph over the migrated
// database and serves its API with Token until the test ends, when it finishes the calls in flight
// and stops what the graph started.
func Serve(t testing.TB, env map[string]string) *Served {
	t.Helper()
	vars := map[string]string{"GUILDS_ADMIN_TOKEN": Token}
	for k, v := range env {
		vars[k] = v
	}
	if vars["DATABASE_URL"] == "" {
		_, vars["DATABASE_URL"] = pgtest.NewDBWithDSN(t)
	}
	if vars["GUILDS_DATA_DIR"] == "" {
		vars["GUILDS_DATA_DIR"] = sandboxtest.Root(t) // its sandboxes' folders, never the source tree
	}
	if vars["GUILDS_SANDBOX_UID_BASE"] == "" {
		// A uid range of this process's own (each serve locks its range host-wide), apart from the
		// default a real orchestrator or another test process on this host may hold.
		base := 100_000_000 + (os.Getpid()%800)*1_000_000
		vars["GUILDS_SANDBOX_UID_BASE"] = strconv.Itoa(base)
		t.Cleanup(func() {
			_ = exec.Command("nft", "delete", "table", "inet", fmt.Sprintf("guilds_sandbox_%d", base)).Run()
		})
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, "")
	if err != nil {
		t.Fatalf("configuration: %v", err)
	}
	ctx := context.Background()
	pool, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Served{API: "http://" + ln.Addr().String(), Addr: ln.Addr().String(), Log: &Log{}}
	log := slog.New(slog.NewJSONHandler(s.Log, nil))
	keySource := ""
	if cfg.SecretKey != "" {
		keySource = "environment"
	}
	g, err := wire.Build(ctx, cfg, wire.Options{Pool: pool, Monitor: &postgres.Monitor{Pool: pool, Log: log, Where: "the test database"},
		KeySource: keySource, Addr: ln.Addr().String(), Log: log})
	if err != nil {
		ln.Close()
		t.Fatalf("build the graph: %v\n%s", err, s.Log)
	}
	served := make(chan error, 1)
	go func() { served <- g.App.Listener(ln) }()
	t.Cleanup(func() {
		g.Approvals.Stop() // as serve does: calls waiting for an approval answer now, without running
		if err := g.App.ShutdownWithTimeout(time.Minute); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		g.API.CloseMCPSessions(dctx)
		g.Runs.Drain(dctx)
		cancel()
		g.Close()
	})
	return s
}

// SecretKey is the GUILDS_SECRET_KEY of ServeIn.
var SecretKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// ServeIn is Serve with a secret key and the agents' sandboxes of backend (local or bubblewrap)
// without a network, the helpers from GUILDS_BIN_DIR when the test's environment sets it.
func ServeIn(t testing.TB, backend string) *Served {
	t.Helper()
	env := map[string]string{"GUILDS_SECRET_KEY": SecretKey, "GUILDS_SANDBOX": backend, "GUILDS_SANDBOX_NETWORK": "none"}
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		env["GUILDS_BIN_DIR"] = d
	}
	return Serve(t, env)
}

// Request sends one request with Token and decodes the JSON answer.
func Request(t testing.TB, method, url string, body any) (int, map[string]any) {
	t.Helper()
	return RequestAs(t, Token, method, url, body)
}

// RequestAs sends one request with bearer and decodes the JSON answer.
func RequestAs(t testing.TB, bearer, method, url string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// Must sends a request and fails unless it answers want.
func Must(t testing.TB, want int, method, url string, body any) map[string]any {
	t.Helper()
	st, out := Request(t, method, url, body)
	if st != want {
		t.Fatalf("%s %s: %d %v, want %d", method, url, st, out, want)
	}
	return out
}

// ScopesAt creates an organisation, a guild and an agent through the API.
func ScopesAt(t testing.TB, api string) (org, agent string) {
	t.Helper()
	o := Must(t, 201, "POST", api+"/api/orgs", map[string]any{"name": "Acme"})
	g := Must(t, 201, "POST", api+"/api/orgs/"+o["id"].(string)+"/guilds", map[string]any{"name": "Builders"})
	a := Must(t, 201, "POST", api+"/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": "Ada"})
	return o["id"].(string), a["id"].(string)
}

// ErrText is an error answer's message.
func ErrText(out map[string]any) string {
	if e, ok := out["error"].(map[string]any); ok {
		s, _ := e["message"].(string)
		return s
	}
	return fmt.Sprint(out)
}

// OfferedNames lists a run's offered tool names.
func OfferedNames(run map[string]any) []string {
	var out []string
	for _, t := range run["offered_tools"].([]any) {
		out = append(out, t.(map[string]any)["name"].(string))
	}
	return out
}

// CallPoster returns, for a call body, a function that makes that call of run through api's call
// route and returns the answer, failing the benchmark unless it is a 200 holding want and no ERROR:.
func CallPoster(b testing.TB, hc *http.Client, api, run string) func(body []byte, want string) func() string {
	return func(body []byte, want string) func() string {
		return func() string {
			req, _ := http.NewRequest("POST", api+"/api/runs/"+run+"/calls", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+Token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(out, []byte(want)) || bytes.Contains(out, []byte(`ERROR:`)) {
				b.Fatalf("call: %d %s", resp.StatusCode, out)
			}
			return string(out)
		}
	}
}

// MetOr says whether a benchmark's target was met.
func MetOr(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// Authorize follows an OAuth authorization URL as the operator's browser does, through the
// provider and serve's callback, and returns the callback's answer: a completed login's redirect
// to the operator app's page for it (its Location), or the callback's own page (its body).
func Authorize(t testing.TB, authURL string) (status int, location, page string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && via[len(via)-1].URL.Path == callbackPath {
			return http.ErrUseLastResponse // the callback's redirect into the app: not followed
		}
		return nil
	}}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// callbackPath is serve's OAuth callback.
const callbackPath = "/api/mcp/oauth/callback"
