package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"
)

// benchChild, when set (by a cgo build), is what the test binary does when a benchmark re-executes it
// with parseOnlyEnv naming a file list.
var benchChild func(listFile string) int

// parseOnlyEnv names the file list of a test binary re-executed to parse with tree-sitter and nothing else.
const parseOnlyEnv = "GUILDS_BENCH_PARSE_ONLY"

// TestMain removes the worker binaries built for the tests.
func TestMain(m *testing.M) {
	if list := os.Getenv(parseOnlyEnv); list != "" && benchChild != nil {
		os.Exit(benchChild(list))
	}
	code := m.Run()
	graphtest.RemoveWorkerBins()
	os.Exit(code)
}

// TestWorkerGarbage: a parser that answers something unreadable fails the call with what it said,
// instead of blaming files one by one.
func TestWorkerGarbage(t *testing.T) {
	script := filepath.Join(t.TempDir(), worker.ParserName)
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho garbage\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	graphtest.WithWorker(t, script)
	home := graphtest.NewHome(t, "graph-go")
	start := time.Now()
	_, err := Open(context.Background(), filepath.Join(home, "repos", "graph-go"), filepath.Join(home, "cache"))
	if err == nil || !strings.Contains(err.Error(), "unknown frame") {
		t.Fatalf("garbage from the parser: %v", err)
	}
	if d := time.Since(start); d > time.Minute { // a hang guard: the worker is stopped at its first answer
		t.Fatalf("took %s", d)
	}
}

// TestWorkerBudget: when the budget ends during a worker's build, the worker is stopped and the
// graph answers from what it has, counting the rest.
func TestWorkerBudget(t *testing.T) {
	graphtest.WithWorker(t, graphtest.WorkerBin(t, worker.ParserName))
	home := graphtest.NewHome(t, "graph-go")
	root := filepath.Join(home, "repos", "graph-go")
	list, err := walk(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parsed, missing, failed, err := parseAll(ctx, root, list, nil)
	if err != nil || len(parsed) != 0 || missing != len(list) || len(failed) != 0 {
		t.Fatalf("cancelled: %d parsed, %d missing, %v failed, %v", len(parsed), missing, failed, err)
	}
}

// TestWorkerStopHandsOver: when the budget ends during a build, the worker is asked to stop and
// hands over the records it holds (fewer than one batch here, so none were written yet): only the
// file it was stuck on is missing, and it is not blamed for a crash.
func TestWorkerStopHandsOver(t *testing.T) {
	graphtest.WithWorker(t, graphtest.WorkerBin(t, "crashparse"))
	home := graphtest.NewHome(t, "graph-go")
	root := filepath.Join(home, "repos", "graph-go")
	graphtest.WriteExtras(t, root, 20)
	if err := os.WriteFile(filepath.Join(root, "stall_me.go"), []byte("package main\n\nfunc stuck() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	start := time.Now()
	g, err := Open(ctx, root, filepath.Join(home, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	// A worker that ignored the stop would be killed 2 s later with its records (the extras below)
	// unsent; a stuck one would hold Open forever: this bound is only a hang guard.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %s: the worker did not stop when asked", d)
	}
	if g.Missing != 1 || g.File("stall_me.go") != nil || len(g.Failed) != 0 {
		t.Fatalf("missing %d (want 1: stall_me.go), stall_me.go in the graph: %v, failed %v", g.Missing, g.File("stall_me.go") != nil, g.Failed)
	}
	for i := 0; i < 20; i++ {
		if f := g.File(fmt.Sprintf("extra%02d.go", i)); f == nil || len(f.Syms()) != 1 {
			t.Fatalf("extra%02d.go was parsed before the stop and is not in the graph", i)
		}
	}
}
