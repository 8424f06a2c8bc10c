package graph

import (
	"strings"
)

// pyType is what the syntax says a Python expression holds.
type pyType struct {
	classes []SymID // classes of the repository: an instance of one, or the class itself
	funcs   []SymID // functions or methods of the repository: calling one gives what it returns
	module  string  // a module imported as a whole (dotted, as imported); its files may be outside the repository
	from    *File   // the file whose import named module
	known   bool    // the type is stated; with nothing above it is outside the repository (a builtin, a literal)
	opaque  bool    // not known, but bound to a value whose type the syntax does not give (a call's, an attribute's)
	param   bool    // a parameter with no stated type: its methods are matched by name, and say so
	super   bool    // super(): classes are the rest of a class's MRO, in order; the first that defines a name has it
}

// pyTooDeep reports whether depth is past pyMaxDepth; a type cut short there is not kept, as past a cycle.
func (g *Graph) pyTooDeep(depth int) bool {
	if depth <= pyMaxDepth {
		return false
	}
	g.pyMemo().cycles++
	return true
}

// pyUnknown is an expression the syntax does not type.
var pyUnknown = pyType{}

// pyNone is a type outside the repository: no method of it is in the graph.
var pyNone = pyType{known: true}

// pyParam is a parameter with no stated type.
var pyParam = pyType{param: true}

// pyOpaque is a value the code binds from what the syntax does not type: matching its methods by name
// would guess (pyright agrees with such a guess about one time in forty on the standard library).
var pyOpaque = pyType{opaque: true}

// pyMaxDepth bounds how many assignments, returns and bases one type is followed through.
const pyMaxDepth = 20

type pyKey struct {
	f     int32
	scope int32
	expr  string
}

// pyMemo keeps what Python resolution worked out, per graph.
type pyMemo struct {
	types  map[pyKey]pyType
	mro    map[SymID][]SymID
	busy   map[pyKey]bool               // expressions being typed: asking again is a cycle
	calls  map[int32]map[pyCallKey]bool // per file, its call sites (pyCalledAt)
	cycles int                          // how many times a cycle was met: a type worked out past one is not kept
}

func (g *Graph) pyMemo() *pyMemo {
	ix := g.index()
	if ix.py == nil {
		ix.py = &pyMemo{types: map[pyKey]pyType{}, mro: map[SymID][]SymID{}, busy: map[pyKey]bool{}, calls: map[int32]map[pyCallKey]bool{}}
	}
	return ix.py
}

// pyBuiltins are names Python defines everywhere: calls on them resolve to nothing in the repository.
var pyBuiltins = map[string]bool{
	"str": true, "bytes": true, "bytearray": true, "int": true, "float": true, "complex": true, "bool": true,
	"list": true, "dict": true, "set": true, "frozenset": true, "tuple": true, "object": true, "type": true,
	"super": false, "range": true, "memoryview": true, "Exception": true, "BaseException": true,
	"ValueError": true, "TypeError": true, "KeyError": true, "RuntimeError": true, "OSError": true,
	"len": true, "print": true, "open": true, "repr": true, "isinstance": true, "getattr": true,
	"sorted": true, "reversed": true, "enumerate": true, "zip": true, "map": true, "filter": true,
	"iter": true, "next": true, "min": true, "max": true, "sum": true, "abs": true, "format": true,
	"hasattr": true, "setattr": true, "id": true, "hash": true, "vars": true, "dir": true, "chr": true, "ord": true,
	"None": true, "True": true, "False": true, "NotImplemented": true, "Ellipsis": true,
}

