package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
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

// callersModules are the real modules code_callers is measured on, from the module cache.
var callersModules = []string{"golang.org/x/mod@v0.39.0", "github.com/google/go-cmp@v0.7.0", "golang.org/x/sync@v0.24.0", "github.com/BurntSushi/toml@v1.6.0"}

// BenchmarkCallersAccuracy compares code_callers (direction in, depth 1) with gopls's call hierarchy
// over every function and method of each module (test files' call sites included), and reports
// precision and recall of the call sites it lists, and of those it resolved by type alone.
func BenchmarkCallersAccuracy(b *testing.B) {
	gopls := goplsBin()
	if gopls == "" {
		b.Skip("gopls is not installed: go install golang.org/x/tools/gopls@v0.23.0")
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		b.Skipf("go env GOMODCACHE: %v", err)
	}
	var all, typed counts
	for _, mod := range callersModules {
		src := filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(escapeModPath(mod)))
		if _, err := os.Stat(src); err != nil {
			b.Logf("%s is not in the module cache (go mod download %s): left out", mod, mod)
			continue
		}
		a, t := callersAccuracy(b, gopls, mod, src)
		b.Logf("code_callers vs gopls on %s, %d functions: every listed site precision %.3f recall %.3f (%d agreed, %d extra, %d missed); typed only precision %.3f recall %.3f",
			mod, a.functions, a.precision(), a.recall(), a.tp, a.fp, a.fn, t.precision(), t.recall())
		all.add(a)
		typed.add(t)
	}
	if all.functions == 0 {
		b.Skip("none of the modules is in the module cache")
	}
	b.ReportMetric(all.precision(), "precision")
	b.ReportMetric(all.recall(), "recall")
	b.ReportMetric(typed.precision(), "typed_precision")
	b.ReportMetric(typed.recall(), "typed_recall")
	b.ReportMetric(float64(all.functions), "functions")
	b.Logf("code_callers vs gopls call hierarchy, %d functions: precision %.3f, recall %.3f (%d agreed, %d extra, %d missed call sites); typed edges alone: precision %.3f, recall %.3f",
		all.functions, all.precision(), all.recall(), all.tp, all.fp, all.fn, typed.precision(), typed.recall())
}

// escapeModPath spells a module path as the module cache names its folder (an upper-case letter as "!" and the lower one).
func escapeModPath(p string) string {
	var b strings.Builder
	for _, c := range p {
		if c >= 'A' && c <= 'Z' {
			b.WriteByte('!')
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// counts are agreed (tp), extra (fp) and missed (fn) call sites over some functions.
type counts struct{ tp, fp, fn, functions int }

func (c *counts) add(o counts) {
	c.tp, c.fp, c.fn, c.functions = c.tp+o.tp, c.fp+o.fp, c.fn+o.fn, c.functions+o.functions
}
func (c counts) precision() float64 { return float64(c.tp) / float64(max(1, c.tp+c.fp)) }
func (c counts) recall() float64    { return float64(c.tp) / float64(max(1, c.tp+c.fn)) }

// callersAccuracy measures one module copied from src: every listed site, and the typed ones alone.
func callersAccuracy(b *testing.B, gopls, mod, src string) (counts, counts) {
	root := filepath.Join(b.TempDir(), "mod")
	graphtest.CopyTree(b, src, root)
	g, err := Open(context.Background(), root, filepath.Join(b.TempDir(), "cache"))
	if err != nil {
		b.Fatal(err)
	}
	var targets []graph.SymID
	for fi, f := range g.Files {
		if f.Lang != "go" || strings.Contains(f.Path, "testdata/") {
			continue
		}
		for si, s := range f.Syms() {
			if s.Kind.Callable() && s.Name != "init" && s.Name != "_" {
				targets = append(targets, graph.SymID{F: int32(fi), S: int32(si)})
			}
		}
	}
	// One gopls daemon, started here and stopped by its PID, serves every query from one cache.
	sock := filepath.Join(b.TempDir(), "gopls.sock")
	remote := "unix;" + sock
	daemon := exec.Command(gopls, "serve", "-listen="+remote)
	daemon.Dir = root
	daemon.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
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
		ours, typed, theirs map[site]bool
		how                 map[site]string // how each listed site was resolved, for the misses' list
		err                 error
	}
	results := make([]result, len(targets))
	// GUILDS_ORACLE_CACHE names a folder keeping gopls's answers per module between runs.
	oracleFile := ""
	if dir := os.Getenv("GUILDS_ORACLE_CACHE"); dir != "" {
		oracleFile = filepath.Join(dir, "gopls-"+strings.NewReplacer("/", "_", "@", "_").Replace(mod)+".json")
	}
	oracle := loadOracle(oracleFile)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, id := range targets {
		f := g.Files[id.F]
		s := g.Sym(id)
		ours, typed, how := map[site]bool{}, map[site]bool{}, map[site]string{}
		for _, e := range g.CallersOf(id) {
			r := g.Files[e.File].LoadRefs()[e.Ref]
			st := site{g.Files[e.File].Path, int(r.Line)}
			ours[st] = true
			switch {
			case e.ByName > 0:
				how[st] = fmt.Sprintf("by name %d", e.ByName)
			case e.Via:
				how[st], typed[st] = "via", true
			default:
				how[st], typed[st] = "typed", true
			}
			how[st] += " recv=" + r.Recv
		}
		results[i].ours, results[i].typed, results[i].how = ours, typed, how
		col := nameColumn(filepath.Join(root, f.Path), int(s.Start), s.Name)
		if col == 0 {
			results[i].err = fmt.Errorf("%s:%d: name %s not found on its line", f.Path, s.Start, s.Name)
			continue
		}
		pos := fmt.Sprintf("%s:%d:%d", f.Path, s.Start, col)
		if st, ok := oracle[pos]; ok {
			results[i].theirs = st
			continue
		}
		wg.Add(1)
		go func(i int, pos string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i].theirs, results[i].err = goplsCallers(gopls, remote, root, pos)
			if results[i].err == nil {
				mu.Lock()
				oracle[pos] = results[i].theirs
				mu.Unlock()
			}
		}(i, pos)
	}
	wg.Wait()
	saveOracle(b, oracleFile, oracle)
	var all, typed counts
	var misses []string
	tally := func(c *counts, ours, theirs map[site]bool, how map[site]string, name string, keep bool) {
		for st := range ours {
			if theirs[st] {
				c.tp++
			} else {
				c.fp++
				if keep {
					misses = append(misses, fmt.Sprintf("extra %s:%d → %s (%s)", st.path, st.line, name, how[st]))
				}
			}
		}
		for st := range theirs {
			if !ours[st] {
				c.fn++
				if keep {
					misses = append(misses, fmt.Sprintf("missed %s:%d → %s", st.path, st.line, name))
				}
			}
		}
	}
	skipped := 0
	for i, r := range results {
		if r.err != nil {
			skipped++
			continue
		}
		name := g.Sym(targets[i]).Qualified()
		tally(&all, r.ours, r.theirs, r.how, name, true)
		tally(&typed, r.typed, r.theirs, r.how, name, false)
		all.functions++
		typed.functions++
	}
	if all.functions < len(targets)*9/10 {
		b.Fatalf("only %d of %d functions measured (%d skipped)", all.functions, len(targets), skipped)
	}
	sort.Strings(misses)
	if skipped > 0 {
		b.Logf("%d of %d functions not measured (gopls could not place them)", skipped, len(targets))
	}
	// The benchmark's log is cut short: the sites that disagree go to the oracle's folder when one is set.
	if dir := os.Getenv("GUILDS_ORACLE_CACHE"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "misses-"+strings.NewReplacer("/", "_", "@", "_").Replace(mod)+".txt"), []byte(strings.Join(misses, "\n")+"\n"), 0o644)
	}
	return all, typed
}

