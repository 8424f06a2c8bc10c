package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1048576", 1 << 20}, {"4GiB", 4 << 30}, {"512MiB", 512 << 20}, {"64M", 64 << 20}, {"2g", 2 << 30},
		{" 8 KiB ", 8 << 10}, {"100b", 100},
		{"", 0}, {"lots", 0}, {"-1G", 0}, {"0", 0}, {"1.5G", 0}, {"99999999999999999999", 0}, {"GiB", 0},
	} {
		got, err := ParseBytes(tc.in)
		if got != tc.want || (err != nil) != (tc.want == 0) {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// TestUIDAllocator: agents get distinct ids above the base, kept as the owner of their folders
// across restarts; a folder of another owner (an earlier version's) is handed over, except for a
// file with other hard links, whose other name may be outside.
func TestUIDAllocator(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	root := t.TempDir()
	home := func(id string) string {
		h := filepath.Join(root, id, "home")
		if err := os.MkdirAll(h, 0o755); err != nil {
			t.Fatal(err)
		}
		return h
	}
	outside := filepath.Join(t.TempDir(), "host-file")
	os.WriteFile(outside, []byte("x"), 0o644)
	old := home("agt_old")
	os.MkdirAll(filepath.Join(old, "src"), 0o755)
	os.WriteFile(filepath.Join(old, "src", "main.go"), []byte("package main"), 0o644)
	os.Symlink(outside, filepath.Join(old, "link"))
	os.Link(outside, filepath.Join(old, "hard"))

	a := &uidAllocator{base: 5000}
	o1, err := a.assign(root, "agt_old", old)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := a.assign(root, "agt_new", home("agt_new"))
	if err != nil {
		t.Fatal(err)
	}
	if o1.uid != 5001 || o2.uid != 5002 || o1.gid != o1.uid {
		t.Fatalf("ids: %+v %+v", o1, o2)
	}
	owner := func(p string) uint32 {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Uid
	}
	for _, p := range []string{old, filepath.Join(old, "src"), filepath.Join(old, "src", "main.go"), filepath.Join(old, "link")} {
		if owner(p) != 5001 {
			t.Errorf("%s is owned by %d, want 5001", p, owner(p))
		}
	}
	if owner(outside) != 0 {
		t.Errorf("a file outside the folder, hard-linked inside, changed owner to %d", owner(outside))
	}
	if fi, _ := os.Stat(old); fi.Mode().Perm() != 0o700 {
		t.Errorf("home mode %o", fi.Mode().Perm())
	}
	// A restart reads the ids back from the folders.
	b := &uidAllocator{base: 5000}
	if o, _ := b.assign(root, "agt_new", filepath.Join(root, "agt_new", "home")); o.uid != 5002 {
		t.Errorf("after a restart agt_new has %d", o.uid)
	}
	if o, _ := b.assign(root, "agt_third", home("agt_third")); o.uid != 5003 {
		t.Errorf("a third agent got %d", o.uid)
	}
}

// TestStaging: what the sandbox users cannot reach is copied where they can, once, and refreshed
// when it changes; what they can reach is used in place.
func TestStaging(t *testing.T) {
	open := filepath.Join(sandboxtest.Root(t), "open")
	os.MkdirAll(open, 0o755)
	os.WriteFile(filepath.Join(open, "tool"), []byte("#!/bin/sh\n"), 0o755)
	if got, err := stageFile(filepath.Join(open, "tool"), t.TempDir()); err != nil || got != filepath.Join(open, "tool") {
		t.Fatalf("a reachable file: %q %v", got, err)
	}
	closed := filepath.Join(t.TempDir(), "closed")
	os.MkdirAll(filepath.Join(closed, "pkg", ".bin"), 0o755)
	os.Chmod(filepath.Dir(closed), 0o700)
	os.WriteFile(filepath.Join(closed, "tool"), []byte("v1"), 0o700)
	os.WriteFile(filepath.Join(closed, "pkg", "cli.js"), []byte("js"), 0o600)
	os.Symlink("../cli.js", filepath.Join(closed, "pkg", ".bin", "cli"))
	if reachable(filepath.Join(closed, "tool")) == nil {
		t.Fatal("a file under a 0700 folder counts as reachable")
	}
	dir := filepath.Join(t.TempDir(), "staged")
	got, err := stageFile(filepath.Join(closed, "tool"), dir)
	if err != nil || got != filepath.Join(dir, "tool") {
		t.Fatalf("stage: %q %v", got, err)
	}
	if b, _ := os.ReadFile(got); string(b) != "v1" {
		t.Fatalf("staged %q", b)
	}
	if fi, _ := os.Stat(got); fi.Mode().Perm()&0o005 != 0o005 {
		t.Fatalf("the copy is not readable by others: %o", fi.Mode().Perm())
	}
	os.WriteFile(filepath.Join(closed, "tool"), []byte("v2!"), 0o700)
	if got, _ = stageFile(filepath.Join(closed, "tool"), dir); func() string { b, _ := os.ReadFile(got); return string(b) }() != "v2!" {
		t.Fatal("a changed file was not staged again")
	}
	tree, err := stageTree(filepath.Join(closed, "pkg"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(tree, ".bin", "cli")); err != nil || string(b) != "js" {
		t.Fatalf("staged tree: %q %v", b, err)
	}
	if again, _ := stageTree(filepath.Join(closed, "pkg"), dir); again != tree {
		t.Fatalf("an unchanged tree was copied again: %s then %s", tree, again)
	}
}

// TestGitConfigIsTheImages: the bubblewrap sandbox's /etc/gitconfig is image/gitconfig.
func TestGitConfigIsTheImages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "image", "gitconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != gitConfig {
		t.Fatalf("image/gitconfig and the sandbox's gitconfig differ:\n%s\n---\n%s", b, gitConfig)
	}
}

// TestUIDRangeLock: an orchestrator holding a uid range keeps another from the same range and
// from any overlapping one, with a refusal naming the holder (pid, data folder) and the fix; a
// range next to it is free, and a released range (or one whose holder died: the kernel drops
// its lock) is taken again.
func TestUIDRangeLock(t *testing.T) {
	dir := t.TempDir()
	release, err := lockUIDRange(dir, 5_000_000, "/srv/first/.data")
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []uint32{5_000_000, 5_500_000, 4_000_001} {
		_, err := lockUIDRange(dir, base, "/srv/second/.data")
		if err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())+", data folder /srv/first/.data") ||
			!strings.Contains(err.Error(), "set another GUILDS_SANDBOX_UID_BASE") || !strings.Contains(err.Error(), "e.g. 6000000") {
			t.Errorf("base %d beside a holder of 5000000: %v", base, err)
		}
	}
	next, err := lockUIDRange(dir, 6_000_000, "/srv/second/.data")
	if err != nil {
		t.Fatalf("the range next to a held one: %v", err)
	}
	next()
	release()
	again, err := lockUIDRange(dir, 5_500_000, "/srv/second/.data")
	if err != nil {
		t.Fatalf("after the holder let go: %v", err)
	}
	again()

	// A holder in another process that dies without letting go.
	holder := exec.Command("flock", "-n", filepath.Join(dir, "uid-range-7000000.lock"), "sh", "-c", "echo held; exec sleep 60")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // flock and its command, which shares its lock, die together
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("flock: %q %v", line, err)
	}
	if _, err := lockUIDRange(dir, 7_000_000, "/srv/third/.data"); err == nil || !strings.Contains(err.Error(), "held by another orchestrator on this host") {
		t.Fatalf("a range another live process holds: %v", err)
	}
	syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
	holder.Wait()
	// Its command (sleep, in its group) lets go as it ends, which may come a moment after flock's.
	for i := 0; ; i++ {
		release, err := lockUIDRange(dir, 7_000_000, "/srv/third/.data")
		if err == nil {
			release()
			break
		}
		if i == 250 {
			t.Fatalf("after the holder died: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
