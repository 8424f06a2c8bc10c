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

// Resolve returns the symbols a reference may mean and whether it was matched by name only
// (several candidates the syntax cannot tell apart).
func (g *Graph) Resolve(fi int32, r *Ref) ([]SymID, bool) {
	cands := g.Named(r.Name)
	if len(cands) == 0 {
		return nil, false
	}
	f := g.Files[fi]
	if fam := family(f.Lang); !sameFamily(g, cands, fam) {
		cands = filter(cands, func(id SymID) bool { return family(g.Files[id.F].Lang) == fam })
		if len(cands) == 0 {
			return nil, false
		}
	}
	switch f.Lang {
	case "go":
		return g.resolveGo(fi, f, r, cands)
	case "python", "javascript", "typescript", "tsx":
		if ids, ok := g.resolveModule(fi, f, r, cands); ok {
			return ids, false
		}
	}
	return g.resolveGeneric(fi, f, r, cands)
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

// byNameOnly is the last resort: one candidate resolves, several are labelled matched by name.
func byNameOnly(cands []SymID) ([]SymID, bool) {
	switch len(cands) {
	case 0:
		return nil, false
	case 1:
		return cands, false
	}
	return cands, true
}

func (g *Graph) resolveGo(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, bool) {
	dir := path.Dir(f.Path)
	inPkg := func(d, pkg string) func(SymID) bool {
		return func(id SymID) bool {
			o := g.Files[id.F]
			return o.Lang == "go" && path.Dir(o.Path) == d && (pkg == "" || o.Pkg == pkg || strings.TrimSuffix(o.Pkg, "_test") == pkg)
		}
	}
	topLevel := func(id SymID) bool { return g.Sym(id).Container == "" }
	if r.Recv == "" {
		return filter(cands, func(id SymID) bool {
			o := g.Files[id.F]
			return topLevel(id) && o.Lang == "go" && path.Dir(o.Path) == dir && o.Pkg == f.Pkg
		}), false
	}
	recv := r.Recv
	if isIdent(recv) {
		if dirs, ok := g.goImport(f, recv); ok {
			var out []SymID
			for _, d := range dirs {
				out = append(out, filter(cands, func(id SymID) bool { return topLevel(id) && inPkg(d, g.goPkgName(d))(id) })...)
			}
			return out, false
		}
		if typ := g.goLocalType(f, r.From, recv); typ != "" {
			tdir, tname := dir, typ
			ok := true
			if i := strings.IndexByte(typ, '.'); i > 0 {
				var dirs []string
				dirs, ok = g.goImport(f, typ[:i])
				tname = typ[i+1:]
				if ok && len(dirs) > 0 {
					tdir = dirs[0]
				}
			}
			if ok {
				if out := filter(cands, func(id SymID) bool {
					return g.Sym(id).Container == tname && path.Dir(g.Files[id.F].Path) == tdir
				}); len(out) > 0 {
					return out, false
				}
			}
		}
	}
	if a, b, ok := strings.Cut(recv, "."); ok && isIdent(a) && isIdent(b) {
		// A field of a typed local: s.cache.Close() with s *Store and Store's field cache *Cache.
		if typ := g.goLocalType(f, r.From, a); typ != "" && !strings.Contains(typ, ".") {
			if ft := g.goFieldType(dir, typ, b); ft != "" && !strings.Contains(ft, ".") {
				if out := filter(cands, func(id SymID) bool {
					return g.Sym(id).Container == ft && path.Dir(g.Files[id.F].Path) == dir
				}); len(out) > 0 {
					return out, false
				}
			}
		}
	}
	return byNameOnly(filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod }))
}

// goFieldType is the declared type of field name of struct typ in folder dir.
func (g *Graph) goFieldType(dir, typ, name string) string {
	for _, id := range g.Named(typ) {
		f := g.Files[id.F]
		s := g.Sym(id)
		if f.Lang != "go" || path.Dir(f.Path) != dir || s.Kind != KindStruct {
			continue
		}
		for _, l := range s.Locals {
			if l.Name == name {
				t := strings.TrimPrefix(l.Type, "*")
				if i := strings.IndexByte(t, '['); i > 0 {
					t = t[:i]
				}
				return t
			}
		}
	}
	return ""
}

