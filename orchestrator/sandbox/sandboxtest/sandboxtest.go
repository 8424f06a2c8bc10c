// Package sandboxtest gives tests sandbox folders that the sandboxes' users can reach.
package sandboxtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Root returns a fresh folder for a bubblewrap provider's Root: the test's temporary folder, with
// every folder above it that the test made searchable (not listable) by others, as an agent's
// host uid needs to reach its own folder.
func Root(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}
