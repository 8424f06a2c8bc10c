package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/shared/envelope"
)

// newCall builds a call in a fresh workspace whose real path has no links in it.
func newCall(t testing.TB) *Call {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return &Call{Req: envelope.Request{Tool: "file_read", RunID: "r1", CallID: "c1", Seq: 1}, Home: home, RunDir: filepath.Join(root, "run"), Max: 8192}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	c := newCall(t)
	home := c.Home
	outside := filepath.Join(filepath.Dir(home), "outside")
	mustWrite(t, filepath.Join(outside, "secret.txt"), "s")
	mustWrite(t, filepath.Join(home, "src", "a.go"), "package a")
	mustLink(t, "../outside", filepath.Join(home, "out"))                  // folder link leaving home
	mustLink(t, outside+"/secret.txt", filepath.Join(home, "secret"))      // file link leaving home
	mustLink(t, "src", filepath.Join(home, "srclink"))                     // folder link inside home
	mustLink(t, "src/a.go", filepath.Join(home, "alink"))                  // file link inside home
	mustLink(t, "src/new.go", filepath.Join(home, "dangling-in"))          // dangling, target inside
	mustLink(t, "../outside/new.txt", filepath.Join(home, "dangling-out")) // dangling, target outside
	mustLink(t, "dangling-out", filepath.Join(home, "chain"))              // link to a dangling link
	mustLink(t, "loop2", filepath.Join(home, "loop1"))                     // a loop
	mustLink(t, "loop1", filepath.Join(home, "loop2"))                     //
	mustLink(t, "dd1/x", filepath.Join(home, "dd2"))                       // dangling loop through
	mustLink(t, "dd2/x", filepath.Join(home, "dd1"))                       // missing children
	mustLink(t, "/", filepath.Join(home, "root"))                          // link to /
	mustLink(t, filepath.Dir(home), filepath.Join(home, "src", "up"))      // deep link to the parent
	mustLink(t, "../../home/src", filepath.Join(home, "src", "self"))      // leaves and re-enters home
	for _, tc := range []struct {
		in   string
		want string // path relative to home, or "" for a refusal
		err  string
	}{
		{"src/a.go", "src/a.go", ""},
		{home + "/src/a.go", "src/a.go", ""},
		{"./src/../src/a.go", "src/a.go", ""},
		{"src/missing/deeper.go", "src/missing/deeper.go", ""},
		{".", ".", ""},
		{home, ".", ""},
		{"srclink/a.go", "src/a.go", ""},
		{"srclink/new/x.go", "src/new/x.go", ""},
		{"alink", "src/a.go", ""},
		{"dangling-in", "src/new.go", ""},
		{"src/self/a.go", "src/a.go", ""},
		{"~", ".", ""},
		{"~/src/a.go", "src/a.go", ""},
		{"./~/x", "~/x", ""},
		{"~root/x", "~root/x", ""},
		{"~/../outside", "", "outside the workspace"},
		{"..", "", "outside the workspace"},
		{"../outside/secret.txt", "", "outside the workspace"},
		{"src/../../outside", "", "outside the workspace"},
		{"/etc/passwd", "", "outside the workspace"},
		{"/", "", "outside the workspace"},
		{"out", "", "outside the workspace"},
		{"out/secret.txt", "", "outside the workspace"},
		{"out/new/file.txt", "", "outside the workspace"},
		{"secret", "", "outside the workspace"},
		{"dangling-out", "", "outside the workspace"},
		{"chain", "", "outside the workspace"},
		{"root/etc/passwd", "", "outside the workspace"},
		{"src/up/outside/secret.txt", "", "outside the workspace"},
		{"src/up/home/src/a.go", "src/a.go", ""},
		{home + "x/file", "", "outside the workspace"}, // a sibling sharing Home's name as a prefix
		{"loop1", "", "too many"},
		{"dd1", "", "too many"},
		{"", "", "path is empty"},
		{"a\x00b", "", "NUL byte"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := c.Resolve(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Resolve(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
				}
				if tc.err == "outside the workspace" && !errors.Is(err, ErrOutside) {
					t.Fatalf("Resolve(%q): error %v is not ErrOutside", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.in, err)
			}
			if want := filepath.Join(home, tc.want); got != want {
				t.Fatalf("Resolve(%q) = %q, want %q", tc.in, got, want)
			}
		})
	}
}

