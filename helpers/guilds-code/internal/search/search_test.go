package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
)

// repoRoot is the checkout holding this module (tests run in the package folder).
var repoRoot, _ = filepath.Abs(filepath.Join("..", "..", "..", ".."))

func TestMain(m *testing.M) {
	// `go test` outside make: find the pinned engines where make puts them.
	if os.Getenv("GUILDS_TOOLS_DIR") == "" {
		os.Setenv("GUILDS_TOOLS_DIR", filepath.Join(repoRoot, "tools", "node_modules", ".bin"))
	}
	os.Exit(m.Run())
}

// newCall is a call whose workspace is a fresh temporary folder.
func newCall(t *testing.T) *runs.Call {
	t.Helper()
	home := t.TempDir()
	return &runs.Call{
		Req:  envelope.Request{Tool: "code_search", RunID: "r1", CallID: "c1", Seq: 1},
		Home: home, RunDir: t.TempDir(), Max: 8192,
	}
}

// children lists the processes whose parent is this test process.
func children(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	me := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == me {
			out = append(out, s[:i+1])
		}
	}
	return out
}

// TestBudget stops a search that cannot finish (the engine blocks reading a named pipe)
// when its budget runs out, says so, and leaves no engine process behind.
func TestBudget(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, c *runs.Call, budget time.Duration) envelope.Reply
		want string
	}{
		{"files", func(t *testing.T, ctx context.Context, c *runs.Call, b time.Duration) envelope.Reply {
			return Text(ctx, c, TextArgs{Pattern: "x", Path: "slow.go"}, b)
		}, "no matches found before the search stopped\nthe search stopped after 300ms; results are partial: narrow path or glob\n"},
		{"content", func(t *testing.T, ctx context.Context, c *runs.Call, b time.Duration) envelope.Reply {
			return Text(ctx, c, TextArgs{Pattern: "x", Path: "slow.go", Mode: "content"}, b)
		}, "no matches found before the search stopped\nthe search stopped after 300ms; results are partial: narrow path or glob\n"},
		{"match", func(t *testing.T, ctx context.Context, c *runs.Call, b time.Duration) envelope.Reply {
			// The syntax engine skips a named pipe; a tree it needs seconds to parse stands in.
			dir := filepath.Join(c.Home, "big")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			body := "package big\n\n" + strings.Repeat("func f() int { x := 1; if x > 0 { return x + 2 }; return 0 }\n", 300)
			for i := range 2000 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.go", i)), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			return Match(ctx, c, MatchArgs{Pattern: "panic($X)", Path: "big"}, b)
		}, "no structural matches found before the search stopped\nthe search stopped after 300ms; results are partial: narrow path or lang\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCall(t)
			if err := syscall.Mkfifo(filepath.Join(c.Home, "slow.go"), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := tt.run(t, context.Background(), c, 300*time.Millisecond)
			// The text below says the budget stopped the search; this bound only turns a hang (on
			// the named pipe, or parsing the big tree to its end) into a failure.
			if took := time.Since(start); took > time.Minute {
				t.Errorf("search took %v with a 300ms budget", took)
			}
			if r.Error != "" || r.Text != tt.want {
				t.Errorf("reply %+v, want text %q", r, tt.want)
			}
			if kids := children(t); len(kids) > 0 {
				t.Errorf("processes left behind: %v", kids)
			}
		})
	}
}

// TestLanguageExamples checks that the example each language's parse error shows does parse.
func TestLanguageExamples(t *testing.T) {
	bin, err := syntaxEngine.locate()
	if err != nil {
		t.Fatal(err)
	}
	c := newCall(t)
	for _, l := range languages {
		s := &syntaxSearch{pl: place{dir: c.Home}, bin: bin, lang: l, known: true, budget: time.Minute}
		root, broken, err := s.parse(context.Background(), l.example)
		if err != nil || broken || root == "" {
			t.Errorf("%s example %q: root %q, broken %v, error %v", l.name, l.example, root, broken, err)
		}
	}
}

// TestEngineNotFound names the install step when no engine is anywhere it is looked for.
func TestEngineNotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GUILDS_TOOLS_DIR", t.TempDir())
	for _, e := range []engine{textEngine, syntaxEngine} {
		_, err := e.locate()
		if err == nil || !strings.Contains(err.Error(), e.what+" is not installed in this sandbox: run `make setup`") {
			t.Errorf("%s: %v", e.bin, err)
		}
	}
}

