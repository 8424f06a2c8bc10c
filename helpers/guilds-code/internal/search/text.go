package search

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/shape"
	"github.com/guildsai/guilds/shared/toolspec"
)

// DefaultBudget is how long a text or syntax search runs before it returns what it has.
const DefaultBudget = 60 * time.Second

// The caps of the spec's "Code search" section (toolspec holds them).
const (
	FilesCap       = toolspec.CodeSearchFilesCap       // files mode lists at most this many files
	ContentLineCap = toolspec.CodeSearchContentLineCap // content mode shows at most this many lines
	PerFileCap     = toolspec.CodeSearchPerFileCap     // content mode shows at most this many matches of one file
	MaxContext     = toolspec.CodeSearchMaxContext     // content mode's largest context
	MaxTextLimit   = toolspec.CodeSearchMaxLimit       // limit is 1 to this; it lowers a mode's cap and never raises it
	LineClip       = toolspec.CodeSearchLineClip       // a shown line longer than this many characters is clipped
)

// TextArgs are code_search's arguments, as toolspec defines them.
type TextArgs = toolspec.CodeSearchArgs

// checkText validates the arguments and returns the mode and its cap.
func checkText(a TextArgs) (mode string, limit int, err error) {
	if a.Pattern == "" {
		return "", 0, fmt.Errorf("pattern is empty; pass the text or regular expression to search for")
	}
	if strings.ContainsRune(a.Pattern, 0) || strings.ContainsRune(a.Glob, 0) {
		return "", 0, fmt.Errorf("pattern and glob must not contain a NUL byte")
	}
	mode = a.Mode
	switch mode {
	case "":
		mode = "files"
	case "files", "content", "symbols":
	default:
		return "", 0, fmt.Errorf("mode %q does not exist; use files (the default), content or symbols", a.Mode)
	}
	if a.Context < 0 || a.Context > MaxContext {
		return "", 0, fmt.Errorf("context must be 0 to %d lines, got %d", MaxContext, a.Context)
	}
	limit = map[string]int{"files": FilesCap, "content": ContentLineCap, "symbols": symbolsCap}[mode]
	if _, err := parseGlob(a.Glob); err != nil {
		return "", 0, err
	}
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > MaxTextLimit {
			return "", 0, fmt.Errorf("limit must be 1 to %d (it lowers the mode's cap: %d files, %d lines), got %d",
				MaxTextLimit, FilesCap, ContentLineCap, *a.Limit)
		}
		limit = min(limit, *a.Limit)
	}
	return mode, limit, nil
}

// Text runs code_search: the budget bounds the whole search.
func Text(ctx context.Context, c *runs.Call, a TextArgs, budget time.Duration) envelope.Reply {
	mode, limit, err := checkText(a)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	pl, err := resolvePlace(c, a.Path)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	if mode == "symbols" {
		return symbols(ctx, c, a, limit)
	}
	bin, err := textEngine.locate()
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	t := &textSearch{a: a, mode: mode, pl: pl, bin: bin, limit: limit, budget: budget}
	var lines []string
	if mode == "files" {
		if err := t.count(ctx); err != nil {
			return envelope.Errorf(nil, "%v", err)
		}
		lines = t.fileLines()
	} else if lines, err = t.content(ctx); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	return t.reply(c.Max, lines)
}

// textSearch is one code_search run.
type textSearch struct {
	a      TextArgs
	mode   string
	pl     place
	bin    string
	limit  int
	budget time.Duration

	counts   []fileCount // files mode: every matching file and its matching lines
	matches  int         // total matching lines
	files    int         // total matching files
	shown    int         // matches shown (content mode)
	inFiles  int         // files shown
	timedOut bool
}

type fileCount struct {
	raw string // path as the engine printed it
	n   int
}

// args returns the engine arguments every phase shares.
func (t *textSearch) args(extra ...string) []string {
	args := []string{"--no-config", "--no-require-git", "--no-messages", "--color", "never", "--with-filename"}
	if t.a.Fixed {
		args = append(args, "--fixed-strings")
	}
	if t.a.IgnoreCase {
		args = append(args, "--ignore-case")
	}
	return append(args, extra...)
}

