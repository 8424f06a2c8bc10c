package graph

import "strings"

// tsType is what the syntax says a TypeScript expression holds.
type tsType struct {
	classes []SymID // classes and interfaces of the repository: an instance of one, or the class itself
	funcs   []SymID // functions or methods of the repository: calling one gives what it returns
	known   bool    // the type is stated; with nothing above it is outside the repository
	super   bool    // super: classes are the bases of a class, in order
}

var (
	tsUnknown = tsType{}
	tsNone    = tsType{known: true}
)

// tsMaxDepth bounds how many declarations one type is followed through.
const tsMaxDepth = 16

// tsMemo keeps what TypeScript resolution worked out, per graph.
type tsMemo struct {
	types    map[pyKey]tsType
	bases    map[SymID][]SymID
	children map[SymID][]SymID // classes and interfaces → those that extend or implement them
	busy     map[pyKey]bool
	cycles   int
}

func (g *Graph) tsMemo() *tsMemo {
	ix := g.index()
	if ix.ts == nil {
		ix.ts = &tsMemo{types: map[pyKey]tsType{}, bases: map[SymID][]SymID{}, busy: map[pyKey]bool{}}
	}
	return ix.ts
}

// tsGlobals are names every TypeScript program sees: calls on them resolve to nothing in the repository.
var tsGlobals = map[string]bool{
	"console": true, "Math": true, "JSON": true, "Object": true, "Array": true, "Promise": true, "Date": true,
	"Number": true, "String": true, "Symbol": true, "Reflect": true, "window": true, "document": true,
	"process": true, "Error": true, "Map": true, "Set": true, "WeakMap": true, "WeakSet": true, "RegExp": true,
	"Boolean": true, "BigInt": true, "Proxy": true, "Intl": true, "globalThis": true, "navigator": true,
	"Record": true, "Partial": true, "Readonly": true, "ReadonlyArray": true, "Iterable": true, "Iterator": true,
	"AsyncIterable": true, "PromiseLike": true, "Function": true, "ArrayLike": true, "TypeError": true,
}

// resolveTS resolves a TypeScript call by the types the syntax states: this and super through the
// class's extends and implements clauses, parameters, fields and variables with a type annotation or a
// value made by new C() or a call with a declared result, constructor parameter properties, imports. A
// method call goes to the method and to the methods of the same name its class's bases and their
// subclasses declare (overrides and implementations: the language service lists those sites for each).
func (g *Graph) resolveTS(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, How) {
	if r.Recv == "" {
		if ids, ok := g.resolveModule(fi, f, r, cands); ok {
			return ids, Typed
		}
		// A bare name is never a method: there is no implicit this.
		cands = filter(cands, func(id SymID) bool { return g.Sym(id).Kind != KindMethod })
		if len(cands) == 0 {
			return nil, Typed
		}
		return g.genericHow(fi, f, r, cands)
	}
	if r.Value && g.pyCalledAt(fi, f, r) {
		return nil, Typed // the member a call calls: the call's own site says it
	}
	// Otherwise a member read calls a get accessor (a write, a set accessor) or names a method as a value
	// (this.flush.bind(this), lift = source.lift), which the language service counts among its callers.
	t := g.tsExpr(fi, f, r.From, r.Recv, 0)
	if !t.known && r.Value {
		return nil, Typed // a member read is matched only on a typed receiver
	}
	if !t.known {
		if ids, ok := g.resolveModule(fi, f, r, cands); ok {
			return ids, Typed
		}
		// Matched by name: every method of the name (the nearest-file guess misses the class an untyped
		// callback parameter holds more often than it helps).
		if ms := filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod }); len(ms) > 0 {
			return ms, ByName
		}
		return g.genericHow(fi, f, r, cands)
	}
	var out []SymID
	for _, id := range g.tsMember(t, r.Name, 0).funcs {
		for _, m := range g.tsFamily(id) {
			if contains32(cands, m) && !contains32(out, m) {
				out = append(out, m)
			}
		}
	}
	return out, Typed
}

