package graph_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graphtools"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.txt from the current answers")

// call runs one graph tool in home and renders its reply as text.
func call(t testing.TB, home, tool, args string) string {
	t.Helper()
	c := &runs.Call{Req: envelope.Request{Tool: tool, Args: json.RawMessage(args), RunID: "r1", CallID: "c1", Seq: 1},
		Home: home, RunDir: filepath.Join(home, ".run"), Max: 8192}
	h := map[string]func(context.Context, *runs.Call) envelope.Reply{
		"code_map": graphtools.Map, "code_find": graphtools.Find, "code_outline": graphtools.Outline, "code_callers": graphtools.Callers,
	}[tool]
	rep := h(context.Background(), c)
	keys := make([]string, 0, len(rep.Meta))
	for k := range rep.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var m []string
	for _, k := range keys {
		m = append(m, fmt.Sprintf("%s=%v", k, rep.Meta[k]))
	}
	out := rep.Text
	if rep.Failed() {
		out = "ERROR: " + rep.Error + "\n"
	}
	return strings.ReplaceAll(out, home, "$HOME") + "meta: " + strings.Join(m, " ") + "\n"
}

// goldenCases are the scenarios over the fixture repositories, each with testdata/golden/<name>.txt.
var goldenCases = []struct{ name, tool, args string }{
	{"go_map", "code_map", `{"repo":"graph-go"}`},
	{"go_outline_store", "code_outline", `{"path":"repos/graph-go/store/store.go"}`},
	{"go_callers_method_close", "code_callers", `{"symbol":"Store.Close","in":"repos/graph-go"}`},
	{"go_callers_func_close", "code_callers", `{"symbol":"store.Close","in":"repos/graph-go"}`},
	{"go_callers_cache_close", "code_callers", `{"symbol":"Cache.Close","in":"repos/graph-go"}`},
	{"go_callers_ambiguous", "code_callers", `{"symbol":"Close","in":"repos/graph-go"}`},
	{"go_callers_add_import", "code_callers", `{"symbol":"other.Add","in":"repos/graph-go"}`},
	{"go_callers_store_add", "code_callers", `{"symbol":"Store.Add","in":"repos/graph-go"}`},
	{"go_callers_recursion", "code_callers", `{"symbol":"Fact","in":"repos/graph-go"}`},
	{"go_callers_depth2", "code_callers", `{"symbol":"Cache.reset","depth":3,"in":"repos/graph-go"}`},
	{"go_callers_out", "code_callers", `{"symbol":"run","direction":"out","depth":2,"in":"repos/graph-go"}`},
	{"go_callers_other_file", "code_callers", `{"symbol":"helper","in":"repos/graph-go"}`},
	{"go_callers_not_found", "code_callers", `{"symbol":"Clsoe","in":"repos/graph-go"}`},
	{"go_find", "code_find", `{"question":"close the store","in":"repos/graph-go"}`},
	{"go_find_source", "code_find", `{"question":"fact","in":"repos/graph-go","source":true,"limit":2}`},
	{"py_outline", "code_outline", `{"path":"repos/graph-py/app/models.py"}`},
	{"py_callers_method", "code_callers", `{"symbol":"User.save","in":"repos/graph-py"}`},
	{"py_callers_function", "code_callers", `{"symbol":"models.save","in":"repos/graph-py"}`},
	{"py_callers_validate", "code_callers", `{"symbol":"validate","in":"repos/graph-py"}`},
	{"py_callers_recursion", "code_callers", `{"symbol":"walk","in":"repos/graph-py"}`},
	{"py_callers_create", "code_callers", `{"symbol":"create","in":"repos/graph-py"}`},
	{"ts_map", "code_map", `{"repo":"graph-ts"}`},
	{"ts_callers_format_util", "code_callers", `{"symbol":"format","in":"repos/graph-ts/src/util.ts"}`},
	{"ts_callers_format_js", "code_callers", `{"symbol":"format","in":"repos/graph-ts/src/legacy.js"}`},
	{"ts_callers_write", "code_callers", `{"symbol":"Logger.write","in":"repos/graph-ts"}`},
	{"ts_outline_tsx", "code_outline", `{"path":"repos/graph-ts/src/app.tsx"}`},
	{"ts_outline_not_parsed", "code_outline", `{"path":"repos/graph-ts/README.md"}`},
	{"ts_outline_ignored", "code_outline", `{"path":"repos/graph-ts/build/out.ts"}`},
	{"poly_map", "code_map", `{"repo":"graph-poly"}`},
	{"poly_outline_rust", "code_outline", `{"path":"repos/graph-poly/shapes.rs"}`},
	{"poly_callers_rust_new", "code_callers", `{"symbol":"Square.new","in":"repos/graph-poly"}`},
	{"poly_outline_java", "code_outline", `{"path":"repos/graph-poly/Greeter.java"}`},
	{"poly_callers_java", "code_callers", `{"symbol":"prefix","in":"repos/graph-poly"}`},
	{"poly_callers_c_recursion", "code_callers", `{"symbol":"length","in":"repos/graph-poly"}`},
	{"poly_outline_cpp", "code_outline", `{"path":"repos/graph-poly/counter.cpp"}`},
	{"poly_callers_cpp", "code_callers", `{"symbol":"Counter.get","in":"repos/graph-poly"}`},
	{"poly_outline_ruby", "code_outline", `{"path":"repos/graph-poly/bank.rb"}`},
	{"poly_callers_ruby", "code_callers", `{"symbol":"validate","in":"repos/graph-poly"}`},
	{"poly_callers_csharp", "code_callers", `{"symbol":"Price","in":"repos/graph-poly"}`},
	{"poly_callers_php", "code_callers", `{"symbol":"render","in":"repos/graph-poly"}`},
	{"poly_callers_kotlin", "code_callers", `{"symbol":"step","in":"repos/graph-poly"}`},
	{"poly_callers_bash", "code_callers", `{"symbol":"build","in":"repos/graph-poly"}`},
	{"bad_repo", "code_map", `{"repo":"nope"}`},
	{"bad_depth", "code_callers", `{"symbol":"run","depth":4,"in":"repos/graph-go"}`},
	{"bad_direction", "code_callers", `{"symbol":"run","direction":"up","in":"repos/graph-go"}`},
	{"bad_outside", "code_outline", `{"path":"/etc/passwd"}`},
	{"bad_limit", "code_find", `{"question":"x","limit":21,"in":"repos/graph-go"}`},
	{"bad_no_repo_for_cwd", "code_find", `{"question":"store"}`},
}

