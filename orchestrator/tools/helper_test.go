package tools_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
	"github.com/guildsai/guilds/orchestrator/tools"
	"github.com/guildsai/guilds/shared/envelope"
)

// protoHelper is a helper speaking PROTOCOL.md in bash: it answers with the request it read (and
// how it got it) as the text, or misbehaves on request.
const protoHelper = `#!/bin/bash
if [ "$1" = --request-file ]; then
  req=$(cat "$2") || exit 7; rm -f "$2"; how=file
else
  req=$(printf '%s' "$1" | base64 -d) || exit 7; how=argv
fi
case "$req" in
  *'"tool":"crash"'*) echo "panic: runtime error: index out of range" >&2; exit 2 ;;
  *'"tool":"garbage"'*) echo "not an envelope"; exit 0 ;;
  *'"tool":"silent"'*) exit 0 ;;
  *'"tool":"slow"'*) sleep 30 ;;
esac
text=$(printf '%s %s %s' "$how" "$GUILD_AGENT_ID" "${#req}")
printf '{"text":"%s","meta":{"path":"p","lines":3}}' "$text" | base64 -w0; echo
`

var (
	serverOnce sync.Once
	serverBin  string
	serverErr  error
)

// withServer links guilds-sandboxd, which a bubblewrap sandbox runs its calls through, into bin:
// the one make build put in $GUILDS_BIN_DIR, else a fresh build.
func withServer(t testing.TB, bin string) {
	t.Helper()
	serverOnce.Do(func() {
		if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
			if _, err := os.Stat(filepath.Join(d, sandbox.ServerName)); err == nil {
				serverBin = filepath.Join(d, sandbox.ServerName)
				return
			}
		}
		dir, err := os.MkdirTemp("", "guilds-sandboxd-")
		if err != nil {
			serverErr = err
			return
		}
		serverBin = filepath.Join(dir, sandbox.ServerName)
		cmd := exec.Command("go", "build", "-trimpath", "-o", serverBin, "../cmd/guilds-sandboxd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			serverErr = fmt.Errorf("build guilds-sandboxd: %v\n%s", err, out)
		}
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	if err := os.Symlink(serverBin, filepath.Join(bin, sandbox.ServerName)); err != nil {
		t.Fatal(err)
	}
}

func protoProviders(t *testing.T) map[string]sandbox.Provider {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "guilds-proto"), []byte(protoHelper), 0o755); err != nil {
		t.Fatal(err)
	}
	ps := map[string]sandbox.Provider{"local": &sandbox.Local{Root: t.TempDir(), BinDir: bin}}
	if bw, err := sandbox.NewBubblewrap(sandboxtest.Root(t), bin, ""); err == nil {
		withServer(t, bin)
		t.Cleanup(func() { bw.Close() })
		ps["bubblewrap"] = bw
	}
	return ps
}

func TestHelperTools(t *testing.T) {
	ctx := context.Background()
	for kind, p := range protoProviders(t) {
		t.Run(kind, func(t *testing.T) {
			h := &tools.HelperTools{Provider: p, Helper: sandbox.BinDir + "/guilds-proto", Timeout: 5 * time.Second}
			call := func(tool string, args any) (*registry.Call, string, error) {
				raw, _ := json.Marshal(args)
				c := &registry.Call{RunID: "run_1", AgentID: "agt_1", CallID: "call_" + tool, Seq: 3, Args: raw, Meta: map[string]any{"kept": 1}}
				out, err := h.Handler(tool)(ctx, c)
				return c, out, err
			}
			c, out, err := call("file_read", map[string]any{"path": "a"})
			if err != nil || !strings.HasPrefix(out, "argv agt_1 ") || c.Meta["path"] != "p" || c.Meta["lines"] != 3.0 || c.Meta["kept"] != 1 {
				t.Fatalf("small request: %q %v %v", out, c.Meta, err)
			}
			// Past 64 KiB of base64 the request goes through the file API and the helper deletes it.
			big := strings.Repeat("y", 60<<10)
			_, out, err = call("file_write", map[string]any{"path": "a", "content": big})
			if err != nil || !strings.HasPrefix(out, "file agt_1 ") {
				t.Fatalf("large request: %q %v", out, err)
			}
			box, _ := p.Open(ctx, "agt_1")
			if _, err := box.ReadFile(ctx, box.Places().RunDir+"/requests/call_file_write.json", 1<<20); err == nil {
				t.Fatal("request file left behind")
			}
			for _, tc := range []struct{ tool, want, detail string }{
				{"crash", "guilds-proto failed (exit status 2): panic: runtime error: index out of range", "index out of range"},
				{"garbage", "guilds-proto printed no valid envelope", "not an envelope"},
				{"silent", "guilds-proto printed no valid envelope: helper printed no envelope", "stdout"},
			} {
				_, out, err = call(tc.tool, map[string]any{})
				var he *tools.HelperError
				if out != "" || !errors.As(err, &he) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %q %v", tc.tool, out, err)
				}
				// The detail the model does not read is kept for the operational log.
				if he != nil && !strings.Contains(he.LogDetail(), tc.detail) {
					t.Errorf("%s: detail %q", tc.tool, he.LogDetail())
				}
			}
		})
	}
}

