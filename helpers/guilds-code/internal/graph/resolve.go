package graph

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// SymID names one symbol: its file's index in Graph.Files and its index in that file.
type SymID struct{ F, S int32 }

type index struct {
	byName    map[string][]SymID            // memo of the stored name index
	dirs      map[string][]int32            // folder → files in it
	module    string                        // Go module path at the root, "" when there is none
	suffixes  map[string][]int32            // memo: module file suffix → files
	goAliases map[*File]map[string][]string // memo: a Go file's import names → folders
	pkgNames  map[string]string             // memo: folder → Go package name
	imports   map[string][]string           // memo: Go import path → folders
	modules   map[string][2]string          // memo: folder → the folder and module path of its go.mod
	py        *pyMemo                       // memo of Python types (resolve_py.go)
	ts        *tsMemo                       // memo of TypeScript types (resolve_ts.go)
	rsModules map[string]bool               // memo: the names of the repository's Rust modules (resolve_rust.go)
	jvBases   map[SymID][]SymID             // memo: a Java class → the classes it extends and implements (resolve_java.go)
	jvDerives map[[2]SymID]bool             // memo: whether a Java class derives from another (resolve_java.go)
}

// Sym returns the symbol an id names.
func (g *Graph) Sym(id SymID) *Symbol { return &g.Files[id.F].Syms()[id.S] }

// Named returns the definitions of a name, from the stored name index.
func (g *Graph) Named(name string) []SymID {
	ix := g.index()
	if ids, ok := ix.byName[name]; ok {
		return ids
	}
	var ids []SymID
	if g.Names != nil {
		ids = g.dropDeclarations(g.Names.Lookup(name, g.Files))
	}
	ix.byName[name] = ids
	return ids
}

// dropDeclarations leaves out a C++ method declared in its class (a header, say) when the graph also
// holds its definition (Type::name with a body): one method, answered by the definition.
func (g *Graph) dropDeclarations(ids []SymID) []SymID {
	if len(ids) < 2 {
		return ids
	}
	isDecl := func(id SymID) bool {
		s := g.Sym(id)
		return g.Files[id.F].Lang == "cpp" && s.Kind == KindMethod && strings.HasSuffix(s.Sig, ";")
	}
	var decls []SymID
	for _, id := range ids {
		if g.Files[id.F].Lang == "cpp" && isDecl(id) {
			decls = append(decls, id)
		}
	}
	if len(decls) == 0 {
		return ids
	}
	defined := map[string]bool{}
	for _, id := range ids {
		if g.Files[id.F].Lang == "cpp" && !isDecl(id) {
			defined[g.Sym(id).Container] = true
		}
	}
	return filter(ids, func(id SymID) bool {
		return g.Files[id.F].Lang != "cpp" || !isDecl(id) || !defined[g.Sym(id).Container]
	})
}

func (g *Graph) index() *index {
	if g.idx != nil {
		return g.idx
	}
	ix := &index{byName: map[string][]SymID{}, dirs: map[string][]int32{}, suffixes: map[string][]int32{}}
	for fi, f := range g.Files {
		d := path.Dir(f.Path)
		ix.dirs[d] = append(ix.dirs[d], int32(fi))
	}
	if b, err := os.ReadFile(filepath.Join(g.Root, "go.mod")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
				ix.module = strings.Trim(f[1], `"`)
				break
			}
		}
	}
	g.idx = ix
	return ix
}

// How says how a call site was resolved.
type How uint8

const (
	Typed        How = iota // by the syntax: the receiver's type, an import or the scope
	ByName                  // by name only: candidates the syntax cannot tell apart
	ViaInterface            // through an interface: its method and the methods of the types implementing it
)

// Resolve returns the symbols a reference may mean and how it found them.
func (g *Graph) Resolve(fi int32, r *Ref) ([]SymID, How) {
	ids, how := g.resolve(fi, r)
	if len(ids) == 0 {
		return nil, Typed
	}
	return ids, how
}

