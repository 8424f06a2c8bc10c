// Package sandboxtest gives tests sandbox folders that the sandboxes' users can reach.
package sandboxtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Root returns a fresh folder for a bubblewrap provider's Root: the test's temporary folder, with
// every folder above it that the test made searchable (not listable) by others, as an agent's
// host uid needs to reach its own folder.
func Root(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// Threads counts the test process's threads and those of them inside an open system call now (a
// thread blocked opening a FIFO nobody writes stays there).
func Threads(t testing.TB) (threads, inOpen int) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
		if err != nil {
			continue // gone meanwhile
		}
		threads++
		nr, _ := strconv.Atoi(strings.Fields(string(b) + " x")[0])
		if nr == unix.SYS_OPENAT || nr == unix.SYS_OPENAT2 || nr == unix.SYS_OPEN {
			inOpen++
		}
	}
	return threads, inOpen
}

// SettledThreads waits (at most 10 s) until no thread is in open() and the process has fewer than
// before+slack threads, and returns the last count: threads that served a burst of calls end
// with them.
func SettledThreads(t testing.TB, before, slack int) (threads, inOpen int) {
	t.Helper()
	threads, inOpen = Threads(t)
	for deadline := time.Now().Add(10 * time.Second); (inOpen > 0 || threads-before >= slack) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		threads, inOpen = Threads(t)
	}
	return threads, inOpen
}
