package shell

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseID checks that an id the model sends is accepted exactly when it reads back the same.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"b1", "b0", "b01", "b999999999", "b1234567890", "x", "", "b-1", "b1\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseID(s)
		if ok != (n > 0 && "b"+strconv.Itoa(n) == s) {
			t.Fatalf("parseID(%q) = %d, %v", s, n, ok)
		}
	})
}

// FuzzParseRemote feeds arbitrary git config text (workspace content) to the remote parser:
// it must not panic, and a repository it names is one owner/name pair on a named host.
func FuzzParseRemote(f *testing.F) {
	f.Add("[remote \"origin\"]\n\turl = https://github.com/a/b.git\n")
	f.Add("[remote \"up\"]\nurl=git@github.com:a/b\n[remote \"origin\"]\nurl = ssh://git@h/x/y\n")
	f.Add("[core]\nurl = x\n[remote]\nurl=\"https://h/o/n\"\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, config string) {
		p := filepath.Join(dir, "config")
		if err := os.WriteFile(p, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		host, repo := parseRemote(p)
		if repo == "" {
			return
		}
		if host == "" || strings.Count(repo, "/") != 1 || strings.HasSuffix(repo, ".git") || strings.HasPrefix(repo, "/") || strings.HasSuffix(repo, "/") {
			t.Fatalf("parseRemote(%q) = %q, %q", config, host, repo)
		}
	})
}