// resolvePy resolves a Python call by what the syntax types: self and cls, super(), parameters and
// variables with a stated type or a value made by a call, attributes assigned in the class's methods,
// functions through what they return, and methods through the class's bases. A receiver the syntax
// types but outside the repository, or binds from what it cannot type, resolves to nothing; a
// parameter with no stated type has a method of its own file matched by name, labelled so.
func (g *Graph) resolvePy(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, How) {
	if r.Recv == "" {
		if g.pyName(fi, f, r.From, r.Name, 0).param {
			return nil, Typed // a parameter called: it shadows the module's function of that name
		}
		if ids, ok := g.resolveModule(fi, f, r, cands); ok {
			return ids, Typed
		}
		// A bare name is never a method: Python has no implicit self.
		cands = filter(cands, func(id SymID) bool { return g.Sym(id).Kind != KindMethod })
		t := g.pyName(fi, f, r.From, r.Name, 0)
		if t.known && len(t.classes)+len(t.funcs) == 0 || len(cands) == 0 {
			return nil, Typed // a builtin, a parameter or a variable, or a name imported from outside
		}
		return g.genericHow(fi, f, r, cands)
	}
	if r.Value && g.pyCalledAt(fi, f, r) {
		return nil, Typed // the attribute a call calls: the call's own site says it
	}
	t := g.pyExpr(fi, f, r.From, r.Recv, 0)
	if t.param {
		// Most Python parameters state no type. A call on one is matched by name, labelled so,
		// when the calling file defines the only method of that name in the repository (its
		// class is then likelier meant than not) and the name is not a builtin type's method (a
		// parameter calling items() or strip() is likelier a dict or a str). Wider guesses
		// agreed with pyright too rarely: by name among every method, precision fell from 0.91
		// to 0.72 on eight stdlib packages; with one candidate anywhere, to 0.85.
		ms := filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod })
		if r.Value || pyBuiltinMethods[r.Name] || len(ms) != 1 || ms[0].F != fi {
			return nil, Typed
		}
		return ms, ByName
	}
	if t.opaque {
		return nil, Typed
	}
	if !t.known {
		if r.Value {
			return nil, Typed // an attribute read is matched only on a typed receiver
		}
		return g.genericHow(fi, f, r, cands)
	}
	// An attribute read on a typed receiver calls a property's getter, or names a method as a value
	// (callback=self.done), which pyright counts among its callers too.
	var out []SymID
	for _, id := range g.pyAttr(t, r.Name, 0).funcs {
		if contains32(cands, id) {
			out = append(out, id)
		}
	}
	return out, Typed
}

// pyBuiltinMethods are methods of Python's builtin types (str, bytes, list, dict, set, files, sockets).
var pyBuiltinMethods = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`append extend insert remove pop clear index count sort reverse copy
		get items keys values update setdefault popitem fromkeys add discard union intersection difference
		issubset issuperset join split rsplit splitlines strip lstrip rstrip startswith endswith find rfind
		replace lower upper title capitalize format encode decode partition rpartition isdigit isalpha
		read write readline readlines writelines close flush seek tell fileno send recv`) {
		pyBuiltinMethods[n] = true
	}
}

// pyProperty reports whether a method is a property (@property, @functools.cached_property, ...):
// reading the attribute calls it.
func (g *Graph) pyProperty(id SymID) bool {
	s := g.Sym(id)
	if s.Kind != KindMethod {
		return false
	}
	for _, l := range s.Locals {
		if l.Name == s.Name {
			switch lastSegment(l.Type) {
			case "property", "cached_property", "abstractproperty":
				return true
			}
		}
	}
	return false
}

// pyCalledAt reports whether attribute read r is the function a call at its line calls (self.m in
// self.m()): the call's site already stands for it.
func (g *Graph) pyCalledAt(fi int32, f *File, r *Ref) bool {
	memo := g.pyMemo()
	calls, ok := memo.calls[fi]
	if !ok {
		calls = map[pyCallKey]bool{}
		for _, c := range f.LoadRefs() {
			if !c.Value {
				calls[pyCallKey{c.Line, c.Name, c.Recv}] = true
			}
		}
		memo.calls[fi] = calls
	}
	return calls[pyCallKey{r.Line, r.Name, r.Recv}]
}

// pyCallKey names a call site by its line, callee name and receiver.
type pyCallKey struct {
	line       uint32
	name, recv string
}

