package scripts_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/guildsai/guilds/orchestrator/tools/scripts"
	"github.com/guildsai/guilds/orchestrator/tools/secrets"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// helperBin returns a folder holding the real guilds-script-run, which the local sandbox serves as
// /usr/local/bin: $GUILDS_BIN_DIR when make build filled it, else a fresh build.
func helperBin(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "guilds-script-run")); err == nil {
			return d
		}
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "guilds-script-run"), ".")
	cmd.Dir = "../../../helpers/guilds-script-run"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build guilds-script-run: %v\n%s", err, out)
	}
	return bin
}

type world struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	store *postgres.Store
	svc   *runs.Service
	sec   *secrets.Service
	box   sandbox.Provider
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, ctx: context.Background(), pool: pgtest.NewDB(t)}
	w.store = postgres.NewStore(w.pool)
	now := time.Now().UTC()
	must(t, w.store.CreateOrg(w.ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}))
	must(t, w.store.CreateGuild(w.ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}))
	noScripting := orchestrator.DefaultAgentConfig()
	noScripting.Scripting = false
	three := orchestrator.DefaultAgentConfig()
	three.MaxScripts = 3
	for id, cfg := range map[string]orchestrator.AgentConfig{"a1": three, "a2": noScripting, "a3": orchestrator.DefaultAgentConfig()} {
		must(t, w.store.CreateAgent(w.ctx, orchestrator.Agent{ID: id, GuildID: "g1", OrgID: "o1", Name: id, Config: cfg, CreatedAt: now, UpdatedAt: now}))
	}
	box, err := sealed.FromString(sealed.GenerateKey())
	must(t, err)
	w.sec = &secrets.Service{Store: w.store, Box: box}
	w.box = &sandbox.Local{Root: t.TempDir(), BinDir: helperBin(t)}
	reg := registry.New()
	tools := &scripts.Tools{Store: w.store, Sandboxes: w.box, SecretEnv: w.sec.SandboxEnv}
	must(t, tools.Register(reg))
	w.svc = &runs.Service{Scopes: w.store, Runs: w.store, Registry: reg, Offer: runs.DefaultOffer{}, Secrets: w.sec, Dynamic: tools}
	return w
}

func (w *world) now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func (w *world) run(agent string) string {
	w.t.Helper()
	r, err := w.svc.StartRun(w.ctx, agent, runs.StartRequest{Kind: orchestrator.KindDirect})
	must(w.t, err)
	return r.ID
}

// call carries one call through the runs service (redaction and stamping included) and returns
// the result without its remaining_tool_calls trailer.
func (w *world) call(run, tool string, args any) string {
	w.t.Helper()
	raw, _ := json.Marshal(args)
	res, err := w.svc.Call(w.ctx, run, runs.CallRequest{Name: tool, Arguments: raw})
	must(w.t, err)
	out, _, _ := strings.Cut(res.Result, "\nremaining_tool_calls:")
	return strings.TrimRight(out, "\n")
}

const echo = "import json, sys\nargs = json.load(sys.stdin)\nprint('v1', json.dumps(args, sort_keys=True))\n"

