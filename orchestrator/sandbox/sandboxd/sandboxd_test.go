package sandboxd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "plain"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)
	for _, tc := range []struct {
		name, path, want, err string
	}{
		{"tool", "/nonexistent:" + dir, filepath.Join(dir, "tool"), ""},
		{"/abs/path", "", "/abs/path", ""}, // a path is left to exec, which names what is wrong
		{"plain", dir, "", "executable file not found"},
		{"folder", dir, "", "executable file not found"},
		{"tool", "", "", "executable file not found"},
	} {
		got, err := lookPath(tc.name, []string{"HOME=/x", "PATH=" + tc.path})
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("lookPath(%q, PATH=%q) = %q, %v; want %q, %q", tc.name, tc.path, got, err, tc.want, tc.err)
		}
	}
}

func TestParseRights(t *testing.T) {
	var fds []int
	for i := 0; i < Fds+1; i++ {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fds = append(fds, int(f.Fd()))
	}
	// Parsing takes ownership of the descriptors it returns, as received ones would be: hand it dups.
	dups := func(n int) []int {
		var out []int
		for _, fd := range fds[:n] {
			d, err := syscall.Dup(fd)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
		return out
	}
	files, err := parseRights(syscall.UnixRights(dups(Fds)...))
	if err != nil || len(files) != Fds {
		t.Fatalf("%d descriptors: %v %v", Fds, files, err)
	}
	closeAll(files)
	for _, n := range []int{0, 1, Fds + 1} {
		files, err := parseRights(syscall.UnixRights(dups(n)...))
		closeAll(files)
		if err == nil || !strings.Contains(err.Error(), "descriptors") {
			t.Errorf("%d descriptors: %v", n, err)
		}
	}
	if _, err := parseRights([]byte{1, 2, 3}); err == nil {
		t.Error("a garbled control message parsed")
	}
}
