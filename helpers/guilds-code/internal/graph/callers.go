package graph

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/toolspec"
)

// lookup finds the definitions a symbol argument names: a name or Type.method, module.function, a::b.
func (g *Graph) lookup(r *repo, symbol string) []SymID {
	sym := strings.TrimSpace(strings.TrimSuffix(symbol, "()"))
	qual, name := "", sym
	if i := strings.LastIndexAny(sym, ".:#"); i >= 0 {
		qual, name = strings.TrimRight(sym[:i], ".:#"), sym[i+1:]
	}
	var out []SymID
	for _, id := range g.named(name) {
		f := g.Files[id.F]
		if !r.inScope(f.Path) {
			continue
		}
		s := g.Sym(id)
		if qual != "" && !qualifies(f, s, qual) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// qualifies reports whether qual names the symbol's container, package, module file or folder.
func qualifies(f *File, s *Symbol, qual string) bool {
	last := lastSegment(qual)
	if s.Container == last || s.Container == qual {
		return true
	}
	stem := strings.TrimSuffix(path.Base(f.Path), path.Ext(f.Path))
	dir := path.Dir(f.Path)
	modPath := strings.TrimSuffix(f.Path, path.Ext(f.Path))
	return s.Container == "" && (f.Pkg == last || stem == last || path.Base(dir) == last ||
		strings.ReplaceAll(modPath, "/", ".") == qual || strings.HasSuffix(strings.ReplaceAll(modPath, "/", "."), "."+qual))
}

// suggest lists up to five names close to the one asked for.
func (g *Graph) suggest(name string) []string {
	name = strings.ToLower(lastSegment(name))
	type cand struct {
		n string
		d int
	}
	var cs []cand
	g.names.each(func(n string) {
		l := strings.ToLower(n)
		d := editDistance(name, l, 3)
		if strings.Contains(l, name) || strings.Contains(name, l) && len(l) > 3 {
			d = min(d, 2)
		}
		if d <= 2 {
			if ids := g.named(n); len(ids) > 0 {
				cs = append(cs, cand{qualified(g.Sym(ids[0])), d})
			}
		}
	})
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].n < cs[j].n
	})
	var out []string
	for i := 0; i < len(cs) && len(out) < 5; i++ {
		out = append(out, cs[i].n)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, stopping early past limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Callers answers code_callers: what references a symbol (in) or what it references (out), to a depth.
func Callers(ctx context.Context, c *runs.Call) envelope.Reply {
	var args toolspec.CodeCallersArgs
	if err := c.DecodeArgs(&args); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	if strings.TrimSpace(args.Symbol) == "" {
		return envelope.Errorf(nil, "symbol is required: a name, or a qualified name such as Type.method or module.function")
	}
	dir := args.Direction
	if dir == "" {
		dir = "in"
	}
	if dir != "in" && dir != "out" {
		return envelope.Errorf(nil, "direction %q is not valid: pass in (what references the symbol) or out (what it references)", args.Direction)
	}
	depth := toolspec.CodeCallersDefaultDepth
	if args.Depth != nil {
		depth = *args.Depth
	}
	if depth < 1 || depth > toolspec.CodeCallersMaxDepth {
		return envelope.Errorf(nil, "depth %d is out of range: pass 1, 2 or 3", depth)
	}
	r, err := repoFor(c, args.In)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	if err := r.open(ctx, c); err != nil {
		return envelope.Errorf(meta(r, 0), "%v", err)
	}
	g := r.g
	ids := g.lookup(r, args.Symbol)
	if len(ids) == 0 {
		where := r.name
		if r.scope != "" {
			where = r.rel(c, r.scope)
		}
		msg := fmt.Sprintf("no symbol %s in %s", args.Symbol, where)
		if s := g.suggest(args.Symbol); len(s) > 0 {
			msg += "; near names: " + strings.Join(s, ", ")
		}
		return envelope.Errorf(meta(r, 0), "%s", msg)
	}
	if len(ids) > 1 {
		var lines []string
		for _, id := range ids[:min(len(ids), 30)] {
			s := g.Sym(id)
			lines = append(lines, fmt.Sprintf("  %s:%d  %s  %s", r.rel(c, g.Files[id.F].Path), s.Start, qualified(s), s.Sig))
		}
		if len(ids) > 30 {
			lines = append(lines, fmt.Sprintf("  … %d more", len(ids)-30))
		}
		return envelope.Errorf(meta(r, 0), "%s is ambiguous: %d definitions; pass a qualified name (Type.method, module.function) or in with the file:\n%s",
			args.Symbol, len(ids), strings.Join(lines, "\n"))
	}
	t := ids[0]
	ts := g.Sym(t)
	tf := g.Files[t.F]
	w := &callWriter{c: c, r: r, g: g, seen: map[SymID]bool{t: true}}
	if dir == "in" {
		w.in(t, 1, depth)
	} else {
		w.out(t, 1, depth)
	}
	verb := "references to"
	if dir == "out" {
		verb = "references from"
	}
	header := fmt.Sprintf("%s%s %s  %s:%d-%d  %s\n", r.missingNote(c), verb, qualified(ts), r.rel(c, tf.Path), ts.Start, ts.End, ts.Sig)
	if l := LangNamed(tf.Lang); l != nil && !l.Calls {
		header += fmt.Sprintf("note: the graph has no call edges for %s, so this list cannot be complete\n", tf.Lang)
	}
	if w.byName > 0 {
		header += fmt.Sprintf("note: %d edges are matched by name only (marked ~): the syntax does not say which definition is meant\n", w.byName)
	}
	if len(w.lines) == 0 {
		if dir == "in" {
			w.lines = append(w.lines, "  (no references found in the graph)")
		} else {
			w.lines = append(w.lines, "  (it references nothing)")
		}
	}
	return envelope.Reply{Text: fit(c, header, w.lines), Meta: meta(r, w.hits)}
}

type callWriter struct {
	c      *runs.Call
	r      *repo
	g      *Graph
	lines  []string
	hits   int
	byName int
	seen   map[SymID]bool
}

const maxCallLines = 400

func (w *callWriter) from(fi int32, ref *Ref) (string, SymID) {
	f := w.g.Files[fi]
	if ref.From < 0 {
		return "(top level)", SymID{-1, -1}
	}
	return qualified(&f.Syms()[ref.From]), SymID{fi, ref.From}
}

func (w *callWriter) in(t SymID, d, maxDepth int) {
	edges := w.g.CallersOf(t)
	indent := strings.Repeat("  ", d)
	for _, e := range edges {
		if len(w.lines) >= maxCallLines {
			return
		}
		f := w.g.Files[e.File]
		ref := &f.LoadRefs()[e.Ref]
		caller, cid := w.from(e.File, ref)
		mark := ""
		if e.ByName {
			mark = "~ "
			w.byName++
		}
		if d == 1 {
			w.hits++
		}
		w.lines = append(w.lines, fmt.Sprintf("%s%s%s:%d  %s", indent, mark, w.r.rel(w.c, f.Path), ref.Line, caller))
		if d < maxDepth && cid.F >= 0 && !w.seen[cid] {
			w.seen[cid] = true
			w.in(cid, d+1, maxDepth)
		}
	}
}

func (w *callWriter) out(s SymID, d, maxDepth int) {
	edges := w.g.CallsFrom(s)
	indent := strings.Repeat("  ", d)
	for _, e := range edges {
		if len(w.lines) >= maxCallLines {
			return
		}
		f := w.g.Files[e.File]
		ref := &f.LoadRefs()[e.Ref]
		site := fmt.Sprintf("%s:%d", w.r.rel(w.c, f.Path), ref.Line)
		name := ref.Name
		if ref.Recv != "" {
			name = ref.Recv + "." + ref.Name
		}
		if d == 1 {
			w.hits++
		}
		if e.Target.F < 0 {
			w.lines = append(w.lines, fmt.Sprintf("%s%s  %s  (outside the graph)", indent, site, name))
			continue
		}
		ts := w.g.Sym(e.Target)
		mark := ""
		if e.ByName {
			mark = "~ "
			w.byName++
		}
		w.lines = append(w.lines, fmt.Sprintf("%s%s%s  %s → %s:%d", indent, mark, site, qualified(ts), w.r.rel(w.c, w.g.Files[e.Target.F].Path), ts.Start))
		if d < maxDepth && ts.Kind.callable() && !w.seen[e.Target] {
			w.seen[e.Target] = true
			w.out(e.Target, d+1, maxDepth)
		}
	}
}