// genericHow resolves by the rules every language shares.
func (g *Graph) genericHow(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, How) {
	ids, byName := g.resolveGeneric(fi, f, r, cands)
	if byName {
		return ids, ByName
	}
	return ids, Typed
}

func contains32(ids []SymID, id SymID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// pyExpr types an expression as written (a receiver, a variable's value): a chain of names, calls and
// attributes such as self.parser.parse(fp) or Parser(policy=p); anything else is not typed.
func (g *Graph) pyExpr(fi int32, f *File, scope int32, expr string, depth int) pyType {
	if g.pyTooDeep(depth) {
		return pyUnknown
	}
	key := pyKey{fi, scope, expr}
	memo := g.pyMemo()
	if t, ok := memo.types[key]; ok {
		return t
	}
	if memo.busy[key] {
		memo.cycles++
		return pyUnknown // a cycle answers unknown
	}
	memo.busy[key] = true
	before := memo.cycles
	t := g.pyExprUncached(fi, f, scope, expr, depth)
	delete(memo.busy, key)
	if memo.cycles == before {
		memo.types[key] = t // worked out without meeting a cycle: the same from wherever it is asked
	}
	return t
}

func (g *Graph) pyExprUncached(fi int32, f *File, scope int32, expr string, depth int) pyType {
	segs, ok := pySegments(expr)
	if !ok || len(segs) == 0 {
		if expr != "" && strings.ContainsRune("[{'\"0123456789", rune(expr[0])) {
			return pyNone // a literal
		}
		return pyOpaque // an item, an operation, a comprehension: the syntax does not type it
	}
	var t pyType
	first := segs[0]
	switch {
	case first.name == "super" && first.call:
		cls := g.pyEnclosingClass(f, fi, scope)
		if cls.F < 0 {
			return pyUnknown
		}
		t = pyType{classes: g.pyBases(cls, depth+1), known: true, super: true}
		first.call = false
	default:
		t = g.pyName(fi, f, scope, first.name, depth+1)
	}
	if first.call {
		t = g.pyCall(t, depth+1)
	}
	for _, s := range segs[1:] {
		if !t.known {
			return t
		}
		t = g.pyAttr(t, s.name, depth+1)
		if s.call {
			t = g.pyCall(t, depth+1)
		}
	}
	return t
}

// pySeg is one name of a chain and whether it is called.
type pySeg struct {
	name string
	call bool
}

// pySegments splits a.b(x).c into its names; ok is false for anything but names, dots and calls.
func pySegments(expr string) ([]pySeg, bool) {
	var segs []pySeg
	i := 0
	for i < len(expr) {
		j := i
		for j < len(expr) && (expr[j] == '_' || expr[j] >= 'a' && expr[j] <= 'z' || expr[j] >= 'A' && expr[j] <= 'Z' || expr[j] >= '0' && expr[j] <= '9' || expr[j] >= 0x80) {
			j++
		}
		if j == i || expr[i] >= '0' && expr[i] <= '9' {
			return nil, false
		}
		s := pySeg{name: expr[i:j]}
		if j < len(expr) && expr[j] == '(' {
			depth := 0
			k := j
			for ; k < len(expr); k++ {
				if expr[k] == '(' {
					depth++
				} else if expr[k] == ')' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if k >= len(expr) {
				return nil, false
			}
			s.call, j = true, k+1
		}
		segs = append(segs, s)
		if j == len(expr) {
			return segs, true
		}
		if expr[j] != '.' {
			return nil, false
		}
		i = j + 1
	}
	return nil, false
}

// pyEnclosingClass is the class whose method holds scope (through nested functions), else {-1,-1}.
func (g *Graph) pyEnclosingClass(f *File, fi, scope int32) SymID {
	syms := f.Syms()
	for s := scope; s >= 0; s = syms[s].Parent {
		if syms[s].Kind == KindMethod && syms[s].Parent >= 0 && syms[syms[s].Parent].Kind == KindClass {
			return SymID{fi, syms[s].Parent}
		}
	}
	return SymID{-1, -1}
}

// pyName types a name as the code at scope sees it: self and cls, a parameter or variable, a class,
// function or variable of the module, an import, a builtin.
func (g *Graph) pyName(fi int32, f *File, scope int32, name string, depth int) pyType {
	syms := f.Syms()
	if name == "self" || name == "cls" {
		if cls := g.pyEnclosingClass(f, fi, scope); cls.F >= 0 {
			return pyType{classes: []SymID{cls}, known: true}
		}
	}
	for s := scope; s >= 0; s = syms[s].Parent {
		if syms[s].Kind == KindClass {
			continue // a class body's names are not in its methods' scope
		}
		if t, found := g.pyLocal(fi, f, s, name, depth); found {
			return t
		}
	}
	return g.pyModuleName(fi, f, name, depth)
}

// pyLocal types name from the locals symbol s states: the first that names something in the repository,
// else a stated one outside it; found is false when s does not bind the name.
func (g *Graph) pyLocal(fi int32, f *File, s int32, name string, depth int) (pyType, bool) {
	found, untyped, param := false, false, false
	for _, l := range f.Syms()[s].Locals {
		if l.Name != name || name == f.Syms()[s].Name && f.Syms()[s].Kind.Callable() {
			continue // a function's own name is its decorator's (@property)
		}
		found = true
		t := g.pyTypeOf(fi, f, s, l.Type, depth)
		if len(t.classes)+len(t.funcs) > 0 || t.module != "" {
			return t, true
		}
		param = param || t.param
		untyped = untyped || !t.known && !t.param
	}
	switch {
	case untyped:
		return pyOpaque, true // bound once from what the syntax cannot type
	case param:
		return pyParam, true
	}
	return pyNone, found
}

// pyTypeOf types a local's recorded type: "?" (a parameter with none), "(literal)", an annotation, a call
// (Foo(), make(), self.x.get()) or a name.
func (g *Graph) pyTypeOf(fi int32, f *File, scope int32, typ string, depth int) pyType {
	switch typ {
	case "?":
		return pyParam
	case "(literal)":
		return pyNone
	}
	if strings.HasSuffix(typ, "()") {
		return g.pyExpr(fi, f, scope, typ, depth+1)
	}
	ann := pyAnnotation(typ)
	if ann == "" {
		return pyNone // a stated type the graph does not hold: a container, a union, a builtin
	}
	t := g.pyExpr(fi, f, scope, ann, depth+1)
	if len(t.funcs) > 0 && len(t.classes) == 0 {
		// x = func: a function value, not what it returns
		return t
	}
	if !t.known && !strings.Contains(ann, ".") && isIdent(ann) {
		return pyNone // an annotation naming nothing the module binds
	}
	return t
}

// pyAnnotation is the class an annotation names: quotes, Optional[...] and "| None" dropped; "" for
// other generic and union types.
func pyAnnotation(typ string) string {
	t := strings.TrimSpace(typ)
	t = strings.Trim(t, `"'`)
	for _, p := range []string{"typing.Optional[", "Optional["} {
		if strings.HasPrefix(t, p) && strings.HasSuffix(t, "]") {
			t = strings.TrimSpace(t[len(p) : len(t)-1])
		}
	}
	if a, b, ok := strings.Cut(t, "|"); ok {
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		switch {
		case b == "None":
			t = a
		case a == "None":
			t = b
		default:
			return ""
		}
	}
	t = strings.Trim(t, `"'`)
	if strings.ContainsAny(t, "[], ()") {
		return ""
	}
	return t
}

// pyModuleName types a name bound at the top of the module: a class, function or variable, an import, a builtin.
func (g *Graph) pyModuleName(fi int32, f *File, name string, depth int) pyType {
	var t pyType
	for si, s := range f.Syms() {
		if s.Parent >= 0 || s.Name != name {
			continue
		}
		switch {
		case s.Kind == KindClass:
			t.classes = append(t.classes, SymID{fi, int32(si)})
			t.known = true
		case s.Kind.Callable():
			t.funcs = append(t.funcs, SymID{fi, int32(si)})
			t.known = true
		case s.Kind == KindVar:
			if lt, found := g.pyLocal(fi, f, int32(si), name, depth); found {
				return lt
			}
		}
	}
	if t.known {
		return t
	}
	for i := len(f.Imps()) - 1; i >= 0; i-- {
		im := f.Imps()[i]
		switch {
		case im.Name == "" && (im.Alias == name || im.Alias == "" && strings.SplitN(im.Path, ".", 2)[0] == name):
			mod := im.Path
			if im.Alias == "" {
				mod = name
			}
			return pyType{module: mod, from: f, known: true}
		case im.Name != "" && (im.Alias == name || im.Alias == "" && im.Name == name):
			sub := strings.TrimSuffix(im.Path, ".") + "." + im.Name
			if strings.Trim(im.Path, ".") == "" {
				sub = im.Path + im.Name
			}
			if files := g.moduleFiles(f, sub); len(files) > 0 {
				return pyType{module: sub, from: f, known: true}
			}
			return g.pyAttr(pyType{module: im.Path, from: f, known: true}, im.Name, depth+1)
		}
	}
	if pyBuiltins[name] {
		return pyNone
	}
	return pyUnknown
}

// pyCall types the result of calling t: a class's instance, what a function returns.
func (g *Graph) pyCall(t pyType, depth int) pyType {
	switch {
	case !t.known:
		return t
	case t.module != "" || g.pyTooDeep(depth):
		return pyUnknown
	case len(t.funcs) == 0:
		return pyType{classes: t.classes, known: true} // an instance of the class; of nothing here for pyNone
	}
	var out pyType
	anyKnown := false
	for _, fn := range t.funcs {
		r := g.pyReturns(fn, depth+1)
		if r.known {
			anyKnown = true
		}
		out.classes = append(out.classes, r.classes...)
		out.funcs = append(out.funcs, r.funcs...)
	}
	if !anyKnown {
		return pyOpaque // what it returns is not typed
	}
	out.known = true
	return out
}

// pyReturns types what a function returns: its annotation, else the calls it returns.
func (g *Graph) pyReturns(fn SymID, depth int) pyType {
	f := g.Files[fn.F]
	s := f.Syms()[fn.S]
	out := pyUnknown
	for _, l := range s.Locals {
		if l.Name != "(return)" {
			continue
		}
		t := g.pyTypeOf(fn.F, f, fn.S, l.Type, depth+1)
		if len(t.classes) > 0 {
			return pyType{classes: t.classes, known: true}
		}
		if t.known {
			out = pyNone
		}
	}
	return out
}

// pyAttr types attribute name of t: a module's member or submodule, a class's method (through its bases)
// or an attribute its methods assign (self.x = ...) or its body annotates.
func (g *Graph) pyAttr(t pyType, name string, depth int) pyType {
	if !t.known {
		return t
	}
	if g.pyTooDeep(depth) {
		return pyUnknown
	}
	if t.module != "" {
		sub := t.module + "." + name
		if strings.HasSuffix(t.module, ".") {
			sub = t.module + name
		}
		files := g.moduleFiles(t.from, t.module)
		if subs := g.moduleFiles(t.from, sub); len(subs) > 0 {
			return pyType{module: sub, from: t.from, known: true}
		}
		if len(files) == 0 {
			return pyNone // a module outside the repository
		}
		var out pyType
		for _, mf := range files {
			mt := g.pyModuleName(mf, g.Files[mf], name, depth+1)
			if mt.module != "" {
				return mt
			}
			out.classes = append(out.classes, mt.classes...)
			out.funcs = append(out.funcs, mt.funcs...)
			out.known = out.known || mt.known
		}
		if len(out.classes)+len(out.funcs) == 0 {
			return pyUnknown
		}
		return out
	}
	if len(t.classes) == 0 {
		return pyOpaque // an attribute of a type outside the repository: the graph does not know it
	}
	if t.super {
		for _, c := range t.classes {
			if m := g.pyOwnMethod(c, name); m.F >= 0 {
				return pyType{funcs: []SymID{m}, known: true}
			}
		}
		return g.pyField(t.classes[0], name, depth+1)
	}
	var out pyType
	out.known = true
	for _, cls := range t.classes {
		if m := g.pyMethod(cls, name, depth+1); m.F >= 0 {
			if g.pyProperty(m) {
				out.classes = append(out.classes, g.pyReturns(m, depth+1).classes...)
			}
			out.funcs = append(out.funcs, m)
			continue
		}
		at := g.pyField(cls, name, depth+1)
		if !at.known {
			return at
		}
		out.classes = append(out.classes, at.classes...)
		out.funcs = append(out.funcs, at.funcs...)
	}
	return out
}

// pyMethod is the method name of class cls or the first of its bases (in order) that defines it, else {-1,-1}.
func (g *Graph) pyMethod(cls SymID, name string, depth int) SymID {
	for _, c := range g.pyMRO(cls, depth) {
		if m := g.pyOwnMethod(c, name); m.F >= 0 {
			return m
		}
	}
	return SymID{-1, -1}
}

// pyOwnMethod is the method name class c itself defines, else {-1,-1}.
func (g *Graph) pyOwnMethod(c SymID, name string) SymID {
	for si, s := range g.Files[c.F].Syms() {
		if s.Parent == c.S && s.Name == name && s.Kind.Callable() {
			return SymID{c.F, int32(si)}
		}
	}
	return SymID{-1, -1}
}

// pyField types attribute name that class cls (or a base) assigns in a method or annotates in its body;
// an attribute nothing assigns is not typed.
func (g *Graph) pyField(cls SymID, name string, depth int) pyType {
	found, untyped := false, false
	for _, c := range g.pyMRO(cls, depth) {
		f := g.Files[c.F]
		syms := f.Syms()
		if t, ok := g.pyLocal(c.F, f, c.S, name, depth+1); ok {
			if len(t.classes)+len(t.funcs) > 0 {
				return t
			}
			found, untyped = true, untyped || !t.known
		}
		for si, s := range syms {
			if s.Parent != c.S || !s.Kind.Callable() {
				continue
			}
			for _, l := range s.Locals {
				if l.Name != "self."+name {
					continue
				}
				found = true
				t := g.pyTypeOf(c.F, f, int32(si), l.Type, depth+1)
				if len(t.classes)+len(t.funcs) > 0 {
					return t
				}
				untyped = untyped || !t.known
			}
		}
	}
	if !found || untyped {
		return pyOpaque
	}
	return pyNone
}

// pyBases types the bases of class cls, in order, as classes of the repository.
func (g *Graph) pyBases(cls SymID, depth int) []SymID {
	mro := g.pyMRO(cls, depth)
	if len(mro) == 0 {
		return nil
	}
	return mro[1:]
}

// pyMRO is cls followed by its bases, depth first and left to right, each at its last place (Python's
// C3 order wherever that order is consistent); bases outside the repository are left out.
func (g *Graph) pyMRO(cls SymID, depth int) []SymID {
	memo := g.pyMemo()
	if m, ok := memo.mro[cls]; ok {
		return m
	}
	key := pyKey{cls.F, cls.S, "(mro)"}
	if memo.busy[key] {
		memo.cycles++
		return []SymID{cls} // a cycle stops here
	}
	memo.busy[key] = true
	before := memo.cycles
	defer delete(memo.busy, key)
	all := []SymID{cls}
	f := g.Files[cls.F]
	s := f.Syms()[cls.S]
	for _, l := range s.Locals {
		if l.Name != "(base)" || g.pyTooDeep(depth) {
			continue
		}
		b := g.pyExpr(cls.F, f, s.Parent, l.Type, depth+1)
		for _, bc := range b.classes {
			all = append(all, g.pyMRO(bc, depth+1)...)
		}
	}
	// Each class at its last place: a base shared by two bases comes after both, as in C3.
	var out []SymID
	for i, c := range all {
		if !contains32(all[i+1:], c) {
			out = append(out, c)
		}
	}
	if memo.cycles == before {
		memo.mro[cls] = out
	}
	return out
}
