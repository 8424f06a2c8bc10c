//go:build cgo

package extract

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
)

// FuzzExtract feeds arbitrary source text to every language's extraction: it must not panic, what it
// returns must hold together (spans in order, parents before children, call sites inside the file), and
// the patterns compiled for gx_match_at must find what tree-sitter's query cursor finds.
func FuzzExtract(f *testing.F) {
	seeds := []string{
		"package p\n\n// F does.\nfunc F(a *T) { a.M(); G() }\ntype T struct{ x int }\n",
		"class A:\n    \"\"\"Doc.\"\"\"\n    def m(self):\n        self.n()\n",
		"/** Doc */\nexport function f() { g(); }\nclass C { m() { this.n(); } }\n",
		"/// Doc\nimpl Shape for Square { fn area(&self) -> f64 { self.s } }\n",
		"class A { void m(); };\nvoid A::m() { n(); }\n",
		"class A\n  def m(a)\n    x = 1\n    x\n    foo\n    obj.bar\n  end\nend\n",
		"def f():\n    '''unterminated",
		"#[derive(Debug)]\n/* c */ struct S;",
		"",
	}
	for i, s := range seeds {
		f.Add(byte(i), s)
	}
	// Every fixture file, in its own language.
	filepath.WalkDir(fixtures, func(p string, d os.DirEntry, err error) error {
		if l := graph.LangFor(p); err == nil && !d.IsDir() && l != nil {
			if src, err := os.ReadFile(p); err == nil {
				f.Add(byte(slices.Index(langs, l)), string(src))
			}
		}
		return nil
	})
	x, q := New(), New()
	defer x.Close()
	defer q.Close()
	q.useQueryCursor()
	f.Fuzz(func(t *testing.T, which byte, src string) {
		l := langs[int(which)%len(langs)]
		file, want := &graph.File{Path: "x", Lang: l.Name}, &graph.File{Path: "x", Lang: l.Name}
		if err := x.Extract(context.Background(), l, []byte(src), file); err != nil {
			t.Fatalf("%s: %v", l.Name, err)
		}
		if err := q.Extract(context.Background(), l, []byte(src), want); err != nil {
			t.Fatalf("%s with the query cursor: %v", l.Name, err)
		}
		if !reflect.DeepEqual(file, want) {
			t.Fatalf("%s: gx_match_at found\n%+v\n%+v\n%+v\nthe query cursor\n%+v\n%+v\n%+v", l.Name, file.Symbols, file.Refs, file.Imports, want.Symbols, want.Refs, want.Imports)
		}
		lines := uint32(1)
		for _, c := range []byte(src) {
			if c == '\n' {
				lines++
			}
		}
		for i, s := range file.Symbols {
			if s.Start < 1 || s.End < s.Start || s.End > lines {
				t.Fatalf("%s: symbol %q spans %d-%d in %d lines", l.Name, s.Name, s.Start, s.End, lines)
			}
			if s.Parent >= int32(i) || s.Parent < -1 {
				t.Fatalf("%s: symbol %d has parent %d", l.Name, i, s.Parent)
			}
		}
		for _, r := range file.Refs {
			if r.Line < 1 || r.Line > lines || r.From >= int32(len(file.Symbols)) || r.From < -1 {
				t.Fatalf("%s: call %q at line %d from %d", l.Name, r.Name, r.Line, r.From)
			}
		}
	})
}

// TestRootedRunsMatchWholeQuery checks that matching only at the node types the query's patterns start at
// finds what one query run over the whole tree finds, on every fixture file and on Go's own sources: with
// the patterns compiled for gx_match_at (what ships), and with the query cursor at roots found by reading
// the tree's layout (gx_walk) or with a tree cursor.
func TestRootedRunsMatchWholeQuery(t *testing.T) {
	var paths []string
	// Besides the fixtures and Go's parser, the C, JavaScript and shell in Go's tree, and the Python and
	// JavaScript found on the machine (make setup installs both).
	roots := []string{fixtures, filepath.Join(runtime.GOROOT(), "src", "go"), filepath.Join(runtime.GOROOT(), "src", "runtime", "cgo"),
		filepath.Join(runtime.GOROOT(), "misc"), filepath.Join(runtime.GOROOT(), "lib"), filepath.Join(runtime.GOROOT(), "src", "cmd", "dist")}
	for _, pattern := range []string{"/usr/lib/python3*/email", "/usr/lib/python3*/json", "../../../../../tools/node_modules/playwright-core/lib/server/chromium"} {
		more, _ := filepath.Glob(pattern)
		roots = append(roots, more...)
	}
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && graph.LangFor(p) != nil {
				paths = append(paths, p)
			}
			return nil
		})
	}
	if len(paths) < 50 {
		t.Fatalf("only %d files to compare", len(paths))
	}
	rooted, query, cursor, whole := New(), New(), New(), New()
	defer rooted.Close()
	defer query.Close()
	defer cursor.Close()
	defer whole.Close()
	query.useQueryCursor()
	cursor.useCursorWalk()
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		l := graph.LangFor(p)
		pl, err := whole.plan(l)
		if err != nil {
			t.Fatal(err)
		}
		pl.roots = nil
		if rp, err := rooted.plan(l); err != nil || rp.roots == nil {
			t.Fatalf("the %s query has no pattern roots (%v)", l.Name, err)
		} else if rp.pats == nil {
			t.Fatalf("the %s query does not compile for gx_match_at: %v", l.Name, rp.patsErr)
		}
		a, b, c, d := &graph.File{Path: p}, &graph.File{Path: p}, &graph.File{Path: p}, &graph.File{Path: p}
		if err := rooted.Extract(context.Background(), l, src, a); err != nil {
			t.Fatal(err)
		}
		if err := query.Extract(context.Background(), l, src, d); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, d) {
			t.Fatalf("%s: gx_match_at found\n%+v\n%+v\n%+v\nthe query cursor\n%+v\n%+v\n%+v", p, a.Symbols, a.Refs, a.Imports, d.Symbols, d.Refs, d.Imports)
		}
		if err := cursor.Extract(context.Background(), l, src, c); err != nil {
			t.Fatal(err)
		}
		if err := whole.Extract(context.Background(), l, src, b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a.Symbols, b.Symbols) || !reflect.DeepEqual(a.Refs, b.Refs) || !reflect.DeepEqual(a.Imports, b.Imports) || a.Pkg != b.Pkg {
			t.Fatalf("%s: rooted runs found\n%+v\n%+v\nthe whole query\n%+v\n%+v", p, a.Symbols, a.Refs, b.Symbols, b.Refs)
		}
		if !reflect.DeepEqual(a, c) {
			t.Fatalf("%s: the layout walk found\n%+v\n%+v\nthe tree cursor walk\n%+v\n%+v", p, a.Symbols, a.Refs, c.Symbols, c.Refs)
		}
	}
	for _, l := range langs {
		if p, err := rooted.plan(l); err != nil || p.pats == nil {
			t.Errorf("the %s query does not compile for gx_match_at: %v %v", l.Name, err, p.patsErr)
		}
	}
	if n := rooted.layoutWalks(); n != uint64(len(paths)) {
		t.Fatalf("the tree layout check passed for %d of %d files: the go-tree-sitter version is not the one gx_walk reads", n, len(paths))
	}
	if n := cursor.layoutWalks(); n != 0 {
		t.Fatalf("the cursor-walk extractor read the layout for %d files", n)
	}
}
