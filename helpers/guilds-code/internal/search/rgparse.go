package search

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseCountLine parses one line of the text engine's count output, "<path>\x00<count>".
func parseCountLine(line []byte) (path string, n int, err error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	i := bytes.LastIndexByte(line, 0)
	if i <= 0 {
		return "", 0, fmt.Errorf("count line %q has no path", shortQuote(line))
	}
	n, err = strconv.Atoi(string(line[i+1:]))
	if err != nil || n < 0 {
		return "", 0, fmt.Errorf("count line %q has no count", shortQuote(line))
	}
	return string(line[:i]), n, nil
}

// rgMsg is one message of the text engine's JSON Lines output, reduced to what the tools use.
type rgMsg struct {
	Type   string // begin, match, context, end, summary
	Path   string
	Line   int    // 1-based line number (match, context)
	Text   string // the line without its line ending (match, context)
	Binary bool   // end: the file was found to be binary
	Lines  int    // end, summary: matched lines
	Files  int    // summary: files with a match
}

type rgData struct {
	Type string `json:"type"`
	Data struct {
		Path         rgBytes         `json:"path"`
		Lines        rgBytes         `json:"lines"`
		LineNumber   *int            `json:"line_number"`
		BinaryOffset json.RawMessage `json:"binary_offset"`
		Stats        *struct {
			MatchedLines      int `json:"matched_lines"`
			SearchesWithMatch int `json:"searches_with_match"`
		} `json:"stats"`
	} `json:"data"`
}

// rgBytes is the engine's arbitrary-data object: {"text": "..."} or {"bytes": "<base64>"}.
type rgBytes struct {
	Text  *string `json:"text"`
	Bytes *string `json:"bytes"`
}

func (b rgBytes) value() (string, error) {
	switch {
	case b.Text != nil:
		return *b.Text, nil
	case b.Bytes != nil:
		raw, err := base64.StdEncoding.DecodeString(*b.Bytes)
		if err != nil {
			return "", fmt.Errorf("bytes field is not base64: %w", err)
		}
		return string(raw), nil
	}
	return "", nil
}

// parseRGMessage decodes one JSON line of the text engine's output.
func parseRGMessage(line []byte) (rgMsg, error) {
	var d rgData
	if err := json.Unmarshal(line, &d); err != nil {
		return rgMsg{}, fmt.Errorf("search output line %q: %w", shortQuote(line), err)
	}
	m := rgMsg{Type: d.Type}
	var err error
	switch d.Type {
	case "begin":
		m.Path, err = d.Data.Path.value()
	case "match", "context":
		if m.Path, err = d.Data.Path.value(); err != nil {
			break
		}
		if d.Data.LineNumber == nil || *d.Data.LineNumber < 1 {
			return rgMsg{}, fmt.Errorf("search output line %q has no line number", shortQuote(line))
		}
		m.Line = *d.Data.LineNumber
		var text string
		if text, err = d.Data.Lines.value(); err == nil {
			m.Text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		}
	case "end":
		m.Path, err = d.Data.Path.value()
		raw := bytes.TrimSpace(d.Data.BinaryOffset)
		m.Binary = len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
		if d.Data.Stats != nil {
			m.Lines = d.Data.Stats.MatchedLines
		}
	case "summary":
		if d.Data.Stats == nil {
			return rgMsg{}, errors.New("search summary has no stats")
		}
		m.Lines, m.Files = d.Data.Stats.MatchedLines, d.Data.Stats.SearchesWithMatch
	default:
		return rgMsg{}, fmt.Errorf("search output line %q has unknown type %q", shortQuote(line), d.Type)
	}
	if err != nil {
		return rgMsg{}, fmt.Errorf("search output line %q: %w", shortQuote(line), err)
	}
	return m, nil
}

// regexError turns the text engine's report of an invalid pattern into the tool's words,
// saying where in the pattern the problem is. ok is false when stderr is not such a report.
func regexError(stderr string) (msg string, ok bool) {
	if !strings.Contains(stderr, "regex parse error") && !strings.Contains(stderr, "exceeds size limit") {
		return "", false
	}
	if strings.Contains(stderr, "exceeds size limit") {
		return "pattern is not usable: the compiled regular expression is too large; use a smaller repetition count or fixed: true", true
	}
	lines := strings.Split(stderr, "\n")
	col, reason := -1, ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if col < 0 && t != "" && strings.Trim(t, "^") == "" {
			col = strings.IndexByte(l, '^') - 4 // the pattern is shown indented by four spaces
		}
		if strings.HasPrefix(t, "error: ") && reason == "" {
			reason = strings.TrimPrefix(t, "error: ")
		}
	}
	if reason == "" {
		reason = "it does not parse"
	}
	where := ""
	if col >= 0 {
		where = fmt.Sprintf(" at character %d", col+1)
	}
	hint := "escape special characters with \\ or pass fixed: true to search for the text literally"
	if strings.Contains(reason, "look-around") || strings.Contains(reason, "backreferences") {
		hint = "look-around and backreferences are not supported; match the surrounding text instead"
	}
	return fmt.Sprintf("pattern is not a valid regular expression%s: %s; %s", where, reason, hint), true
}

