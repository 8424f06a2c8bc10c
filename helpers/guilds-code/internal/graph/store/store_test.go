package store

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
)

// TestEncodeDecodeRoundTrip stores a parsed repository and reads back the same files.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	home := graphtest.NewHome(t, "graph-poly")
	g, err := Open(context.Background(), filepath.Join(home, "repos", "graph-poly"), filepath.Join(home, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := decode(encode(g.Files, true))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(got), normalize(g.Files)) {
		t.Fatalf("round trip changed the graph")
	}
}

// normalize makes empty and nil slices compare equal.
func normalize(files []*graph.File) []graph.File {
	out := make([]graph.File, len(files))
	for i, f := range files {
		f.Syms()
		f.LoadRefs()
		f.Imps()
		c := *f
		c.Blocks = graph.Blocks{At: c.Blocks.At, Bloom: c.Blocks.Bloom}
		if len(c.Symbols) == 0 {
			c.Symbols = nil
		}
		for j := range c.Symbols {
			if len(c.Symbols[j].Locals) == 0 {
				c.Symbols[j].Locals = nil
			}
		}
		if len(c.Refs) == 0 {
			c.Refs = nil
		}
		if len(c.Imports) == 0 {
			c.Imports = nil
		}
		out[i] = c
	}
	return out
}

// TestCorruptCacheIsRebuilt replaces the graph file with garbage; the next call rebuilds it.
func TestCorruptCacheIsRebuilt(t *testing.T) {
	home := graphtest.NewHome(t, "graph-go")
	root, cache := filepath.Join(home, "repos", "graph-go"), filepath.Join(home, "cache")
	if _, err := Open(context.Background(), root, cache); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "graph.bin"), []byte("GRAFT\x00\x04\x01\xff\xff\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Open(context.Background(), root, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Files) != 5 || g.Changed != 5 {
		t.Fatalf("rebuild: %d files, %d parsed; want 5 and 5", len(g.Files), g.Changed)
	}
}

