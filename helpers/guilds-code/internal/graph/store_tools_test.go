package graph_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/store"
)

// TestAppendBlocks: a refresh that changed one file appends that file's blocks to the blocks file and
// rewrites only the table and the index; once dead blocks outweigh the live ones, a fresh blocks file
// replaces it and the old one is removed.
func TestAppendBlocks(t *testing.T) {
	home := graphtest.NewHome(t, "graph-go")
	root := filepath.Join(home, "repos", "graph-go")
	cache := filepath.Join(home, "cache")
	blocksFile := func() (string, int64) {
		t.Helper()
		list, _ := filepath.Glob(filepath.Join(cache, "blocks-*.bin"))
		if len(list) != 1 {
			t.Fatalf("blocks files: %v", list)
		}
		st, err := os.Stat(list[0])
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Base(list[0]), st.Size()
	}
	if _, err := store.Open(context.Background(), root, cache); err != nil {
		t.Fatal(err)
	}
	name0, size0 := blocksFile()
	edit := func(i int) *store.Graph {
		t.Helper()
		src := fmt.Sprintf("package main\n\n// helper is edit %d.\nfunc helper() { edited%d() }\n\nfunc edited%d() {}\n", i, i, i)
		if err := os.WriteFile(filepath.Join(root, "util.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := store.Open(context.Background(), root, cache)
		if err != nil {
			t.Fatal(err)
		}
		if g.Changed != 1 || len(g.Named(fmt.Sprintf("edited%d", i))) != 1 {
			t.Fatalf("edit %d: changed %d, edited%d defined %d times", i, g.Changed, i, len(g.Named(fmt.Sprintf("edited%d", i))))
		}
		return g
	}
	g := edit(1)
	name1, size1 := blocksFile()
	if name1 != name0 || size1 <= size0 || size1-size0 > 400 {
		t.Fatalf("one changed file: blocks %s %d bytes → %s %d bytes; want the same file grown by that file's blocks", name0, size0, name1, size1)
	}
	// The other files' blocks are read where they were.
	if s := g.Sym(g.Named("Fact")[0]); s.Sig != "func Fact(n int) int" {
		t.Fatalf("carried symbol reads %+v", s)
	}
	old := store.BlocksSlack
	store.BlocksSlack = 0
	defer func() { store.BlocksSlack = old }()
	for i := 2; ; i++ {
		edit(i)
		if name, _ := blocksFile(); name != name0 {
			break
		}
		if i > 50 {
			t.Fatal("dead blocks never compacted")
		}
	}
	if got := call(t, home, "code_callers", `{"symbol":"helper","in":"repos/graph-go"}`); !strings.Contains(got, "main.go") {
		t.Fatalf("after compaction: %s", got)
	}
}
