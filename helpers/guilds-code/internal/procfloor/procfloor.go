// Package procfloor builds the floor that whole-process benchmarks compare against: a static Go
// program that does nothing, so a figure can be read as start-up the runtime costs on this machine
// plus what the helper adds.
package procfloor

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// EmptyGo builds a static Go program whose main returns at once and gives its path; the
// benchmark skips with the reason when the Go toolchain cannot build it.
func EmptyGo(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module empty\n\ngo 1.22\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "empty")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Skipf("cannot build the empty Go program that is the start-up floor: %v\n%s", err, out)
	}
	return bin
}
