package app

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// repoRoot is the checkout holding this module (tests run in the package folder).
var repoRoot, _ = filepath.Abs(filepath.Join("..", "..", "..", ".."))

func init() {
	// `go test` outside make: find the pinned engines the way make puts them on PATH. Not in
	// the copy of this binary that testscript runs as guilds-code: a scenario sets its own.
	if os.Getenv("GUILDS_TOOLS_DIR") == "" && filepath.Base(os.Args[0]) != "guilds-code" {
		if dir := filepath.Join(repoRoot, "tools", "node_modules", ".bin"); dirExists(dir) {
			os.Setenv("GUILDS_TOOLS_DIR", dir)
		}
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// cmdFixture: fixture NAME [DEST]
// Copies the shared fixture repository testdata/repos/NAME into $WORK/home/DEST (default NAME).
func cmdFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: fixture NAME [DEST]")
	}
	src := filepath.Join(repoRoot, "testdata", "repos", args[0])
	dest := args[0]
	if len(args) == 2 {
		dest = args[1]
	}
	dst := filepath.Join(ts.Getenv("GUILDS_HOME"), dest)
	ts.Check(filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	}))
}