// TestGolden runs scenarios over the fixture repositories whose callers are known by construction.
func TestGolden(t *testing.T) {
	home := goldenHome(t)
	runGolden(t, home, *update)
}

// goldenHome is a workspace holding the golden fixtures plus ignored files that must stay out of the graph.
func goldenHome(t *testing.T) string {
	home := graphtest.NewHome(t, "graph-go", "graph-py", "graph-ts", "graph-poly")
	os.MkdirAll(filepath.Join(home, "repos/graph-ts/build"), 0o755)
	os.WriteFile(filepath.Join(home, "repos/graph-ts/build/out.ts"), []byte("export function built() {}\n"), 0o644)
	os.WriteFile(filepath.Join(home, "repos/graph-ts/src/api.gen.ts"), []byte("export function generated() {}\n"), 0o644)
	os.MkdirAll(filepath.Join(home, "repos/graph-ts/node_modules/x"), 0o755)
	os.WriteFile(filepath.Join(home, "repos/graph-ts/node_modules/x/index.js"), []byte("function dep() {}\n"), 0o644)
	return home
}

// runGolden answers every golden scenario in home and compares (or, with write, rewrites) the goldens.
func runGolden(t *testing.T, home string, write bool) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, home, tc.tool, tc.args)
			golden := filepath.Join("testdata", "golden", tc.name+".txt")
			if write {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s %s:\n--- got\n%s--- want\n%s", tc.tool, tc.args, got, want)
			}
		})
	}
}

// TestRepositoryFromWorkingDirectory: without in, the repository holding the run's working directory is meant,
// and paths come back relative to that directory.
func TestRepositoryFromWorkingDirectory(t *testing.T) {
	home := graphtest.NewHome(t, "graph-go", "graph-py")
	cwd := filepath.Join(home, "repos", "graph-py", "app")
	if err := os.MkdirAll(filepath.Join(home, ".runs", "r1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".runs", "r1", "cwd"), []byte(cwd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := call(t, home, "code_callers", `{"symbol":"User.validate"}`)
	want := "references to User.validate  models.py:12-13  def validate(self)\n  models.py:9  User.save\nmeta: hits=1 repository=graph-py\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// With two repositories and a working directory outside both, the call must say which to pick.
	os.WriteFile(filepath.Join(home, ".runs", "r1", "cwd"), []byte(home+"\n"), 0o644)
	if got := call(t, home, "code_outline", `{"path":"repos/graph-go/util.go"}`); !strings.Contains(got, "4  func helper()") {
		t.Fatalf("outline by path: %s", got)
	}
}
