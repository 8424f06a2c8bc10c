package graph

import (
	"path"
	"sort"
	"strings"
)

// Qualified is the symbol's name under its container (Type.method), or its name at top level.
func (s *Symbol) Qualified() string {
	if s.Container != "" {
		return s.Container + "." + s.Name
	}
	return s.Name
}

// InInterface reports whether the symbol is a method an interface declares: its callers call through the interface.
func (g *Graph) InInterface(id SymID) bool {
	s := g.Sym(id)
	return s.Kind == KindMethod && s.Parent >= 0 && g.Files[id.F].Syms()[s.Parent].Kind == KindInterface
}

// Lookup finds the definitions a symbol argument names (a name or Type.method, module.function, a::b)
// in the files inScope keeps (nil keeps every file).
func (g *Graph) Lookup(symbol string, inScope func(path string) bool) []SymID {
	sym := strings.TrimSpace(strings.TrimSuffix(symbol, "()"))
	qual, name := "", sym
	if i := strings.LastIndexAny(sym, ".:#"); i >= 0 {
		qual, name = strings.TrimRight(sym[:i], ".:#"), sym[i+1:]
	}
	var out []SymID
	for _, id := range g.Named(name) {
		f := g.Files[id.F]
		if inScope != nil && !inScope(f.Path) {
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

// Suggest lists up to five qualified names close to the one asked for.
func (g *Graph) Suggest(name string) []string {
	name = strings.ToLower(lastSegment(name))
	type cand struct {
		n string
		d int
	}
	var cs []cand
	if g.Names == nil {
		return nil
	}
	g.Names.Each(func(n string) {
		l := strings.ToLower(n)
		d := editDistance(name, l, 3)
		if strings.Contains(l, name) || strings.Contains(name, l) && len(l) > 3 {
			d = min(d, 2)
		}
		if d <= 2 {
			if ids := g.Named(n); len(ids) > 0 {
				cs = append(cs, cand{g.Sym(ids[0]).Qualified(), d})
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
