package search

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseCountLine(t *testing.T) {
	tests := []struct {
		in      string
		path    string
		n       int
		wantErr bool
	}{
		{"src/a.go\x0012\n", "src/a.go", 12, false},
		{"./c:d.txt\x001\n", "./c:d.txt", 1, false},
		{"with\nnewline\x003", "with\nnewline", 3, false},
		{"nul\x00in\x00name\x007\n", "nul\x00in\x00name", 7, false},
		{"no-count\n", "", 0, true},
		{"\x005\n", "", 0, true},
		{"a\x00-1\n", "", 0, true},
		{"a\x00x\n", "", 0, true},
	}
	for _, tt := range tests {
		p, n, err := parseCountLine([]byte(tt.in))
		if (err != nil) != tt.wantErr || p != tt.path || n != tt.n {
			t.Errorf("parseCountLine(%q) = %q, %d, %v; want %q, %d, error %v", tt.in, p, n, err, tt.path, tt.n, tt.wantErr)
		}
	}
}

func TestParseRGMessage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want rgMsg
		err  string
	}{
		{"begin", `{"type":"begin","data":{"path":{"text":"a.txt"}}}`, rgMsg{Type: "begin", Path: "a.txt"}, ""},
		{"match", `{"type":"match","data":{"path":{"text":"a.txt"},"lines":{"text":"bar foo\r\n"},"line_number":2,"absolute_offset":4,"submatches":[]}}`,
			rgMsg{Type: "match", Path: "a.txt", Line: 2, Text: "bar foo"}, ""},
		{"context bytes", `{"type":"context","data":{"path":{"bytes":"/3g="},"lines":{"bytes":"aP8K"},"line_number":9}}`,
			rgMsg{Type: "context", Path: "\xffx", Line: 9, Text: "h\xff"}, ""},
		{"end binary", `{"type":"end","data":{"path":{"text":"b.bin"},"binary_offset":3,"stats":{"matched_lines":1}}}`,
			rgMsg{Type: "end", Path: "b.bin", Binary: true, Lines: 1}, ""},
		{"end text", `{"type":"end","data":{"path":{"text":"a"},"binary_offset":null,"stats":{"matched_lines":4}}}`,
			rgMsg{Type: "end", Path: "a", Lines: 4}, ""},
		{"summary", `{"data":{"stats":{"matched_lines":3,"matches":3,"searches":2,"searches_with_match":2}},"type":"summary"}`,
			rgMsg{Type: "summary", Lines: 3, Files: 2}, ""},
		{"summary without stats", `{"type":"summary","data":{}}`, rgMsg{}, "no stats"},
		{"match without line", `{"type":"match","data":{"path":{"text":"a"},"lines":{"text":"x"}}}`, rgMsg{}, "no line number"},
		{"bad base64", `{"type":"begin","data":{"path":{"bytes":"!!"}}}`, rgMsg{}, "not base64"},
		{"unknown type", `{"type":"weird","data":{}}`, rgMsg{}, "unknown type"},
		{"not json", `nope`, rgMsg{}, "search output line"},
	}
	for _, tt := range tests {
		got, err := parseRGMessage([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestRegexError(t *testing.T) {
	tests := []struct {
		stderr string
		want   string // "" means not a regex error
	}{
		{"regex parse error:\n    a(\n     ^\nerror: unclosed group\n",
			"pattern is not a valid regular expression at character 2: unclosed group; escape special characters with \\ or pass fixed: true to search for the text literally"},
		{"regex parse error:\n    (?<=a)b\n    ^^^^\nerror: look-around, including look-ahead and look-behind, is not supported\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\nand look-around.\n",
			"pattern is not a valid regular expression at character 1: look-around, including look-ahead and look-behind, is not supported; look-around and backreferences are not supported; match the surrounding text instead"},
		{"Compiled regex exceeds size limit of 104857600 bytes.\n",
			"pattern is not usable: the compiled regular expression is too large; use a smaller repetition count or fixed: true"},
		{"regex parse error:\n", "pattern is not a valid regular expression: it does not parse; escape special characters with \\ or pass fixed: true to search for the text literally"},
		{"rg: ./x: Permission denied (os error 13)\n", ""},
	}
	for _, tt := range tests {
		got, ok := regexError(tt.stderr)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("regexError(%q) = %q, %v; want %q", tt.stderr, got, ok, tt.want)
		}
		for _, name := range []string{"pcre2", "--", "ripgrep", "rg "} {
			if strings.Contains(got, name) {
				t.Errorf("regexError(%q) = %q names the engine (%q)", tt.stderr, got, name)
			}
		}
	}
}

func TestGlobError(t *testing.T) {
	got, ok := globError("error parsing glob '*.[go': unclosed character class; missing ']'\n")
	want := "glob '*.[go' is not valid: unclosed character class; missing ']'; use a pattern like *.go or src/**/*.ts"
	if !ok || got != want {
		t.Errorf("globError = %q, %v; want %q", got, ok, want)
	}
	if _, ok := globError("something else"); ok {
		t.Error("globError matched an unrelated message")
	}
}

func TestParseSGMatch(t *testing.T) {
	line := `{"text":"fmt.Errorf(\"x\")","range":{"byteOffset":{"start":1,"end":2},"start":{"line":6,"column":1},"end":{"line":7,"column":3}},"file":"g/x.go","lines":"\treturn fmt.Errorf(\"x\",\r\n\t1)","language":"Go"}`
	got, err := parseSGMatch([]byte(line))
	want := sgMatch{File: "g/x.go", Line: 7, Text: "\treturn fmt.Errorf(\"x\","}
	if err != nil || got != want {
		t.Errorf("parseSGMatch = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{`{}`, `{"file":"a"}`, `{"file":"","range":{"start":{"line":1}}}`, `{"file":"a","range":{"start":{"line":-1}}}`, `[`} {
		if _, err := parseSGMatch([]byte(bad)); err == nil {
			t.Errorf("parseSGMatch(%q) accepted it", bad)
		}
	}
}

func TestPatternRoot(t *testing.T) {
	tests := []struct {
		in     string
		root   string
		broken bool
	}{
		{"Debug Pattern:\ntype_conversion_expression\n  qualified_type\n    package_identifier fmt\n  MetaVar $$$ARGS\n", "type_conversion_expression", false},
		{"Debug Pattern:\ncall_expression\n  selector_expression\n", "call_expression", false},
		{"Debug Pattern:\nERRORWarning: Pattern contains an ERROR node and may cause unexpected results.\nHelp: x\nSee also: y\n", "ERRORWarning:", true},
		{"Debug Pattern:\nsource_file\n  ERROR\n", "source_file", true},
		{"", "", false},
	}
	for _, tt := range tests {
		root, broken := patternRoot(tt.in)
		if root != tt.root || broken != tt.broken {
			t.Errorf("patternRoot(%q) = %q, %v; want %q, %v", tt.in, root, broken, tt.root, tt.broken)
		}
	}
}

func TestParseGlob(t *testing.T) {
	tests := []struct {
		glob   string
		args   string
		keep   []string
		drop   []string
		errSub string
	}{
		{glob: "*.go", args: "--type-add guildsglob:*.go --type guildsglob", keep: []string{"a.go", "x/y.go"}},
		{glob: "src/**/*.ts", args: "--type-add guildsglob:*.ts --type guildsglob",
			keep: []string{"src/a.ts", "src/x/y/z.ts"}, drop: []string{"lib/a.ts", "srcx/a.ts"}},
		{glob: "/docs/*", args: "--type-add guildsglob:* --type guildsglob", keep: []string{"docs/a.md"}, drop: []string{"docs/x/a.md"}},
		{glob: "gen/**", args: "", keep: []string{"gen/a.go", "gen/x/b.go"}, drop: []string{"src/gen.go"}},
		{glob: "*.{js,ts}", args: "--type-add guildsglob:*.{js,ts} --type guildsglob", keep: []string{"a.js"}},
		{glob: "!*_test.go", args: "--glob !*_test.go", keep: []string{"a_test.go"}},
		{glob: "!gen/*", args: "", keep: []string{"src/a.go", "gen/x/a.go"}, drop: []string{"gen/a.go"}},
		{glob: "a/[!b]?.{c,d}", args: "--type-add guildsglob:[!b]?.{c,d} --type guildsglob", keep: []string{"a/xy.c", "a/xy.d"}, drop: []string{"a/by.c", "a/x.c"}},
		{glob: "ü/*.go", args: "--type-add guildsglob:*.go --type guildsglob", keep: []string{"ü/a.go"}},
		{glob: "!", errSub: "excludes nothing"},
		{glob: "a/{b", errSub: "{ has no closing }"},
		{glob: "a/b}", errSub: "} has no opening {"},
		{glob: "a/[b", errSub: "[ has no closing ]"},
	}
	for _, tt := range tests {
		f, err := parseGlob(tt.glob)
		if tt.errSub != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errSub) {
				t.Errorf("parseGlob(%q) error %v, want %q", tt.glob, err, tt.errSub)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseGlob(%q): %v", tt.glob, err)
			continue
		}
		if got := strings.Join(f.engineArgs, " "); got != tt.args {
			t.Errorf("parseGlob(%q) engine args %q, want %q", tt.glob, got, tt.args)
		}
		for _, p := range tt.keep {
			if !f.keep(p) {
				t.Errorf("glob %q drops %q", tt.glob, p)
			}
		}
		for _, p := range tt.drop {
			if f.keep(p) {
				t.Errorf("glob %q keeps %q", tt.glob, p)
			}
		}
	}
}

func TestBatches(t *testing.T) {
	paths := []string{"aaaa", "bb", "cccccc", "d", "eeeeeeeeeeee"}
	got := batches(paths, 9)
	want := [][]string{{"aaaa", "bb"}, {"cccccc", "d"}, {"eeeeeeeeeeee"}}
	if len(got) != len(want) {
		t.Fatalf("batches = %q, want %q", got, want)
	}
	for i := range want {
		if strings.Join(got[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("batch %d = %q, want %q", i, got[i], want[i])
		}
	}
	if len(batches(nil, 8)) != 0 {
		t.Error("batches(nil) is not empty")
	}
}

func TestLookupLang(t *testing.T) {
	for in, want := range map[string]string{"go": "go", "Golang": "go", "ts": "typescript", "py": "python", "c++": "cpp", " rs ": "rust"} {
		l, ok := lookupLang(in)
		if !ok || l.name != want {
			t.Errorf("lookupLang(%q) = %q, %v; want %q", in, l.name, ok, want)
		}
	}
	if _, ok := lookupLang("cobol"); ok {
		t.Error("lookupLang(cobol) is known")
	}
	for in, want := range map[string]string{"a/b.GO": "go", "x.tsx": "tsx", "y.h": "c", "Rakefile.rb": "ruby"} {
		l, ok := langOfFile(in)
		if !ok || l.name != want {
			t.Errorf("langOfFile(%q) = %q, %v; want %q", in, l.name, ok, want)
		}
	}
	for _, in := range []string{"report.cob", "Makefile", "x."} {
		if _, ok := langOfFile(in); ok {
			t.Errorf("langOfFile(%q) is known", in)
		}
	}
}

func TestCleanEngineText(t *testing.T) {
	for in, want := range map[string]string{
		"rg: ./x: Permission denied\nmore": "./x: Permission denied",
		"Error: Cannot parse query":        "Cannot parse query",
		"":                                 "no details were given",
		"error: invalid value 'x' for '--lang'\n": "invalid value 'x' for '--lang'",
	} {
		if got := cleanEngineText(in); got != want {
			t.Errorf("cleanEngineText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := cleanSyntaxText("Warning: x\nHelp: see ast-grep\nSee also: https://ast-grep.github.io\n"); got != "Warning: x" {
		t.Errorf("cleanSyntaxText = %q", got)
	}
}

func TestPrune(t *testing.T) {
	mk := func(lines ...int) map[string]*fileShow {
		kept := map[string]*fileShow{}
		for i, n := range lines {
			p := fmt.Sprintf("f%02d", i)
			kept[p] = &fileShow{raw: p, lines: make([]shownLine, n)}
		}
		return kept
	}
	tests := []struct {
		lines []int
		limit int
		bound string
		left  int
	}{
		{[]int{3, 3, 3}, 10, "", 3},          // not filled: keep all, no bound
		{[]int{3, 3, 3, 3, 3}, 10, "f03", 4}, // f00..f03 fill 12 ≥ 10
		{[]int{10, 1, 1}, 10, "f00", 1},      // the first file alone fills it
		{[]int{0, 0, 0, 0}, 2, "f01", 2},     // a binary file (no lines) still takes one
		{[]int{40, 40, 40, 40, 40}, 40, "f00", 1},
	}
	for _, tt := range tests {
		kept := mk(tt.lines...)
		if bound := prune(kept, tt.limit); bound != tt.bound || len(kept) != tt.left {
			t.Errorf("prune(%v, %d) = %q leaving %d; want %q leaving %d", tt.lines, tt.limit, bound, len(kept), tt.bound, tt.left)
		}
	}
}

func TestMatchTally(t *testing.T) {
	var tl matchTally
	// Files arrive in any order, each with its matches together; nested matches share a line.
	for _, f := range []string{"c.go", "a.go", "b.go"} {
		for line := 50; line >= 1; line-- {
			tl.add(sgMatch{File: f, Line: line, Text: fmt.Sprintf("%s %d", f, line)}, 3)
			tl.add(sgMatch{File: f, Line: line, Text: "nested"}, 3)
		}
	}
	if tl.lines != 150 || len(tl.files) != 3 {
		t.Errorf("tally %d lines in %d files, want 150 in 3", tl.lines, len(tl.files))
	}
	got := tl.first(3)
	want := []sgMatch{{"a.go", 1, "a.go 1"}, {"a.go", 2, "a.go 2"}, {"a.go", 3, "a.go 3"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first(3) = %v, want %v", got, want)
	}
	if len(tl.best) > 3 {
		t.Errorf("kept %d candidates for 3 lines", len(tl.best))
	}
}

func TestPlainReader(t *testing.T) {
	type rec struct {
		path   string
		num    int
		match  bool
		binary bool
		text   string
	}
	tests := []struct {
		name    string
		context bool
		lines   []string
		want    []rec
	}{
		{"match", false, []string{"src/a.go\x0012:\treturn x\n"}, []rec{{"src/a.go", 12, true, false, "\treturn x"}}},
		{"context, CRLF", true, []string{"a.txt\x003-ctx line\r\n"}, []rec{{"a.txt", 3, false, false, "ctx line"}}},
		{"colons and dashes in the name", false, []string{"d/c:1:d-2-e.txt\x007:x:1:y\n"}, []rec{{"d/c:1:d-2-e.txt", 7, true, false, "x:1:y"}}},
		{"empty line, no newline at the end", true, []string{"a\x002-"}, []rec{{"a", 2, false, false, ""}}},
		{"NUL in the text", false, []string{"a\x001:x\x00y\n"}, []rec{{"a", 1, true, false, "x\x00y"}}},
		{"separator", true, []string{"a\x001:x\n", "--\n", "a\x009:y\n"}, []rec{{"a", 1, true, false, "x"}, {"a", 9, true, false, "y"}}},
		{"dashes without context start a path", false, []string{"--\n", "x\x001:y\n"}, []rec{{"--\nx", 1, true, false, "y"}}},
		{"newline in the name", false, []string{"e/a\n", "\n", "b.txt\x001:needle\n", "c\x002:z\n"},
			[]rec{{"e/a\n\nb.txt", 1, true, false, "needle"}, {"c", 2, true, false, "z"}}},
		{"binary note", false, []string{`d/x.bin: binary file matches (found "\0" byte around offset 9)` + "\n"}, []rec{{"d/x.bin", 0, false, true, ""}}},
		{"binary warning after matches", false, []string{"d/l.txt\x005:needle\n", `d/l.txt: WARNING: stopped searching binary file after match (found "\0" byte around offset 348895)` + "\n"},
			[]rec{{"d/l.txt", 5, true, false, "needle"}, {"d/l.txt", 0, false, true, ""}}},
		{"binary note with a newline in the name", false, []string{"e/c\n", `d.bin: binary file matches (found "\0" byte around offset 6)` + "\n"}, []rec{{"e/c\nd.bin", 0, false, true, ""}}},
		{"no line number", false, []string{"a\x00x:y\n", "a\x00:y\n"}, nil},
		{"no separator", false, []string{"a\x0012\n", "a\x0012+y\n"}, nil},
		{"line zero", false, []string{"a\x000:y\n"}, nil},
		{"line number too large", false, []string{"a\x0099999999999999999999:y\n"}, nil},
		{"empty path", false, []string{"\x001:y\n", `: binary file matches (found "\0" byte around offset 9)` + "\n"}, nil},
	}
	for _, tt := range tests {
		r := &plainReader{context: tt.context}
		var got []rec
		for _, l := range tt.lines {
			if x, ok := r.next([]byte(l)); ok {
				got = append(got, rec{string(x.path), x.num, x.match, x.binary, string(x.text)})
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.name, got, tt.want)
		}
	}
}

func TestShowBytes(t *testing.T) {
	long := strings.Repeat("é", 310)
	tests := map[string]string{
		"plain":                      "plain",
		"":                           "",
		"bad \xff\xfe run \xc3":      "bad \uFFFD run \uFFFD",
		"nul\x00":                    "(binary data not shown)",
		long:                         strings.Repeat("é", 300) + "… [10 more characters]",
		strings.Repeat("\xff", 400):  "\uFFFD",
		strings.Repeat("a\xff", 301): strings.Repeat("a\uFFFD", 150) + "… [302 more characters]",
		"\uFFFD\xff" + long[:2*299]:  "\uFFFD\uFFFD" + strings.Repeat("é", 298) + "… [1 more characters]",
	}
	for in, want := range tests {
		if got := showBytes([]byte(in)); got != want {
			t.Errorf("showBytes(%q) = %q, want %q", in, got, want)
		}
		if got, old := showBytes([]byte(in)), showLine(in); got != old {
			t.Errorf("showBytes(%q) = %q, showLine gives %q", in, got, old)
		}
	}
}

func TestRankFiles(t *testing.T) {
	tests := []struct {
		counts []fileCount
		want   []string
	}{
		{nil, nil},
		{[]fileCount{{"b", 1}, {"a", 1}, {"c", 5}}, []string{"c", "a", "b"}}, // most lines first, ties by path
		{[]fileCount{{"a", 1500}, {"b", 499}, {"c", 400}, {"d", 1}}, []string{"a", "b", "c"}},
		{[]fileCount{{"a", 2000}, {"b", 2000}}, []string{"a"}},
		{[]fileCount{{"z", 1999}, {"y", 1}, {"x", 1}}, []string{"z", "x"}},
	}
	for _, tt := range tests {
		ts := &textSearch{counts: slices.Clone(tt.counts)}
		var got []string
		for _, fc := range ts.rankFiles() {
			got = append(got, fc.raw)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("rankFiles(%v) = %v; want %v", tt.counts, got, tt.want)
		}
		if !slices.Equal(ts.counts, tt.counts) {
			t.Errorf("rankFiles reordered its input: %v", ts.counts)
		}
	}
}
