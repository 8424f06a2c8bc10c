package search

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/shape"
)

// DefaultBudget is how long a text or syntax search runs before it returns what it has.
const DefaultBudget = 60 * time.Second

// The caps of the spec's "Code search" section.
const (
	FilesCap       = 30  // files mode lists at most this many files
	ContentLineCap = 40  // content mode shows at most this many lines
	PerFileCap     = 10  // content mode shows at most this many matches of one file
	MaxContext     = 5   // content mode's largest context
	MaxTextLimit   = 40  // limit is 1 to this; it lowers a mode's cap and never raises it
	LineClip       = 300 // a shown line longer than this many characters is clipped
)

// TextArgs are code_search's arguments.
//
// limit (1 to 40) lowers the mode's cap and never raises it: files mode lists at most
// min(limit, 30) files, content mode shows at most min(limit, 40) lines; the cap of 10
// matches per file stays. Matches are counted as matching lines.
type TextArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	Mode       string `json:"mode"`
	Fixed      bool   `json:"fixed"`
	IgnoreCase bool   `json:"ignore_case"`
	Context    int    `json:"context"`
	Limit      *int   `json:"limit"`
}

// check validates the arguments and returns the mode and its cap.
func (a TextArgs) check() (mode string, limit int, err error) {
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
	mode, limit, err := a.check()
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
	o, err := stream(ctx, t.pl.dir, t.bin, args, func(line []byte) bool {
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
	text  string
	match bool // a matching line, not context
}

// content shows matching lines of the first files by path, at most PerFileCap matches of each,
// with context, until the line cap is met, in one pass of the engine that also yields the true
// totals. Each file's output arrives whole; only the lines of the files that can still be among
// the first by path are decoded and kept, so memory stays bounded on any tree.
func (t *textSearch) content(ctx context.Context) ([]string, error) {
	glob, err := parseGlob(t.a.Glob)
	if err != nil {
		return nil, err
	}
	args := append(t.args("--json"), glob.engineArgs...)
	if t.a.Context > 0 {
		args = append(args, "--context", fmt.Sprint(t.a.Context))
	}
	args = append(args, "--regexp", t.a.Pattern, "--", t.pl.target)
	var (
		kept    = map[string]*fileShow{}
		cur     *fileShow // the file being read, when its lines are kept
		counted = true    // the file being read passes the glob
		bound   string    // when set, a file whose path sorts after it cannot be shown
	)
	matchPrefix, contextPrefix := []byte(`{"type":"match"`), []byte(`{"type":"context"`)
	o, err := stream(ctx, t.pl.dir, t.bin, args, func(line []byte) bool {
		if bytes.HasPrefix(line, matchPrefix) || bytes.HasPrefix(line, contextPrefix) {
			if cur != nil && !cur.done {
				if m, err := parseRGMessage(line); err == nil {
					t.keepLine(cur, m)
				}
			}
			return true
		}
		m, err := parseRGMessage(line)
		if err != nil {
			return true
		}
		switch m.Type {
		case "begin":
			cur, counted = nil, true
			if glob.path != nil {
				rel, err := filepath.Rel(t.pl.target, m.Path)
				counted = err == nil && glob.keep(filepath.ToSlash(rel))
			}
			if counted && (bound == "" || m.Path < bound) {
				cur = &fileShow{raw: m.Path}
			}
		case "end":
			if counted && m.Lines > 0 {
				t.matches += m.Lines
				t.files++
				if cur != nil {
					cur.binary = m.Binary
					kept[cur.raw] = cur
					if len(kept) > 2*t.limit {
						bound = prune(kept, t.limit)
					}
				}
			}
			cur = nil
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	t.timedOut = o.timedOut
	if err := engineFailure(o, t.files > 0); err != nil {
		return nil, err
	}
	files := sortedShows(kept)
	var lines []string
	for _, f := range files {
		if len(lines) >= t.limit {
			break
		}
		if f.binary {
			f.lines = []shownLine{{text: t.pl.display(f.raw) + ": binary file matches (not shown)"}}
		}
		keep := f.lines[:min(len(f.lines), t.limit-len(lines))]
		for _, l := range keep {
			if l.match {
				t.shown++
			}
			lines = append(lines, l.text)
		}
		if len(keep) > 0 {
			t.inFiles++
		}
	}
	return lines, nil
}

// keepLine adds a match or context line to a file's shown lines, at most PerFileCap matches
// (with the context that follows the last of them) and never more lines than the cap.
func (t *textSearch) keepLine(f *fileShow, m rgMsg) {
	isMatch := m.Type == "match"
	if f.shown == PerFileCap && (isMatch || m.Line > f.last+t.a.Context) || len(f.lines) >= t.limit {
		f.done = true
		return
	}
	sep := "-"
	if isMatch {
		sep = ":"
		f.shown++
		f.last = m.Line
	}
	f.lines = append(f.lines, shownLine{
		text:  strings.TrimSuffix(fmt.Sprintf("%s%s%d%s %s", t.pl.display(f.raw), sep, m.Line, sep, showLine(m.Text)), " "),
		match: isMatch,
	})
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
