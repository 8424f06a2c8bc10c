package graphtools

import (
	"context"
	"fmt"
	"strings"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/toolspec"
)

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
	ids := g.Lookup(args.Symbol, r.inScope)
	if len(ids) == 0 {
		where := r.name
		if r.scope != "" {
			where = r.rel(c, r.scope)
		}
		msg := fmt.Sprintf("no symbol %s in %s", args.Symbol, where)
		if s := g.Suggest(args.Symbol); len(s) > 0 {
			msg += "; near names: " + strings.Join(s, ", ")
		}
		return envelope.Errorf(meta(r, 0), "%s", msg)
	}
	if len(ids) > 1 {
		var lines []string
		for _, id := range ids[:min(len(ids), 30)] {
			s := g.Sym(id)
			lines = append(lines, fmt.Sprintf("  %s:%d  %s  %s", r.rel(c, g.Files[id.F].Path), s.Start, s.Qualified(), s.Sig))
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
	w := &callWriter{c: c, r: r, g: g.Graph, seen: map[graph.SymID]bool{t: true}}
	if dir == "in" {
		w.in(t, 1, depth)
	} else {
		w.out(t, 1, depth)
	}
	verb := "references to"
	if dir == "out" {
		verb = "references from"
	}
	header := fmt.Sprintf("%s%s %s  %s:%d-%d  %s\n", r.missingNote(c), verb, ts.Qualified(), r.rel(c, tf.Path), ts.Start, ts.End, ts.Sig)
	if l := graph.LangNamed(tf.Lang); l != nil && !l.Calls {
		header += fmt.Sprintf("note: the graph has no call edges for %s, so this list cannot be complete\n", tf.Lang)
	}
	if dir == "in" && g.InInterface(t) {
		header += "note: an interface method: these calls go through the interface, to whichever type implements it (code_callers on an implementation lists them too, via interface)\n"
	}
	if w.byName > 0 {
		header += fmt.Sprintf("note: %d edges are matched by name only (marked ~, with how many definitions share the name): the syntax does not say which is meant\n", w.byName)
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
	g      *graph.Graph
	lines  []string
	hits   int
	byName int
	seen   map[graph.SymID]bool
}

const maxCallLines = 400

func (w *callWriter) from(fi int32, ref *graph.Ref) (string, graph.SymID) {
	f := w.g.Files[fi]
	if ref.From < 0 {
		return "(top level)", graph.SymID{F: -1, S: -1}
	}
	return f.Syms()[ref.From].Qualified(), graph.SymID{F: fi, S: ref.From}
}

// byNameMark is the mark before an edge matched by name only and the label after it, saying among
// how many candidates; an edge through an interface is labelled so.
func byNameMark(e graph.Edge) (string, string) {
	if e.Via {
		return "", "  (via interface)"
	}
	if e.ByName == 0 {
		return "", ""
	}
	if e.ByName == 1 {
		return "~ ", "  (by name, the only candidate)"
	}
	return "~ ", fmt.Sprintf("  (by name, %d candidates)", e.ByName)
}

func (w *callWriter) in(t graph.SymID, d, maxDepth int) {
	edges := w.g.CallersOf(t)
	indent := strings.Repeat("  ", d)
	for _, e := range edges {
		if len(w.lines) >= maxCallLines {
			return
		}
		f := w.g.Files[e.File]
		ref := &f.LoadRefs()[e.Ref]
		caller, cid := w.from(e.File, ref)
		mark, label := byNameMark(e)
		if e.ByName > 0 {
			w.byName++
		}
		if ref.Value && f.Lang == "go" {
			label += "  (as a value)"
		}
		if d == 1 {
			w.hits++
		}
		w.lines = append(w.lines, fmt.Sprintf("%s%s%s:%d  %s%s", indent, mark, w.r.rel(w.c, f.Path), ref.Line, caller, label))
		if d < maxDepth && cid.F >= 0 && !w.seen[cid] {
			w.seen[cid] = true
			w.in(cid, d+1, maxDepth)
		}
	}
}

func (w *callWriter) out(s graph.SymID, d, maxDepth int) {
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
		mark, label := byNameMark(e)
		if ref.Value && f.Lang == "go" {
			label += "  (as a value)"
		}
		if e.ByName > 0 {
			w.byName++
		}
		w.lines = append(w.lines, fmt.Sprintf("%s%s%s  %s → %s:%d%s", indent, mark, site, ts.Qualified(), w.r.rel(w.c, w.g.Files[e.Target.F].Path), ts.Start, label))
		if d < maxDepth && ts.Kind.Callable() && !w.seen[e.Target] {
			w.seen[e.Target] = true
			w.out(e.Target, d+1, maxDepth)
		}
	}
}
