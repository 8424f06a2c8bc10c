package graph_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/store"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"
)

// TestWorkerGolden answers every golden scenario with the graph built by guilds-code-parse: the same
// answers as the in-process parse.
func TestWorkerGolden(t *testing.T) {
	graphtest.WithWorker(t, graphtest.WorkerBin(t, worker.ParserName))
	runGolden(t, goldenHome(t), false)
}

// TestWorkerRefresh builds cold through the worker, then edits, adds and deletes files between queries.
func TestWorkerRefresh(t *testing.T) {
	graphtest.WithWorker(t, graphtest.WorkerBin(t, worker.ParserName))
	home := graphtest.NewHome(t, "graph-go")
	root := filepath.Join(home, "repos", "graph-go")
	cache := filepath.Join(home, ".cache", "graft", "graph-go") // where the tools keep it
	g, err := store.Open(context.Background(), root, cache)
	if err != nil {
		t.Fatal(err)
	}
	if g.Changed != len(g.Files) || len(g.Files) != 5 || g.Missing != 0 || len(g.Failed) != 0 {
		t.Fatalf("cold build: %d files, %d parsed, %d missing, %v failed", len(g.Files), g.Changed, g.Missing, g.Failed)
	}
	if got := call(t, home, "code_outline", `{"path":"repos/graph-go/util.go"}`); !strings.Contains(got, "func helper()") {
		t.Fatalf("outline after the cold build: %s", got)
	}
	// Touching a file without changing it must not start the parser: a broken one would fail the call.
	graphtest.WithWorker(t, "/nonexistent/guilds-code-parse")
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(root, "util.go"), later, later); err != nil {
		t.Fatal(err)
	}
	if g, err = store.Open(context.Background(), root, cache); err != nil || g.Changed != 1 {
		t.Fatalf("touch only: changed %v, err %v", g, err)
	}
	graphtest.WithWorker(t, graphtest.WorkerBin(t, worker.ParserName))
	// Edit, add, delete.
	if err := os.WriteFile(filepath.Join(root, "util.go"), []byte("package main\n\nfunc helper() { renamedHelper() }\n\nfunc renamedHelper() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "added.go"), []byte("package main\n\nfunc addedFunc() { helper() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "other", "other.go")); err != nil {
		t.Fatal(err)
	}
	got := call(t, home, "code_callers", `{"symbol":"helper","in":"repos/graph-go"}`)
	if !strings.Contains(got, "added.go:3") {
		t.Fatalf("the added file's call is missing:\n%s", got)
	}
	if got := call(t, home, "code_callers", `{"symbol":"renamedHelper","in":"repos/graph-go"}`); !strings.Contains(got, "util.go:3") {
		t.Fatalf("the edited file's new call is missing:\n%s", got)
	}
	if got := call(t, home, "code_outline", `{"path":"repos/graph-go/other/other.go"}`); !strings.Contains(got, "ERROR") {
		t.Fatalf("the deleted file is still answered:\n%s", got)
	}
	g, err = store.Open(context.Background(), root, cache)
	if err != nil || len(g.Files) != 5 || g.Changed != 0 {
		t.Fatalf("after the changes: %+v, %v", g, err)
	}
}

// TestWorkerCrash: a worker that dies on one file (as a grammar segfault would) costs only that file,
// and every answer says which file was left out and why.
func TestWorkerCrash(t *testing.T) {
	graphtest.WithWorker(t, graphtest.WorkerBin(t, "crashparse"))
	home := graphtest.NewHome(t, "graph-go")
	root := filepath.Join(home, "repos", "graph-go")
	// Enough files that the crash happens with other parses in flight and more queued behind it.
	graphtest.WriteExtras(t, root, 40)
	if err := os.WriteFile(filepath.Join(root, "crash_me.go"), []byte("package main\n\nfunc hostile() { helper() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := store.Open(context.Background(), root, filepath.Join(home, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Failed) != 1 || g.Failed[0].Path != "crash_me.go" || !strings.Contains(g.Failed[0].Reason, "SIGSEGV") {
		t.Fatalf("failed files: %+v", g.Failed)
	}
	if len(g.Files) != 46 || g.Missing != 0 || len(g.File("crash_me.go").Syms()) != 0 || g.File("extra39.go") == nil {
		t.Fatalf("kept %d files (want all 46, the crashed one without symbols), missing %d", len(g.Files), g.Missing)
	}
	want := []string{"note: the parser crashed on 1 file; it has no symbols in the graph until changed",
		"crash_me.go (the parser exited with status 2 (SIGSEGV: segmentation violation))", "extra39.go:3"}
	check := func(got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("answer lacks %q:\n%s", w, got)
			}
		}
	}
	check(call(t, home, "code_callers", `{"symbol":"helper","in":"repos/graph-go"}`), want...)
	// The crash is remembered: while the file is unchanged, no parser is started for it again.
	graphtest.WithWorker(t, "/nonexistent/guilds-code-parse")
	check(call(t, home, "code_callers", `{"symbol":"helper","in":"repos/graph-go"}`), want...)
	check(call(t, home, "code_outline", `{"path":"repos/graph-go/crash_me.go"}`), append(want[:2:2], "crash_me.go (go): not outlined: the parser crashed on it")...)
	// Once it changes it is parsed again, and with a parser that copes the note is gone.
	graphtest.WithWorker(t, graphtest.WorkerBin(t, worker.ParserName))
	if err := os.WriteFile(filepath.Join(root, "crash_me.go"), []byte("package main\n\nfunc hostile() { helper() }\n\n// changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := call(t, home, "code_callers", `{"symbol":"helper","in":"repos/graph-go"}`)
	if strings.Contains(got, "crashed") || !strings.Contains(got, "crash_me.go:3") {
		t.Fatalf("after a good parser:\n%s", got)
	}
}

// TestWorkerMissing: without guilds-code-parse a graph that needs parsing answers an error naming
// `make build`; a graph that is current answers without it.
func TestWorkerMissing(t *testing.T) {
	home := graphtest.NewHome(t, "graph-go")
	graphtest.WithWorker(t, "")
	got := call(t, home, "code_map", `{"repo":"graph-go"}`)
	if !strings.Contains(got, "ERROR") || !strings.Contains(got, "make build") || !strings.Contains(got, worker.ParserName) {
		t.Fatalf("missing parser: %s", got)
	}
	graphtest.WithWorker(t, graphtest.WorkerBin(t, worker.ParserName))
	if got := call(t, home, "code_map", `{"repo":"graph-go"}`); strings.Contains(got, "ERROR") {
		t.Fatal(got)
	}
	graphtest.WithWorker(t, "")
	if got := call(t, home, "code_outline", `{"path":"repos/graph-go/util.go"}`); !strings.Contains(got, "func helper()") {
		t.Fatalf("a current graph needs no parser: %s", got)
	}
}