// count finds every matching file with its count of matching lines. Counting is the cheapest
// full pass that yields true totals; files mode needs every count anyway to rank them.
func (t *textSearch) count(ctx context.Context) error {
	glob, err := parseGlob(t.a.Glob)
	if err != nil {
		return err
	}
	args := append(t.args("--count", "--null"), glob.engineArgs...)
	args = append(args, "--regexp", t.a.Pattern, "--", t.pl.target)
	var perr error
	o, err := collect(ctx, t.pl.dir, t.bin, args, func(line []byte) bool {
		p, n, err := parseCountLine(line)
		if err != nil {
			perr = err
			return true
		}
		if glob.path != nil {
			if rel, err := filepath.Rel(t.pl.target, p); err != nil || !glob.keep(filepath.ToSlash(rel)) {
				return true
			}
		}
		t.counts = append(t.counts, fileCount{raw: p, n: n})
		t.matches += n
		t.files++
		return true
	})
	if err != nil {
		return err
	}
	t.timedOut = o.timedOut
	if err := engineFailure(o, len(t.counts) > 0); err != nil {
		return err
	}
	if perr != nil && len(t.counts) == 0 {
		return fmt.Errorf("text search: %w", perr)
	}
	return nil
}

// engineFailure translates a failed text engine run into the tool's words; a run that found
// matches and only failed to read some files is not a failure.
func engineFailure(o outcome, found bool) error {
	if o.code != 2 {
		return nil
	}
	if msg, ok := regexError(o.stderr); ok {
		return fmt.Errorf("%s", msg)
	}
	if msg, ok := globError(o.stderr); ok {
		return fmt.Errorf("%s", msg)
	}
	if found {
		return nil
	}
	return fmt.Errorf("text search failed: %s", cleanEngineText(o.stderr))
}

// cleanEngineText keeps the first line of an engine's message, without the engine's name.
func cleanEngineText(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	for _, p := range []string{"rg: ", "ripgrep: ", "ast-grep: ", "sg: ", "Error: ", "error: "} {
		line = strings.TrimPrefix(line, p)
	}
	if line == "" {
		return "no details were given"
	}
	return line
}

// fileLines lists the files with the most matching lines first, ties by path.
func (t *textSearch) fileLines() []string {
	slices.SortFunc(t.counts, func(x, y fileCount) int {
		return cmp.Or(cmp.Compare(y.n, x.n), cmp.Compare(x.raw, y.raw))
	})
	shown := t.counts[:min(len(t.counts), t.limit)]
	lines := make([]string, 0, len(shown))
	for _, fc := range shown {
		lines = append(lines, fmt.Sprintf("%s: %s", t.pl.display(fc.raw), plural(fc.n, "match", "matches")))
		t.shown += fc.n
	}
	t.inFiles = len(shown)
	return lines
}

// fileShow is what content mode keeps of one file.
type fileShow struct {
	raw    string
	lines  []shownLine
	shown  int  // matches kept
	last   int  // line number of the last kept match
	done   bool // no more lines of this file are kept
	binary bool
}

// shownLine is one line content mode shows.
type shownLine struct {
	num   int
	text  string // the line made safe and clipped (showBytes)
	match bool   // a matching line, not context
}

// contentPass follows the engine's plain output in content mode, one file at a time: each
// file's lines arrive together, so a file ends where the path changes. Every matching line is
// counted; only the lines of files that can still be among the first by path are kept, and
// only those are copied.
type contentPass struct {
	t     *textSearch
	glob  globFilter
	kept  map[string]*fileShow
	bound []byte // when set, a file whose path sorts after it cannot be shown

	open    bool      // a file is being read
	path    []byte    // its path as the engine printed it
	counted bool      // it passes the glob
	lines   int       // its matching lines so far
	binary  bool      // the engine found it binary
	cur     *fileShow // its kept lines, when it can be shown
	unknown bool      // a binary file's matching lines were not printed, so not counted
}

