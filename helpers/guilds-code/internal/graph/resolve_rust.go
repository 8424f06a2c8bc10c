package graph

import (
	"path"
	"strings"
)

// rsType is what the syntax says a Rust expression holds.
type rsType struct {
	name  string // a struct, enum or trait of the repository ("" when none)
	known bool   // the type is stated; with no name it is outside the repository
	wrap  int    // how many Result or Option layers are around it
}

var rsUnknown = rsType{}

// rsMaxDepth bounds how many declarations one expression is followed through.
const rsMaxDepth = 12

// rsUnwraps are the methods of Result and Option that give the value inside.
var rsUnwraps = map[string]bool{"unwrap": true, "expect": true, "unwrap_or_default": true, "unwrap_or": true, "unwrap_or_else": true, "unwrap_unchecked": true}

// rsKeeps are std methods that give a value of the type they are called on (a clone, a reference, a
// borrow), Result and Option layers kept.
var rsKeeps = map[string]bool{"clone": true, "as_ref": true, "as_mut": true, "borrow": true, "borrow_mut": true, "to_owned": true, "as_deref": true}

// rsSmart are the std wrappers whose methods callers reach through (Box<T>, Rc<T>, Arc<T>).
var rsSmart = map[string]bool{"Box": true, "Rc": true, "Arc": true, "Cow": true}

// resolveRust resolves a Rust call by the types the syntax states: use paths (aliases, globs, crate::,
// super::, self::), Type::f() and Self::f(), let x: T, let x = T { .. } and let x = f() through f's
// declared return (Result and Option unwrapped by ? and unwrap), self.field through the struct's
// fields, typed parameters, and trait methods: a call through dyn Trait, impl Trait or a generic bound
// goes to the trait's method, labelled via interface.
func (g *Graph) resolveRust(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, How) {
	recv := r.Recv
	if recv == "" {
		return g.rsBare(fi, f, r.From, r.Name, cands)
	}
	if g.rsIsPath(f, r.From, r.Line, recv) {
		return g.rsPath(fi, f, r.From, rsSplitPath(recv), r.Name, cands)
	}
	t := g.rsExpr(fi, f, r.From, r.Line, recv, 0)
	if !t.known {
		if ms := filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod }); len(ms) > 0 {
			return g.nearest(fi, ms), ByName
		}
		return nil, Typed
	}
	if t.name == "" || t.wrap > 0 {
		return nil, Typed // a type from outside the repository: so is its method
	}
	ids, via := g.rsMethod(t.name, r.Name)
	ids = filter(ids, func(id SymID) bool { return contains32(cands, id) })
	if via {
		// The trait's method, then the methods implementing it (as Go lists an interface's).
		return append(ids, g.rsImplementations(t.name, cands)...), ViaInterface
	}
	return ids, Typed
}

// rsIsPath reports whether a call's qualifier is a path (a::b::f()) rather than a value (x.f()): the
// parser gives both as the text before the name.
func (g *Graph) rsIsPath(f *File, scope int32, line uint32, recv string) bool {
	if strings.Contains(recv, "::") {
		return !strings.ContainsAny(recv, ".(")
	}
	if recv == "self" {
		return g.rsSelf(f, scope) == "" // self::f() outside an impl, else self.f()
	}
	if !isIdent(recv) {
		return false
	}
	if _, local := rsLocal(f, scope, line, recv); local {
		return false
	}
	// A name bound by no let or parameter the syntax gives (a pattern's): a value, unless it names a
	// type, a module or an import, or is capitalized (a type from outside: HashMap::new()).
	if _, imported := rsImport(f, recv); imported || recv[0] >= 'A' && recv[0] <= 'Z' || recv == "crate" || recv == "super" {
		return true
	}
	if _, isType := g.rsTypeKind(recv); isType {
		return true
	}
	return g.rsModuleNames()[recv]
}

