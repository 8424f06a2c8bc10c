package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/shared/envelope"
)

// TestMain lets the test binary be the daemon: with GUILDS_DAEMON_TEST_SERVE set it serves
// calls by echoing its pid and the tool name.
func TestMain(m *testing.M) {
	if os.Getenv("GUILDS_DAEMON_TEST_SERVE") == "1" && len(os.Args) == 2 && os.Args[1] == "--daemon" {
		p := PathsFor(os.Getenv("GUILDS_RUN_DIR"))
		err := Serve(context.Background(), p, Idle(), func(ctx context.Context, c Call) envelope.Reply {
			if c.Req.Tool == "slow" {
				time.Sleep(200 * time.Millisecond)
			}
			return envelope.Reply{Text: fmt.Sprintf("%d %s", os.Getpid(), c.Req.Tool)}
		}, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func setup(t *testing.T, idle string) Paths {
	run := t.TempDir()
	t.Setenv("GUILDS_DAEMON_TEST_SERVE", "1")
	t.Setenv("GUILDS_RUN_DIR", run)
	t.Setenv("GUILDS_BROWSER_IDLE", idle)
	p := PathsFor(run)
	t.Cleanup(func() {
		b, err := os.ReadFile(p.PID)
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			if proc, err := os.FindProcess(pid); err == nil {
				proc.Kill()
			}
		}
	})
	return p
}

func call(t *testing.T, p Paths, tool string) (pid, name string) {
	t.Helper()
	r, err := Do(context.Background(), p, os.Args[0], Call{Req: envelope.Request{Tool: tool, RunID: "r", CallID: "c"}})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	pid, name, _ = strings.Cut(r.Text, " ")
	return pid, name
}

// TestRacingStartsMakeOneDaemon: eight first calls at once end with one daemon serving them all.
func TestRacingStartsMakeOneDaemon(t *testing.T) {
	p := setup(t, "1m")
	var wg sync.WaitGroup
	pids := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid, name := call(t, p, "slow")
			if name != "slow" {
				t.Errorf("reply for %q", name)
			}
			pids <- pid
		}()
	}
	wg.Wait()
	close(pids)
	seen := map[string]bool{}
	for pid := range pids {
		seen[pid] = true
	}
	if len(seen) != 1 {
		t.Fatalf("calls were served by %d daemons: %v", len(seen), seen)
	}
	log, _ := os.ReadFile(p.Log)
	if n := strings.Count(string(log), "listening on"); n != 1 {
		t.Fatalf("%d daemons started:\n%s", n, log)
	}
}

// TestQuietDaemonExitsAndIsReplaced: after the quiet period the daemon exits and removes its
// socket and pid file; the next call starts a new one transparently.
func TestQuietDaemonExitsAndIsReplaced(t *testing.T) {
	p := setup(t, "300ms")
	first, _ := call(t, p, "a")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(p.PID); os.IsNotExist(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(p.Socket); !os.IsNotExist(err) {
		t.Fatalf("socket still there after the quiet period: %v", err)
	}
	second, _ := call(t, p, "b")
	if second == first {
		t.Fatalf("the same daemon %s answered after its quiet period", first)
	}
}

// TestStaleSocket: a socket file left by a daemon that was killed does not block a new one.
func TestStaleSocket(t *testing.T) {
	p := setup(t, "1m")
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Socket, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, name := call(t, p, "x"); name != "x" {
		t.Fatalf("reply for %q", name)
	}
}

// TestDaemonThatCannotStart reports its output instead of hanging.
func TestDaemonThatCannotStart(t *testing.T) {
	p := setup(t, "1m")
	bad := filepath.Join(t.TempDir(), "false.sh")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho cannot start: no display >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Do(context.Background(), p, bad, Call{Req: envelope.Request{Tool: "x", RunID: "r", CallID: "c"}})
	if err == nil || !strings.Contains(err.Error(), "cannot start: no display") {
		t.Fatalf("err = %v, want the daemon's output", err)
	}
}
