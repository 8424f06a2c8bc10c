//go:build cgo

package graph_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
)

// TestLanguageGaps pins the symbols and call sites that need more than one pattern per construct: a Rust impl
// block listed as itself with its methods under it, a C++ method declared in its class and defined below it
// as one symbol (and a declaration in a header gives way to the definition), and Ruby calls with neither parentheses nor arguments (a bare name that is not a variable
// of its scope, a receiver call).
func TestLanguageGaps(t *testing.T) {
	home := graphtest.NewHome(t, "graph-poly")
	cases := []struct{ name, tool, args string }{
		{"gap_rust_impl_callers", "code_callers", `{"symbol":"Square.area","in":"repos/graph-poly"}`},
		{"gap_cpp_one_inc", "code_callers", `{"symbol":"Counter.inc","in":"repos/graph-poly"}`},
		{"gap_cpp_find_inc", "code_find", `{"question":"inc","in":"repos/graph-poly/counter.cpp"}`},
		{"gap_cpp_header_set", "code_callers", `{"symbol":"Gauge.set","in":"repos/graph-poly"}`},
		{"gap_cpp_header_outline", "code_outline", `{"path":"repos/graph-poly/gauge.hpp"}`},
		{"gap_ruby_bare_call", "code_callers", `{"symbol":"audit","in":"repos/graph-poly"}`},
		{"gap_ruby_receiver_no_parens", "code_callers", `{"symbol":"Account.entries","in":"repos/graph-poly"}`},
		{"gap_ruby_out", "code_callers", `{"symbol":"audit","direction":"out","in":"repos/graph-poly"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, home, tc.tool, tc.args)
			golden := filepath.Join("testdata", "golden", tc.name+".txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("%s %s:\n--- got\n%s--- want\n%s", tc.tool, tc.args, got, want)
			}
		})
	}
}
