package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
)

// goplsBin finds gopls on PATH or in $(go env GOPATH)/bin.
func goplsBin() string {
	if p, err := exec.LookPath("gopls"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "bin", "gopls")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// goplsCaller matches a "caller[i]: ranges L:C-C, L:C-C in FILE from/to ..." line of gopls call_hierarchy.
var goplsCaller = regexp.MustCompile(`^caller\[\d+\]: ranges (.*?) in (\S+) from/to `)

// site is one call site: a repository path and a line.
type site struct {
	path string
	line int
}

// goplsCallers asks gopls for the incoming calls of the function named at path:line:col.
func goplsCallers(gopls, remote, root, pos string) (map[site]bool, error) {
	cmd := exec.Command(gopls, "-remote="+remote, "call_hierarchy", pos)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("gopls call_hierarchy %s: %v\n%s", pos, err, out)
	}
	sites := map[site]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		m := goplsCaller.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rel, err := filepath.Rel(root, m[2])
		if err != nil {
			continue
		}
		for _, r := range strings.Split(m[1], ", ") {
			var l, c1, c2 int
			if _, err := fmt.Sscanf(r, "%d:%d-%d", &l, &c1, &c2); err == nil {
				sites[site{filepath.ToSlash(rel), l}] = true
			}
		}
	}
	return sites, nil
}

// BenchmarkCallersAccuracy compares code_callers (direction in, depth 1) with gopls's call hierarchy
// on golang.org/x/mod from the module cache, over a sample of at least 50 functions and methods,
// and reports precision and recall of the resolved call sites.
func BenchmarkCallersAccuracy(b *testing.B) {
	gopls := goplsBin()
	if gopls == "" {
		b.Skip("gopls is not installed: go install golang.org/x/tools/gopls@v0.23.0")
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		b.Skipf("go env GOMODCACHE: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "golang.org", "x", "mod@v0.37.0")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("golang.org/x/mod@v0.37.0 is not in the module cache (go mod download golang.org/x/mod@v0.37.0)")
	}
	root := filepath.Join(b.TempDir(), "mod")
	graphtest.CopyTree(b, src, root)
	g, err := Open(context.Background(), root, filepath.Join(b.TempDir(), "cache"))
	if err != nil {
		b.Fatal(err)
	}
	// The sample: every function and method of non-test files whose name some call site uses,
	// taken evenly across the module.
	called := map[string]bool{}
	for _, f := range g.Files {
		for _, r := range f.LoadRefs() {
			called[r.Name] = true
		}
	}
	var pool []graph.SymID
	for fi, f := range g.Files {
		if f.Lang != "go" || strings.HasSuffix(f.Path, "_test.go") || strings.Contains(f.Path, "testdata/") {
			continue
		}
		for si, s := range f.Syms() {
			if s.Kind.Callable() && called[s.Name] && s.Name != "init" {
				pool = append(pool, graph.SymID{F: int32(fi), S: int32(si)})
			}
		}
	}
	const want = 60
	var sample []graph.SymID
	step := max(1, len(pool)/want)
	for i := 0; i < len(pool) && len(sample) < want; i += step {
		sample = append(sample, pool[i])
	}
	if len(sample) < 50 {
		b.Fatalf("only %d functions to sample", len(sample))
	}
	// One gopls daemon, started here and stopped by its PID, serves every query from one cache.
	sock := filepath.Join(b.TempDir(), "gopls.sock")
	remote := "unix;" + sock
	daemon := exec.Command(gopls, "serve", "-listen="+remote)
	daemon.Dir = root
	if err := daemon.Start(); err != nil {
		b.Fatalf("start gopls: %v", err)
	}
	defer func() {
		_ = daemon.Process.Kill()
		_ = daemon.Wait()
	}()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	type result struct {
		ours, byName, theirs map[site]bool
		err                  error
	}
	results := make([]result, len(sample))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, id := range sample {
		f := g.Files[id.F]
		s := g.Sym(id)
		ours, byName := map[site]bool{}, map[site]bool{}
		for _, e := range g.CallersOf(id) {
			st := site{g.Files[e.File].Path, int(g.Files[e.File].LoadRefs()[e.Ref].Line)}
			if e.ByName > 0 {
				byName[st] = true
			} else {
				ours[st] = true
			}
		}
		results[i].ours, results[i].byName = ours, byName
		col := nameColumn(filepath.Join(root, f.Path), int(s.Start), s.Name)
		if col == 0 {
			results[i].err = fmt.Errorf("%s:%d: name %s not found on its line", f.Path, s.Start, s.Name)
			continue
		}
		wg.Add(1)
		go func(i int, pos string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i].theirs, results[i].err = goplsCallers(gopls, remote, root, pos)
		}(i, fmt.Sprintf("%s:%d:%d", f.Path, s.Start, col))
	}
	wg.Wait()
	var tp, fp, fn, nameHits, nameAll, measured int
	var misses []string
	for i, r := range results {
		if r.err != nil {
			b.Logf("skipped: %v", r.err)
			continue
		}
		measured++
		for st := range r.ours {
			if r.theirs[st] {
				tp++
			} else {
				fp++
				misses = append(misses, fmt.Sprintf("extra %s:%d → %s", st.path, st.line, g.Sym(sample[i]).Qualified()))
			}
		}
		for st := range r.theirs {
			if !r.ours[st] {
				fn++
				misses = append(misses, fmt.Sprintf("missed %s:%d → %s", st.path, st.line, g.Sym(sample[i]).Qualified()))
			}
		}
		for st := range r.byName {
			nameAll++
			if r.theirs[st] {
				nameHits++
			}
		}
	}
	if measured < 50 {
		b.Fatalf("only %d of %d functions measured", measured, len(sample))
	}
	precision := float64(tp) / float64(max(1, tp+fp))
	recall := float64(tp) / float64(max(1, tp+fn))
	sort.Strings(misses)
	for _, m := range misses[:min(len(misses), 15)] {
		b.Logf("%s", m)
	}
	b.ReportMetric(precision, "precision")
	b.ReportMetric(recall, "recall")
	b.ReportMetric(float64(measured), "functions")
	b.Logf("code_callers vs gopls call hierarchy on golang.org/x/mod, %d functions: precision %.3f, recall %.3f (%d agreed, %d extra, %d missed resolved call sites; %d of %d name-matched sites also in gopls)",
		measured, precision, recall, tp, fp, fn, nameHits, nameAll)
}

// nameColumn is the 1-based byte column of the declared name on a line of a Go file, or 0.
func nameColumn(path string, line int, name string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return 0
	}
	text := lines[line-1]
	for _, suffix := range []string{"(", "["} {
		if i := strings.Index(text, " "+name+suffix); i >= 0 {
			return i + 2
		}
		if i := strings.Index(text, ")"+name+suffix); i >= 0 {
			return i + 2
		}
	}
	return 0
}