// TestConcurrentOpens runs many calls on one repository at once, with edits in between; the graph file stays readable.
func TestConcurrentOpens(t *testing.T) {
	home := graphtest.NewHome(t, "graph-go")
	root, cache := filepath.Join(home, "repos", "graph-go"), filepath.Join(home, "cache")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				src := []byte("package main\n\nfunc extra" + string(rune('A'+i)) + "() { helper() }\n")
				if err := os.WriteFile(filepath.Join(root, "extra.go"), src, 0o644); err != nil {
					errs <- err
					return
				}
			}
			g, err := Open(context.Background(), root, cache)
			if err != nil {
				errs <- err
				return
			}
			if len(g.Files) < 5 {
				errs <- os.ErrInvalid
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	buf, blocks, err := readGraph(filepath.Join(cache, "graph.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := decodeGraph(buf, blocks); err != nil {
		t.Fatalf("graph file after concurrent calls: %v", err)
	}
	if stores, _ := filepath.Glob(filepath.Join(cache, "blocks-*")); len(stores) != 1 {
		t.Fatalf("blocks files left: %v", stores)
	}
	left, _ := filepath.Glob(filepath.Join(cache, ".graph-*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

// TestBudgetRunsOut gives a build no time: the answer comes from what exists and says what is missing.
func TestBudgetRunsOut(t *testing.T) {
	home := graphtest.NewHome(t, "graph-go")
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	_, err := Open(ctx, filepath.Join(home, "repos", "graph-go"), filepath.Join(home, "cache"))
	if err == nil {
		t.Fatal("an expired budget before the walk must fail the call")
	}
	// A budget that runs out during parsing keeps the parsed files and counts the rest.
	root := filepath.Join(home, "repos", "graph-go")
	list, err := walk(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	parsed, missing, _, err := parseAll(ctx2, root, list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if missing != len(list) || len(parsed) != 0 {
		t.Fatalf("cancelled parse: %d parsed, %d missing; want 0 and %d", len(parsed), missing, len(list))
	}
	// That the answer reports the missing files is graphtools' TestBudgetRunsOut.
}

// FuzzDecode feeds arbitrary bytes to the graph decoder: it returns an error or files, never panics.
func FuzzDecode(f *testing.F) {
	home := graphtest.NewHome(f, "graph-go")
	g, err := Open(context.Background(), filepath.Join(home, "repos", "graph-go"), filepath.Join(home, "cache"))
	if err != nil {
		f.Fatal(err)
	}
	good := encode(g.Files, false)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(magic))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The lazy path a query takes: the table, then the name index and whichever blocks it touches.
		if files, _, names, err := decodeTable(b); err == nil {
			g := &graph.Graph{Files: files, Names: names}
			names.Each(func(n string) {
				for _, id := range g.Named(n) {
					_ = g.Sym(id).Sig
				}
			})
			for fi, f := range files {
				for ri := range f.LoadRefs() {
					g.Resolve(int32(fi), &f.Refs[ri])
				}
			}
		}
		files, counted, err := decode(b)
		if err != nil {
			return
		}
		// What decodes must survive another round trip unchanged.
		again, _, err := decode(encode(files, counted))
		if err != nil {
			t.Fatalf("re-encoded graph does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(files)) {
			t.Fatalf("decode/encode is not stable")
		}
	})
}

// TestIncrementalNameIndex edits, adds and deletes files between two opens: the name index carried
// over and merged answers every name exactly as one built from nothing does.
func TestIncrementalNameIndex(t *testing.T) {
	home := graphtest.NewHome(t, "graph-go", "graph-poly")
	for _, repo := range []string{"graph-go", "graph-poly"} {
		root, cache := filepath.Join(home, "repos", repo), filepath.Join(home, "cache-"+repo)
		if _, err := Open(context.Background(), root, cache); err != nil {
			t.Fatal(err)
		}
		var files []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && graph.LangFor(p) != nil {
				files = append(files, p)
			}
			return nil
		})
		if len(files) < 2 {
			t.Fatalf("%s: want at least two source files", repo)
		}
		later := time.Now().Add(time.Second)
		edited, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(files[0], append(edited, "\nfunc addedByEdit() {}\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(files[0], later, later)
		if err := os.Remove(files[len(files)-1]); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "aaa_new.go"), []byte("package main\n\nfunc helper() {}\nfunc brandNew() { helper() }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := Open(context.Background(), root, cache)
		if err != nil {
			t.Fatal(err)
		}
		full, _, fullNames, err := decodeTable(encode(g.Files, false))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]graph.SymID{}
		fullNames.Each(func(n string) { want[n] = fullNames.Lookup(n, full) })
		got := map[string][]graph.SymID{}
		g.names.Each(func(n string) { got[n] = g.names.Lookup(n, g.Files) })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: merged name index differs from a full one:\n got %v\nwant %v", repo, got, want)
		}
		if len(want["brandNew"]) != 1 || len(want["addedByEdit"]) != 1 {
			t.Fatalf("%s: new names missing from the index: %v", repo, want)
		}
	}
}

// TestDamagedIndexIsRebuilt: a name index that cannot be carried over (its entries damaged) is built
// again from every file's names at the next change, and answers stay right.
func TestDamagedIndexIsRebuilt(t *testing.T) {
	home := graphtest.NewHome(t, "graph-go")
	root := filepath.Join(home, "repos", "graph-go")
	cache := filepath.Join(home, "cache")
	if _, err := Open(context.Background(), root, cache); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cache, "graph.bin")
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, hdr, err := graphHeader(buf)
	if err != nil {
		t.Fatal(err)
	}
	_, indexAt, _, err := graphFooter(buf, hdr)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12; i++ {
		buf[int(indexAt)+i] = 0xff // a varint that never ends
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "util.go"), []byte("package main\n\nfunc helper() {}\n\nfunc afterDamage() { helper() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Open(context.Background(), root, cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"afterDamage", "helper", "Fact", "run"} {
		if ids := g.Named(name); len(ids) != 1 || g.Sym(ids[0]).Name != name {
			t.Fatalf("%s: %v", name, ids)
		}
	}
}