// loadOracle reads the oracle's answers kept in path ("" or a missing file: none).
func loadOracle(path string) map[string]map[site]bool {
	out := map[string]map[site]bool{}
	b, err := os.ReadFile(path)
	if path == "" || err != nil {
		return out
	}
	var kept map[string][]string
	if json.Unmarshal(b, &kept) != nil {
		return out
	}
	for pos, sites := range kept {
		m := map[site]bool{}
		for _, s := range sites {
			if p, l, ok := strings.Cut(s, "#"); ok {
				n, _ := strconv.Atoi(l)
				m[site{p, n}] = true
			}
		}
		out[pos] = m
	}
	return out
}

// saveOracle keeps the oracle's answers in path ("": nowhere).
func saveOracle(b *testing.B, path string, oracle map[string]map[site]bool) {
	if path == "" {
		return
	}
	kept := map[string][]string{}
	for pos, sites := range oracle {
		list := []string{}
		for s := range sites {
			list = append(list, fmt.Sprintf("%s#%d", s.path, s.line))
		}
		kept[pos] = list
	}
	data, err := json.Marshal(kept)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		b.Logf("keep the oracle's answers: %v", err)
	}
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
	if strings.HasPrefix(strings.TrimLeft(text, "\t"), name+"(") { // a method an interface declares
		return len(text) - len(strings.TrimLeft(text, "\t")) + 1
	}
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

// tallySites counts one function's listed sites against the oracle's.
func tallySites(c *counts, ours, theirs map[site]bool) {
	for st := range ours {
		if theirs[st] {
			c.tp++
		} else {
			c.fp++
		}
	}
	for st := range theirs {
		if !ours[st] {
			c.fn++
		}
	}
	c.functions++
}

// graphCallers lists the graph's callers of id: every listed site, those resolved by the syntax
// (typed or through an interface), and how each resolved, for the misses file.
func graphCallers(g *Graph, id graph.SymID) (ours, typed map[site]bool, how map[site]string) {
	ours, typed, how = map[site]bool{}, map[site]bool{}, map[site]string{}
	for _, e := range g.CallersOf(id) {
		r := g.Files[e.File].LoadRefs()[e.Ref]
		st := site{g.Files[e.File].Path, int(r.Line)}
		ours[st] = true
		if e.ByName == 0 {
			typed[st] = true
			how[st] = fmt.Sprintf("%q.%s typed", r.Recv, r.Name)
		} else {
			how[st] = fmt.Sprintf("%q.%s by name among %d", r.Recv, r.Name, e.ByName)
		}
	}
	return ours, typed, how
}

// disagreements are the misses file's lines for one function: sites the graph lists that the
// oracle does not (with how each resolved), and sites the oracle lists that the graph misses.
func disagreements(ours, theirs map[site]bool, how map[site]string, fn string) []string {
	var out []string
	for st := range ours {
		if !theirs[st] {
			out = append(out, fmt.Sprintf("extra %s:%d → %s (%s)", st.path, st.line, fn, how[st]))
		}
	}
	for st := range theirs {
		if !ours[st] {
			out = append(out, fmt.Sprintf("missed %s:%d → %s", st.path, st.line, fn))
		}
	}
	return out
}

// writeMisses keeps the sorted misses in path, when it is set.
func writeMisses(path string, misses []string) {
	if path == "" {
		return
	}
	sort.Strings(misses)
	_ = os.WriteFile(path, []byte(strings.Join(misses, "\n")+"\n"), 0o644)
}
