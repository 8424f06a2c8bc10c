package graph_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestResolveScenarios runs testdata/resolve/*.txtar: each holds a repository's files (repos/<prefix>), the tool calls
// in its comment (one "tool {args}" a line, after the description) and their answers in "want"; run
// with -update to rewrite "want".
func TestResolveScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "resolve", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in testdata/resolve: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			repo, _, _ := strings.Cut(filepath.Base(file), "_") // py_*.txtar in repos/py, ts_*.txtar in repos/ts
			wantAt := -1
			for i, f := range ar.Files {
				if f.Name == "want" {
					wantAt = i
					continue
				}
				p := filepath.Join(home, "repos", repo, filepath.FromSlash(f.Name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if wantAt < 0 {
				t.Fatalf("%s has no want section", file)
			}
			var got bytes.Buffer
			calls := 0
			for _, line := range strings.Split(string(ar.Comment), "\n") {
				tool, args, ok := strings.Cut(line, " ")
				if !ok || !strings.HasPrefix(tool, "code_") || !strings.HasPrefix(args, "{") {
					continue
				}
				calls++
				got.WriteString("> " + line + "\n" + call(t, home, tool, args))
			}
			if calls == 0 {
				t.Fatalf("%s names no tool call", file)
			}
			if *update {
				ar.Files[wantAt].Data = got.Bytes()
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := string(ar.Files[wantAt].Data); got.String() != want {
				t.Errorf("%s:\n--- got\n%s--- want\n%s", file, got.String(), want)
			}
		})
	}
}
