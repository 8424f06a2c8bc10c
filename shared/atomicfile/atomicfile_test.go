package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the writer process TestWriteFileKilled kills mid-write.
func TestMain(m *testing.M) {
	if path := os.Getenv("ATOMICFILE_TEST_WRITER"); path != "" {
		data := bytes.Repeat([]byte("new content line\n"), 8<<20/17)
		fmt.Println("ready")
		if err := WriteFile(path, data, 0o640); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFileModes: a new file gets the given mode, an existing one keeps its own.
func TestWriteFileModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.sh")
	for _, tc := range []struct {
		name      string
		chmod     os.FileMode // applied before the write, 0: none
		mode      os.FileMode
		want      os.FileMode
		wantBytes string
	}{
		{"new file", 0, 0o751, 0o751, "one\n"},
		{"existing keeps its mode", 0, 0o600, 0o751, "two\n"},
		{"a changed mode is kept", 0o444, 0o755, 0o444, "three\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.chmod != 0 {
				if err := os.Chmod(path, tc.chmod); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, []byte(tc.wantBytes), tc.mode); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if fi.Mode().Perm() != tc.want || string(got) != tc.wantBytes {
				t.Fatalf("mode %v content %q, want %v %q", fi.Mode().Perm(), got, tc.want, tc.wantBytes)
			}
		})
	}
	assertOnly(t, dir, "f.sh")
}

// TestWriteFileStaleTemps: a dead writer's temporary file is removed; a live writer's is kept.
func TestWriteFileStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.sh")
	mustWrite(t, path, "old\n")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, fmt.Sprintf(".f.sh.guilds-tmp-%d-1", dead.Process.Pid))
	live := filepath.Join(dir, fmt.Sprintf(".f.sh.guilds-tmp-%d-2", os.Getpid()))
	mustWrite(t, stale, "x")
	mustWrite(t, live, "x")
	if err := WriteFile(path, []byte("newer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("stale temporary file was kept")
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatal("a live writer's temporary file was removed")
	}
	os.Remove(live)
	assertOnly(t, dir, "f.sh")
}

// TestWriteFailures: a missing folder or a failing fill is an error naming the file that leaves
// the target as it was and no temporary file.
func TestWriteFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	mustWrite(t, path, "old")
	boom := errors.New("boom")
	for _, tc := range []struct {
		name, path string
		fill       func(io.Writer) error
	}{
		{"missing folder", filepath.Join(dir, "no", "x"), func(w io.Writer) error { return nil }},
		{"fill fails", path, func(w io.Writer) error { io.WriteString(w, "half"); return boom }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(tc.path, 0o644, tc.fill)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(tc.path)) && !strings.Contains(err.Error(), "temporary") {
				t.Fatalf("error %v", err)
			}
			if got, _ := os.ReadFile(path); string(got) != "old" {
				t.Fatalf("target changed to %q", got)
			}
			assertOnly(t, dir, "f")
		})
	}
}

// TestWriteStreams: Write takes the content from a fill that writes in pieces.
func TestWriteStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.bin")
	err := Write(path, 0o600, func(w io.Writer) error {
		for i := 0; i < 3; i++ {
			if _, err := fmt.Fprintf(w, "piece %d\n", i); err != nil {
				return err
			}
		}
		return nil
	})
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(got) != "piece 0\npiece 1\npiece 2\n" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %q %v", err, got, fi.Mode())
	}
}

// TestWriteFileKilled kills a writer of a large file at different moments: the target holds the
// old or the new content, never a mix, and no temporary file stays.
func TestWriteFileKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills writer processes; skipped in -short")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "big.txt")
	newContent := bytes.Repeat([]byte("new content line\n"), 8<<20/17)
	sawOld, sawNew := false, false
	for i, delay := range []time.Duration{0, 1, 2, 4, 6, 10, 15, 25, 40, 80} {
		mustWrite(t, path, "old\n")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "ATOMICFILE_TEST_WRITER="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case string(got) == "old\n":
			sawOld = true
		case bytes.Equal(got, newContent):
			sawNew = true
		default:
			t.Fatalf("kill %d after %v: target holds %d bytes, neither old nor new content", i, delay*time.Millisecond, len(got))
		}
		assertOnly(t, dir, "big.txt")
	}
	t.Logf("saw old content: %v, new content: %v", sawOld, sawNew)
}

// TestWriteNamedTemp covers the fallback for file systems without O_TMPFILE.
func TestWriteNamedTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	mustWrite(t, path, "old")
	put := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := writeNamedTemp(path, filepath.Join(dir, ".f.guilds-tmp-1-1"), 0o640, put("new")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "new" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("content %q mode %v", got, fi.Mode().Perm())
	}
	// A temporary name already taken is an error that leaves the target alone.
	mustWrite(t, filepath.Join(dir, ".f.guilds-tmp-1-2"), "other")
	if err := writeNamedTemp(path, filepath.Join(dir, ".f.guilds-tmp-1-2"), 0o644, put("x")); err == nil {
		t.Fatal("write through a taken temporary name succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Fatalf("target changed to %q", got)
	}
	os.Remove(filepath.Join(dir, ".f.guilds-tmp-1-2"))
	assertOnly(t, dir, "f")
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("%s holds %v, want only %v", dir, got, names)
	}
}
