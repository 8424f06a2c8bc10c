package search

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/toolspec"
)

// code_match's limit: default and largest (toolspec holds them).
const (
	DefaultMatchLimit = toolspec.CodeMatchDefaultLimit
	MaxMatchLimit     = toolspec.CodeMatchMaxLimit
)

// MatchArgs are code_match's arguments, as toolspec defines them.
type MatchArgs = toolspec.CodeMatchArgs

// Match runs code_match: structural matches of a syntax pattern, never in comments or strings.
// The language comes from lang, else from each file's extension. The budget bounds the search.
func Match(ctx context.Context, c *runs.Call, a MatchArgs, budget time.Duration) envelope.Reply {
	if strings.TrimSpace(a.Pattern) == "" {
		return envelope.Errorf(nil, "pattern is empty; pass a code pattern such as fmt.Errorf($$$ARGS), with $NAME for one node and $$$NAME for any number")
	}
	if strings.ContainsRune(a.Pattern, 0) {
		return envelope.Errorf(nil, "pattern must not contain a NUL byte")
	}
	limit := DefaultMatchLimit
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > MaxMatchLimit {
			return envelope.Errorf(nil, "limit must be 1 to %d (default %d), got %d", MaxMatchLimit, DefaultMatchLimit, *a.Limit)
		}
		limit = *a.Limit
	}
	var lang language
	known := false
	if a.Lang != "" {
		if lang, known = lookupLang(a.Lang); !known {
			return envelope.Errorf(nil, "lang %q is not a language the syntax search knows; use one of %s (or leave lang out to go by each file's extension)", a.Lang, langNames())
		}
	}
	pl, err := resolvePlace(c, a.Path)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	if !known && !pl.isDir {
		if lang, known = langOfFile(pl.abs); !known {
			return envelope.Errorf(nil, "cannot tell the language of %s from its extension; pass lang (one of %s)", pl.display(pl.target), langNames())
		}
	}
	bin, err := syntaxEngine.locate()
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	s := &syntaxSearch{a: a, pl: pl, bin: bin, lang: lang, known: known, limit: limit, budget: budget}
	if err := s.run(ctx); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	return s.reply(c.Max)
}