// add takes one record of the engine's output.
func (p *contentPass) add(r rgLine) {
	if !p.open || !bytes.Equal(r.path, p.path) {
		p.end()
		p.begin(r.path)
	}
	switch {
	case r.binary:
		p.binary = true
	case r.match:
		p.lines++
	}
	if p.cur != nil && !p.cur.done && !r.binary {
		p.t.keepLine(p.cur, r)
	}
}

// begin starts a file.
func (p *contentPass) begin(path []byte) {
	p.open, p.path, p.lines, p.binary, p.cur = true, append(p.path[:0], path...), 0, false, nil
	p.counted = true
	if p.glob.path != nil {
		rel, err := filepath.Rel(p.t.pl.target, string(path))
		p.counted = err == nil && p.glob.keep(filepath.ToSlash(rel))
	}
	if p.counted && (p.bound == nil || bytes.Compare(path, p.bound) < 0) {
		p.cur = &fileShow{raw: string(path)}
	}
}

// end closes the file being read: it counts, and its kept lines join the candidates.
func (p *contentPass) end() {
	if !p.open {
		return
	}
	p.open = false
	if !p.counted || (p.lines == 0 && !p.binary) {
		return
	}
	p.t.matches += p.lines
	p.t.files++
	if p.binary && p.lines == 0 {
		p.unknown = true
	}
	if p.cur != nil {
		p.cur.binary = p.binary
		p.kept[p.cur.raw] = p.cur
		if len(p.kept) > 2*p.t.limit {
			if b := prune(p.kept, p.t.limit); b != "" {
				p.bound = []byte(b)
			}
		}
	}
}