// rsModuleNames is the set of the repository's Rust module names: its files' and its mod items'.
func (g *Graph) rsModuleNames() map[string]bool {
	ix := g.index()
	if ix.rsModules != nil {
		return ix.rsModules
	}
	mods := map[string]bool{}
	for fi, f := range g.Files {
		if f.Lang != "rust" {
			continue
		}
		base := strings.TrimSuffix(path.Base(f.Path), ".rs")
		if base == "mod" {
			base = path.Base(path.Dir(f.Path))
		}
		mods[base] = true
		for _, s := range g.Files[fi].Syms() {
			if s.Kind == KindModule {
				mods[s.Name] = true
			}
		}
	}
	ix.rsModules = mods
	return mods
}

// rsSplitPath splits a::b::C (with any turbofish ::<T> dropped) into its names.
func rsSplitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "::") {
		if i := strings.IndexByte(s, '<'); i >= 0 {
			s = s[:i]
		}
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// rsLocal is the local a name is bound to as the code at scope sees it on line (the latest binding
// above it, a stated type before a bound expression), and whether it is one.
func rsLocal(f *File, scope int32, line uint32, name string) (Local, bool) {
	syms := f.Syms()
	for s := scope; s >= 0; s = syms[s].Parent {
		var best Local
		found := false
		for _, l := range syms[s].Locals {
			if l.Name != name || l.Line > line && line > 0 {
				continue
			}
			if !found || l.Line > best.Line || l.Line == best.Line && strings.HasPrefix(best.Type, "=") && !strings.HasPrefix(l.Type, "=") {
				best, found = l, true
			}
		}
		if found {
			return best, true
		}
		if syms[s].Kind.Callable() && syms[s].Container != "" && s != scope {
			break // a method's locals do not reach into its type's other methods
		}
	}
	return Local{}, false
}

// rsImport is the full path a use declaration binds the local name to, and whether there is one.
func rsImport(f *File, name string) ([]string, bool) {
	for _, im := range f.Imps() {
		if strings.HasSuffix(im.Path, "*") {
			continue
		}
		full := rsSplitPath(im.Path)
		if im.Name != "" && im.Name != "self" {
			full = append(full, rsSplitPath(im.Name)...)
		}
		local := im.Alias
		if local == "" && len(full) > 0 {
			local = full[len(full)-1]
		}
		if local == name && len(full) > 0 {
			return full, true
		}
	}
	return nil, false
}

// rsGlobs are the paths a file imports every name of (use a::b::*).
func rsGlobs(f *File) [][]string {
	var out [][]string
	for _, im := range f.Imps() {
		if strings.HasSuffix(im.Path, "*") {
			out = append(out, rsSplitPath(strings.TrimSuffix(im.Path, "*")))
		}
	}
	return out
}

// rsTypeKind is the kind of the Rust type of the repository a name declares, and whether there is one.
func (g *Graph) rsTypeKind(name string) (Kind, bool) {
	for _, id := range g.Named(name) {
		if g.Files[id.F].Lang != "rust" {
			continue
		}
		switch k := g.Sym(id).Kind; k {
		case KindStruct, KindEnum, KindTrait, KindType:
			return k, true
		}
	}
	return 0, false
}

// rsModuleFile reports whether file fi is Rust module mod (mod.rs, or mod/mod.rs).
func (g *Graph) rsModuleFile(fi int32, mod string) bool {
	p := g.Files[fi].Path
	base := strings.TrimSuffix(path.Base(p), ".rs")
	if base == "mod" {
		base = path.Base(path.Dir(p))
	}
	return base == mod
}

// rsFree reports whether a symbol is a free function or item (top level, or in an inline module), not
// a type's member.
func (g *Graph) rsFree(id SymID) bool {
	s := g.Sym(id)
	if s.Container == "" {
		return true
	}
	_, isType := g.rsTypeKind(s.Container)
	return !isType
}

// rsBare resolves an unqualified call: a use binding the name, the file and its module, a glob import;
// else by name among free functions, labelled so.
func (g *Graph) rsBare(fi int32, f *File, scope int32, name string, cands []SymID) ([]SymID, How) {
	free := filter(cands, g.rsFree)
	if full, ok := rsImport(f, name); ok {
		if len(full) == 1 {
			return nil, Typed // use of a crate: not a function
		}
		return g.rsPath(fi, f, scope, full[:len(full)-1], full[len(full)-1], g.Named(full[len(full)-1]))
	}
	if own := filter(free, func(id SymID) bool { return id.F == fi }); len(own) > 0 {
		return own, Typed
	}
	for _, glob := range rsGlobs(f) {
		if ids, _ := g.rsPath(fi, f, scope, glob, name, cands); len(ids) > 0 {
			return ids, Typed
		}
	}
	if len(free) == 0 {
		return nil, Typed
	}
	return free, ByName
}

// rsPath resolves path::name: Self and types of the repository to their associated functions (and the
// default methods of traits they implement), modules to their items; a path from outside the
// repository (std, another crate) to nothing.
func (g *Graph) rsPath(fi int32, f *File, scope int32, segs []string, name string, cands []SymID) ([]SymID, How) {
	if len(segs) == 0 {
		return g.rsBare(fi, f, scope, name, cands)
	}
	if full, ok := rsImport(f, segs[0]); ok && segs[0] != "crate" && segs[0] != "self" && segs[0] != "super" {
		segs = append(append([]string{}, full...), segs[1:]...)
	}
	owner := segs[len(segs)-1]
	if owner == "Self" {
		owner = g.rsSelf(f, scope)
	}
	if _, isType := g.rsTypeKind(owner); isType {
		ids, _ := g.rsMethod(owner, name)
		return filter(ids, func(id SymID) bool { return contains32(cands, id) }), Typed
	}
	switch owner {
	case "crate", "self", "super":
		// crate::f, self::f, super::f: a free item of the crate, this module or its parent.
		dir := path.Dir(f.Path)
		free := filter(cands, g.rsFree)
		if owner == "self" {
			free = filter(free, func(id SymID) bool { return id.F == fi })
		} else if near := filter(free, func(id SymID) bool {
			d := path.Dir(g.Files[id.F].Path)
			return d == dir || d == path.Dir(dir)
		}); len(near) > 0 {
			free = near
		}
		if len(free) > 1 {
			return free, ByName
		}
		return free, Typed
	}
	mod := filter(cands, func(id SymID) bool {
		s := g.Sym(id)
		return s.Container == owner && g.rsFree(id) || s.Container == "" && g.rsModuleFile(id.F, owner)
	})
	return mod, Typed
}

// rsSelf is the type the impl block holding scope is for, else "".
func (g *Graph) rsSelf(f *File, scope int32) string {
	syms := f.Syms()
	for s := scope; s >= 0; s = syms[s].Parent {
		if syms[s].Kind == KindMethod && syms[s].Container != "" {
			return syms[s].Container
		}
	}
	return ""
}

// rsMethod lists type t's methods of the name: its own, else the default methods of the traits it
// implements; via is true when t is a trait (the call goes through its interface).
func (g *Graph) rsMethod(t, name string) ([]SymID, bool) {
	k, _ := g.rsTypeKind(t)
	var own []SymID
	for _, id := range g.Named(name) {
		if s := g.Sym(id); g.Files[id.F].Lang == "rust" && s.Container == t && s.Kind == KindMethod {
			own = append(own, id)
		}
	}
	if k == KindTrait || len(own) > 0 {
		return own, k == KindTrait
	}
	for _, tr := range g.rsTraitsOf(t) {
		for _, id := range g.Named(name) {
			if s := g.Sym(id); s.Container == tr && s.Kind == KindMethod {
				own = append(own, id)
			}
		}
	}
	return own, false
}

// rsHasMethod reports whether type t of the repository has a method of the name (its own or a trait's).
func (g *Graph) rsHasMethod(t, name string) bool {
	ids, _ := g.rsMethod(t, name)
	return len(ids) > 0
}

// rsTraitsOf lists the traits of the repository a type has impl blocks for (impl Trait for T).
func (g *Graph) rsTraitsOf(t string) []string {
	var out []string
	for _, id := range g.Named("impl " + t) {
		if tr := rsImplTrait(g.Sym(id).Sig); tr != "" {
			out = append(out, tr)
		}
	}
	return out
}

// rsImplTrait is the trait an impl block's signature implements (impl<T> a::Tr<T> for X is Tr), else "".
func rsImplTrait(sig string) string {
	head, _, ok := strings.Cut(sig, " for ")
	if !ok || !strings.HasPrefix(head, "impl") {
		return ""
	}
	head = strings.TrimSpace(strings.TrimPrefix(head, "impl"))
	if strings.HasPrefix(head, "<") {
		if j := closing(strings.ReplaceAll(strings.ReplaceAll(head, "<", "("), ">", ")"), 0); j >= 0 {
			head = strings.TrimSpace(head[j+1:])
		}
	}
	if i := strings.IndexByte(head, '<'); i >= 0 {
		head = head[:i]
	}
	return lastSegment(strings.TrimSpace(head))
}

// rsImplementations lists the methods among cands that implement trait tr's method (those in an impl
// tr for T block).
func (g *Graph) rsImplementations(tr string, cands []SymID) []SymID {
	return filter(cands, func(id SymID) bool {
		s := g.Sym(id)
		if s.Kind != KindMethod || s.Parent < 0 || g.Files[id.F].Lang != "rust" {
			return false
		}
		p := g.Files[id.F].Syms()[s.Parent]
		return p.Kind == KindImpl && rsImplTrait(p.Sig) == tr
	})
}

// rsExpr types an expression as written: a chain of names, paths, fields and calls (self.store.get()?,
// Store::open().unwrap(), Cache { .. }); anything else is not typed.
func (g *Graph) rsExpr(fi int32, f *File, scope int32, line uint32, expr string, depth int) rsType {
	if depth > rsMaxDepth {
		return rsUnknown
	}
	expr = rsTrimRef(expr)
	for {
		if len(expr) > 1 && expr[0] == '(' && closing(expr, 0) == len(expr)-1 {
			expr = rsTrimRef(expr[1 : len(expr)-1])
		} else if body, ok := strings.CutPrefix(expr, "unsafe {"); ok && strings.HasSuffix(body, "}") {
			expr = rsTrimRef(strings.TrimSuffix(body, "}")) // unsafe { x }: what x holds
		} else {
			break
		}
	}
	if expr == "" {
		return rsUnknown
	}
	if c := expr[0]; c == '"' || c == '\'' || c == '[' || c >= '0' && c <= '9' {
		return rsType{known: true}
	}
	segs, ok := rsSegments(expr)
	if !ok {
		return rsUnknown
	}
	first := segs[0]
	var t rsType
	switch {
	case first.lit:
		t = g.rsNamed(f, scope, first.name)
	case first.name == "self" && !first.call:
		if s := g.rsSelf(f, scope); s != "" {
			t = rsType{name: s, known: true}
		}
	case strings.Contains(first.name, "::") || first.call:
		p := rsSplitPath(first.name)
		if len(p) == 0 {
			return rsUnknown
		}
		name := p[len(p)-1]
		if !first.call {
			if k, ok := g.rsTypeKind(p[0]); ok && k == KindEnum && len(p) == 2 {
				t = rsType{name: p[0], known: true} // an enum's variant
			} else {
				return rsUnknown
			}
			break
		}
		if len(p) == 1 {
			if _, isType := g.rsTypeKind(name); isType {
				t = rsType{name: name, known: true} // a tuple struct made: T(..)
				break
			}
		}
		ids, _ := g.rsPath(fi, f, scope, p[:len(p)-1], name, g.Named(name))
		if len(ids) == 0 {
			return rsType{known: true} // a function from outside the repository (String::new)
		}
		t = g.rsReturns(ids, depth+1)
	default:
		l, ok := rsLocal(f, scope, line, first.name)
		if !ok {
			return rsUnknown
		}
		t = g.rsLocalType(fi, f, scope, l, depth+1)
	}
	t.wrap -= first.tries
	for _, s := range segs[1:] {
		if !t.known || t.name == "" && t.wrap <= 0 {
			return t
		}
		switch {
		case s.call && t.wrap > 0 && rsUnwraps[s.name]:
			t.wrap--
		case s.call && rsKeeps[s.name] && (t.wrap > 0 || !g.rsHasMethod(t.name, s.name)):
		case t.wrap > 0:
			return rsType{known: true}
		case s.call:
			ids, _ := g.rsMethod(t.name, s.name)
			t = g.rsReturns(ids, depth+1)
		default:
			t = g.rsField(t.name, s.name, depth+1)
		}
		t.wrap -= s.tries
		if t.wrap < 0 {
			t.wrap = 0
		}
	}
	if t.wrap < 0 {
		t.wrap = 0
	}
	return t
}

// rsTrimRef drops what does not change a receiver's type: &, &mut, * and spaces.
func rsTrimRef(e string) string {
	for {
		e = strings.TrimSpace(e)
		switch {
		case strings.HasPrefix(e, "&mut "):
			e = e[5:]
		case strings.HasPrefix(e, "&"), strings.HasPrefix(e, "*"):
			e = e[1:]
		default:
			return e
		}
	}
}

// rsSeg is one step of an expression chain.
type rsSeg struct {
	name  string // a name or path
	call  bool   // called: name(..)
	lit   bool   // a struct literal: name { .. }
	tries int    // how many ? follow it
}

// rsSegments splits a.b(x)?.c into its steps; ok is false for anything else (an index, an operator).
func rsSegments(expr string) ([]rsSeg, bool) {
	var segs []rsSeg
	i := 0
	for i < len(expr) {
		j := i
		for j < len(expr) && (isWordByte(expr[j]) || expr[j] >= 0x80 || expr[j] == ':' || expr[j] == '<' && j > i && expr[j-1] == ':') {
			if expr[j] == '<' {
				k := strings.IndexByte(expr[j:], '>')
				if k < 0 {
					return nil, false
				}
				j += k
			}
			j++
		}
		if j == i {
			return nil, false
		}
		s := rsSeg{name: expr[i:j]}
		if j < len(expr) && expr[j] == '!' {
			return nil, false // a macro's value
		}
		rest := strings.TrimLeft(expr[j:], " ")
		if len(segs) == 0 && strings.HasPrefix(rest, "{") {
			return []rsSeg{{name: s.name, lit: true}}, true
		}
		if j < len(expr) && expr[j] == '(' {
			k := closing(expr, j)
			if k < 0 {
				return nil, false
			}
			s.call, j = true, k+1
		}
		for j < len(expr) && expr[j] == '?' {
			s.tries++
			j++
		}
		segs = append(segs, s)
		if j == len(expr) {
			break
		}
		if expr[j] != '.' {
			return nil, false
		}
		i = j + 1
	}
	return segs, len(segs) > 0
}

// rsNamed types a value of the named type (a struct literal's).
func (g *Graph) rsNamed(f *File, scope int32, name string) rsType {
	p := rsSplitPath(name)
	if len(p) == 0 {
		return rsUnknown
	}
	n := p[len(p)-1]
	if n == "Self" {
		n = g.rsSelf(f, scope)
	}
	if n == "" || n[0] < 'A' || n[0] > 'Z' {
		return rsUnknown // a block, not a struct literal (loop { .. }, async { .. })
	}
	if _, ok := g.rsTypeKind(n); ok {
		return rsType{name: n, known: true}
	}
	return rsType{known: true}
}

// rsLocalType types a local: its stated type, or the expression it is bound to.
func (g *Graph) rsLocalType(fi int32, f *File, scope int32, l Local, depth int) rsType {
	switch {
	case l.Type == "?":
		return rsUnknown
	case strings.HasPrefix(l.Type, "="):
		return g.rsExpr(fi, f, scope, l.Line, l.Type[1:], depth+1)
	}
	return g.rsTypeOf(f, scope, l.Type, g.rsSelf(f, scope), depth+1)
}

// rsReturns types what calling one of the functions gives: its declared return, Self being its type.
func (g *Graph) rsReturns(ids []SymID, depth int) rsType {
	for _, id := range ids {
		s := g.Sym(id)
		if !s.Kind.Callable() {
			continue
		}
		f := g.Files[id.F]
		for _, l := range s.Locals {
			if l.Name == "(return)" {
				if t := g.rsTypeOf(f, id.S, l.Type, s.Container, depth+1); t.known {
					return t
				}
			}
		}
		return rsType{known: true} // no return: ()
	}
	return rsUnknown
}

// rsField types field name of struct t from its declaration.
func (g *Graph) rsField(t, name string, depth int) rsType {
	for _, id := range g.Named(t) {
		s := g.Sym(id)
		if s.Kind != KindStruct || g.Files[id.F].Lang != "rust" {
			continue
		}
		for _, l := range s.Locals {
			if l.Name == name {
				return g.rsTypeOf(g.Files[id.F], id.S, l.Type, t, depth+1)
			}
		}
	}
	return rsUnknown
}

// rsTypeOf types a type as written: references, Box/Rc/Arc, dyn and impl Trait, generic parameters
// through their bounds, Result and Option (wrapped), paths and use aliases; self is what Self names.
func (g *Graph) rsTypeOf(f *File, scope int32, typ, self string, depth int) rsType {
	if depth > rsMaxDepth {
		return rsUnknown
	}
	t := strings.TrimSpace(typ)
	t = strings.TrimPrefix(t, ":")
	for changed := true; changed; {
		changed = false
		t = strings.TrimSpace(t)
		for _, p := range []string{"&mut ", "&", "mut ", "dyn ", "impl ", "*const ", "*mut "} {
			if strings.HasPrefix(t, p) {
				t, changed = t[len(p):], true
			}
		}
		if strings.HasPrefix(t, "'") {
			if i := strings.IndexByte(t, ' '); i > 0 {
				t, changed = t[i+1:], true
			}
		}
	}
	if t == "" || strings.ContainsAny(t[:1], "([") {
		return rsType{known: true} // a tuple, slice or array
	}
	if i := strings.IndexByte(t, '+'); i > 0 && !strings.Contains(t[:i], "<") {
		// A + B: the first bound of the repository.
		for _, part := range strings.Split(t, "+") {
			if r := g.rsTypeOf(f, scope, part, self, depth+1); r.name != "" {
				return r
			}
		}
		return rsType{known: true}
	}
	base, args := t, ""
	if i := strings.IndexByte(t, '<'); i > 0 {
		base, args = strings.TrimSpace(t[:i]), strings.TrimSuffix(strings.TrimSpace(t[i+1:]), ">")
	}
	p := rsSplitPath(base)
	if len(p) == 0 {
		return rsUnknown
	}
	base = p[len(p)-1]
	if base == "Self" {
		if self == "" {
			return rsUnknown
		}
		return rsType{name: self, known: true}
	}
	if len(p) == 1 {
		if full, ok := rsImport(f, base); ok {
			base = full[len(full)-1] // use a::B as C: C is B
		}
	}
	first := args
	if parts := SplitTopLevel(args); len(parts) > 0 {
		first = parts[0]
	}
	switch {
	case rsSmart[base] && first != "":
		return g.rsTypeOf(f, scope, first, self, depth+1)
	case (base == "Result" || base == "Option") && first != "":
		r := g.rsTypeOf(f, scope, first, self, depth+1)
		r.wrap++
		return r
	}
	if len(p) == 1 {
		// A generic parameter stands for its bounds.
		if l, ok := rsLocal(f, scope, 0, base); ok && strings.HasPrefix(l.Type, ":") {
			return g.rsTypeOf(f, scope, l.Type, self, depth+1)
		}
	}
	if _, ok := g.rsTypeKind(base); ok {
		return rsType{name: base, known: true}
	}
	return rsType{known: true}
}