func TestScripts(t *testing.T) {
	w := newWorld(t)
	r1 := w.run("a1")
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"name": "Echo", "description": "d", "source": "print(1)"}, "must match"},
		{map[string]any{"name": "manifest", "description": "d", "source": "print(1)"}, "reserved"},
		{map[string]any{"name": "echo", "description": strings.Repeat("d", 401), "source": "print(1)"}, "at most 400"},
		{map[string]any{"name": "echo", "description": "d", "source": "  "}, "source is empty"},
		{map[string]any{"name": "echo", "description": "d", "source": "print(1)", "parameters": map[string]any{"type": "string"}}, "type object"},
	} {
		if out := w.call(r1, "script_create", tc.args); !strings.HasPrefix(out, "ERROR: ") || !strings.Contains(out, tc.want) {
			t.Errorf("%v: %q, want an error with %q", tc.args, out, tc.want)
		}
	}
	if got := w.call(r1, "script_list", map[string]any{}); !strings.Contains(got, "no scripts") {
		t.Fatalf("bad input stored something: %q", got)
	}

	if out := w.call(r1, "script_create", map[string]any{"name": "echo", "description": "echo args", "source": echo}); !strings.Contains(out, "created script echo") {
		t.Fatalf("create: %q", out)
	}
	if out := w.call(r1, "script_run", map[string]any{"name": "echo", "arguments": map[string]any{"b": 2, "a": "x"}}); out != `v1 {"a": "x", "b": 2}` {
		t.Fatalf("run: %q", out)
	}
	if out := w.call(r1, "script_run", map[string]any{"name": "echo"}); out != "v1 {}" {
		t.Fatalf("run without arguments: %q", out)
	}
	sb, err := w.box.Open(w.ctx, "a1")
	must(t, err)
	file := filepath.Join(sb.Places().Home, "scripts", "echo.py")
	if b, err := os.ReadFile(file); err != nil || string(b) != echo {
		t.Fatalf("materialised file: %q %v", b, err)
	}
	if out := w.call(r1, "script_create", map[string]any{"name": "fail", "description": "exits 3", "source": "import sys\nprint('oops')\nsys.exit(3)\n"}); !strings.Contains(out, "created") {
		t.Fatal(out)
	}
	if out := w.call(r1, "script_run", map[string]any{"name": "fail"}); out != "oops\nexit_code: 3" {
		t.Fatalf("failing script: %q", out)
	}

	// The limit: a third new name is fine, a fourth refused; replacing an existing name is not new.
	w.call(r1, "script_create", map[string]any{"name": "third", "description": "x", "source": "print(3)"})
	if out := w.call(r1, "script_create", map[string]any{"name": "fourth", "description": "x", "source": "print(4)"}); !strings.Contains(out, "max_scripts 3") {
		t.Fatalf("fourth: %q", out)
	}
	if out := w.call(r1, "script_create", map[string]any{"name": "third", "description": "x", "source": "print(33)"}); !strings.Contains(out, "replaced script third") {
		t.Fatalf("replace: %q", out)
	}

	// Snapshots: a run started earlier keeps the source it snapshotted.
	r2 := w.run("a1")
	w.call(r2, "script_create", map[string]any{"name": "echo", "description": "echo args", "source": strings.Replace(echo, "v1", "v2", 1)})
	if out := w.call(r2, "script_run", map[string]any{"name": "echo"}); out != "v2 {}" {
		t.Fatalf("new source in r2: %q", out)
	}
	if out := w.call(r1, "script_run", map[string]any{"name": "echo"}); out != "v1 {}" {
		t.Fatalf("r1 lost its snapshot: %q", out)
	}
	if out := w.call(r1, "script_read", map[string]any{"name": "echo"}); !strings.Contains(out, "'v1'") {
		t.Fatalf("read: %q", out)
	}

	// Delete: the row, the sandbox file and the name in this run's snapshot go.
	if out := w.call(r2, "script_delete", map[string]any{"name": "echo"}); !strings.Contains(out, "deleted script echo") {
		t.Fatalf("delete: %q", out)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("sandbox file still there: %v", err)
	}
	if out := w.call(r2, "script_run", map[string]any{"name": "echo"}); !strings.Contains(out, "not among this run's scripts") {
		t.Fatalf("run after delete: %q", out)
	}
	if out := w.call(r2, "script_list", map[string]any{}); strings.Contains(out, "echo") {
		t.Fatalf("list after delete: %q", out)
	}

	// A stored secret printed by a script comes back redacted.
	const value = "sk-live-Secret-98765"
	_, err = w.sec.Put(w.ctx, "a1", "API_KEY", value)
	must(t, err)
	r3 := w.run("a1")
	w.call(r3, "script_create", map[string]any{"name": "leak", "description": "prints a secret", "source": "print('key is " + value + "')"})
	if out := w.call(r3, "script_run", map[string]any{"name": "leak"}); strings.Contains(out, value) || !strings.Contains(out, "key is ") {
		t.Fatalf("not redacted: %q", out)
	}

	// config.scripting false: the five tools are not offered, and naming one is refused.
	r4 := w.run("a2")
	if out := w.call(r4, "script_run", map[string]any{"name": "leak"}); !strings.Contains(out, "not offered") {
		t.Fatalf("scripting off: %q", out)
	}
}

// TestParameterisedScriptTool: a script with parameters is a first-class tool on new runs; its
// arguments are checked against the parameters and reach the script's stdin.
func TestParameterisedScriptTool(t *testing.T) {
	w := newWorld(t)
	before := w.run("a1")
	w.call(before, "script_create", map[string]any{"name": "get-weather", "description": "weather for a city",
		"source":     "import json, sys\na = json.load(sys.stdin)\nprint('sunny in', a['city'], a.get('days', 1))\n",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}, "required": []string{"city"}}})
	w.call(before, "script_create", map[string]any{"name": "plain", "description": "no parameters", "source": "print(1)"})

	offered := func(run string) map[string]orchestrator.OfferedTool {
		r, err := w.svc.GetRun(w.ctx, run)
		must(t, err)
		m := map[string]orchestrator.OfferedTool{}
		for _, o := range r.OfferedTools {
			m[o.Name] = o
		}
		return m
	}
	if _, ok := offered(before)["get_weather"]; ok {
		t.Fatal("a run started before the script offers it")
	}
	after := w.run("a1")
	tool, ok := offered(after)["get_weather"]
	if !ok || !strings.Contains(string(tool.InputSchema), `"city"`) || !strings.Contains(tool.Description, "weather for a city") {
		t.Fatalf("offered %+v", offered(after))
	}
	if _, ok := offered(after)["plain"]; ok {
		t.Fatal("a script without parameters is offered as a tool")
	}
	if out := w.call(after, "get_weather", map[string]any{"city": "Oslo", "days": 3}); out != "sunny in Oslo 3" {
		t.Fatalf("call: %q", out)
	}
	if out := w.call(after, "get_weather", map[string]any{"days": 3}); !strings.HasPrefix(out, "ERROR: ") || !strings.Contains(out, "city") {
		t.Fatalf("missing city: %q", out)
	}
	// config.scripting false: not offered, even for an agent holding a parameterised script.
	_, err := w.store.PutScript(w.ctx, orchestrator.Script{AgentID: "a2", Name: "get-weather", Description: "d", Source: "print(1)",
		Parameters: json.RawMessage(`{"type":"object"}`), Hash: "h"}, "", time.Now())
	must(t, err)
	if _, ok := offered(w.run("a2"))["get_weather"]; ok {
		t.Fatal("offered with scripting off")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
