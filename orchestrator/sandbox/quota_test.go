package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	if st.DiskSpace == nil || st.DiskSpace.Quota != 32<<20 || st.DiskSpace.Images != 0 || st.DiskSpace.Free <= 0 {
		t.Fatalf("the disk space at start: %+v", st.DiskSpace)
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

// TestDiskSpace: the agents' images are counted with what they may still take, each to its own
// size, against the free space of their filesystem; images and a new agent's quota that together
// pass it are oversubscribed.
func TestDiskSpace(t *testing.T) {
	root := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(root, &fs); err != nil {
		t.Fatal(err)
	}
	free := int64(fs.Bavail) * fs.Bsize
	image := func(agent string, size int64, data int) {
		os.MkdirAll(filepath.Join(root, agent, "home"), 0o700)
		f, err := os.Create(filepath.Join(root, agent, imageName))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(make([]byte, data)); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "agt_none", "home"), 0o700) // an agent without an image
	image("agt_a", 1<<20, 1<<20)
	image("agt_b", 1<<20, 0)
	small, err := diskSpace(root, 1<<20)
	if err != nil || small.Images != 2 || small.Growth < 1<<20 || small.Growth > 2<<20 || small.Quota != 1<<20 || small.Free <= 0 || small.Oversubscribed {
		t.Fatalf("two 1 MiB images, one written: %+v %v", small, err)
	}
	image("agt_c", free, 0) // sparse: it takes nothing yet, and may take all that is free
	big, err := diskSpace(root, 1<<30)
	if err != nil || big.Images != 3 || big.Growth < free || !big.Oversubscribed {
		t.Fatalf("an image the size of the free space (%d): %+v %v", free, big, err)
	}
}
