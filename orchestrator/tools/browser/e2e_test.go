package browser_test

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
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/tools/browser"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const token = "test-admin-token-0123456789abcdef"

const page = `<!doctype html><html><head><title>Orders</title></head><body>
<h1>Orders</h1>
<label>Customer <input id="c" name="customer"></label>
<button onclick="document.title = 'Saved ' + document.getElementById('c').value">Save</button>
</body></html>`

// needs returns the repository's tools folder, skipping when Chromium, Node or playwright-core is missing.
func needs(t *testing.T) (toolsBin, playwright string) {
	t.Helper()
	repo, _ := filepath.Abs(filepath.Join("..", "..", ".."))
	toolsBin = filepath.Join(repo, "tools", "node_modules", ".bin")
	playwright = filepath.Join(repo, "tools", "node_modules", "playwright-core")
	var missing []string
	for _, bin := range []string{"chromium", "node"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if _, err := os.Stat(filepath.Join(playwright, "cli.js")); err != nil {
		missing = append(missing, "playwright-core")
	}
	if len(missing) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v missing in CI: run make setup", missing)
		}
		t.Skipf("%v missing: run make setup", missing)
	}
	return toolsBin, playwright
}

// helperBin returns a folder holding guilds-browser and guilds-sandboxd: $GUILDS_BIN_DIR when
// `make build` filled it, else fresh builds (GUILDS_PLAYWRIGHT_DIR points at playwright-core).
func helperBin(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, sandbox.ServerName)); err == nil {
			return d
		}
	}
	dir := t.TempDir()
	for _, b := range []struct{ name, dir string }{
		{"guilds-browser", filepath.Join("..", "..", "..", "helpers", "guilds-browser")},
		{sandbox.ServerName, filepath.Join("..", "..", "cmd", "guilds-sandboxd")},
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.name), ".")
		cmd.Dir = b.dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.name, err, out)
		}
	}
	return dir
}

func do(t *testing.T, base string, want int, method, path string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 3 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	return out
}

