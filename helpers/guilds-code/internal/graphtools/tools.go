package graphtools

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/store"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/shape"
	"github.com/guildsai/guilds/shared/toolspec"
)

func meta(r *repo, hits int) map[string]any {
	m := map[string]any{"hits": hits}
	if r != nil {
		m["repository"] = r.name
	}
	return m
}

func fit(c *runs.Call, header string, lines []string) string {
	text, _ := shape.FitLines(header, lines, c.Max, func(n int) string {
		return fmt.Sprintf("… %d more lines left out", n)
	})
	return text
}

// Map answers code_map: folder clusters (named inside the repository) with counts and their most
// referenced symbols, then the most referenced overall; the repository defaults as repoDefault says.
func Map(ctx context.Context, c *runs.Call) envelope.Reply {
	var args toolspec.CodeMapArgs
	if err := c.DecodeArgs(&args); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	r, err := repoOrDefault(c, args.Repo)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	if err := r.open(ctx, c); err != nil {
		return envelope.Errorf(meta(r, 0), "%v", err)
	}
	g := r.g
	g.Counted(ctx)
	type cluster struct {
		dir         string
		files, syms int
		top         []graph.SymID
	}
	clusters := map[string]*cluster{}
	var all []graph.SymID
	langCount := map[string]int{}
	for fi, f := range g.Files {
		langCount[f.Lang]++
		key := clusterKey(f.Path)
		cl := clusters[key]
		if cl == nil {
			cl = &cluster{dir: key}
			clusters[key] = cl
		}
		cl.files++
		cl.syms += len(f.Syms())
		for si := range f.Syms() {
			if f.Syms()[si].Refs > 0 {
				id := graph.SymID{F: int32(fi), S: int32(si)}
				cl.top = append(cl.top, id)
				all = append(all, id)
			}
		}
	}
	byRefs := func(ids []graph.SymID) {
		sort.SliceStable(ids, func(i, j int) bool {
			a, b := g.Sym(ids[i]), g.Sym(ids[j])
			if a.Refs != b.Refs {
				return a.Refs > b.Refs
			}
			return a.Qualified() < b.Qualified()
		})
	}
	list := make([]*cluster, 0, len(clusters))
	symbols := 0
	for _, cl := range clusters {
		list = append(list, cl)
		symbols += cl.syms
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].syms != list[j].syms {
			return list[i].syms > list[j].syms
		}
		return list[i].dir < list[j].dir
	})
	var langs []string
	for _, l := range graph.LangNames() {
		if n := langCount[l]; n > 0 {
			langs = append(langs, fmt.Sprintf("%s %d", l, n))
		}
	}
	header := fmt.Sprintf("%srepository %s: %d files, %d symbols (%s)\n", r.missingNote(c), r.name, len(g.Files), symbols, strings.Join(langs, ", "))
	header += noCallsNote(langCount)
	var lines []string
	lines = append(lines, "folders (files, symbols, most referenced):")
	const maxClusters = 40
	for i, cl := range list {
		if i == maxClusters {
			lines = append(lines, fmt.Sprintf("  … %d more folders", len(list)-maxClusters))
			break
		}
		byRefs(cl.top)
		var tops []string
		for _, id := range cl.top[:min(len(cl.top), 4)] {
			tops = append(tops, fmt.Sprintf("%s (%d)", g.Sym(id).Qualified(), g.Sym(id).Refs))
		}
		// Folder names are the repository's own, wherever the working directory is.
		line := fmt.Sprintf("  %s/  %d files, %d symbols", cl.dir, cl.files, cl.syms)
		if len(tops) > 0 {
			line += ": " + strings.Join(tops, ", ")
		}
		lines = append(lines, line)
	}
	byRefs(all)
	lines = append(lines, "most referenced symbols:")
	for _, id := range all[:min(len(all), 20)] {
		s := g.Sym(id)
		lines = append(lines, fmt.Sprintf("  %s:%d  %s  (%d refs)", r.rel(c, g.Files[id.F].Path), s.Start, s.Sig, s.Refs))
	}
	if len(all) == 0 {
		lines = append(lines, "  (no resolved references)")
	}
	return envelope.Reply{Text: fit(c, header, lines), Meta: meta(r, len(g.Files))}
}

// clusterKey groups a file under its folder, at most two levels deep.
func clusterKey(p string) string {
	d := path.Dir(p)
	if d == "." {
		return "."
	}
	parts := strings.Split(d, "/")
	if len(parts) > 2 {
		parts = parts[:2]
	}
	return strings.Join(parts, "/")
}

// noCallsNote names the parsed languages whose query yields no call edges.
func noCallsNote(langCount map[string]int) string {
	var none []string
	for _, name := range graph.LangNames() {
		if !graph.LangNamed(name).Calls && langCount[name] > 0 {
			none = append(none, name)
		}
	}
	if len(none) == 0 {
		return ""
	}
	return fmt.Sprintf("note: %s files have symbols but no call edges in this graph\n", strings.Join(none, ", "))
}