// tsExpr types an expression as written: a chain of names, calls and members (this.source.subscribe,
// foo<T>(x).bar, handled!); anything else is not typed.
func (g *Graph) tsExpr(fi int32, f *File, scope int32, expr string, depth int) tsType {
	if g.tsTooDeep(depth) {
		return tsUnknown
	}
	key := pyKey{fi, scope, expr}
	memo := g.tsMemo()
	if t, ok := memo.types[key]; ok {
		return t
	}
	if memo.busy[key] {
		memo.cycles++
		return tsUnknown
	}
	memo.busy[key] = true
	before := memo.cycles
	t := g.tsExprUncached(fi, f, scope, expr, depth)
	delete(memo.busy, key)
	if memo.cycles == before {
		memo.types[key] = t
	}
	return t
}

// tsTooDeep reports whether depth is past tsMaxDepth; a type cut short there is not kept.
func (g *Graph) tsTooDeep(depth int) bool {
	if depth <= tsMaxDepth {
		return false
	}
	g.tsMemo().cycles++
	return true
}

func (g *Graph) tsExprUncached(fi int32, f *File, scope int32, expr string, depth int) tsType {
	expr = strings.TrimSpace(expr)
	for len(expr) > 1 && expr[0] == '(' && closing(expr, 0) == len(expr)-1 {
		expr = strings.TrimSpace(expr[1 : len(expr)-1])
	}
	if i := tsTopLevelAs(expr); i >= 0 {
		return g.tsTypeOf(fi, f, scope, strings.TrimSpace(expr[i+4:]), depth+1) // x as T
	}
	if expr != "" && strings.ContainsRune("[\"'`0123456789", rune(expr[0])) {
		return tsNone // a literal: an array, a string, a number
	}
	if rest, ok := strings.CutPrefix(expr, "new "); ok {
		// new C(...): an instance of C
		if i := strings.IndexByte(rest, '('); i > 0 {
			rest = rest[:i]
		}
		return g.tsTypeOf(fi, f, scope, strings.TrimSpace(rest), depth+1)
	}
	segs, ok := pySegments(tsPlain(expr))
	if !ok || len(segs) == 0 {
		return tsUnknown
	}
	var t tsType
	first := segs[0]
	switch first.name {
	case "this":
		cls := g.tsEnclosingClass(f, fi, scope)
		if cls.F < 0 {
			return tsUnknown
		}
		t = tsType{classes: []SymID{cls}, known: true}
	case "super":
		cls := g.tsEnclosingClass(f, fi, scope)
		if cls.F < 0 {
			return tsUnknown
		}
		t = tsType{classes: g.tsBases(cls, depth+1), known: true, super: true}
	default:
		t = g.tsName(fi, f, scope, first.name, depth+1)
	}
	if first.call {
		t = g.tsCall(t, depth+1)
	}
	for _, s := range segs[1:] {
		if !t.known {
			return t
		}
		t = g.tsMember(t, s.name, depth+1)
		if s.call {
			t = g.tsCall(t, depth+1)
		}
	}
	return t
}

// tsTopLevelAs is the index of the last " as " outside brackets and strings in expr, else -1.
func tsTopLevelAs(expr string) int {
	depth, at := 0, -1
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '"', '\'', '`':
			for i++; i < len(expr) && expr[i] != c; i++ {
			}
		case ' ':
			if depth == 0 && strings.HasPrefix(expr[i:], " as ") {
				at = i
			}
		}
	}
	return at
}