// globError turns the engine's report of an invalid glob into the tool's words.
func globError(stderr string) (string, bool) {
	i := strings.Index(stderr, "error parsing glob ")
	if i < 0 {
		return "", false
	}
	line, _, _ := strings.Cut(stderr[i+len("error parsing glob "):], "\n")
	glob, reason, ok := strings.Cut(strings.TrimSpace(line), "': ")
	if !ok {
		return fmt.Sprintf("glob is not valid (%s); use a pattern like *.go or src/**/*.ts", strings.TrimSpace(line)), true
	}
	return fmt.Sprintf("glob %s' is not valid: %s; use a pattern like *.go or src/**/*.ts", glob, reason), true
}

// shortQuote keeps error messages about engine output short.
func shortQuote(b []byte) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// rgLine is one record of the text engine's plain output (--null --line-number --no-heading):
// "<path>\x00<line>:<text>" for a matching line, "<path>\x00<line>-<text>" for a context line,
// or "<path>: binary file matches (found …)" and "<path>: WARNING: stopped searching binary
// file after match (found …)" for a binary file. Its slices are only valid until the reader's
// next call.
type rgLine struct {
	path   []byte
	num    int    // 1-based line number (matching and context lines)
	match  bool   // a matching line, not context
	binary bool   // a binary-file note: the file matches, its lines are not printed
	text   []byte // the line without its line ending
}

// maxPathBytes bounds the start of a path that holds newlines, kept until its NUL arrives.
const maxPathBytes = 64 << 10

// plainReader assembles records from the lines of the text engine's plain output. A path ends
// at a NUL, which no path holds, so ':' and '-' in file names are never taken for separators;
// a path may hold newlines, so a line without a NUL that is neither a separator ("--", which
// only context output prints) nor a binary-file note is the start of a path.
type plainReader struct {
	context bool   // the output has context lines, so "--" lines separate groups
	pend    []byte // the start of a path that holds a newline
}

// next takes one line of output (with its newline, when it has one) and returns the record
// it completes; ok is false for a separator, the start of a path, or a malformed line.
func (r *plainReader) next(line []byte) (rec rgLine, ok bool) {
	body := bytes.TrimSuffix(line, []byte("\n"))
	i := bytes.IndexByte(body, 0)
	if i < 0 {
		if len(r.pend) == 0 && r.context && string(body) == "--" {
			return rgLine{}, false
		}
		if p, ok := binaryNote(body); ok {
			rec = rgLine{path: r.joinPath(p), binary: true}
			return rec, len(rec.path) > 0
		}
		if len(r.pend)+len(line) > maxPathBytes {
			r.pend = r.pend[:0]
			return rgLine{}, false
		}
		r.pend = append(r.pend, line...)
		return rgLine{}, false
	}
	rec.path = r.joinPath(body[:i])
	rest := body[i+1:]
	j := 0
	for ; j < len(rest) && rest[j] >= '0' && rest[j] <= '9'; j++ {
		if rec.num > (1<<40)/10 {
			return rgLine{}, false
		}
		rec.num = rec.num*10 + int(rest[j]-'0')
	}
	if len(rec.path) == 0 || j == 0 || j == len(rest) || rec.num < 1 {
		return rgLine{}, false
	}
	switch rest[j] {
	case ':':
		rec.match = true
	case '-':
	default:
		return rgLine{}, false
	}
	rec.text = bytes.TrimSuffix(rest[j+1:], []byte("\r"))
	return rec, true
}

// joinPath completes a path whose start an earlier line held, and forgets that start.
func (r *plainReader) joinPath(p []byte) []byte {
	if len(r.pend) == 0 {
		return p
	}
	full := append(r.pend, p...)
	r.pend = full[:0]
	return full
}

// The binary-file notes the text engine prints after a path instead of its lines.
var binaryNotes = [][]byte{
	[]byte(": binary file matches (found "),
	[]byte(": WARNING: stopped searching binary file after match (found "),
}

// binaryNote returns the path of a binary-file note; ok is false when line is not one.
func binaryNote(line []byte) (path []byte, ok bool) {
	if !bytes.HasSuffix(line, []byte(")")) {
		return nil, false
	}
	for _, n := range binaryNotes {
		if i := bytes.LastIndex(line, n); i >= 0 {
			return line[:i], true
		}
	}
	return nil, false
}