func (g *Graph) resolve(fi int32, r *Ref) ([]SymID, How) {
	f := g.Files[fi]
	cands := g.Named(r.Name)
	if r.Recv == "" && f.Lang != "go" {
		if n := importedName(f, r.Name); n != "" {
			cands = g.Named(n) // from m import n as alias: alias() calls n
		}
	}
	if len(cands) == 0 {
		return nil, Typed
	}
	if fam := family(f.Lang); !sameFamily(g, cands, fam) {
		cands = filter(cands, func(id SymID) bool { return family(g.Files[id.F].Lang) == fam })
		if len(cands) == 0 {
			return nil, Typed
		}
	}
	switch f.Lang {
	case "go":
		return g.resolveGo(fi, f, r, cands)
	case "python":
		return g.resolvePy(fi, f, r, cands)
	case "typescript", "tsx":
		return g.resolveTS(fi, f, r, cands)
	case "rust":
		return g.resolveRust(fi, f, r, cands)
	case "java":
		return g.resolveJava(fi, f, r, cands)
	case "javascript":
		if ids, ok := g.resolveModule(fi, f, r, cands); ok {
			return ids, Typed
		}
	}
	ids, byName := g.resolveGeneric(fi, f, r, cands)
	if byName {
		return ids, ByName
	}
	return ids, Typed
}

func filter(cands []SymID, keep func(SymID) bool) []SymID {
	var out []SymID
	for _, c := range cands {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// byNameOnly is the last resort: the candidates are matched by name only, and say so.
func byNameOnly(cands []SymID) ([]SymID, bool) {
	if len(cands) == 0 {
		return nil, false
	}
	return cands, true
}

// resolveGeneric uses receivers naming a type, self/this, same-file and same-folder scope, then names.
func (g *Graph) resolveGeneric(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, bool) {
	recv := r.Recv
	switch recv {
	case "this", "self", "$this", "Self", "@", "static", "parent":
		if r.From >= 0 {
			cls := f.Syms()[r.From].Container
			if recv == "Self" || cls != "" {
				if out := filter(cands, func(id SymID) bool { return g.Sym(id).Container == cls && cls != "" }); len(out) > 0 {
					return out, false
				}
			}
		}
		return byNameOnly(filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod }))
	case "":
		if r.From >= 0 {
			if cls := f.Syms()[r.From].Container; cls != "" {
				if out := filter(cands, func(id SymID) bool { return id.F == fi && g.Sym(id).Container == cls }); len(out) > 0 {
					return out, false
				}
			}
		}
		if out := filter(cands, func(id SymID) bool { return id.F == fi }); len(out) > 0 {
			return out, false
		}
		dir := path.Dir(f.Path)
		if out := filter(cands, func(id SymID) bool { return path.Dir(g.Files[id.F].Path) == dir }); len(out) == 1 {
			return out, false
		}
		return byNameOnly(cands)
	}
	if isIdent(recv) {
		if t := localType(f, r.From, recv); t != "" {
			if out := filter(cands, func(id SymID) bool { return g.Sym(id).Container == t }); len(out) > 0 {
				return out, false
			}
			if len(g.Named(t)) == 0 {
				// Its type (or the function that made it) is from outside the repository: so is the method.
				return nil, false
			}
		}
	}
	if t := lastSegment(strings.TrimSuffix(strings.TrimSuffix(recv, "()"), "::")); isIdent(t) {
		if out := filter(cands, func(id SymID) bool { return g.Sym(id).Container == t }); len(out) > 0 {
			return out, false
		}
	}
	if strings.Contains(recv, "::") {
		return byNameOnly(filter(cands, func(id SymID) bool { return g.Sym(id).Kind.Callable() }))
	}
	return byNameOnly(g.nearest(fi, filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod })))
}

// nearest narrows methods matched by name to those of the calling file fi, else of its folder, else
// leaves them all: a receiver's class is likelier declared near the call.
func (g *Graph) nearest(fi int32, ids []SymID) []SymID {
	if own := filter(ids, func(id SymID) bool { return id.F == fi }); len(own) > 0 {
		return own
	}
	dir := path.Dir(g.Files[fi].Path)
	if near := filter(ids, func(id SymID) bool { return path.Dir(g.Files[id.F].Path) == dir }); len(near) > 0 {
		return near
	}
	return ids
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0 || c >= 0x80) {
			return false
		}
	}
	return true
}

// CountRefs fills every symbol's Refs with the call sites and references the syntax resolves to it,
// and those whose name only it holds; a match by name among several candidates counts for none.
func (g *Graph) CountRefs() {
	for _, f := range g.Files {
		for i := range f.Syms() {
			f.Syms()[i].Refs = 0
		}
	}
	g.idx = nil
	for fi, f := range g.Files {
		for ri := range f.LoadRefs() {
			ids, how := g.Resolve(int32(fi), &f.Refs[ri])
			if how == ByName && len(ids) > 1 {
				continue
			}
			for _, id := range ids {
				g.Sym(id).Refs++
			}
		}
	}
}