// Outline answers code_outline: every signature of one file with its line span.
func Outline(ctx context.Context, c *runs.Call) envelope.Reply {
	var args toolspec.CodeOutlineArgs
	if err := c.DecodeArgs(&args); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	if args.Path == "" {
		return envelope.Errorf(nil, "path is required: the file to outline")
	}
	r, err := repoFor(c, args.Path)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	abs, _ := c.Resolve(args.Path)
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return envelope.Errorf(meta(r, 0), "%s is a folder; code_outline takes a file (code_map or code_find cover folders)", args.Path)
	}
	if graph.LangFor(abs) == nil {
		return envelope.Errorf(meta(r, 0), "%s is not in the graph: its language is not one the graph parses (%s); code_search in files or content mode still finds its text",
			args.Path, strings.Join(graph.LangNames(), ", "))
	}
	if err := r.open(ctx, c); err != nil {
		return envelope.Errorf(meta(r, 0), "%v", err)
	}
	f := r.g.File(r.scope)
	if f == nil {
		return envelope.Errorf(meta(r, 0), "%s is not in the graph: it is ignored (.gitignore, a dependency or build folder) or larger than %d bytes; code_search still finds its text", args.Path, store.MaxFileBytes)
	}
	if f.Crash != "" {
		text := fmt.Sprintf("%s%s (%s): not outlined: the parser crashed on it; file_read shows it\n", r.missingNote(c), r.rel(c, f.Path), f.Lang)
		return envelope.Reply{Text: text, Meta: meta(r, 0)}
	}
	header := fmt.Sprintf("%s%s (%s, %d lines, %d symbols)\n", r.missingNote(c), r.rel(c, f.Path), f.Lang, lineCount(f), len(f.Syms()))
	var lines []string
	for i := range f.Syms() {
		s := &f.Syms()[i]
		depth := 0
		for p := s.Parent; p >= 0; p = f.Syms()[p].Parent {
			depth++
		}
		span := fmt.Sprintf("%d-%d", s.Start, s.End)
		if s.Start == s.End {
			span = fmt.Sprint(s.Start)
		}
		lines = append(lines, fmt.Sprintf("%s%s  %s", strings.Repeat("  ", depth), span, s.Sig))
	}
	if len(lines) == 0 {
		lines = append(lines, "(no symbols)")
	}
	return envelope.Reply{Text: fit(c, header, lines), Meta: meta(r, len(f.Syms()))}
}

func lineCount(f *graph.File) uint32 {
	var n uint32
	for _, s := range f.Syms() {
		n = max(n, s.End)
	}
	for _, r := range f.LoadRefs() {
		n = max(n, r.Line)
	}
	return n
}

// words splits text into lower-case search words, breaking camelCase and snake_case.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, ch := range rs {
		switch {
		case unicode.IsLetter(ch) || unicode.IsDigit(ch):
			if unicode.IsUpper(ch) && len(cur) > 0 {
				prevLower := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				if prevLower || (unicode.IsUpper(rs[i-1]) && nextLower) {
					flush()
				}
			}
			cur = append(cur, ch)
		default:
			flush()
		}
	}
	flush()
	return out
}

var stopWords = map[string]bool{"the": true, "a": true, "an": true, "of": true, "to": true, "in": true, "is": true, "and": true,
	"or": true, "for": true, "where": true, "what": true, "how": true, "does": true, "do": true, "which": true, "who": true,
	"it": true, "on": true, "by": true, "with": true, "that": true, "this": true, "be": true, "are": true, "from": true}