// tsPlain drops what does not change an expression's type: non-null assertions, optional chaining and
// type arguments (x!.a?.b<T>() is x.a.b()).
func tsPlain(expr string) string {
	if !strings.ContainsAny(expr, "!?<") {
		return expr
	}
	var b strings.Builder
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '!' || c == '?' && i+1 < len(expr) && expr[i+1] == '.':
		case c == '<' && i > 0 && isWordByte(expr[i-1]):
			depth := 0
			j := i
			for ; j < len(expr); j++ {
				if expr[j] == '<' {
					depth++
				} else if expr[j] == '>' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if j >= len(expr) {
				return expr
			}
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// tsEnclosingClass is the class whose method holds scope (through nested functions), else {-1,-1}.
func (g *Graph) tsEnclosingClass(f *File, fi, scope int32) SymID {
	syms := f.Syms()
	for s := scope; s >= 0; s = syms[s].Parent {
		if syms[s].Kind.TypeLike() {
			return SymID{fi, s}
		}
	}
	return SymID{-1, -1}
}

// tsName types a name as the code at scope sees it: a parameter or variable, a class or function of the
// file, an import, a global.
func (g *Graph) tsName(fi int32, f *File, scope int32, name string, depth int) tsType {
	syms := f.Syms()
	// A callback's parameter first: it is bound in the function that passes the callback, and its type
	// is the callee's.
	if t, ok := g.tsCallbackParam(fi, f, scope, name, depth+1); ok {
		return t
	}
	for s := scope; s >= 0; s = syms[s].Parent {
		found, untyped := false, false
		for _, l := range syms[s].Locals {
			if l.Name != name {
				continue
			}
			found = true
			t := g.tsTypeOf(fi, f, s, l.Type, depth+1)
			if len(t.classes)+len(t.funcs) > 0 {
				return t
			}
			untyped = untyped || !t.known
		}
		if found {
			if untyped {
				return tsUnknown
			}
			return tsNone
		}
	}
	var t tsType
	for si, s := range syms {
		if s.Parent >= 0 || s.Name != name {
			continue
		}
		switch {
		case s.Kind.TypeLike():
			t.classes = append(t.classes, SymID{fi, int32(si)})
		case s.Kind.Callable():
			t.funcs = append(t.funcs, SymID{fi, int32(si)})
		}
	}
	if len(t.classes)+len(t.funcs) > 0 {
		t.known = true
		return t
	}
	for _, im := range f.Imps() {
		local := im.Alias
		if local == "" {
			local = im.Name
		}
		if local != name {
			continue
		}
		if !strings.HasPrefix(im.Path, ".") {
			return tsNone // a package outside the repository
		}
		// A default import (import C from './c') names the module's export of its name, most often;
		// a namespace import (import * as m) is followed by resolveModule.
		member := im.Name
		if member == "default" || member == "" {
			member = name
		}
		var out tsType
		for _, mf := range g.withReexports(f, g.moduleFiles(f, im.Path)) {
			for si, s := range g.Files[mf].Syms() {
				if s.Parent >= 0 || s.Name != member {
					continue
				}
				if s.Kind.TypeLike() {
					out.classes = append(out.classes, SymID{mf, int32(si)})
				} else if s.Kind.Callable() {
					out.funcs = append(out.funcs, SymID{mf, int32(si)})
				}
			}
		}
		out.known = len(out.classes)+len(out.funcs) > 0
		if !out.known && im.Name != "" {
			return tsUnknown
		}
		if !out.known {
			continue
		}
		return out
	}
	if tsGlobals[name] {
		return tsNone
	}
	return tsUnknown
}

// tsTypeOf types a local's recorded type: an annotation, a class made by new, a call, "(literal)".
func (g *Graph) tsTypeOf(fi int32, f *File, scope int32, typ string, depth int) tsType {
	switch {
	case typ == "(literal)" || typ == "?":
		return tsNone
	case strings.HasSuffix(typ, ")"):
		return g.tsExpr(fi, f, scope, typ, depth+1)
	}
	ann, ok := tsAnnotation(typ)
	if !ok {
		return tsNone
	}
	if ann == "" {
		return tsUnknown
	}
	t := g.tsName(fi, f, scope, ann, depth+1)
	if len(t.funcs) > 0 && len(t.classes) == 0 {
		return tsUnknown // a value's type named by a function: not a type
	}
	if !t.known && len(ann) > 1 {
		// A type the file neither declares nor imports: a global one (HTMLElement, Iterable).
		return tsNone
	}
	return t
}

// tsAnnotation is the type name an annotation states, with null and undefined dropped and type
// arguments removed; ok is false for a type outside any repository (string, Foo[], a function or object
// type), and the name "" when the annotation is a union or another type the syntax cannot follow.
func tsAnnotation(typ string) (string, bool) {
	t := strings.TrimSpace(typ)
	if strings.Contains(t, "|") {
		var keep []string
		for _, p := range strings.Split(t, "|") {
			if p = strings.TrimSpace(p); p != "null" && p != "undefined" && p != "" {
				keep = append(keep, p)
			}
		}
		if len(keep) != 1 {
			return "", true
		}
		t = keep[0]
	}
	t = tsPlain(t)
	switch {
	case t == "":
		return "", true
	case strings.HasSuffix(t, "[]"), strings.HasPrefix(t, "{"), strings.HasPrefix(t, "("), strings.HasPrefix(t, "["),
		strings.HasPrefix(t, "'"), strings.HasPrefix(t, `"`), strings.Contains(t, "=>"):
		return "", false
	}
	switch t {
	case "string", "number", "boolean", "any", "unknown", "void", "never", "object", "bigint", "symbol", "null", "undefined":
		return "", false
	}
	if strings.HasPrefix(t, "typeof ") || strings.ContainsAny(t, " &") {
		return "", true
	}
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		t = t[i+1:] // ns.Type: the type's own name
	}
	return t, true
}

// tsCall types the result of calling t: what its functions declare they return.
func (g *Graph) tsCall(t tsType, depth int) tsType {
	if !t.known || len(t.funcs) == 0 {
		return tsUnknown
	}
	var out tsType
	for _, fn := range t.funcs {
		s := g.Sym(fn)
		for _, l := range s.Locals {
			if l.Name != "(return)" {
				continue
			}
			r := g.tsTypeOf(fn.F, g.Files[fn.F], fn.S, l.Type, depth+1)
			if !r.known {
				return tsUnknown
			}
			out.classes = append(out.classes, r.classes...)
			out.known = true
		}
	}
	return out
}

// tsMember types member name of t: a method of a class or its bases, else a field's declared type.
func (g *Graph) tsMember(t tsType, name string, depth int) tsType {
	if !t.known || len(t.classes) == 0 {
		return tsUnknown
	}
	if g.tsTooDeep(depth) {
		return tsUnknown
	}
	classes := t.classes
	if t.super && len(classes) > 0 {
		classes = classes[:1]
	}
	var out tsType
	for _, cls := range classes {
		if m := g.tsMethod(cls, name, depth+1); m.F >= 0 {
			out.funcs = append(out.funcs, m)
			continue
		}
		ft := g.tsField(cls, name, depth+1)
		if !ft.known {
			return tsUnknown
		}
		out.classes = append(out.classes, ft.classes...)
		out.funcs = append(out.funcs, ft.funcs...)
	}
	out.known = true
	return out
}

// tsChain is cls followed by its bases (extends, then implements), depth first, each once.
func (g *Graph) tsChain(cls SymID, depth int) []SymID {
	out := []SymID{cls}
	for i := 0; i < len(out) && i < 64; i++ {
		for _, b := range g.tsBases(out[i], depth+1) {
			if !contains32(out, b) {
				out = append(out, b)
			}
		}
	}
	return out
}

// tsMethod is the method name of class cls or the first of its bases that declares it, else {-1,-1}.
func (g *Graph) tsMethod(cls SymID, name string, depth int) SymID {
	for _, c := range g.tsChain(cls, depth) {
		if m := g.pyOwnMethod(c, name); m.F >= 0 {
			return m
		}
	}
	return SymID{-1, -1}
}

// tsField types field name of class cls or a base: its declaration in the class body, a constructor
// parameter property (private x: T), or this.x = new T() in a method; not found, it is not typed.
func (g *Graph) tsField(cls SymID, name string, depth int) tsType {
	for _, c := range g.tsChain(cls, depth) {
		f := g.Files[c.F]
		syms := f.Syms()
		for _, l := range syms[c.S].Locals {
			if l.Name == name {
				return g.tsTypeOf(c.F, f, c.S, l.Type, depth+1)
			}
		}
		for si, s := range syms {
			if s.Parent != c.S || !s.Kind.Callable() {
				continue
			}
			for _, l := range s.Locals {
				if l.Name == "this."+name || l.Name == name && s.Name == "constructor" && tsParameterProperty(s.Sig, name) {
					return g.tsTypeOf(c.F, f, int32(si), l.Type, depth+1)
				}
			}
		}
	}
	return tsUnknown
}

// tsParameterProperty reports whether a constructor's signature declares name as a parameter property.
func tsParameterProperty(sig, name string) bool {
	for _, mod := range []string{"private ", "public ", "protected ", "readonly "} {
		for _, after := range []string{":", "?:", " =", " :", ",", ")"} {
			if strings.Contains(sig, mod+name+after) || strings.Contains(sig, mod+"readonly "+name+after) {
				return true
			}
		}
	}
	return false
}

// tsBases types the classes and interfaces class cls extends and implements.
func (g *Graph) tsBases(cls SymID, depth int) []SymID {
	memo := g.tsMemo()
	if b, ok := memo.bases[cls]; ok {
		return b
	}
	f := g.Files[cls.F]
	s := f.Syms()[cls.S]
	var out []SymID
	for _, l := range s.Locals {
		if l.Name != "(base)" || g.tsTooDeep(depth) {
			continue
		}
		ann, ok := tsAnnotation(l.Type)
		if !ok || ann == "" {
			continue
		}
		for _, b := range g.tsName(cls.F, f, s.Parent, ann, depth+1).classes {
			if b != cls && !contains32(out, b) {
				out = append(out, b)
			}
		}
	}
	memo.bases[cls] = out
	return out
}

// tsFamily is method m with the methods of its name that the classes and interfaces above its class
// declare (what it overrides or implements) and those below any of these (what overrides them): the
// group the language service answers as one for each of its methods.
func (g *Graph) tsFamily(m SymID) []SymID {
	s := g.Sym(m)
	if s.Kind != KindMethod || s.Parent < 0 {
		return []SymID{m}
	}
	cls := SymID{m.F, s.Parent}
	// The classes and interfaces above it that declare the name, and everything below those.
	all := filter(g.tsChain(cls, 0), func(c SymID) bool { return g.pyOwnMethod(c, s.Name).F >= 0 })
	children := g.tsChildren()
	for i := 0; i < len(all) && i < 512; i++ {
		for _, c := range children[all[i]] {
			if !contains32(all, c) {
				all = append(all, c)
			}
		}
	}
	out := []SymID{m}
	for _, c := range append(all, cls) {
		// Every declaration of the name in the class: its overload signatures and the implementation.
		for si, o := range g.Files[c.F].Syms() {
			if id := (SymID{c.F, int32(si)}); o.Parent == c.S && o.Name == s.Name && o.Kind.Callable() && !contains32(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// tsChildren maps each class or interface to those that extend or implement it, over the graph's TypeScript files.
func (g *Graph) tsChildren() map[SymID][]SymID {
	memo := g.tsMemo()
	if memo.children != nil {
		return memo.children
	}
	memo.children = map[SymID][]SymID{}
	for fi, f := range g.Files {
		if f.Lang != "typescript" && f.Lang != "tsx" {
			continue
		}
		for si, s := range f.Syms() {
			if !s.Kind.TypeLike() {
				continue
			}
			id := SymID{int32(fi), int32(si)}
			for _, b := range g.tsBases(id, 0) {
				memo.children[b] = append(memo.children[b], id)
			}
		}
	}
	return memo.children
}

// tsConstructorCallers lists the sites that call a TypeScript constructor: new C(...) (and C(...)) of
// its class, and super(...) in the constructors of the classes extending it.
func (g *Graph) tsConstructorCallers(t SymID) []Edge {
	s := g.Sym(t)
	f := g.Files[t.F]
	if s.Name != "constructor" || s.Parent < 0 || f.Lang != "typescript" && f.Lang != "tsx" {
		return nil
	}
	cls := SymID{t.F, s.Parent}
	name := g.Sym(cls).Name
	var out []Edge
	for fi, rf := range g.Files {
		if family(rf.Lang) != "js" || !rf.MayCall(name) && !rf.MayCall("super") {
			continue
		}
		for ri := range rf.LoadRefs() {
			r := &rf.Refs[ri]
			switch {
			case r.Name == name && r.Recv == "":
				if ids, _ := g.Resolve(int32(fi), r); contains32(ids, cls) {
					out = append(out, Edge{File: int32(fi), Ref: int32(ri), Target: t})
				}
			case r.Name == "super" && r.Recv == "" && (rf.Lang == "typescript" || rf.Lang == "tsx"):
				if sub := g.tsEnclosingClass(rf, int32(fi), r.From); sub.F >= 0 {
					if b := g.tsBases(sub, 0); len(b) > 0 && b[0] == cls {
						out = append(out, Edge{File: int32(fi), Ref: int32(ri), Target: t})
					}
				}
			}
		}
	}
	return out
}

// tsCallbackParam types a parameter of an arrow function passed to a call (operate((source, subscriber)
// => ...), new Observable((subscriber) => ...)) by the callee's declared callback parameter: the k-th
// parameter of the first parameter of the callee whose type is a function type.
func (g *Graph) tsCallbackParam(fi int32, f *File, scope int32, name string, depth int) (tsType, bool) {
	syms := f.Syms()
	for s := scope; s >= 0; s = syms[s].Parent {
		for _, l := range syms[s].Locals {
			if !strings.HasPrefix(l.Name, "(") {
				continue
			}
			k := tsParamIndex(l.Name, name)
			if k < 0 {
				continue
			}
			callee := g.tsExpr(fi, f, s, l.Type, depth+1)
			fns := callee.funcs
			for _, c := range callee.classes {
				if m := g.pyOwnMethod(c, "constructor"); m.F >= 0 {
					fns = append(fns, m)
				}
			}
			for _, fn := range fns {
				for _, pl := range g.Sym(fn).Locals {
					if !strings.Contains(pl.Type, "=>") || !strings.HasPrefix(strings.TrimSpace(pl.Type), "(") {
						continue
					}
					if params := tsParamTypes(pl.Type); k < len(params) {
						return g.tsTypeOf(fn.F, g.Files[fn.F], fn.S, params[k], depth+1), true
					}
					break
				}
			}
			return tsUnknown, true
		}
	}
	return tsUnknown, false
}

// tsParamIndex is the position of name among the parameters written as list ("(a, b: T = x)"), else -1.
func tsParamIndex(list, name string) int {
	for k, p := range tsSplitTop(strings.TrimSuffix(strings.TrimPrefix(list, "("), ")")) {
		p = strings.TrimSpace(p)
		end := 0
		for end < len(p) && isWordByte(p[end]) {
			end++
		}
		if p[:end] == name {
			return k
		}
	}
	return -1
}

// tsParamTypes is the types of a function type's parameters, this: left out ("(a: A, b: B) => R" is A, B).
func tsParamTypes(fn string) []string {
	fn = strings.TrimSpace(fn)
	depth, end := 0, -1
	for i := 0; i < len(fn) && end < 0; i++ {
		switch fn[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				end = i
			}
		}
	}
	if end < 0 {
		return nil
	}
	var out []string
	for _, p := range tsSplitTop(fn[1:end]) {
		name, typ, ok := strings.Cut(p, ":")
		if strings.TrimSpace(name) == "this" {
			continue
		}
		if !ok {
			typ = "any"
		}
		out = append(out, strings.TrimSpace(typ))
	}
	return out
}

// tsSplitTop splits s at the commas outside brackets.
func tsSplitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '>':
			if i == 0 || s[i-1] != '=' {
				depth--
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" {
		out = append(out, s[start:])
	}
	return out
}

// withReexports adds to a JS/TS module's files those it re-exports (export * from './x', export { a }
// from './x'), transitively: a barrel file's members are its sources'.
func (g *Graph) withReexports(from *File, files []int32) []int32 {
	if from.Lang == "python" || len(files) == 0 {
		return files
	}
	out := append([]int32(nil), files...)
	for i := 0; i < len(out) && len(out) < 64; i++ {
		mf := g.Files[out[i]]
		for _, im := range mf.Imps() {
			if im.Name != "" || im.Alias != "" || !strings.HasPrefix(im.Path, ".") {
				continue
			}
			for _, x := range g.moduleFiles(mf, im.Path) {
				if !contains(out, x) {
					out = append(out, x)
				}
			}
		}
	}
	return out
}
