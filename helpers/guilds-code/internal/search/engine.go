// Package search runs the text and syntax searches behind code_search and code_match.
//
// The engines (a text search and a syntax search, found on PATH, in $GUILDS_TOOLS_DIR or
// beside the helper) are never named in a result or an error: their failures are translated
// into the tools' words. Their output is streamed and parsed line by line: files mode reads the
// engine's per-file counts (the cheapest full pass with true totals, and every count is needed
// to rank the files); content mode reads one pass of the plain output (paths ended by NUL) with
// byte operations, counting every matching line and copying only the lines of files that can
// still be among the first shown; code_match keeps one shaped line a match and sorts by path
// and line, so a result never depends on the engines' thread timing. .gitignore holds in any folder, git repository or not.
// A search stops at its budget (60 seconds for the tools) and says its result is partial.
package search

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// engine is a search program and how an operator installs it. Its name never reaches a
// result or an error of normal operation; only the install hint names the package.
type engine struct {
	bin     string // executable name looked up
	what    string // what the tool calls it: "text search", "syntax search"
	install string // operator's install step
}

var (
	textEngine   = engine{bin: "rg", what: "text search", install: "run `make setup` (Debian package ripgrep)"}
	syntaxEngine = engine{bin: "ast-grep", what: "syntax search", install: "run `make setup` (npm package @ast-grep/cli, pinned in tools/package.json)"}
)

// locate finds the engine on PATH, then in $GUILDS_TOOLS_DIR, then in
// <directory of the running executable>/../tools/node_modules/.bin.
func (e engine) locate() (string, error) {
	if p, err := exec.LookPath(e.bin); err == nil {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("GUILDS_TOOLS_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(exe), "..", "tools", "node_modules", ".bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, e.bin)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not installed in this sandbox: %s", e.what, e.install)
}
