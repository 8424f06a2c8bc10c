package shell

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestBoundedLog writes outputs of many sizes in chunks of many sizes through a log bounded at
// 1 KiB halves: what fits is kept whole with no marker; what does not keeps its first and last
// 1 KiB (cut on UTF-8 boundaries) around a marker with the exact elided count.
func TestBoundedLog(t *testing.T) {
	t.Parallel()
	const half = 1 << 10
	for _, c := range []struct {
		name  string
		total int
		chunk int
		text  string
	}{
		{"empty", 0, 1, "a"},
		{"fits", 2 * half, 7, "abcdefghij"},
		{"just over", 2*half + 1, 100, "0123456789"},
		{"much over", 50 * half, 333, "line of text\n"},
		{"one big write", 9 * half, 9 * half, "xyz"},
		{"multibyte", 40 * half, 61, "héllo wörld ✓ "},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := strings.Repeat(c.text, c.total/len(c.text)+1)[:c.total]
			f, err := os.OpenFile(filepath.Join(t.TempDir(), "log"), os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b := newBoundedLog(f, half)
			for i := 0; i < len(want); i += c.chunk {
				if _, err := b.Write([]byte(want[i:min(len(want), i+c.chunk)])); err != nil {
					t.Fatal(err)
				}
				if st, _ := f.Stat(); st.Size() > 3*half+200 {
					t.Fatalf("the running log grew to %d bytes", st.Size())
				}
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(f.Name())
			if len(want) <= 2*half {
				if string(got) != want {
					t.Fatalf("a log that fits changed: %d bytes, want %d", len(got), len(want))
				}
				return
			}
			head, rest, ok := strings.Cut(string(got), "\n… [")
			if !ok {
				t.Fatalf("no marker in %q", got)
			}
			countText, tail, ok := strings.Cut(rest, " bytes elided: a shell log keeps the first and last 1 KiB of a command's output]\n")
			if !ok {
				t.Fatalf("marker malformed: %.200q", rest)
			}
			var elided int
			fmt.Sscan(countText, &elided)
			if len(head) > half || len(head) < half-utf8.UTFMax || len(tail) > half || len(tail) < half-utf8.UTFMax {
				t.Fatalf("head %d and tail %d bytes, want about %d each", len(head), len(tail), half)
			}
			if !strings.HasPrefix(want, head) || !strings.HasSuffix(want, tail) || len(head)+elided+len(tail) != len(want) {
				t.Fatalf("head %d + elided %d + tail %d != %d, or head/tail not the output's", len(head), elided, len(tail), len(want))
			}
			if !utf8.ValidString(head) || !utf8.ValidString(tail) {
				t.Fatal("a cut split a character")
			}
			if bytes.Count(got, []byte("elided")) != 1 {
				t.Fatal("more than one marker")
			}
		})
	}
}

// TestShellLogBound: a command writing 100 MiB (more than three halves, so the tail is cut while the
// command runs and again at its end) leaves a log of its first and last 32 MiB with the elided count
// between, in the foreground and in the background (whose end line follows the log).
func TestShellLogBound(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 200 MiB of output")
	}
	cmd := `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 104857600`
	for _, background := range []bool{false, true} {
		t.Run(fmt.Sprintf("background %v", background), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			r := e.call("shell", fmt.Sprintf(`{"command":%q,"background":%v,"timeout_seconds":600}`, cmd, background))
			path, _ := r.Meta["log_path"].(string)
			if background {
				id, _ := r.Meta["background_id"].(string)
				for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
					if r = e.call("shell_status", `{"id":"`+id+`"}`); strings.HasPrefix(fmt.Sprint(r.Meta["state"]), "exited") {
						break
					}
				}
				if !strings.HasPrefix(fmt.Sprint(r.Meta["state"]), "exited") {
					t.Fatalf("the background command did not end: %.300s", r.Text)
				}
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatalf("log %q: %v (%s)", path, err, r.Text)
			}
			if st.Size() > 2*LogHalf+4096 || st.Size() < 2*LogHalf-64 {
				t.Fatalf("the log is %d bytes, want about 64 MiB", st.Size())
			}
			f, _ := os.Open(path)
			mid := make([]byte, 256)
			_, _ = f.ReadAt(mid, LogHalf-64)
			f.Close()
			if !bytes.Contains(mid, []byte(" bytes elided: a shell log keeps the first and last 32 MiB")) {
				t.Fatalf("no marker after the head: %q", mid)
			}
		})
	}
}