// TestDisplay renders engine paths relative to the working directory, else absolute.
func TestDisplay(t *testing.T) {
	pl := place{dir: "/home/agent/repo"}
	for raw, want := range map[string]string{
		"./a.go":                     "a.go",
		"src/../b.go":                "b.go",
		"/home/agent/repo/c/d.go":    "c/d.go",
		"/home/agent/other/e.go":     "/home/agent/other/e.go",
		"/home/agent/repository/f.c": "/home/agent/repository/f.c",
		"bad\xffname":                "bad\uFFFDname",
	} {
		if got := pl.display(raw); got != want {
			t.Errorf("display(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestContentManyFiles: with far more matching files than content mode shows, the first files
// by path fill the lines (whatever order the engine finds them in) and the totals count all.
func TestContentManyFiles(t *testing.T) {
	c := newCall(t)
	for i := range 300 {
		dir := filepath.Join(c.Home, fmt.Sprintf("d%d", i%7))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("one needle\nnothing\ntwo needle %d\n", i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Text(context.Background(), c, TextArgs{Pattern: "needle", Mode: "content"}, time.Minute)
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	var want []string
	for i := 0; len(want) < ContentLineCap; i += 7 { // d0 holds f000, f007, f014, …
		want = append(want, fmt.Sprintf("d0/f%03d.txt:1: one needle", i), fmt.Sprintf("d0/f%03d.txt:3: two needle %d", i, i))
	}
	want = append(want, "600 matches in 300 files; showing 40 matches from 20 files (files by path, at most 10 matches per file, 40 lines); narrow with path or glob to see the rest")
	if got := strings.Split(strings.TrimSuffix(r.Text, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Meta["matches"] != 600 || r.Meta["files"] != 300 {
		t.Errorf("meta %v", r.Meta)
	}
}

// TestContentEdges reads the engine's plain output where it is easy to misread: ':' and '-' in
// file names, a newline in a name, CRLF lines, invalid UTF-8, a trailing space, context lines,
// and a binary file searched by name (named, and its matching lines still counted).
func TestContentEdges(t *testing.T) {
	c := newCall(t)
	for name, body := range map[string]string{
		"c:1:d.txt":  "needle colon\n",
		"e-2-f.txt":  "needle dash\n",
		"crlf.txt":   "needle one\r\nmid\r\nneedle two\r\n",
		"inv.txt":    "bad \xff\xfe needle\n",
		"sp.txt":     "needle \n",
		"n\nl.txt":   "x\nneedle in a newline name\n",
		"bin/z.bin":  "needle\x00\nneedle\nneedle\n",
		"none/x.txt": "nothing\n",
	} {
		p := filepath.Join(c.Home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args TextArgs
		want string
	}{
		{TextArgs{Pattern: "needle", Mode: "content", Context: 1},
			"c:1:d.txt:1: needle colon\ncrlf.txt:1: needle one\ncrlf.txt-2- mid\ncrlf.txt:3: needle two\ne-2-f.txt:1: needle dash\n" +
				"inv.txt:1: bad \uFFFD needle\nn\nl.txt-1- x\nn\nl.txt:2: needle in a newline name\nsp.txt:1: needle \n7 matches in 6 files\n"},
		{TextArgs{Pattern: "needle", Mode: "content", Path: "bin/z.bin"},
			"bin/z.bin: binary file matches (not shown)\n3 matches in 1 file; showing 0 matches from 1 file (files by path, at most 10 matches per file, 40 lines); narrow with path or glob to see the rest\n"},
		{TextArgs{Pattern: "needle", Mode: "content", Glob: "none/*"},
			"no matches in the working directory (files ignored by .gitignore and hidden folders are not searched)\n"},
	}
	for _, tt := range tests {
		r := Text(context.Background(), c, tt.args, time.Minute)
		if r.Error != "" || r.Text != tt.want {
			t.Errorf("%+v:\ngot  %q (error %q)\nwant %q", tt.args, r.Text, r.Error, tt.want)
		}
	}
}