// TestResolveCwd: relative paths start at the run's working directory; a stored folder that
// is gone, or a relative one, falls back to Home.
func TestResolveCwd(t *testing.T) {
	c := newCall(t)
	sub := filepath.Join(c.Home, "repo", "pkg")
	mustWrite(t, filepath.Join(sub, "x.go"), "x")
	if got := c.Cwd(); got != c.Home {
		t.Fatalf("Cwd before SetCwd = %q, want Home", got)
	}
	if err := c.SetCwd(sub); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Resolve("x.go"); err != nil || got != filepath.Join(sub, "x.go") {
		t.Fatalf("Resolve from cwd = %q, %v", got, err)
	}
	if got, err := c.Resolve("../../.."); err == nil {
		t.Fatalf("Resolve(../../..) from %s = %q, want refusal", sub, got)
	}
	if got := c.Rel(filepath.Join(sub, "x.go")); got != "x.go" {
		t.Fatalf("Rel under cwd = %q", got)
	}
	// Outside the working directory a path is shown absolute: only that can be passed back.
	if got, want := c.Rel(filepath.Join(c.Home, "top.txt")), filepath.Join(c.Home, "top.txt"); got != want {
		t.Fatalf("Rel outside cwd = %q, want %q", got, want)
	}
	if got := c.Rel(filepath.Join(sub, "..x")); got != "..x" {
		t.Fatalf("Rel of a name starting with dots = %q", got)
	}
	for _, stored := range []string{"relative/dir", filepath.Join(c.Home, "gone"), filepath.Join(sub, "x.go")} {
		if err := os.WriteFile(filepath.Join(c.Dir(), "cwd"), []byte(stored+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := c.Cwd(); got != c.Home {
			t.Fatalf("Cwd with stored %q = %q, want Home", stored, got)
		}
	}
}

// TestResolveHomeLink: a Home reached through a link still contains its files.
func TestResolveHomeLink(t *testing.T) {
	c := newCall(t)
	mustWrite(t, filepath.Join(c.Home, "a.txt"), "a")
	link := filepath.Join(filepath.Dir(c.Home), "homelink")
	mustLink(t, c.Home, link)
	c.Home = link
	got, err := c.Resolve("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if rel := c.Rel(got); rel != "a.txt" {
		t.Fatalf("Rel(%q) = %q, want a.txt", got, rel)
	}
}

// FuzzResolve: whatever the path, the result is inside Home (links followed) or an error.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../x", "/etc", "out/x", "in/../../x", "loop/x", ".", "//", "in/./a/../..", "dangle/x/y", "a\x00"} {
		f.Add(s)
	}
	c := newCall(f)
	outside := filepath.Join(filepath.Dir(c.Home), "outside")
	if err := os.MkdirAll(filepath.Join(c.Home, "in", "deep"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(outside, 0o755); err != nil {
		f.Fatal(err)
	}
	for target, link := range map[string]string{"../outside": "out", "in": "inl", "loop": "loop", "../outside/missing": "dangle", "/": "root", "../../": "in/up"} {
		if err := os.Symlink(target, filepath.Join(c.Home, link)); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := c.Resolve(p)
		if err != nil {
			return
		}
		if !Within(c.Home, got) {
			t.Fatalf("Resolve(%q) = %q, outside %s", p, got, c.Home)
		}
		// Following whatever exists of the result again must not leave Home either.
		real, err := evalExisting(got, 0)
		if err == nil && !Within(c.Home, real) {
			t.Fatalf("Resolve(%q) = %q, which leads to %q outside %s", p, got, real, c.Home)
		}
	})
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		root, path string
		want       bool
	}{
		{"/home/agent", "/home/agent", true},
		{"/home/agent", "/home/agent/x", true},
		{"/home/agent", "/home/agentx", false},
		{"/home/agent", "/home", false},
		{"/", "/anything", true},
	} {
		if got := Within(tc.root, tc.path); got != tc.want {
			t.Errorf("Within(%q, %q) = %v", tc.root, tc.path, got)
		}
	}
}

func TestDecodeArgs(t *testing.T) {
	type args struct {
		Path  string `json:"path"`
		Limit *int   `json:"limit"`
		All   bool   `json:"all"`
	}
	for _, tc := range []struct{ raw, err string }{
		{`{"path":"a","limit":3,"all":true}`, ""},
		{`{}`, ""},
		{`{"path":1}`, "argument path must be a string, got number"},
		{`{"limit":"x"}`, "argument limit must be a whole number, got string"},
		{`{"limit":1.5}`, "argument limit must be a whole number, got number 1.5"},
		{`{"all":"yes"}`, "argument all must be true or false, got string"},
		{`{"nope":1}`, `unknown argument "nope" for file_read; it takes path, limit, all`},
		{`"a"`, "arguments must be a JSON object of named arguments, got string"},
		{`[1]`, "arguments must be a JSON object of named arguments, got array"},
		{`{"path":`, "arguments"},
	} {
		c := &Call{Req: envelope.Request{Tool: "file_read", Args: json.RawMessage(tc.raw)}}
		var a args
		err := c.DecodeArgs(&a)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("DecodeArgs(%s) = %v, want %q", tc.raw, err, tc.err)
		}
	}
}

func TestOpenPrunes(t *testing.T) {
	c := newCall(t)
	root := filepath.Join(c.Home, ".runs")
	base := time.Now().Add(-time.Hour)
	for i := 0; i < KeepRuns+5; i++ {
		dir := filepath.Join(root, fmt.Sprintf("old%02d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(dir, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Open(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != KeepRuns {
		t.Fatalf(".runs holds %d folders, want %d", len(entries), KeepRuns)
	}
	for _, gone := range []string{"old00", "old05"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s survived pruning", gone)
		}
	}
	if _, err := os.Stat(c.Dir()); err != nil {
		t.Fatalf("the new run folder was pruned: %v", err)
	}
}
