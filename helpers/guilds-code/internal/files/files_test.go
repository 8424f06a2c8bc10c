package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
)

// newCall builds a call of tool with args in a fresh workspace.
func newCall(t testing.TB, home, tool string, seq int64, args any) *runs.Call {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return &runs.Call{
		Req:  envelope.Request{Tool: tool, Args: raw, RunID: "r1", CallID: fmt.Sprintf("c%d", seq), Seq: seq},
		Home: home, RunDir: filepath.Join(filepath.Dir(home), "run"), Max: 8192,
	}
}

func workspace(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestIsBinary(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want bool
	}{
		{"empty", "", false},
		{"text", "package main\n\nfunc main() {}\n", false},
		{"utf-8", "héllo wörld — ☃\n", false},
		{"tabs CRLF escapes", "a\tb\r\n\x1b[1mbold\x1b[0m\f\n", false},
		{"NUL", "abc\x00def", true},
		{"PNG header", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", true},
		{"control heavy", strings.Repeat("\x01\x02\x03a", 50), true},
		{"NUL after the sniff window", strings.Repeat("a", binarySniff) + "\x00", false},
	} {
		if got := isBinary([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: isBinary = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScanRender(t *testing.T) {
	long := strings.Repeat("é", 450)
	for _, tc := range []struct {
		name          string
		content       string
		offset, limit int
		max           int
		want          string
		last          int
	}{
		{"whole", "a\nb\n", 1, 200, 8192, "f · lines 1–2 of 2\n1\ta\n2\tb", 2},
		{"no final newline", "a\nb", 1, 200, 8192, "f · lines 1–2 of 2\n1\ta\n2\tb", 2},
		{"CRLF", "a\r\nb\r\n", 1, 200, 8192, "f · lines 1–2 of 2\n1\ta\n2\tb", 2},
		{"limit", "a\nb\nc\n", 2, 1, 8192, "f · lines 2–2 of 3\n2\tb\n… 1 more line: continue with offset 3", 2},
		{"width", strings.Repeat("x\n", 12), 9, 3, 8192, "f · lines 9–11 of 12\n 9\tx\n10\tx\n11\tx\n… 1 more line: continue with offset 12", 11},
		{"clip", long + "\n", 1, 200, 8192, "f · lines 1–1 of 1\n1\t" + strings.Repeat("é", 400) + "… [50 more characters]", 1},
		{"cap", strings.Repeat("0123456789\n", 100), 1, 200, 600, "", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scan(strings.NewReader(tc.content), int64(len(tc.content)), tc.offset, tc.offset+tc.limit-1)
			if err != nil {
				t.Fatal(err)
			}
			if sc.hash != hashHex([]byte(tc.content)) {
				t.Fatal("hash is not the SHA-256 of the whole file")
			}
			if sc.total != countLines(tc.content) {
				t.Fatalf("total %d, want %d", sc.total, countLines(tc.content))
			}
			got, last := render("f", sc, tc.offset, tc.max)
			if tc.last < 0 { // the cap case: fits, stops at a line, names the continuing offset
				if len(got) > tc.max || !strings.HasSuffix(got, fmt.Sprintf("continue with offset %d", last+1)) || last >= 100 {
					t.Fatalf("capped read (%d bytes, last %d):\n%s", len(got), last, got)
				}
				if !strings.Contains(got, fmt.Sprintf("lines 1–%d of 100", last)) {
					t.Fatalf("header does not match the range:\n%s", got)
				}
				return
			}
			if got != tc.want || last != tc.last {
				t.Fatalf("render = %q, %d\nwant     %q, %d", got, last, tc.want, tc.last)
			}
		})
	}
}

// TestReadCapAlwaysFits: whatever the cap and line lengths, the text fits and names a next offset.
func TestReadCapAlwaysFits(t *testing.T) {
	home := workspace(t)
	var b strings.Builder
	for i := 0; i < 500; i++ {
		b.WriteString(strings.Repeat("ab ☃", i%150) + "\n")
	}
	if err := os.WriteFile(filepath.Join(home, "f.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, max := range []int{512, 700, 1000, 4096, 8192, 65536} {
		for _, offset := range []int{1, 77, 499} {
			c := newCall(t, home, "file_read", int64(max+offset), map[string]any{"path": "f.txt", "offset": offset, "limit": 500})
			c.Max = max
			c.Req.RunID = fmt.Sprintf("cap%d-%d", max, offset) // a fresh run: no repeats
			r := Read(context.Background(), c)
			if r.Failed() || len(r.Text) > max {
				t.Fatalf("max %d offset %d: %d bytes, error %q", max, offset, len(r.Text), r.Error)
			}
			var from, to int
			fmt.Sscanf(r.Meta["range"].(string), "%d-%d", &from, &to)
			if from != offset || to < from {
				t.Fatalf("max %d offset %d: range %v", max, offset, r.Meta["range"])
			}
			if to < 500 && !strings.Contains(r.Text, fmt.Sprintf("continue with offset %d", to+1)) {
				t.Fatalf("max %d offset %d: stops at %d without naming offset %d:\n%s", max, offset, to, to+1, r.Text)
			}
		}
	}
}

func TestLineChanges(t *testing.T) {
	for _, tc := range []struct {
		old, new   string
		add, remov int
	}{
		{"", "", 0, 0},
		{"", "a\nb\n", 2, 0},
		{"a\nb\n", "", 0, 2},
		{"a\nb\nc\n", "a\nB\nc\n", 1, 1},
		{"a\nb\nc\n", "a\nb\nx\ny\nc\n", 2, 0},
		{"a\nb\nc\nd\n", "b\nc\nd\ne\n", 1, 1},
		{"a\nb", "a\nb\n", 1, 1}, // the last line gained its newline
		{"x\ny\nx\ny\n", "y\nx\ny\nx\n", 1, 1},
		{strings.Repeat("same\n", 1000) + "old\n", strings.Repeat("same\n", 1000) + "new\n", 1, 1},
	} {
		add, rem := lineChanges(tc.old, tc.new)
		if add != tc.add || rem != tc.remov {
			t.Errorf("lineChanges(%q, %q) = +%d −%d, want +%d −%d", trim(tc.old), trim(tc.new), add, rem, tc.add, tc.remov)
		}
	}
}

func trim(s string) string { return s[:min(len(s), 40)] }

func TestNearMatches(t *testing.T) {
	content := "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 2\n}\n"
	for _, tc := range []struct{ old, want string }{
		{"func a() {\n    return 1\n}", "matches ignoring whitespace and indentation at line 1"},
		{"return  2", "matches ignoring whitespace and indentation at line 6"},
		{"func a() {\r\n\treturn 1", "CRLF"},
		{"1\tfunc a() {\n2\t\treturn 1", "without them it occurs at line 1"},
		{"  5: func b() {\n  6: \treturn 2", "without them it occurs at line 5"},
		{"5→func b() {\n6→    return 2", "without them it matches only ignoring whitespace, at line 5"},
		{"func b() {\n\treturn 3\n}", "its first line occurs at line 5"},
		{"func c()", "no near match"},
		{"   ", "no near match"},
	} {
		if got := nearMatches(content, tc.old); !strings.Contains(got, tc.want) {
			t.Errorf("nearMatches(%q) = %q, want it to say %q", tc.old, got, tc.want)
		}
	}
}

func TestEditCRLFAndModes(t *testing.T) {
	home := workspace(t)
	path := filepath.Join(home, "w.bat")
	if err := os.WriteFile(path, []byte("@echo off\r\necho one\r\necho two\r\n"), 0o751); err != nil {
		t.Fatal(err)
	}
	r := Edit(context.Background(), newCall(t, home, "file_edit", 1, map[string]any{"path": "w.bat", "old_string": "echo one\necho two", "new_string": "echo 1\necho 2\necho 3"}))
	if r.Failed() || r.Text != "edited w.bat (+3 −2)" {
		t.Fatalf("edit: %+v", r)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "@echo off\r\necho 1\r\necho 2\r\necho 3\r\n" {
		t.Fatalf("line endings not kept: %q", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode %v, want 0751", fi.Mode().Perm())
	}
	if r.Meta["content_hash"] != hashHex(got) {
		t.Fatal("content_hash is not the hash of the new file")
	}
}

// TestConcurrentEdits: edits of one file from many goroutines all apply (the lock serializes
// each read-modify-write), and writes of other files proceed.
func TestConcurrentEdits(t *testing.T) {
	home := workspace(t)
	const n = 24
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "slot %02d: empty\n", i)
	}
	path := filepath.Join(home, "shared.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := map[string]any{"path": "shared.txt", "old_string": fmt.Sprintf("slot %02d: empty", i), "new_string": fmt.Sprintf("slot %02d: filled by %d", i, i)}
			if r := Edit(context.Background(), newCall(t, home, "file_edit", int64(i), args)); r.Failed() {
				errs <- r.Error
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	got, _ := os.ReadFile(path)
	for i := 0; i < n; i++ {
		if !strings.Contains(string(got), fmt.Sprintf("slot %02d: filled by %d\n", i, i)) {
			t.Fatalf("edit %d was lost:\n%s", i, got)
		}
	}
	assertNoTemps(t, home)
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.Contains(d.Name(), ".guilds-tmp-") || strings.HasSuffix(d.Name(), ".lock")) {
			t.Errorf("left behind in the workspace: %s", p)
		}
		return nil
	})
}

// TestRenderHugeFirstLine: under the smallest cap a clipped line of wide characters is cut,
// marked, and the read still names the next offset.
func TestRenderHugeFirstLine(t *testing.T) {
	content := strings.Repeat("😀", 450) + "\nnext\n"
	sc, err := scan(strings.NewReader(content), 0, 1, 200)
	if err != nil {
		t.Fatal(err)
	}
	got, last := render("f", sc, 1, 512)
	if len(got) > 512 || last != 1 || !strings.Contains(got, "… [line cut at the byte cap]") || !strings.HasSuffix(got, "continue with offset 2") {
		t.Fatalf("render under a 512-byte cap (%d bytes, last %d):\n%s", len(got), last, got)
	}
}
