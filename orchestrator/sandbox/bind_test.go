package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// TestBindToolchain (issue 33): a folder of GUILDS_SANDBOX_BIND is in every sandbox at its own
// path, read-only, its bin on PATH, and reported in the status; the host's Go, when it has one,
// runs in the sandbox.
func TestBindToolchain(t *testing.T) {
	ctx := context.Background()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "guilds-fake"), []byte(fakeHelper), 0o755); err != nil {
		t.Fatal(err)
	}
	root := sandboxtest.Root(t)
	chain := filepath.Join(sandboxtest.Root(t), "toolchain")
	os.MkdirAll(filepath.Join(chain, "bin"), 0o755)
	os.WriteFile(filepath.Join(chain, "bin", "greet"), []byte("#!/bin/sh\necho hello from $0\n"), 0o755)
	binds := []string{chain}
	goroot := ""
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
		binds = append(binds, goroot)
	}
	if err := CheckBinds(binds, root, bin); err != nil {
		t.Fatal(err)
	}
	bw, err := NewBubblewrap(root, bin, "")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bubblewrap must be installed in CI: %v", err)
		}
		t.Skipf("bubblewrap is required: %v", err)
	}
	withServer(t, bin)
	bw.Bind = binds
	t.Cleanup(func() { bw.Close() })
	if st := bw.Status(); strings.Join(st.Bind, ",") != strings.Join(binds, ",") {
		t.Fatalf("status bind %v, want %v", st.Bind, binds)
	}
	box, err := bw.Open(ctx, "agt_bind")
	if err != nil {
		t.Fatal(err)
	}
	res := mustExec(t, box, ExecRequest{Argv: []string{"/bin/sh", "-c", "greet; touch " + chain + "/bin/x 2>&1 || echo refused"}})
	if got := string(res.Stdout); !strings.Contains(got, "hello from "+chain+"/bin/greet") || !strings.Contains(got, "Read-only file system") || !strings.Contains(got, "refused") {
		t.Fatalf("in the sandbox: %q %s", got, res.Stderr)
	}
	if goroot == "" {
		t.Log("no Go on this host: its bind is not exercised")
		return
	}
	res = mustExec(t, box, ExecRequest{Argv: []string{"/bin/sh", "-c", "go version && go env GOROOT"}})
	if got := string(res.Stdout); !strings.HasPrefix(got, "go version go") || !strings.Contains(got, goroot) {
		t.Fatalf("go in the sandbox: %q %s", got, res.Stderr)
	}
}

// TestCheckBinds: a bind that is /, /usr, a folder the sandbox makes, or that holds or sits in
// the orchestrator's data or binaries (through a link too) is refused, naming why; a file or a
// missing folder is refused; a toolchain's folder is allowed.
func TestCheckBinds(t *testing.T) {
	data, bin := sandboxtest.Root(t), sandboxtest.Root(t)
	chain := sandboxtest.Root(t)
	link := filepath.Join(t.TempDir(), "innocent")
	os.Symlink(data, link)
	file := filepath.Join(chain, "f")
	os.WriteFile(file, nil, 0o644)
	os.MkdirAll(filepath.Join(data, "sandboxes"), 0o755)
	for d, says := range map[string]string{
		"/": "mounts / itself", "/usr": "mounts /usr itself", "/etc": "/etc", "/home": "/home/agent", "/tmp": "/tmp",
		data: "no sandbox may read", filepath.Join(data, "sandboxes"): "no sandbox may read", filepath.Dir(data): "no sandbox may read",
		bin: "no sandbox may read", link: "no sandbox may read", file: "not a folder", "/nonexistent/go": "no such file",
	} {
		if err := CheckBinds([]string{d}, data, bin); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("bind %s: %v, want refused saying %q", d, err, says)
		}
	}
	private := filepath.Join(chain, "private")
	os.Mkdir(private, 0o700)
	if err := CheckBinds([]string{private}, data, bin); err == nil || !strings.Contains(err.Error(), "not readable by other users") {
		t.Errorf("a folder other users cannot read: %v", err)
	}
	os.Chmod(chain, 0o755)
	if err := CheckBinds([]string{chain, "/usr/lib"}, data, bin); err != nil {
		t.Errorf("a toolchain's folder: %v", err)
	}
	if got, err := ParseBinds(" /usr/local/go, /opt/zig/:/opt/x "); err != nil || strings.Join(got, ",") != "/usr/local/go,/opt/zig,/opt/x" {
		t.Errorf("ParseBinds: %v %v", got, err)
	}
	if _, err := ParseBinds("go"); err == nil {
		t.Error("a relative bind was accepted")
	}
}