// qualifiedCall is the shape of a bare call on a package or value, pkg.Func(...), which Go
// alone may read as a type conversion.
// It is compiled on first use, not at start-up.
var qualifiedCall = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)^\s*[\pL_$][\pL\pN_$]*(?:\.[\pL_$][\pL\pN_$]*)+\s*\(.*\)\s*$`)
})

// syntaxSearch is one code_match run.
type syntaxSearch struct {
	a      MatchArgs
	pl     place
	bin    string
	lang   language
	known  bool
	limit  int
	budget time.Duration

	pattern  string // the pattern given to the engine
	selector string // the node kind to match inside pattern, when it is wrapped
	note     string // how the pattern was read, when not as given
	tally    matchTally
	timedOut bool
}

// run checks how the pattern parses where that matters, then collects every match.
func (s *syntaxSearch) run(ctx context.Context) error {
	s.pattern = s.a.Pattern
	if s.known && s.lang.name == "go" && qualifiedCall().MatchString(s.pattern) {
		// Go reads a bare pkg.Func(args) as a type conversion; inside a function body it is a call.
		root, broken, err := s.parse(ctx, s.pattern)
		if err != nil {
			return err
		}
		if root == "type_conversion_expression" && !broken {
			s.pattern, s.selector = "func _() { "+s.a.Pattern+" }", "call_expression"
			s.note = "read as a Go call expression"
		}
	}
	if err := s.search(ctx); err != nil {
		return err
	}
	if s.known && s.selector == "" && s.tally.lines == 0 && !s.timedOut {
		// A pattern with a syntax error can still match (the engine only warns); one that
		// matched nothing and does not parse gets a form that does.
		_, broken, err := s.parse(ctx, s.pattern)
		if err != nil {
			return err
		}
		if broken {
			return fmt.Errorf("%s", patternHelp(s.lang, true))
		}
	}
	if s.tally.lines == 0 && !s.known && s.pl.isDir && !s.timedOut && qualifiedCall().MatchString(s.a.Pattern) {
		// Without lang, Go files read a bare pkg.Func(args) as a type conversion and match
		// nothing; read it once more as a Go call in them.
		goLang, _ := lookupLang("go")
		probe := &syntaxSearch{pl: s.pl, bin: s.bin, lang: goLang, known: true, budget: s.budget}
		if root, broken, err := probe.parse(ctx, s.a.Pattern); err == nil && !broken && root == "type_conversion_expression" {
			s.lang, s.known = goLang, true
			s.pattern, s.selector = "func _() { "+s.a.Pattern+" }", "call_expression"
			s.note = "read as a Go call expression in Go files"
			return s.search(ctx)
		}
	}
	return nil
}

// search runs the engine over the target and collects every match. The engine honours
// .gitignore only inside a git repository; elsewhere the text engine lists the files that
// .gitignore leaves in, so both searches skip the same files, and they are searched in batches
// that fit on a command line.
func (s *syntaxSearch) search(ctx context.Context) error {
	targets := [][]string{{s.pl.target}}
	if s.pl.isDir && !inGitRepo(s.pl.abs) {
		files, err := s.listFiles(ctx)
		if err != nil {
			return err
		}
		if files != nil {
			targets = batches(files, maxArgBytes)
		}
	}
	for _, batch := range targets {
		if len(batch) == 0 {
			continue
		}
		if err := s.searchBatch(ctx, batch); err != nil || s.timedOut {
			return err
		}
	}
	return nil
}

// maxArgBytes bounds the paths given to one engine run (Linux allows 2 MiB for arguments and
// environment together).
const maxArgBytes = 512 << 10

// searchBatch runs the engine once over paths.
func (s *syntaxSearch) searchBatch(ctx context.Context, paths []string) error {
	args := []string{"run", "--pattern=" + s.pattern, "--json=stream", "--color=never"}
	if s.selector != "" {
		args = append(args, "--selector="+s.selector)
	}
	if s.known {
		args = append(args, "--lang="+s.lang.name)
	}
	args = append(append(args, "--"), paths...)
	o, err := stream(ctx, s.pl.dir, s.bin, args, func(line []byte) bool {
		if m, err := parseSGMatch(line); err == nil {
			s.tally.add(m, s.limit)
		}
		return true
	})
	if err != nil {
		return err
	}
	s.timedOut = o.timedOut
	if o.code > 1 && s.tally.lines == 0 {
		if msg, ok := syntaxError(o.stderr, s.lang, s.known); ok {
			return fmt.Errorf("%s", msg)
		}
		return fmt.Errorf("syntax search failed: %s", cleanSyntaxText(o.stderr))
	}
	return nil
}

// listFiles lists the files under the target that .gitignore leaves in (of the search's
// language when it has one). It returns nil without the text engine: the syntax engine then
// walks the folder itself.
func (s *syntaxSearch) listFiles(ctx context.Context) ([]string, error) {
	bin, err := textEngine.locate()
	if err != nil {
		return nil, nil
	}
	args := []string{"--files", "--null", "--no-config", "--no-require-git", "--no-messages"}
	if s.known {
		// A file type, not the engine's glob flag: that one would override .gitignore.
		for _, ext := range s.lang.exts {
			args = append(args, "--type-add", globTypeName+":*."+ext)
		}
		args = append(args, "--type", globTypeName)
	}
	files := []string{}
	carry := "" // paths end in NUL and may hold newlines, which split the output's lines
	o, err := stream(ctx, s.pl.dir, bin, append(args, "--", s.pl.target), func(line []byte) bool {
		parts := strings.Split(carry+string(line), "\x00")
		carry = parts[len(parts)-1]
		for _, p := range parts[:len(parts)-1] {
			if p != "" {
				files = append(files, p)
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	s.timedOut = o.timedOut
	return files, nil
}

// inGitRepo reports whether dir or a folder above it holds .git.
func inGitRepo(dir string) bool {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// batches splits paths into groups whose lengths add up to at most max bytes each.
func batches(paths []string, max int) [][]string {
	var out [][]string
	start, size := 0, 0
	for i, p := range paths {
		if size+len(p)+1 > max && i > start {
			out = append(out, paths[start:i])
			start, size = i, 0
		}
		size += len(p) + 1
	}
	if start < len(paths) {
		out = append(out, paths[start:])
	}
	return out
}

// parse asks the engine how it reads pattern in the search's language.
func (s *syntaxSearch) parse(ctx context.Context, pattern string) (root string, broken bool, err error) {
	args := []string{"run", "--pattern=" + pattern, "--lang=" + s.lang.name, "--debug-query=pattern", "--stdin"}
	o, err := stream(ctx, s.pl.dir, s.bin, args, func([]byte) bool { return true })
	if err != nil {
		return "", false, err
	}
	if o.timedOut {
		return "", false, fmt.Errorf("syntax search stopped after %s before it started", s.budget)
	}
	if o.code > 1 {
		if msg, ok := syntaxError(o.stderr, s.lang, true); ok {
			return "", false, fmt.Errorf("%s", msg)
		}
		return "", false, fmt.Errorf("syntax search failed: %s", cleanSyntaxText(o.stderr))
	}
	root, broken = patternRoot(o.stderr)
	return root, broken, nil
}

// cleanSyntaxText keeps the first line of the engine's message, in the tool's words.
func cleanSyntaxText(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.Contains(l, "ast-grep") || strings.HasPrefix(l, "See also") || strings.HasPrefix(l, "Help:") {
			continue
		}
		return cleanEngineText(l)
	}
	return "no details were given"
}

// reply shapes the matches: sorted by path and line, one line each, then the totals.
func (s *syntaxSearch) reply(max int) envelope.Reply {
	shown := s.tally.first(s.limit)
	files := len(s.tally.files)
	meta := map[string]any{"matches": s.tally.lines, "files": files}
	lines := make([]string, 0, len(shown))
	for _, m := range shown {
		lines = append(lines, fmt.Sprintf("%s:%d: %s", s.pl.display(m.File), m.Line, m.Text))
	}
	var tail []string
	total := ""
	switch {
	case s.tally.lines == 0 && s.timedOut:
		tail = append(tail, "no structural matches found before the search stopped")
	case s.tally.lines == 0:
		where := "the working directory"
		if s.pl.target != "." {
			where = s.pl.display(s.pl.target)
		}
		msg := fmt.Sprintf("no structural matches in %s", where)
		if !s.known {
			msg += " (the pattern was read in the language of each file's extension; pass lang to read it as one language)"
		}
		tail = append(tail, msg)
	default:
		total = fmt.Sprintf("%s in %s", plural(s.tally.lines, "matching line", "matching lines"), plural(files, "file", "files"))
		if s.timedOut {
			total = "at least " + total
		}
		line := total
		if left := s.tally.lines - len(shown); left > 0 {
			line += fmt.Sprintf("; %d more not shown (limit %d; narrow with path or lang)", left, s.limit)
		}
		tail = append(tail, line)
	}
	var notes []string
	if s.note != "" {
		notes = append(notes, "pattern "+s.note)
	}
	if s.timedOut {
		notes = append(notes, fmt.Sprintf("the search stopped after %s; results are partial: narrow path or lang", s.budget.Round(time.Millisecond)))
	}
	short := strings.Join(append([]string{total + "; narrow with path or lang to see the rest"}, notes...), "\n") + "\n"
	end := strings.Join(append(tail, notes...), "\n") + "\n"
	return envelope.Reply{Text: fitResult(max, lines, end, short), Meta: meta}
}

// matchTally counts structural matches as distinct matching lines and files, and keeps only
// the first lines by path and line that can be shown, so memory stays bounded on any tree.
type matchTally struct {
	lines   int             // distinct matching lines
	files   map[string]bool // files with a match
	curFile string          // the engine reports a file's matches together
	curSeen map[int]bool    // lines of curFile already counted
	best    []sgMatch       // candidates for the first lines shown
	sorted  bool            // best is sorted, deduplicated and at most limit long
}

func sgLess(x, y sgMatch) int {
	return cmp.Or(cmp.Compare(x.File, y.File), cmp.Compare(x.Line, y.Line))
}

// add counts one match and keeps it when it may be among the first limit lines.
func (t *matchTally) add(m sgMatch, limit int) {
	if t.files == nil {
		t.files = map[string]bool{}
	}
	if m.File != t.curFile {
		t.curFile, t.curSeen = m.File, map[int]bool{}
	}
	if t.curSeen[m.Line] {
		return // nested matches on one line are one line
	}
	t.curSeen[m.Line] = true
	t.lines++
	t.files[m.File] = true
	if t.sorted && len(t.best) >= limit && sgLess(m, t.best[len(t.best)-1]) >= 0 {
		return
	}
	m.Text = showLine(m.Text)
	t.best = append(t.best, m)
	t.sorted = false
	if len(t.best) >= 4*limit {
		t.compact(limit)
	}
}

// compact sorts the candidates, drops repeated lines and keeps the first limit.
func (t *matchTally) compact(limit int) {
	slices.SortFunc(t.best, sgLess)
	t.best = slices.CompactFunc(t.best, func(x, y sgMatch) bool { return x.File == y.File && x.Line == y.Line })
	t.best = t.best[:min(len(t.best), limit)]
	t.sorted = true
}

// first returns the first limit matching lines by path and line.
func (t *matchTally) first(limit int) []sgMatch {
	t.compact(limit)
	return t.best
}