func TestHelperTimeoutAndReplyError(t *testing.T) {
	ctx := context.Background()
	bin := t.TempDir()
	reply := base64.StdEncoding.EncodeToString([]byte(`{"error":"old_string occurs 3 times","meta":{"path":"x"}}`))
	script := "#!/bin/bash\n[ \"$GUILDS_SLOW\" = 1 ] && sleep 30\necho " + reply + "\n"
	if err := os.WriteFile(filepath.Join(bin, "guilds-e"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &sandbox.Local{Root: t.TempDir(), BinDir: bin}
	h := &tools.HelperTools{Provider: p, Helper: sandbox.BinDir + "/guilds-e", Timeout: time.Minute}
	c := &registry.Call{RunID: "r", AgentID: "a", CallID: "c", Args: json.RawMessage(`{}`)}
	if _, err := h.Handler("file_edit")(ctx, c); err == nil || err.Error() != "old_string occurs 3 times" || c.Meta["path"] != "x" {
		t.Fatalf("reply error: %v %v", err, c.Meta)
	}
	h.Env = func(context.Context, *registry.Call) ([]string, error) { return []string{"GUILDS_SLOW=1"}, nil }
	h.Timeout = 300 * time.Millisecond // only for the helper that sleeps: a loaded machine may take longer to answer at all
	start := time.Now()
	_, err := h.Handler("shell")(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") || time.Since(start) > 20*time.Second { // a hang guard below the helper's 30 s sleep
		t.Fatalf("timeout: %v after %s", err, time.Since(start))
	}
	// A request the protocol refuses never reaches the sandbox.
	if _, err := tools.CallHelper(ctx, nil, sandbox.BinDir+"/guilds-code", envelope.Request{Tool: "x", RunID: "bad id", CallID: "c"}, nil, time.Second); err == nil || !strings.Contains(err.Error(), "run_id") {
		t.Fatalf("bad id: %v", err)
	}
	// A request file that cannot be written fails the call cleanly.
	h.Env = nil
	if err := os.WriteFile(filepath.Join(p.Root, "a", "run", "requests"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.Args = json.RawMessage(`{"content":"` + strings.Repeat("z", 70<<10) + `"}`)
	if _, err := h.Handler("file_write")(ctx, c); err == nil || !strings.Contains(err.Error(), "request file could not be written") {
		t.Fatalf("unwritable request file: %v", err)
	}
	// No provider: a clear error.
	if _, err := (&tools.HelperTools{Helper: sandbox.BinDir + "/guilds-code"}).Handler("shell")(ctx, c); err == nil || !strings.Contains(err.Error(), "GUILDS_SANDBOX") {
		t.Fatalf("no provider: %v", err)
	}
}

// TestUnavailableSandbox: a provider that cannot start a sandbox fails the call with its reason.
func TestUnavailableSandbox(t *testing.T) {
	ctx := context.Background()
	missing := fmt.Errorf("%w: bubblewrap is not installed (apt-get install bubblewrap, or run `make setup`)", sandbox.ErrUnavailable)
	h := &tools.HelperTools{Provider: sandbox.Unavailable{Err: missing}, Helper: sandbox.BinDir + "/guilds-code"}
	c := &registry.Call{RunID: "r", AgentID: "a", CallID: "c", Args: json.RawMessage(`{}`)}
	_, err := h.Handler("shell")(ctx, c)
	if err == nil || !sandbox.IsUnavailable(err) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("unavailable sandbox: %v", err)
	}
}

// TestRequestFileRemovedWhenHelperDies: a helper that dies before reading its request file (or is
// stopped at its timeout) leaves no file behind; the orchestrator removes it after the call.
func TestRequestFileRemovedWhenHelperDies(t *testing.T) {
	ctx := context.Background()
	for kind, p := range protoProviders(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_d")
			if err != nil {
				t.Fatal(err)
			}
			bin := ""
			switch p := p.(type) {
			case *sandbox.Local:
				bin = p.BinDir
			case *sandbox.Bubblewrap:
				bin = p.BinDir
			}
			// guilds-proto-die exits at once; guilds-proto-hang never reads and is stopped. (Both
			// exist before the sandbox's first call, which binds the helpers in.)
			os.WriteFile(filepath.Join(bin, "guilds-proto-die"), []byte("#!/bin/bash\necho dying >&2\nexit 3\n"), 0o755)
			os.WriteFile(filepath.Join(bin, "guilds-proto-hang"), []byte("#!/bin/bash\nsleep 30\n"), 0o755)
			big := json.RawMessage(`{"content":"` + strings.Repeat("q", 70<<10) + `"}`)
			for _, tc := range []struct{ helper, want string }{
				{"guilds-proto-die", "exit status 3"},
				{"guilds-proto-hang", "did not answer within"},
			} {
				req := envelope.Request{Tool: "file_write", Args: big, RunID: "r1", CallID: "c_" + tc.helper[13:], Seq: 1}
				_, err := tools.CallHelper(ctx, box, sandbox.BinDir+"/"+tc.helper, req, nil, 500*time.Millisecond)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: %v", tc.helper, err)
				}
				file := box.Places().RunDir + "/requests/" + req.CallID + ".json"
				if _, err := box.ReadFile(ctx, file, 1<<20); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s: request file still there (%v)", tc.helper, err)
				}
			}
		})
	}
}