// goLocalType is the type the syntax gives to identifier name inside symbol from (receiver, parameters, literals).
func (g *Graph) goLocalType(f *File, from int32, name string) string {
	for s := from; s >= 0; s = f.Syms()[s].Parent {
		for _, l := range f.Syms()[s].Locals {
			if l.Name == name {
				t := l.Type
				if i := strings.IndexByte(t, '['); i > 0 {
					t = t[:i]
				}
				return strings.TrimPrefix(t, "*")
			}
		}
	}
	return ""
}

// goImport finds the import bound to name in f and the repository folders it maps to; ok is false
// when name is not an import (ok with no folders means an import from outside the repository).
func (g *Graph) goImport(f *File, name string) ([]string, bool) {
	ix := g.index()
	if ix.goAliases == nil {
		ix.goAliases = map[*File]map[string][]string{}
	}
	m, ok := ix.goAliases[f]
	if !ok {
		m = g.goAliasMap(f)
		ix.goAliases[f] = m
	}
	dirs, ok := m[name]
	return dirs, ok
}

// goAliasMap binds each import's local name in f to the repository folders it maps to.
func (g *Graph) goAliasMap(f *File) map[string][]string {
	m := make(map[string][]string, len(f.Imps()))
	for _, im := range f.Imps() {
		dirs := g.goImportDirs(im.Path)
		alias := im.Alias
		if alias == "" {
			if len(dirs) > 0 {
				alias = g.goPkgName(dirs[0])
			}
			if alias == "" {
				alias = goDefaultName(im.Path)
			}
		}
		if _, dup := m[alias]; !dup {
			m[alias] = dirs
		}
	}
	return m
}

func goDefaultName(p string) string {
	base := path.Base(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = path.Base(path.Dir(p))
	}
	base = strings.TrimPrefix(base, "go-")
	base = strings.TrimSuffix(base, ".go")
	return strings.ReplaceAll(base, "-", "_")
}

func (g *Graph) goImportDirs(imp string) []string {
	ix := g.index()
	var d string
	switch {
	case ix.module != "" && imp == ix.module:
		d = "."
	case ix.module != "" && strings.HasPrefix(imp, ix.module+"/"):
		d = imp[len(ix.module)+1:]
	default:
		d = imp
	}
	if _, ok := ix.dirs[d]; ok {
		return []string{d}
	}
	return nil
}

// goPkgName is the package declared by a folder's non-test files.
func (g *Graph) goPkgName(dir string) string {
	ix := g.index()
	if n, ok := ix.pkgNames[dir]; ok {
		return n
	}
	name := ""
	for _, fi := range ix.dirs[dir] {
		f := g.Files[fi]
		if f.Lang == "go" && f.Pkg != "" && !strings.HasSuffix(f.Pkg, "_test") {
			name = f.Pkg
			break
		}
	}
	if ix.pkgNames == nil {
		ix.pkgNames = map[string]string{}
	}
	ix.pkgNames[dir] = name
	return name
}

// resolveModule handles Python and JavaScript/TypeScript imports, self/this and same-file scope.
func (g *Graph) resolveModule(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, bool) {
	sameFileTop := func(id SymID) bool { return id.F == fi && g.Sym(id).Container == "" }
	switch {
	case r.Recv == "":
		if out := filter(cands, sameFileTop); len(out) > 0 {
			return out, true
		}
		for _, im := range f.Imps() {
			local := im.Alias
			if local == "" {
				local = im.Name
			}
			if local != r.Name || im.Name == "" {
				continue
			}
			name := im.Name
			if name == "default" || name == "" {
				name = r.Name
			}
			files := g.moduleFiles(f, im.Path)
			if out := filter(cands, func(id SymID) bool { return contains(files, id.F) && g.Sym(id).Container == "" }); len(out) > 0 {
				return out, true
			}
		}
	case r.Recv == "self" || r.Recv == "cls" || r.Recv == "this":
		if r.From >= 0 {
			cls := f.Syms()[r.From].Container
			if out := filter(cands, func(id SymID) bool { return id.F == fi && g.Sym(id).Container == cls && cls != "" }); len(out) > 0 {
				return out, true
			}
		}
	case isIdent(r.Recv):
		for _, im := range f.Imps() {
			local := im.Alias
			if local == "" {
				if im.Name != "" {
					local = im.Name
				} else {
					local = strings.SplitN(im.Path, ".", 2)[0]
				}
			}
			if local != r.Recv {
				continue
			}
			mod := im.Path
			if im.Name != "" && f.Lang == "python" {
				mod = strings.TrimSuffix(mod, ".") + "." + im.Name
			}
			files := g.moduleFiles(f, mod)
			if out := filter(cands, func(id SymID) bool { return contains(files, id.F) && g.Sym(id).Container == "" }); len(out) > 0 {
				return out, true
			}
		}
	}
	return nil, false
}