// content shows matching lines of the first files by path, at most PerFileCap matches of each,
// with context, until the line cap is met, in one pass of the engine that also yields the true
// totals. The engine's plain output is read with byte operations; nothing is copied of a line
// that cannot be shown, so memory stays bounded on any tree.
func (t *textSearch) content(ctx context.Context) ([]string, error) {
	glob, err := parseGlob(t.a.Glob)
	if err != nil {
		return nil, err
	}
	args := append(t.args("--line-number", "--no-heading", "--null"), glob.engineArgs...)
	if t.a.Context > 0 {
		args = append(args, "--context", strconv.Itoa(t.a.Context))
	}
	args = append(args, "--regexp", t.a.Pattern, "--", t.pl.target)
	p := &contentPass{t: t, glob: glob, kept: map[string]*fileShow{}}
	r := &plainReader{context: t.a.Context > 0}
	o, err := collect(ctx, t.pl.dir, t.bin, args, func(line []byte) bool {
		if rec, ok := r.next(line); ok {
			p.add(rec)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	p.end()
	t.timedOut = o.timedOut
	if err := engineFailure(o, t.files > 0); err != nil {
		return nil, err
	}
	if p.unknown && !t.timedOut {
		// A file searched by name that turns out binary is only named, not counted: count it.
		t.matches, t.files = 0, 0
		if err := t.count(ctx); err != nil {
			return nil, err
		}
	}
	var lines []string
	for _, f := range sortedShows(p.kept) {
		if len(lines) >= t.limit {
			break
		}
		shown := t.pl.display(f.raw)
		if f.binary {
			lines = append(lines, shown+": binary file matches (not shown)")
			t.inFiles++
			continue
		}
		keep := f.lines[:min(len(f.lines), t.limit-len(lines))]
		for _, l := range keep {
			sep := "-"
			if l.match {
				sep = ":"
				t.shown++
			}
			text := shown + sep + strconv.Itoa(l.num) + sep
			if l.text != "" {
				text += " " + l.text
			}
			lines = append(lines, text)
		}
		if len(keep) > 0 {
			t.inFiles++
		}
	}
	return lines, nil
}

// keepLine adds a match or context line to a file's shown lines, at most PerFileCap matches
// (with the context that follows the last of them) and never more lines than the cap.
func (t *textSearch) keepLine(f *fileShow, r rgLine) {
	if f.shown == PerFileCap && (r.match || r.num > f.last+t.a.Context) || len(f.lines) >= t.limit {
		f.done = true
		return
	}
	if r.match {
		f.shown++
		f.last = r.num
	}
	f.lines = append(f.lines, shownLine{num: r.num, text: showBytes(r.text), match: r.match})
}

// sortedShows lists the kept files by path.
func sortedShows(kept map[string]*fileShow) []*fileShow {
	files := make([]*fileShow, 0, len(kept))
	for _, f := range kept {
		files = append(files, f)
	}
	slices.SortFunc(files, func(x, y *fileShow) int { return cmp.Compare(x.raw, y.raw) })
	return files
}

// prune drops the kept files that come after the first ones by path whose lines fill the cap,
// and returns the last path kept then, after which no file can be shown ("" while the cap is
// not filled).
func prune(kept map[string]*fileShow, limit int) string {
	n, bound := 0, ""
	for _, f := range sortedShows(kept) {
		if n >= limit {
			delete(kept, f.raw)
			continue
		}
		n += max(len(f.lines), 1)
		bound = f.raw
	}
	if n < limit {
		return ""
	}
	return bound
}

// showLine makes a file's line safe and short enough to show.
func showLine(s string) string {
	if strings.ContainsRune(s, 0) {
		return "(binary data not shown)"
	}
	return shape.ClipLine(strings.ToValidUTF8(s, "\uFFFD"), LineClip)
}

// showBytes is showLine for a line as the engine printed it, copying no more of it than is
// shown: a run of invalid UTF-8 counts as one character, as its replacement does.
func showBytes(b []byte) string {
	if bytes.IndexByte(b, 0) >= 0 {
		return "(binary data not shown)"
	}
	if len(b) <= LineClip && utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	n, invalid := 0, false // characters so far; the last byte was invalid
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			i++
			if invalid {
				continue
			}
			invalid = true
			if n < LineClip {
				sb.WriteString("\uFFFD")
			}
			n++
			continue
		}
		invalid = false
		if n < LineClip {
			sb.Write(b[i : i+size])
		}
		n++
		i += size
	}
	if n <= LineClip {
		return sb.String()
	}
	return fmt.Sprintf("%s… [%d more characters]", sb.String(), n-LineClip)
}

// reply shapes the shown lines and the totals into the result.
func (t *textSearch) reply(max int, lines []string) envelope.Reply {
	meta := map[string]any{"matches": t.matches, "files": t.files}
	var tail []string
	total := ""
	switch {
	case t.files == 0 && t.timedOut:
		tail = append(tail, "no matches found before the search stopped")
	case t.files == 0:
		tail = append(tail, fmt.Sprintf("no matches in %s (files ignored by .gitignore and hidden folders are not searched)", t.where()))
	default:
		total = fmt.Sprintf("%s in %s", plural(t.matches, "match", "matches"), plural(t.files, "file", "files"))
		if t.timedOut {
			total = "at least " + total
		}
		line := total
		if left := t.files - t.inFiles; t.mode == "files" {
			if left > 0 {
				line += fmt.Sprintf("; %s not shown (narrow with path or glob)", plural(left, "more file", "more files"))
			}
		} else if t.shown < t.matches {
			line += fmt.Sprintf("; showing %s from %s (files by path, at most %d matches per file, %s); narrow with path or glob to see the rest",
				plural(t.shown, "match", "matches"), plural(t.inFiles, "file", "files"), PerFileCap, plural(t.limit, "line", "lines"))
		}
		tail = append(tail, line)
	}
	var notes []string
	if t.timedOut {
		notes = append(notes, fmt.Sprintf("the search stopped after %s; results are partial: narrow path or glob", t.budget.Round(time.Millisecond)))
	}
	short := strings.Join(append([]string{total + "; narrow with path or glob to see the rest"}, notes...), "\n") + "\n"
	end := strings.Join(append(tail, notes...), "\n") + "\n"
	return envelope.Reply{Text: fitResult(max, lines, end, short), Meta: meta}
}

// where names the searched path for a message.
func (t *textSearch) where() string {
	if t.pl.target == "." {
		return "the working directory"
	}
	return t.pl.display(t.pl.target)
}

// plural writes n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
