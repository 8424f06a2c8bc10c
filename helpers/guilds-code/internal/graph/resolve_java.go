package graph

import (
	"path"
	"strings"
)

// jvType is what the syntax says a Java expression holds.
type jvType struct {
	classes []SymID // classes, interfaces and enums of the repository (an instance, or the class itself)
	known   bool    // the type is stated; with no class it is outside the repository
}

var jvUnknown = jvType{}

// jvMaxDepth bounds how many declarations one expression is followed through.
const jvMaxDepth = 12

// resolveJava resolves a Java call by the types the syntax states: imports (single-type, on-demand,
// static), this and super through extends, fields, locals and parameters with a declared type (var
// through its value), new C(), method return types, static calls C.m(); a call through an interface
// goes to its method, labelled via interface. Types outside the repository (java.lang, java.util)
// resolve to nothing.
func (g *Graph) resolveJava(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, How) {
	cands = filter(cands, func(id SymID) bool { return g.Files[id.F].Lang == "java" })
	if r.Recv == "" {
		if cls := g.jvClasses(fi, f, r.Name); len(cls) > 0 {
			return g.jvConstructors(cls, cands), Typed // new C(): its constructors, else the class
		}
		if g.jvOutsideClass(f, r.Name) {
			return nil, Typed
		}
		if ids, via := g.jvImplicit(fi, f, r.From, r.Name, cands); len(ids) > 0 {
			return jvHow(ids, via)
		}
		return nil, Typed
	}
	t := g.jvExpr(fi, f, r.From, r.Line, r.Recv, 0)
	if !t.known {
		if ms := filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod }); len(ms) > 0 {
			return g.nearest(fi, ms), ByName
		}
		return nil, Typed
	}
	var out []SymID
	via := false
	for _, c := range t.classes {
		ids, v := g.jvMethod(c, r.Name, 0)
		via = via || v
		for _, id := range ids {
			if contains32(cands, id) && !contains32(out, id) {
				out = append(out, id)
			}
		}
	}
	if via {
		// The interface's method, then the methods of the classes implementing it (as Go lists an interface's).
		for _, m := range g.jvImplementations(out, cands) {
			if !contains32(out, m) {
				out = append(out, m)
			}
		}
	}
	return jvHow(out, via)
}