func contains(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// moduleFiles maps a Python dotted module or a JS/TS import source to the repository files it names.
func (g *Graph) moduleFiles(from *File, mod string) []int32 {
	var bases []string
	switch from.Lang {
	case "python":
		dir := ""
		if strings.HasPrefix(mod, ".") {
			dir = path.Dir(from.Path)
			mod = mod[1:]
			for strings.HasPrefix(mod, ".") {
				dir, mod = path.Dir(dir), mod[1:]
			}
		}
		p := strings.ReplaceAll(mod, ".", "/")
		if dir != "" && dir != "." {
			p = dir + "/" + p
		}
		bases = []string{p + ".py", p + ".pyi", p + "/__init__.py"}
		if dir == "" {
			return g.suffixFiles(bases)
		}
	default:
		if !strings.HasPrefix(mod, ".") {
			return nil
		}
		p := path.Join(path.Dir(from.Path), mod)
		for _, ext := range []string{"", ".ts", ".tsx", ".js", ".jsx", ".mjs", "/index.ts", "/index.tsx", "/index.js"} {
			bases = append(bases, strings.TrimSuffix(p, path.Ext(p))+ext, p+ext)
		}
	}
	var out []int32
	for fi, f := range g.Files {
		for _, b := range bases {
			if f.Path == b {
				out = append(out, int32(fi))
				break
			}
		}
	}
	return out
}

// suffixFiles finds files whose path is one of bases or ends with /base (a src/ layout).
func (g *Graph) suffixFiles(bases []string) []int32 {
	ix := g.index()
	key := strings.Join(bases, "|")
	if out, ok := ix.suffixes[key]; ok {
		return out
	}
	var out []int32
	for fi, f := range g.Files {
		for _, b := range bases {
			if f.Path == b || strings.HasSuffix(f.Path, "/"+b) {
				out = append(out, int32(fi))
				break
			}
		}
	}
	ix.suffixes[key] = out
	return out
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
	return byNameOnly(filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod }))
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

// CountRefs fills every symbol's Refs with the call sites and references that resolve to it.
func (g *Graph) CountRefs() {
	for _, f := range g.Files {
		for i := range f.Syms() {
			f.Syms()[i].Refs = 0
		}
	}
	g.idx = nil
	for fi, f := range g.Files {
		for ri := range f.LoadRefs() {
			ids, _ := g.Resolve(int32(fi), &f.Refs[ri])
			for _, id := range ids {
				g.Sym(id).Refs++
			}
		}
	}
}

// Edge is one call site or reference and the symbol it was resolved to.
type Edge struct {
	File   int32 // file holding the call site
	Ref    int32 // index of the call site in that file
	Target SymID // what it refers to
	ByName bool  // matched by name among several candidates
}

// CallersOf lists every call site that resolves to the target.
func (g *Graph) CallersOf(t SymID) []Edge {
	name := g.Sym(t).Name
	var out []Edge
	for fi, f := range g.Files {
		if !f.MayCall(name) {
			continue
		}
		for ri := range f.LoadRefs() {
			if f.Refs[ri].Name != name {
				continue
			}
			ids, byName := g.Resolve(int32(fi), &f.Refs[ri])
			for _, id := range ids {
				if id == t {
					out = append(out, Edge{File: int32(fi), Ref: int32(ri), Target: t, ByName: byName})
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
		ids, byName := g.Resolve(s.F, r)
		if len(ids) == 0 {
			out = append(out, Edge{File: s.F, Ref: int32(ri), Target: SymID{-1, -1}})
			continue
		}
		for _, id := range ids {
			out = append(out, Edge{File: s.F, Ref: int32(ri), Target: id, ByName: byName})
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
