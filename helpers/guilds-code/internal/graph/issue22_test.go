package graph_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/store"
)

// setCwd makes dir the run's working directory.
func setCwd(t *testing.T, home, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, ".runs", "r1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".runs", "r1", "cwd"), []byte(dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIssue22: the answers issue 22 found wrong, over graph-gomod (a Go module in app/ with no go.mod
// at the root, and tools/ with none at all), each with the lines it must and must not hold.
func TestIssue22(t *testing.T) {
	home := graphtest.NewHome(t, "graph-gomod")
	setCwd(t, home, filepath.Join(home, "repos", "graph-gomod", "app"))
	cases := []struct {
		name, tool, args string
		want, not        []string
	}{
		{"a package-qualified call through the import of a nested module, test files included", "code_callers", `{"symbol":"Greet"}`,
			[]string{"main.go:11  main", "main_test.go:10  TestGreet"}, nil},
		{"an import path whose module has no go.mod in the repository", "code_callers", `{"symbol":"Trim","in":"../tools"}`,
			[]string{"cmd/cmd.go:6  Run"}, nil},
		{"a receiver typed by its constructor and by a parameter; not a strings.Builder, not another type's String", "code_callers", `{"symbol":"Greeter.String"}`,
			[]string{"main.go:13  main", "main.go:27  shout", "~ main.go:30  mystery  (by name, 3 candidates)", "pkg/speaker.go:9  Announce  (via interface)"}, []string{"main.go:16", "main.go:18"}},
		{"a receiver typed by a conversion", "code_callers", `{"symbol":"Name.String"}`,
			[]string{"main.go:18  main"}, []string{"main.go:13", "main.go:16", "main.go:27", "chain.go"}},
		{"receivers typed by a field of a field, a method's result and a type assertion", "code_callers", `{"symbol":"Greeter.String"}`,
			[]string{"\n  chain.go:13  open\n", "\n  chain.go:14  open\n", "\n  chain.go:16  open\n"}, nil},
		{"a call through an interface of the repository goes to the interface method", "code_callers", `{"symbol":"Speaker.String"}`,
			[]string{"note: an interface method", "pkg/speaker.go:9  Announce"}, []string{"main.go:13", "~ pkg/speaker.go"}},
		{"and says so from the caller's side", "code_callers", `{"symbol":"Announce","direction":"out"}`,
			[]string{"pkg/speaker.go:9  Speaker.String → pkg/speaker.go:5  (via interface)"}, nil},
		{"range values over a slice field and a map field", "code_callers", `{"symbol":"Greeter.String"}`,
			[]string{"\n  loop.go:14  Crowd.sayAll\n"}, []string{"loop.go:17"}},
		{"range values over a map field", "code_callers", `{"symbol":"Name.String"}`,
			[]string{"\n  loop.go:17  Crowd.sayAll\n"}, []string{"loop.go:14"}},
		{"a Python local whose type is from outside the repository calls nothing in it", "code_callers", `{"symbol":"Box.get","in":"../tools"}`,
			[]string{"script.py:13  use"}, []string{"script.py:11", "~"}},
		{"receivers from &T{} and new(T)", "code_callers", `{"symbol":"Greeter.Reset"}`,
			[]string{"main.go:20  main", "main.go:22  main"}, nil},
		{"code_map defaults to the repository holding the working directory; folders are named inside it", "code_map", `{}`,
			[]string{"repository graph-gomod:", "  app/pkg/  ", "  tools/cmd/  "}, []string{"repos/graph-gomod/app", "ERROR"}},
		{"a question's words are stemmed: weighed finds weigh first", "code_find", `{"question":"how are apples weighed"}`,
			[]string{"symbols:\npkg/fruit.go:10  func weigh(a Apple) int  (name, doc"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, home, tc.tool, tc.args)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s %s lacks %q:\n%s", tc.tool, tc.args, w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%s %s holds %q:\n%s", tc.tool, tc.args, n, got)
				}
			}
		})
	}
}

// TestDefaultRepository: without repo, in or a path, every graph tool addresses the repository
// holding the working directory, else the only one, else says how to pick one.
func TestDefaultRepository(t *testing.T) {
	for _, tc := range []struct {
		name  string
		repos []string
		cwd   string // relative to the home
		want  string
	}{
		{"the only repository, working directory outside it", []string{"graph-go"}, ".", "repository=graph-go"},
		{"the one holding the working directory", []string{"graph-go", "graph-py"}, "repos/graph-py/app", "repository=graph-py"},
		{"several and none holding the working directory", []string{"graph-go", "graph-py"}, ".", "ERROR: the working directory is not inside a repository and there are several (graph-go, graph-py)"},
	} {
		home := graphtest.NewHome(t, tc.repos...)
		setCwd(t, home, filepath.Join(home, tc.cwd))
		for _, c := range []struct{ tool, args string }{
			{"code_map", `{}`}, {"code_find", `{"question":"save"}`}, {"code_callers", `{"symbol":"helper_or_save"}`},
		} {
			t.Run(tc.name+"/"+c.tool, func(t *testing.T) {
				got := call(t, home, c.tool, c.args)
				if !strings.Contains(got, tc.want) {
					t.Fatalf("%s %s: want %q in:\n%s", c.tool, c.args, tc.want, got)
				}
			})
		}
	}
}

// TestByNameAlwaysLabelled: over every fixture repository, every edge code_callers marks as matched
// by name says among how many definitions, in both directions.
func TestByNameAlwaysLabelled(t *testing.T) {
	repos := []string{"graph-go", "graph-py", "graph-ts", "graph-poly", "graph-gomod"}
	home := graphtest.NewHome(t, repos...)
	marked := 0
	for _, repo := range repos {
		g, err := store.Open(context.Background(), filepath.Join(home, "repos", repo), filepath.Join(home, ".cache", "graft", repo))
		if err != nil {
			t.Fatal(err)
		}
		for fi, f := range g.Files {
			for si, s := range f.Syms() {
				if len(g.Lookup(s.Qualified(), nil)) != 1 || !s.Kind.Callable() {
					continue
				}
				for _, dir := range []string{"in", "out"} {
					got := call(t, home, "code_callers", fmt.Sprintf(`{"symbol":%q,"direction":%q,"in":"repos/%s"}`, s.Qualified(), dir, repo))
					for _, line := range strings.Split(got, "\n") {
						if !strings.HasPrefix(strings.TrimSpace(line), "~ ") {
							continue
						}
						marked++
						if !regexp.MustCompile(`  \(by name, ([2-9]|[1-9][0-9]+) candidates\)$|  \(by name, the only candidate\)$`).MatchString(line) {
							t.Errorf("%s %s (file %d symbol %d): by-name edge without its label: %q", s.Qualified(), dir, fi, si, line)
						}
					}
				}
			}
		}
	}
	if marked == 0 {
		t.Fatal("no by-name edge in the fixtures: the test checks nothing")
	}
}