// importedName is the member a Python or JS/TS file imports under alias (from m import n as alias), else "".
func importedName(f *File, alias string) string {
	for _, im := range f.Imps() {
		if im.Alias == alias && im.Name != "" && im.Name != alias && im.Name != "default" && im.Name != "*" {
			return im.Name
		}
	}
	return ""
}

// importAlias is the local name a Python or JS/TS file imports member name under, else "".
func importAlias(f *File, name string) string {
	if f.Lang == "go" {
		return ""
	}
	for _, im := range f.Imps() {
		if im.Name == name && im.Alias != "" && im.Alias != name {
			return im.Alias
		}
	}
	return ""
}

// Edge is one call site or reference and the symbol it was resolved to.
type Edge struct {
	File   int32 // file holding the call site
	Ref    int32 // index of the call site in that file
	Target SymID // what it refers to
	ByName int   // 0 when resolved by the syntax; else matched by name only, among this many candidates
	Via    bool  // through an interface: to its method or the method of a type implementing it
}

// edge is the edge from call site ri of file fi to t, resolved among ids as how says.
func edge(fi, ri int32, t SymID, ids []SymID, how How) Edge {
	e := Edge{File: fi, Ref: ri, Target: t, Via: how == ViaInterface}
	if how == ByName {
		e.ByName = len(ids)
	}
	return e
}

// CallersOf lists every call site that resolves to the target.
func (g *Graph) CallersOf(t SymID) []Edge {
	name := g.Sym(t).Name
	out := g.tsConstructorCallers(t)
	for fi, f := range g.Files {
		alias := importAlias(f, name)
		if !f.MayCall(name) && (alias == "" || !f.MayCall(alias)) {
			continue
		}
		for ri := range f.LoadRefs() {
			if n := f.Refs[ri].Name; n != name && (n != alias || alias == "") {
				continue
			}
			ids, how := g.Resolve(int32(fi), &f.Refs[ri])
			for _, id := range ids {
				if id == t {
					out = append(out, edge(int32(fi), int32(ri), t, ids, how))
					break
				}
			}
		}
	}
	return out
}

// CallsFrom lists the call sites inside the symbol and what each resolves to (Target.F < 0 when nothing in the graph).
func (g *Graph) CallsFrom(s SymID) []Edge {
	f := g.Files[s.F]
	var out []Edge
	for ri := range f.LoadRefs() {
		r := &f.Refs[ri]
		if !g.within(f, r.From, s.S) {
			continue
		}
		ids, how := g.Resolve(s.F, r)
		if len(ids) == 0 && r.Value && f.Lang == "go" {
			continue // a Go name used as a value that is no function of the graph: a variable
		}
		if len(ids) == 0 {
			out = append(out, Edge{File: s.F, Ref: int32(ri), Target: SymID{-1, -1}})
			continue
		}
		for _, id := range ids {
			out = append(out, edge(s.F, int32(ri), id, ids, how))
		}
	}
	return out
}

// within reports whether symbol from is s or nested in it.
func (g *Graph) within(f *File, from, s int32) bool {
	for from >= 0 {
		if from == s {
			return true
		}
		from = f.Syms()[from].Parent
	}
	return false
}

// family groups languages that call each other's symbols directly.
func family(lang string) string {
	switch lang {
	case "javascript", "typescript", "tsx":
		return "js"
	case "c", "cpp":
		return "c"
	}
	return lang
}

func sameFamily(g *Graph, cands []SymID, fam string) bool {
	for _, id := range cands {
		if family(g.Files[id.F].Lang) != fam {
			return false
		}
	}
	return true
}

// localType is the type the syntax gives a local name in symbol from or its enclosing symbols.
func localType(f *File, from int32, name string) string {
	for s := from; s >= 0; s = f.Syms()[s].Parent {
		for _, l := range f.Syms()[s].Locals {
			if l.Name == name {
				return l.Type
			}
		}
	}
	return ""
}

// closing is the index of the bracket closing the one at open in s ((, [ or {), else -1.
func closing(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// opening is the index of the bracket that the bracket ending s closes, else -1.
func opening(s string) int {
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')', ']', '}':
			depth++
		case '(', '[', '{':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}