// jvImplementations lists the methods among cands that override one of the interface methods: of the
// same name, in a class extending or implementing its interface.
func (g *Graph) jvImplementations(ifaceMethods, cands []SymID) []SymID {
	var out []SymID
	for _, im := range ifaceMethods {
		iface := SymID{im.F, g.Sym(im).Parent}
		if iface.S < 0 {
			continue
		}
		for _, id := range cands {
			s := g.Sym(id)
			if s.Kind != KindMethod || s.Parent < 0 || s.Name != g.Sym(im).Name || id == im {
				continue
			}
			if g.jvDerives(SymID{id.F, s.Parent}, iface, 0) && !contains32(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// jvDerives reports whether class c extends or implements base, directly or through its bases.
func (g *Graph) jvDerives(c, base SymID, depth int) bool {
	if depth > jvMaxDepth {
		return false
	}
	ix := g.index()
	key := [2]SymID{c, base}
	if d, ok := ix.jvDerives[key]; ok {
		return d
	}
	if ix.jvDerives == nil {
		ix.jvDerives = map[[2]SymID]bool{}
	}
	d := false
	for _, b := range g.jvBases(c) {
		if b == base || g.jvDerives(b, base, depth+1) {
			d = true
			break
		}
	}
	if depth == 0 {
		ix.jvDerives[key] = d // an answer cut short by the depth bound is not kept
	}
	return d
}

func jvHow(ids []SymID, via bool) ([]SymID, How) {
	if via {
		return ids, ViaInterface
	}
	return ids, Typed
}

// jvConstructors lists the constructors the classes declare among the candidates, else the classes.
func (g *Graph) jvConstructors(cls, cands []SymID) []SymID {
	ctors := filter(cands, func(id SymID) bool {
		s := g.Sym(id)
		for _, c := range cls {
			if s.Kind == KindMethod && id.F == c.F && s.Parent == c.S && s.Name == g.Sym(c).Name {
				return true
			}
		}
		return false
	})
	if len(ctors) > 0 {
		return ctors
	}
	return filter(cands, func(id SymID) bool { return contains32(cls, id) })
}

// jvImplicit resolves an unqualified call m(): a method of the enclosing classes (and what they
// extend), else one a static import names.
func (g *Graph) jvImplicit(fi int32, f *File, scope int32, name string, cands []SymID) ([]SymID, bool) {
	syms := f.Syms()
	for s := scope; s >= 0; s = syms[s].Parent {
		if !syms[s].Kind.TypeLike() {
			continue
		}
		if ids, via := g.jvMethod(SymID{fi, s}, name, 0); len(ids) > 0 {
			return filter(ids, func(id SymID) bool { return contains32(cands, id) }), via
		}
	}
	for _, im := range f.Imps() {
		if im.Name != name && im.Name != "" {
			continue
		}
		// import static a.b.C.m (or a.b.C.*): m of class C.
		for _, c := range g.jvClasses(fi, f, lastSegment(im.Path)) {
			if ids, via := g.jvMethod(c, name, 0); len(ids) > 0 {
				return filter(ids, func(id SymID) bool { return contains32(cands, id) }), via
			}
		}
	}
	return nil, false
}

// jvIsClass reports whether the symbol is a Java class, interface, enum or record.
func (g *Graph) jvIsClass(id SymID) bool {
	switch g.Sym(id).Kind {
	case KindClass, KindInterface, KindEnum:
		return g.Files[id.F].Lang == "java"
	}
	return false
}

// jvClasses lists the classes of the repository a simple name means in file fi: its own, a single-type
// import's, its package's, an on-demand import's, else any of the name.
func (g *Graph) jvClasses(fi int32, f *File, name string) []SymID {
	if !isIdent(name) {
		return nil
	}
	all := filter(g.Named(name), g.jvIsClass)
	if len(all) == 0 {
		return nil
	}
	if own := filter(all, func(id SymID) bool { return id.F == fi }); len(own) > 0 {
		return own
	}
	inPkg := func(pkg string) func(SymID) bool {
		dir := strings.ReplaceAll(pkg, ".", "/")
		return func(id SymID) bool {
			d := path.Dir(g.Files[id.F].Path)
			return d == dir || strings.HasSuffix(d, "/"+dir)
		}
	}
	for _, im := range f.Imps() {
		if im.Name == name {
			return filter(all, inPkg(im.Path)) // none: the import names a class from outside
		}
	}
	dir := path.Dir(f.Path)
	if same := filter(all, func(id SymID) bool { return path.Dir(g.Files[id.F].Path) == dir }); len(same) > 0 {
		return same
	}
	for _, im := range f.Imps() {
		if im.Name == "" {
			if near := filter(all, inPkg(im.Path)); len(near) > 0 {
				return near
			}
		}
	}
	return all
}

// jvOutsideClass reports whether a name is a class from outside the repository: imported from a
// package the repository does not hold, or a capitalized name it declares no class of (String, Math).
func (g *Graph) jvOutsideClass(f *File, name string) bool {
	if name == "" || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	return len(filter(g.Named(name), g.jvIsClass)) == 0
}

// jvMethod lists class c's methods of the name, else those of the first of its bases (superclass,
// then interfaces) that has one; via is true when they are an interface's.
func (g *Graph) jvMethod(c SymID, name string, depth int) ([]SymID, bool) {
	if depth > jvMaxDepth {
		return nil, false
	}
	cs := g.Sym(c)
	var own []SymID
	for _, id := range g.Named(name) {
		if s := g.Sym(id); s.Kind == KindMethod && s.Container == cs.Name && id.F == c.F && s.Parent == c.S {
			own = append(own, id)
		}
	}
	if len(own) > 0 {
		return own, cs.Kind == KindInterface
	}
	for _, b := range g.jvBases(c) {
		if ids, via := g.jvMethod(b, name, depth+1); len(ids) > 0 {
			return ids, via
		}
	}
	return nil, false
}

// jvBases lists the classes of the repository a class extends and implements, in order.
func (g *Graph) jvBases(c SymID) []SymID {
	ix := g.index()
	if out, ok := ix.jvBases[c]; ok {
		return out
	}
	if ix.jvBases == nil {
		ix.jvBases = map[SymID][]SymID{}
	}
	f := g.Files[c.F]
	var out []SymID
	defer func() { ix.jvBases[c] = out }()
	for _, l := range g.Sym(c).Locals {
		if l.Name == "(base)" {
			out = append(out, g.jvClasses(c.F, f, jvBaseName(l.Type))...)
		}
	}
	return out
}

// jvBaseName is the simple name of a type as written: a.b.C<T>[] is C.
func jvBaseName(t string) string {
	t = strings.TrimSpace(t)
	for strings.HasPrefix(t, "@") { // an annotation before the type
		i := strings.IndexByte(t, ' ')
		if i < 0 {
			return ""
		}
		t = strings.TrimSpace(t[i+1:])
	}
	t = strings.TrimPrefix(t, "final ")
	if i := strings.IndexByte(t, '<'); i >= 0 {
		t = t[:i]
	}
	return lastSegment(strings.TrimSpace(t))
}

// jvTypeOf types a type as written in file fi: a class of the repository, else known and outside
// (String, List<T>, int, an array).
func (g *Graph) jvTypeOf(fi int32, f *File, typ string) jvType {
	if strings.HasSuffix(strings.TrimSpace(typ), "]") {
		return jvType{known: true}
	}
	return jvType{classes: g.jvClasses(fi, f, jvBaseName(typ)), known: true}
}

// jvEnclosing is the innermost class holding scope, else {-1,-1}.
func (g *Graph) jvEnclosing(fi int32, f *File, scope int32) SymID {
	syms := f.Syms()
	for s := scope; s >= 0; s = syms[s].Parent {
		if syms[s].Kind.TypeLike() {
			return SymID{fi, s}
		}
	}
	return SymID{-1, -1}
}

// jvExpr types an expression as written: this, super, new C(..), a chain of names, fields and calls;
// anything else (a cast, an index) is not typed.
func (g *Graph) jvExpr(fi int32, f *File, scope int32, line uint32, expr string, depth int) jvType {
	if depth > jvMaxDepth {
		return jvUnknown
	}
	expr = jvTight(expr)
	for len(expr) > 1 && expr[0] == '(' && closing(expr, 0) == len(expr)-1 {
		expr = strings.TrimSpace(expr[1 : len(expr)-1])
	}
	if expr == "" || strings.Contains(expr, "…") {
		return jvUnknown // empty, or clipped
	}
	if c := expr[0]; c == '"' || c == '\'' || c >= '0' && c <= '9' {
		return jvType{known: true}
	}
	var t jvType
	rest := expr
	switch {
	case strings.HasPrefix(expr, "new "):
		// new C(..), an anonymous class's body perhaps, then perhaps .m()...
		after := expr[4:]
		i := strings.IndexByte(after, '(')
		if i <= 0 {
			return jvUnknown
		}
		end := closing(after, i)
		if end < 0 {
			return jvUnknown
		}
		t = g.jvTypeOf(fi, f, after[:i])
		rest = strings.TrimSpace(after[end+1:])
		if strings.HasPrefix(rest, "{") {
			k := closing(rest, 0)
			if k < 0 {
				return jvUnknown
			}
			rest = rest[k+1:]
		}
	case expr[0] == '(':
		// ((T) x).m or (a.b()).c: a cast types what it casts.
		k := closing(expr, 0)
		if k < 0 {
			return jvUnknown
		}
		rest = strings.TrimSpace(expr[k+1:])
		if rest != "" && rest[0] != '.' {
			return g.jvTypeOf(fi, f, expr[1:k]) // (T) x
		}
		if t = g.jvExpr(fi, f, scope, line, expr[1:k], depth+1); !t.known {
			return jvUnknown
		}
	}
	if t.known {
		if rest = strings.TrimPrefix(rest, "."); rest == "" {
			return t
		}
	}
	segs, ok := pySegments(rest)
	if !ok || len(segs) == 0 {
		return jvUnknown
	}
	if !t.known {
		first := segs[0]
		segs = segs[1:]
		switch {
		case first.name == "this" && !first.call:
			if c := g.jvEnclosing(fi, f, scope); c.F >= 0 {
				t = jvType{classes: []SymID{c}, known: true}
			}
		case first.name == "super" && !first.call:
			if c := g.jvEnclosing(fi, f, scope); c.F >= 0 {
				t = jvType{classes: g.jvBases(c), known: true}
			}
		case first.call:
			ids, _ := g.jvImplicit(fi, f, scope, first.name, g.Named(first.name))
			t = g.jvReturns(ids)
			if len(ids) == 0 && jvImported(f, first.name) {
				t = jvType{known: true} // a static import from outside the repository (assertThat)
			}
		default:
			t = g.jvName(fi, f, scope, line, first.name, depth+1)
			if !t.known {
				t, segs = g.jvQualified(fi, f, first, segs)
			}
		}
	}
	for _, s := range segs {
		if !t.known || len(t.classes) == 0 {
			return t
		}
		if s.call {
			var ids []SymID
			for _, c := range t.classes {
				m, _ := g.jvMethod(c, s.name, 0)
				ids = append(ids, m...)
			}
			t = g.jvReturns(ids)
		} else {
			t = g.jvMember(t, s.name)
		}
	}
	return t
}

// jvImported reports whether the file imports a member of the name (import a.b.C.name, static or not).
func jvImported(f *File, name string) bool {
	for _, im := range f.Imps() {
		if im.Name == name {
			return true
		}
	}
	return false
}

// jvQualified types a fully qualified class name that starts a chain (java.util.UUID.fromString: the
// package's names, then the class), and gives the steps after it; else not typed.
func (g *Graph) jvQualified(fi int32, f *File, first pySeg, segs []pySeg) (jvType, []pySeg) {
	pkg := []string{first.name}
	for i, s := range segs {
		if s.call || s.name == "" {
			break
		}
		if c := s.name[0]; c < 'A' || c > 'Z' {
			pkg = append(pkg, s.name)
			continue
		}
		dir := strings.Join(pkg, "/")
		cls := filter(g.Named(s.name), func(id SymID) bool {
			d := path.Dir(g.Files[id.F].Path)
			return g.jvIsClass(id) && (d == dir || strings.HasSuffix(d, "/"+dir))
		})
		return jvType{classes: cls, known: true}, segs[i+1:]
	}
	return jvUnknown, segs
}

// jvMember types member name of a value or class: a field, a nested class, an enum's constant, C.this.
func (g *Graph) jvMember(t jvType, name string) jvType {
	switch name {
	case "class":
		return jvType{known: true} // a Class object
	case "this":
		return t // Outer.this
	}
	if ft := g.jvField(t.classes, name, 0); ft.known {
		return ft
	}
	var nested []SymID
	for _, c := range t.classes {
		for si, s := range g.Files[c.F].Syms() {
			if s.Parent == c.S && s.Name == name && g.jvIsClass(SymID{c.F, int32(si)}) {
				nested = append(nested, SymID{c.F, int32(si)})
			}
		}
	}
	if len(nested) > 0 {
		return jvType{classes: nested, known: true}
	}
	for _, c := range t.classes {
		if g.Sym(c).Kind == KindEnum {
			return jvType{classes: []SymID{c}, known: true} // a constant of the enum
		}
	}
	return jvUnknown
}

// jvTight drops the spaces a chain broken over lines keeps around its dots (a\n  .b() is a.b()).
func jvTight(e string) string {
	e = strings.TrimSpace(e)
	for strings.Contains(e, " .") || strings.Contains(e, ". ") {
		e = strings.ReplaceAll(strings.ReplaceAll(e, " .", "."), ". ", ".")
	}
	return e
}

// jvName types a name as the code at scope sees it on line: a local or parameter, a field of the
// enclosing classes or their bases, a class (a static call's receiver).
func (g *Graph) jvName(fi int32, f *File, scope int32, line uint32, name string, depth int) jvType {
	syms := f.Syms()
	for s := scope; s >= 0; s = syms[s].Parent {
		if syms[s].Kind.TypeLike() {
			if t := g.jvField([]SymID{{fi, s}}, name, 0); t.known {
				return t
			}
			continue
		}
		var typ, expr string
		var at uint32
		found := false
		for _, l := range syms[s].Locals {
			if l.Name != name || l.Line > line || found && l.Line < at {
				continue
			}
			if !found || l.Line > at {
				typ, expr = "", ""
			}
			found, at = true, l.Line
			if strings.HasPrefix(l.Type, "=") {
				expr = l.Type[1:]
			} else {
				typ = l.Type
			}
		}
		if !found {
			continue
		}
		switch {
		case typ == "?":
			return jvUnknown
		case typ != "" && typ != "var":
			return g.jvTypeOf(fi, f, typ)
		case expr != "":
			return g.jvExpr(fi, f, s, at, expr, depth+1)
		}
		return jvUnknown
	}
	if cls := g.jvClasses(fi, f, name); len(cls) > 0 {
		return jvType{classes: cls, known: true}
	}
	if g.jvOutsideClass(f, name) {
		return jvType{known: true}
	}
	return jvUnknown
}

// jvField types field name of the classes from its declaration, looking through their bases.
func (g *Graph) jvField(classes []SymID, name string, depth int) jvType {
	if depth > jvMaxDepth {
		return jvUnknown
	}
	for _, c := range classes {
		for _, l := range g.Sym(c).Locals {
			if l.Name == name {
				return g.jvTypeOf(c.F, g.Files[c.F], l.Type)
			}
		}
		if t := g.jvField(g.jvBases(c), name, depth+1); t.known {
			return t
		}
	}
	return jvUnknown
}

// jvReturns types what calling one of the methods gives: its declared return type.
func (g *Graph) jvReturns(ids []SymID) jvType {
	var out jvType
	for _, id := range ids {
		for _, l := range g.Sym(id).Locals {
			if l.Name == "(return)" {
				t := g.jvTypeOf(id.F, g.Files[id.F], l.Type)
				out.known = true
				for _, c := range t.classes {
					if !contains32(out.classes, c) {
						out.classes = append(out.classes, c)
					}
				}
			}
		}
	}
	return out
}
