package search

import (
	"bytes"
	"fmt"
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

// splitLines cuts engine output into the lines stream hands on, each with its newline.
func splitLines(b []byte) [][]byte {
	var lines [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n') + 1
		if i == 0 {
			i = len(b)
		}
		lines, b = append(lines, b[:i]), b[i:]
	}
	return lines
}

func FuzzPlainReader(f *testing.F) {
	for _, s := range []string{
		"src/a.go\x0012:x\n--\nsrc/a.go\x0019-y\r\n",
		"e/a\nb.txt\x001:x\n",
		"d/x.bin: binary file matches (found \"\\0\" byte around offset 9)\n",
		"a\x00:\n\x00\n\x001:\n",
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, out []byte, context bool) {
		r := &plainReader{context: context}
		for _, line := range splitLines(out) {
			rec, ok := r.next(line)
			if !ok {
				continue
			}
			if len(rec.path) == 0 || bytes.IndexByte(rec.path, 0) >= 0 || bytes.IndexByte(rec.text, '\n') >= 0 ||
				(!rec.binary && rec.num < 1) || (rec.binary && (rec.match || rec.text != nil)) {
				t.Fatalf("line %q gave %+v", line, rec)
			}
		}
	})
}

// FuzzPlainRoundTrip prints a record the way the engine does and reads it back.
func FuzzPlainRoundTrip(f *testing.F) {
	f.Add("src/a:1-b.go", "\treturn x", uint32(12), true, false, false)
	f.Add("e/a\nb.txt", "", uint32(1), false, true, false)
	f.Add("d/x.bin", "", uint32(1), false, false, true)
	f.Fuzz(func(t *testing.T, path, text string, num uint32, match, context, binary bool) {
		frags := strings.Split(path, "\n")
		if path == "" || frags[len(frags)-1] == "" && binary || strings.ContainsRune(path, 0) ||
			strings.ContainsRune(text, '\n') || strings.HasSuffix(text, "\r") || num == 0 {
			return // not a record the engine prints
		}
		for i, fr := range frags[:len(frags)-1] {
			if _, note := binaryNote([]byte(fr)); note || i == 0 && context && fr == "--" {
				return // a path whose start reads as a note or separator: the engine's format cannot tell
			}
		}
		var line string
		switch {
		case binary:
			line = path + `: binary file matches (found "\0" byte around offset 9)` + "\n"
		case match:
			line = fmt.Sprintf("%s\x00%d:%s\n", path, num, text)
		default:
			line = fmt.Sprintf("%s\x00%d-%s\n", path, num, text)
		}
		r := &plainReader{context: context}
		var got []rgLine
		for _, l := range splitLines([]byte(line)) {
			if rec, ok := r.next(l); ok {
				rec.path, rec.text = bytes.Clone(rec.path), bytes.Clone(rec.text)
				got = append(got, rec)
			}
		}
		if len(got) != 1 || string(got[0].path) != path || got[0].binary != binary ||
			!binary && (got[0].num != int(num) || got[0].match != match || string(got[0].text) != text) {
			t.Fatalf("%q read back as %+v", line, got)
		}
	})
}

// FuzzShowBytes: showing a line from the engine's bytes is showing it from a string.
func FuzzShowBytes(f *testing.F) {
	f.Add([]byte("bad \xff\xfe run \xc3"))
	f.Add([]byte(strings.Repeat("é", 301)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := showBytes(b), showLine(string(b)); got != want {
			t.Fatalf("showBytes(%q) = %q, showLine gives %q", b, got, want)
		}
	})
}
