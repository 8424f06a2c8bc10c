package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// TestWorkspaceQuota: with a 32 MiB quota a workspace's earlier files move into its image, a
// write past the quota fails inside the sandbox with "No space left on device", the instance view
// says how the quota is kept, Close unmounts the image, and the next open finds the files again.
func TestWorkspaceQuota(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a workspace image needs root")
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "guilds-fake"), []byte(fakeHelper), 0o755); err != nil {
		t.Fatal(err)
	}
	root := sandboxtest.Root(t)
	bw, err := NewBubblewrap(root, bin, "")
	if err != nil {
		t.Skipf("bubblewrap: %v", err)
	}
	withServer(t, bin)
	bw.Network, bw.Limits.Disk = NetworkNone, 32<<20
	home := filepath.Join(root, "agt_q", "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "before.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bw.Close() })
	st := bw.Status()
	if st.DiskQuota != DiskQuotaImage || st.Limits.Disk != 32<<20 {
		t.Skipf("this host keeps no workspace quota: %+v", st)
	}
	box, err := bw.Open(context.Background(), "agt_q")
	if err != nil {
		t.Fatal(err)
	}
	if !isMountpoint(home) {
		t.Fatal("the workspace image is not mounted")
	}
	res := mustExec(t, box, ExecRequest{Argv: []string{"/bin/bash", "-c", "cat /home/agent/before.txt; head -c 64M /dev/zero > /home/agent/big"}})
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "No space left on device") || !strings.HasPrefix(string(res.Stdout), "kept") {
		t.Fatalf("a write past the quota: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if fi, err := os.Stat(filepath.Join(home, "big")); err != nil || fi.Size() > 32<<20 {
		t.Fatalf("the big file: %v %v", fi, err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	if isMountpoint(home) {
		t.Fatal("Close left the workspace image mounted")
	}
	if _, err := os.Stat(filepath.Join(home, "before.txt")); err == nil {
		t.Fatal("the earlier file is still in the host folder under the image")
	}
	again, err := NewBubblewrap(root, bin, "")
	if err != nil {
		t.Fatal(err)
	}
	again.Network, again.Limits.Disk = NetworkNone, 32<<20
	t.Cleanup(func() { again.Close() })
	if _, err := again.Open(context.Background(), "agt_q"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(home, "before.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("after a new open: %q %v", b, err)
	}
}