func TestBrowserToolsEndToEnd(t *testing.T) {
	toolsBin, playwright := needs(t)
	bin := helperBin(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	}))
	defer site.Close()
	env := []string{"GUILDS_BROWSER_IDLE=5s"}
	ps := map[string]sandbox.Provider{"local": &sandbox.Local{Root: t.TempDir(), BinDir: bin, ToolsDir: toolsBin,
		Env: append(env, "GUILDS_PLAYWRIGHT_DIR="+playwright)}}
	if bw, err := sandbox.NewBubblewrap(sandboxtest.Root(t), bin, toolsBin); err == nil {
		bw.Env = env
		ps["bubblewrap"] = bw
	} else if os.Getenv("CI") != "" {
		t.Fatal(err)
	}
	for kind, p := range ps {
		t.Run(kind, func(t *testing.T) {
			pool := pgtest.NewDB(t)
			store := postgres.NewStore(pool)
			log := slog.New(slog.DiscardHandler)
			browsers := &sandbox.Browsers{Provider: p, Log: log}
			defer browsers.Close()
			reg := registry.New()
			if err := (&browser.Tools{Sandbox: p, Browsers: browsers}).Register(reg); err != nil {
				t.Fatal(err)
			}
			svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: runs.DefaultOffer{}, Log: log}
			app := httpapi.New(&httpapi.Server{Scopes: store, Runs: svc, Log: log, Identity: &identity.Service{Store: store, Bootstrap: token}, Places: store})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = app.Listener(ln) }()
			defer app.ShutdownWithTimeout(5 * time.Second)
			base := "http://" + ln.Addr().String()

			org := do(t, base, 201, "POST", "/api/orgs", map[string]any{"name": "Acme"})
			g := do(t, base, 201, "POST", "/api/orgs/"+org["id"].(string)+"/guilds", map[string]any{"name": "Web"})
			a := do(t, base, 201, "POST", "/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": "Bea", "config": map[string]any{"browser": true}})
			agentID := a["id"].(string)
			var agentRoot string
			switch p := p.(type) {
			case *sandbox.Local:
				agentRoot = filepath.Join(p.Root, agentID)
				// A local daemon's PID is a host PID.
				defer stopDaemon(filepath.Join(agentRoot, "run", "browser", "daemon.pid"))
			case *sandbox.Bubblewrap:
				agentRoot = filepath.Join(p.Root, agentID)
				// The daemon's PID is the sandbox's own; closing the sandbox ends it with everything else.
				defer p.Close()
			}
			url := site.URL
			if _, ok := p.(*sandbox.Bubblewrap); ok {
				// The sandbox's browser reaches nothing of the host, its loopback included: the
				// page is served inside the sandbox, on the loopback it shares with its browser.
				url = serveInSandbox(t, p, agentID, "page.html", page)
			}
			run := do(t, base, 201, "POST", "/api/agents/"+agentID+"/runs", map[string]any{"kind": "direct", "config": map[string]any{"browser": true}})
			if len(run["offered_tools"].([]any)) != len(browser.Names) {
				t.Fatalf("offered: %v", run["offered_tools"])
			}
			call := func(name string, args map[string]any) string {
				t.Helper()
				out := do(t, base, 200, "POST", "/api/runs/"+run["id"].(string)+"/calls", map[string]any{"name": name, "arguments": args})
				res := out["result"].(string)
				if strings.HasPrefix(res, "ERROR") {
					t.Fatalf("%s: %s", name, res)
				}
				return res
			}
			call("browser_navigate", map[string]any{"url": url})
			if snap := call("browser_snapshot", map[string]any{}); !strings.Contains(snap, `button "Save"`) || !strings.Contains(snap, "Customer") {
				t.Fatalf("snapshot: %s", snap)
			}
			call("browser_fill", map[string]any{"locator": `textbox "Customer"`, "value": "Ada"})
			call("browser_click", map[string]any{"locator": `button "Save"`})
			if got := call("browser_eval", map[string]any{"script": "return document.title"}); !strings.Contains(got, "Saved Ada") {
				t.Fatalf("eval: %s", got)
			}
			call("browser_screenshot", map[string]any{})
			if fi, err := os.Stat(filepath.Join(agentRoot, "home", "screenshots", "latest.jpg")); err != nil || fi.Size() == 0 {
				t.Fatalf("screenshot: %v", err)
			}
			// Over MCP the same tool also answers the JPEG as an image block (REST keeps its text).
			mc, err := client.NewStreamableHttpClient(base+"/api/runs/"+run["id"].(string)+"/mcp",
				transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
			if err != nil {
				t.Fatal(err)
			}
			defer mc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := mc.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
				ClientInfo: mcp.Implementation{Name: "browser-test", Version: "1"}}}); err != nil {
				t.Fatal(err)
			}
			shot, err := mc.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "browser_screenshot", Arguments: map[string]any{}}})
			if err != nil || shot.IsError {
				t.Fatalf("browser_screenshot over MCP: %v %+v", err, shot)
			}
			var texts, images int
			for _, c := range shot.Content {
				switch c := c.(type) {
				case mcp.TextContent:
					texts++
				case mcp.ImageContent:
					images++
					jpeg, err := base64.StdEncoding.DecodeString(c.Data)
					if err != nil || c.MIMEType != "image/jpeg" || len(jpeg) < 100 || jpeg[0] != 0xFF || jpeg[1] != 0xD8 {
						t.Fatalf("the image block: %s, %d bytes, %v", c.MIMEType, len(jpeg), err)
					}
				}
			}
			if texts != 1 || images != 1 {
				t.Fatalf("browser_screenshot over MCP: %d text and %d image blocks, want one of each", texts, images)
			}
		})
	}
}

// serveInSandbox writes a page into the agent's workspace and serves the workspace over HTTP from
// inside the agent's sandbox, on its own loopback; it returns the page's URL there.
func serveInSandbox(t *testing.T, p sandbox.Provider, agentID, name, content string) string {
	t.Helper()
	ctx := context.Background()
	box, err := p.Open(ctx, agentID)
	if err != nil {
		t.Fatal(err)
	}
	if err := box.WriteFile(ctx, box.Places().Home+"/"+name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	if _, err := box.(sandbox.Starter).Start(sandbox.ExecRequest{Argv: []string{"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", box.Places().Home}}, out); err != nil {
		t.Fatal(err)
	}
	probe := sandbox.ExecRequest{Argv: []string{"bash", "-c", "for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/8000) 2>/dev/null && exit 0; sleep 0.05; done; exit 1"}, Timeout: 10 * time.Second}
	if res, err := box.Exec(ctx, probe); err != nil || res.ExitCode != 0 {
		t.Fatalf("the in-sandbox web server did not start: %v %+v", err, res)
	}
	return "http://127.0.0.1:8000/" + name
}

// stopDaemon ends the helper's warm daemon a local sandbox started, by its PID file.
func stopDaemon(pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
