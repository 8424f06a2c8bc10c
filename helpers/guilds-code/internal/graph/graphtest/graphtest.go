// Package graphtest is what the graph packages' tests share: fixture workspaces, the parse worker
// binaries built from the current sources, and switching the store to parse through them. It imports
// no package that imports the store, so the store's own tests can use it.
package graphtest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"
)

// here is this package's folder, which the fixtures and the worker sources are found from.
var here = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}()

// Fixtures is the shared folder of fixture repositories.
var Fixtures = filepath.Join(here, "..", "..", "..", "..", "..", "testdata", "repos")

// NewHome copies the named fixture repositories into a fresh workspace and returns it.
func NewHome(t testing.TB, names ...string) string {
	t.Helper()
	home := t.TempDir()
	for _, n := range names {
		CopyTree(t, filepath.Join(Fixtures, n), filepath.Join(home, "repos", n))
	}
	return home
}

// CopyTree copies the folder src to dst.
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	workerOnce sync.Once
	workerBins map[string]string
	workerDir  string // the temporary folder WorkerBin built into
	workerErr  error
)

// WorkerBin builds guilds-code-parse (and the crashing variant) once per test binary into a temporary
// folder with the current sources; GOCACHE keeps it to a link. Under make, guilds-code-parse is the
// one make build just wrote to $GUILDS_BIN_DIR. name is "guilds-code-parse" or "crashparse".
func WorkerBin(t testing.TB, name string) string {
	t.Helper()
	workerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "graph-worker-")
		if err != nil {
			workerErr = err
			return
		}
		workerBins = map[string]string{}
		pkgs := map[string]string{
			worker.ParserName: filepath.Join(here, "..", "..", "..", "cmd", "guilds-code-parse"),
			"crashparse":      filepath.Join(here, "testdata", "crashparse"),
		}
		if bin := filepath.Join(os.Getenv("GUILDS_BIN_DIR"), worker.ParserName); os.Getenv("GUILDS_BIN_DIR") != "" && isFile(bin) {
			workerBins[worker.ParserName] = bin
			delete(pkgs, worker.ParserName)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for n, pkg := range pkgs { // two links side by side
			wg.Go(func() {
				out := filepath.Join(dir, n)
				cmd := exec.Command("go", "build", "-o", out, ".")
				cmd.Dir = pkg
				cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
				b, err := cmd.CombinedOutput()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					workerErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
					return
				}
				workerBins[n] = out
			})
		}
		wg.Wait()
		workerDir = dir
	})
	if workerErr != nil {
		t.Fatal(workerErr)
	}
	return workerBins[name]
}

// isFile reports whether p is a regular file.
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// RemoveWorkerBins removes what WorkerBin built; a TestMain calls it after the tests.
func RemoveWorkerBins() {
	if workerDir != "" {
		os.RemoveAll(workerDir)
	}
}

// defaultParserPath is how worker finds guilds-code-parse when no test has pointed it elsewhere.
var defaultParserPath = worker.ParserPath

// WithWorker makes the store parse through the named worker binary (or, with bin "", a missing one)
// until the test ends.
func WithWorker(t *testing.T, bin string) {
	oldIn, oldPath := worker.InProcess, worker.ParserPath
	worker.InProcess = false
	worker.ParserPath = func() (string, error) {
		if bin == "" {
			return missingParserPath()
		}
		return bin, nil
	}
	t.Cleanup(func() { worker.InProcess, worker.ParserPath = oldIn, oldPath })
}

// missingParserPath is ParserPath's answer when the parser is nowhere.
func missingParserPath() (string, error) {
	t := os.Getenv("PATH")
	defer os.Setenv("PATH", t)
	os.Setenv("PATH", "")
	return defaultParserPath()
}

// WriteExtras adds n Go files extraNN.go to root, each with one function calling helper.
func WriteExtras(t *testing.T, root string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		src := fmt.Sprintf("package main\n\nfunc extra%d() { helper() }\n", i)
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("extra%02d.go", i)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
