package search

import (
	"strings"
	"testing"
)

// The parsers below read engine output and model input: none may panic, and what they
// return must be consistent with what they were given.

func FuzzParseCountLine(f *testing.F) {
	for _, s := range []string{"a.go\x0012\n", "\x00\n", "x\x00-1", "a\x00b\x003"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		p, n, err := parseCountLine(line)
		if err == nil && (p == "" || n < 0 || !strings.HasPrefix(string(line), p)) {
			t.Fatalf("parseCountLine(%q) = %q, %d", line, p, n)
		}
	})
}

func FuzzParseRGMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"match","data":{"path":{"text":"a"},"lines":{"text":"x\n"},"line_number":2}}`,
		`{"type":"end","data":{"path":{"bytes":"/3g="},"binary_offset":3,"stats":{"matched_lines":1}}}`,
		`{"type":"summary","data":{"stats":{"matched_lines":3,"searches_with_match":2}}}`,
		`{"type":"context","data":{"path":{"text":"a"},"lines":{"bytes":"!"},"line_number":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseRGMessage(line)
		if err == nil && (m.Type == "match" || m.Type == "context") && m.Line < 1 {
			t.Fatalf("parseRGMessage(%q) gave line %d", line, m.Line)
		}
	})
}

func FuzzRegexError(f *testing.F) {
	f.Add("regex parse error:\n    a(\n     ^\nerror: unclosed group\n")
	f.Add("regex parse error:\n^\n")
	f.Add("error parsing glob 'a[': x")
	f.Fuzz(func(t *testing.T, stderr string) {
		if msg, ok := regexError(stderr); ok && !strings.HasPrefix(msg, "pattern is not") {
			t.Fatalf("regexError(%q) = %q", stderr, msg)
		}
		_, _ = globError(stderr)
		_ = cleanEngineText(stderr)
		_ = cleanSyntaxText(stderr)
	})
}

func FuzzParseSGMatch(f *testing.F) {
	f.Add([]byte(`{"file":"a.go","range":{"start":{"line":0}},"lines":"x\ny"}`))
	f.Add([]byte(`{"file":"a.go","range":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseSGMatch(line)
		if err == nil && (m.File == "" || m.Line < 1 || strings.Contains(m.Text, "\n")) {
			t.Fatalf("parseSGMatch(%q) = %+v", line, m)
		}
		_, _ = patternRoot(string(line))
	})
}

func FuzzParseGlob(f *testing.F) {
	for _, s := range []string{"*.go", "src/**/*.ts", "!gen/*", "a/{b,c}/[!d]?", "\\*", "{", "a/[", "ü/**"} {
		f.Add(s, "src/a/b.ts")
	}
	f.Fuzz(func(t *testing.T, glob, path string) {
		g, err := parseGlob(glob)
		if err != nil {
			return
		}
		_ = g.keep(path)
		for _, a := range g.engineArgs {
			if strings.ContainsRune(a, 0) {
				t.Fatalf("parseGlob(%q) passes a NUL byte to the engine: %q", glob, g.engineArgs)
			}
		}
	})
}
