package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// roCgroupsEnv makes the test binary the child side of TestReadOnlyCgroups: "root:bin".
const roCgroupsEnv = "GUILDS_SANDBOX_TEST_RO_CGROUPS"

// TestReadOnlyCgroups: on a host whose cgroups are read-only (a child process in a mount namespace
// of its own, every cgroup mount remounted read-only there, while the sandboxes' group folder
// exists from before), the sandbox runs its calls without the limits it cannot set, and its status
// names them missing and not enforced.
func TestReadOnlyCgroups(t *testing.T) {
	if spec := os.Getenv(roCgroupsEnv); spec != "" {
		readOnlyCgroupsChild(t, spec)
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root")
		}
		t.Skip("control groups need root")
	}
	for _, tool := range []string{"unshare", "findmnt", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (util-linux and mount)", tool)
		}
	}
	bwrapOnly(t, nil) // skips without bubblewrap
	bin := t.TempDir()
	withServer(t, bin)
	os.WriteFile(filepath.Join(bin, "guilds-fake"), []byte(fakeHelper), 0o755)
	// Writable here: the sandboxes' group folders exist, as on a host where an orchestrator ran.
	if cg := setupCgroups(Limits{}.withDefaults()); len(cg.parent) == 0 {
		t.Fatalf("no cgroup this test may write to start from: %v", cg.missing)
	}
	remount := `for m in $(findmnt -rn -t cgroup,cgroup2 -o TARGET); do mount -o remount,bind,ro "$m" || exit 1; done; exec "$@"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", remount, "sh",
		os.Args[0], "-test.run=^TestReadOnlyCgroups$", "-test.v")
	cmd.Env = append(os.Environ(), roCgroupsEnv+"="+sandboxtest.Root(t)+":"+bin)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestReadOnlyCgroups") {
		t.Fatalf("the child under read-only cgroups: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// readOnlyCgroupsChild is TestReadOnlyCgroups in the child with read-only cgroups.
func readOnlyCgroupsChild(t *testing.T, spec string) {
	root, bin, _ := strings.Cut(spec, ":")
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Join(cgroupRoot, "pids"), &st); err == nil && st.Flags&unix.ST_RDONLY == 0 {
		t.Fatal("the pids cgroup mount is not read-only in the child")
	}
	bw, err := NewBubblewrap(root, bin, "")
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Close()
	status := bw.Status()
	t.Logf("status under read-only cgroups: limits %+v, missing %q", status.Limits, status.Missing)
	if status.Limits.Pids != 0 || status.Limits.Memory != 0 || status.Limits.CPU != 0 {
		t.Errorf("limits reported as enforced: %+v", status.Limits)
	}
	for _, ctrl := range []string{"cgroup pids", "cgroup memory", "cgroup cpu"} {
		found := false
		for _, m := range status.Missing {
			found = found || (strings.HasPrefix(m, ctrl+":") && strings.Contains(m, "read-only file system"))
		}
		if !found {
			t.Errorf("missing does not name %s as read-only: %q", ctrl, status.Missing)
		}
	}
	box, err := bw.Open(context.Background(), "agt_ro")
	if err != nil {
		t.Fatal(err)
	}
	res, err := box.Exec(context.Background(), ExecRequest{Argv: []string{"bash", "-c", "echo ran"}})
	if err != nil || string(res.Stdout) != "ran\n" {
		t.Fatalf("a call under read-only cgroups: %q %v", res.Stdout, err)
	}
}
