package graph_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/store"
)

// findModules are the real modules code_find is measured on, from the module cache: code nobody here
// wrote or tuned on.
var findModules = []string{"golang.org/x/mod@v0.39.0", "github.com/google/go-cmp@v0.7.0"}

// BenchmarkFindAccuracy asks code_find, for every documented function and method of each module,
// the first sentence of its doc comment with its own name taken out, and reports how often that
// function ranks first and in the top 3 (the targets: 70% and 90%).
func BenchmarkFindAccuracy(b *testing.B) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		b.Skipf("go env GOMODCACHE: %v", err)
	}
	cache := strings.TrimSpace(string(out))
	var first, top3, asked int
	for _, mod := range findModules {
		src := filepath.Join(cache, filepath.FromSlash(mod))
		if _, err := os.Stat(src); err != nil {
			b.Logf("%s is not in the module cache (go mod download %s): left out", mod, mod)
			continue
		}
		home := b.TempDir()
		name := strings.NewReplacer("/", "-", "@", "-").Replace(mod)
		root := filepath.Join(home, "repos", name)
		graphtest.CopyTree(b, src, root)
		g, err := store.Open(context.Background(), root, filepath.Join(home, ".cache", "graft", name))
		if err != nil {
			b.Fatal(err)
		}
		var f1, f3, n int
		for _, f := range g.Files {
			if strings.HasSuffix(f.Path, "_test.go") || strings.Contains(f.Path, "testdata/") {
				continue
			}
			for _, s := range f.Syms() {
				q := docQuestion(s.Name, s.Doc)
				if !s.Kind.Callable() || q == "" {
					continue
				}
				n++
				got := call(b, home, "code_find", fmt.Sprintf(`{"question":%q,"limit":3}`, q))
				want := fmt.Sprintf("repos/%s/%s:%d  ", name, f.Path, s.Start)
				var ranks []string
				for _, line := range strings.Split(got, "\n") {
					if strings.HasPrefix(line, "repos/") && strings.Contains(line, ":") && !strings.HasPrefix(line, "files:") {
						ranks = append(ranks, line)
					}
				}
				for i, line := range ranks[:min(len(ranks), 3)] {
					if strings.HasPrefix(line, want) {
						if i == 0 {
							f1++
						}
						f3++
						break
					}
				}
			}
		}
		if n > 0 {
			b.Logf("code_find on %s: %d documented functions, first %.0f%%, top 3 %.0f%%", mod, n, 100*float64(f1)/float64(n), 100*float64(f3)/float64(n))
		}
		first, top3, asked = first+f1, top3+f3, asked+n
	}
	if asked == 0 {
		b.Skip("none of the modules is in the module cache")
	}
	b.ReportMetric(float64(first)/float64(asked), "first")
	b.ReportMetric(float64(top3)/float64(asked), "top3")
	b.ReportMetric(float64(asked), "questions")
	b.Logf("code_find, %d questions: first %.1f%%, top 3 %.1f%%", asked, 100*float64(first)/float64(asked), 100*float64(top3)/float64(asked))
}

var sentenceEnd = regexp.MustCompile(`\.(\s|$)`)

// docQuestion is the first sentence of a doc line with the symbol's own name taken out, or "" when
// too little is left to ask.
func docQuestion(name, doc string) string {
	if loc := sentenceEnd.FindStringIndex(doc); loc != nil {
		doc = doc[:loc[0]]
	}
	var words []string
	for _, w := range strings.Fields(doc) {
		if !strings.EqualFold(strings.Trim(w, ".,;:()'\"`"), name) {
			words = append(words, w)
		}
	}
	if len(words) < 2 {
		return ""
	}
	return strings.Join(words, " ")
}
