package store

import "testing"

// TestIgnored checks .gitignore semantics the walk relies on.
func TestIgnored(t *testing.T) {
	rules := parseGitignore("", "# comment\nbuild/\n*.gen.ts\n/top.go\ndocs/**/*.py\n!keep.gen.ts\n")
	rules = append(rules, parseGitignore("sub", "local.go\n")...)
	cases := []struct {
		path string
		dir  bool
		want bool
	}{
		{"build", true, true},
		{"a/build", true, true},
		{"build", false, false},
		{"src/api.gen.ts", false, true},
		{"src/keep.gen.ts", false, false},
		{"top.go", false, true},
		{"a/top.go", false, false},
		{"docs/x/y/z.py", false, true},
		{"docs/z.py", false, true},
		{"sub/local.go", false, true},
		{"local.go", false, false},
		{"src/main.go", false, false},
	}
	for _, c := range cases {
		if got := ignored(rules, c.path, c.dir); got != c.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
}

// FuzzGitignore parses arbitrary .gitignore text and matches paths against it without panicking.
func FuzzGitignore(f *testing.F) {
	f.Add("build/\n*.o\n!keep.o\n/a/**/b\n", "a/x/b")
	f.Add("[", "x")
	f.Add("**", "")
	f.Fuzz(func(t *testing.T, text, p string) {
		rules := parseGitignore("", text)
		ignored(rules, p, false)
		ignored(rules, p, true)
	})
}