// Find answers code_find: symbols and files ranked against a question (words stemmed, identifiers
// split, names before doc comments before paths, hits covering more of the question first),
// weighted by centrality; each symbol says what it matched.
func Find(ctx context.Context, c *runs.Call) envelope.Reply {
	var args toolspec.CodeFindArgs
	if err := c.DecodeArgs(&args); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	limit := toolspec.CodeFindDefaultLimit
	if args.Limit != nil {
		limit = *args.Limit
	}
	if limit < 1 || limit > toolspec.CodeFindMaxLimit {
		return envelope.Errorf(nil, "limit %d is out of range: pass 1 to %d (default %d)", limit, toolspec.CodeFindMaxLimit, toolspec.CodeFindDefaultLimit)
	}
	var qwords []string
	for _, w := range words(args.Question) {
		if !stopWords[w] {
			qwords = append(qwords, w)
		}
	}
	if len(qwords) == 0 {
		return envelope.Errorf(nil, "question is required: describe what you look for, e.g. \"parse config file\"")
	}
	r, err := repoFor(c, args.In)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	if err := r.open(ctx, c); err != nil {
		return envelope.Errorf(meta(r, 0), "%v", err)
	}
	g := r.g
	g.Counted(ctx)
	type scored struct {
		id    graph.SymID
		score float64
		why   evidence
	}
	qstems := make([]string, len(qwords))
	for i, q := range qwords {
		qstems[i] = q[:stemLen(q)]
	}
	var syms []scored
	fileScore := map[int32]float64{}
	joined := strings.Join(qwords, "")
	for fi, f := range g.Files {
		if !r.inScope(f.Path) {
			continue
		}
		var pathHits float64
		for _, q := range qstems {
			if hasStem(f.Path, q) {
				pathHits++
			}
		}
		// Symbols are scored where they are stored, without decoding them: only the ones shown are.
		f.EachSym(func(si int, name, container, doc string, refs uint32) {
			sc, why := matchScore(qwords, qstems, name, container, doc)
			if strings.EqualFold(name, joined) {
				sc += 4
				why |= byExactName
			}
			if sc == 0 {
				return
			}
			if pathHits > 0 {
				sc += 0.5 * pathHits
				why |= byPath
			}
			sc *= 1 + 0.3*math.Log2(1+float64(refs))
			syms = append(syms, scored{graph.SymID{F: int32(fi), S: int32(si)}, sc, why})
			fileScore[int32(fi)] += sc / 4
		})
		if pathHits > 0 {
			fileScore[int32(fi)] += 2 * pathHits
		}
	}
	sort.Slice(syms, func(i, j int) bool {
		if syms[i].score != syms[j].score {
			return syms[i].score > syms[j].score
		}
		a, b := syms[i].id, syms[j].id
		if a.F != b.F {
			return a.F < b.F
		}
		return a.S < b.S
	})
	var files []int32
	for fi := range fileScore {
		files = append(files, fi)
	}
	sort.Slice(files, func(i, j int) bool {
		if fileScore[files[i]] != fileScore[files[j]] {
			return fileScore[files[i]] > fileScore[files[j]]
		}
		return files[i] < files[j]
	})
	header := r.missingNote(c)
	var lines []string
	if len(syms) == 0 && len(files) == 0 {
		header += fmt.Sprintf("no symbol or file matches %q in %s; try other words or code_search for text\n", args.Question, r.name)
		return envelope.Reply{Text: header, Meta: meta(r, 0)}
	}
	shown := syms[:min(len(syms), limit)]
	if len(shown) > 0 {
		lines = append(lines, "symbols:")
	}
	for _, sc := range shown {
		s := g.Sym(sc.id)
		f := g.Files[sc.id.F]
		line := fmt.Sprintf("%s:%d  %s  (%s", r.rel(c, f.Path), s.Start, s.Sig, sc.why)
		if s.Refs > 0 {
			line += fmt.Sprintf("; %d refs", s.Refs)
		}
		line += ")"
		lines = append(lines, line)
		if args.Source {
			for _, src := range sourceLines(filepath.Join(r.root, filepath.FromSlash(f.Path)), s.Start, min(s.End, s.Start+7)) {
				lines = append(lines, "    "+src)
			}
		}
	}
	fileLimit := min(len(files), max(3, limit/2))
	if fileLimit > 0 {
		lines = append(lines, "files:")
	}
	for _, fi := range files[:fileLimit] {
		f := g.Files[fi]
		lines = append(lines, fmt.Sprintf("%s  (%s, %d symbols)", r.rel(c, f.Path), f.Lang, f.SymCount()))
	}
	return envelope.Reply{Text: fit(c, header, lines), Meta: meta(r, len(shown)+fileLimit)}
}

// eachWord calls fn with each word of s as words splits it (letters and digits, split at case
// changes), unchanged in case, until fn returns true; it reports whether fn did. It allocates nothing.
func eachWord(s string, fn func(string) bool) bool {
	start := -1
	var prev rune
	for i := 0; i < len(s); {
		ch, n := rune(s[i]), 1
		if ch >= utf8.RuneSelf {
			ch, n = utf8.DecodeRuneInString(s[i:])
		}
		if unicode.IsLetter(ch) || unicode.IsDigit(ch) {
			if start >= 0 && unicode.IsUpper(ch) {
				next, _ := utf8.DecodeRuneInString(s[i+n:])
				nextLower := i+n < len(s) && unicode.IsLower(next)
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && nextLower {
					if fn(s[start:i]) {
						return true
					}
					start = i
				}
			}
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			if fn(s[start:i]) {
				return true
			}
			start = -1
		}
		prev = ch
		i += n
	}
	return start >= 0 && fn(s[start:])
}

// hasWord reports whether one of the words of s is q (lower case), as containsWord(words(s), q) does.
func hasWord(s, q string) bool {
	return eachWord(s, func(w string) bool { return strings.EqualFold(w, q) })
}

// containsFold reports whether s holds q (lower case) in any case, as strings.Contains(strings.ToLower(s), q) does.
func containsFold(s, q string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(s), q)
		}
	}
	if len(q) > len(s) {
		return false
	}
	for i := 0; i+len(q) <= len(s); i++ {
		j := 0
		for j < len(q) {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != q[j] {
				break
			}
			j++
		}
		if j == len(q) {
			return true
		}
	}
	return false
}

func containsWord(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// sourceLines reads lines from..to (1-based, inclusive) of a file, each clipped.
func sourceLines(p string, from, to uint32) []string {
	fh, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var out []string
	for n := uint32(1); sc.Scan() && n <= to; n++ {
		if n >= from {
			out = append(out, fmt.Sprintf("%d: %s", n, shape.ClipLine(strings.TrimRight(sc.Text(), "\r"), 200)))
		}
	}
	return out
}
