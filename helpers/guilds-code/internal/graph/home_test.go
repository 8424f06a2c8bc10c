package graph

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// fixtures is the shared folder of fixture repositories.
const fixtures = "../../../../testdata/repos"

// newHome copies the named fixture repositories into a fresh workspace and returns it.
func newHome(t testing.TB, names ...string) string {
	t.Helper()
	home := t.TempDir()
	for _, n := range names {
		copyTree(t, filepath.Join(fixtures, n), filepath.Join(home, "repos", n))
	}
	return home
}

func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
