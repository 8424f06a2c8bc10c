package graph

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

func (g *Graph) resolveGo(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, How) {
	// A local bound above the call (a parameter, a variable holding a function) is what a bare
	// name calls or names, not the package's function.
	if r.Recv == "" && goBoundAbove(f, r.From, r.Line, r.Name) {
		return nil, Typed
	}
	if !r.Value {
		return g.resolveGoCall(fi, f, r, cands)
	}
	// A name used as a value refers to a function or method only when the syntax says which: an
	// untyped receiver's is never matched by name.
	cands = filter(cands, func(id SymID) bool { return g.Sym(id).Kind.Callable() })
	ids, how := g.resolveGoCall(fi, f, r, cands)
	if how == ByName {
		return nil, Typed
	}
	return ids, how
}

// resolveGoCall resolves a Go call site (or a value, then with callable candidates only).
func (g *Graph) resolveGoCall(fi int32, f *File, r *Ref, cands []SymID) ([]SymID, How) {
	dir := path.Dir(f.Path)
	inPkg := func(d, pkg string) func(SymID) bool {
		return func(id SymID) bool {
			o := g.Files[id.F]
			return o.Lang == "go" && path.Dir(o.Path) == d && (pkg == "" || o.Pkg == pkg || strings.TrimSuffix(o.Pkg, "_test") == pkg)
		}
	}
	topLevel := func(id SymID) bool { return g.Sym(id).Container == "" }
	if r.Recv == "" {
		out := filter(cands, func(id SymID) bool {
			o := g.Files[id.F]
			return topLevel(id) && o.Lang == "go" && path.Dir(o.Path) == dir && o.Pkg == f.Pkg
		})
		if len(out) == 0 {
			// A dot import brings another package's names into the file's scope.
			for _, im := range f.Imps() {
				if im.Alias == "." {
					for _, d := range g.goImportDirs(im.Path) {
						out = append(out, filter(cands, func(id SymID) bool { return topLevel(id) && inPkg(d, g.goPkgName(d))(id) })...)
					}
				}
			}
		}
		return out, Typed
	}
	recv := r.Recv
	if isIdent(recv) {
		if dirs, ok := g.goImport(f, recv); ok {
			var out []SymID
			for _, d := range dirs {
				out = append(out, filter(cands, func(id SymID) bool { return topLevel(id) && inPkg(d, g.goPkgName(d))(id) })...)
			}
			return out, Typed
		}
	}
	// A method expression or value of a type the package can name: T.M, (*T).M, pkg.T.M.
	if t, ok := g.goTypeName(f, r.From, r.Line, recv); ok {
		return g.goMethodCall(f, t, r.Name, cands)
	}
	// A receiver whose type the syntax gives calls that type's method; through an interface, the
	// interface's and its implementations'; for another type from outside the repository, nothing.
	t, ok := g.goExprType(f, r.From, r.Line, recv, 0)
	if !ok && r.Name == "Error" && (recv == "err" || strings.HasSuffix(recv, "err") || strings.HasSuffix(recv, "Err")) {
		// An error value whose type the syntax leaves out is an error.
		t, ok = goType{name: "error"}, true
	}
	if ok {
		if t.dir == "" {
			// The error interface or one of the standard library's reaches the methods of the calling
			// package's own types (gopls finds those; the types of other packages it leaves out).
			isError := t.name == "error" && t.ext == "" && r.Name == "Error"
			if isError || goStdInterfaces[t.ext] {
				impls := filter(cands, func(id SymID) bool {
					s := g.Sym(id)
					if s.Kind != KindMethod || s.Container == "" || g.InInterface(id) {
						return false
					}
					o := g.Files[id.F]
					return path.Dir(o.Path) == dir && o.Pkg == f.Pkg && (!isError || strings.Contains(s.Sig, "Error() string"))
				})
				if len(impls) > 0 {
					return impls, ViaInterface
				}
			}
			return nil, Typed
		}
		return g.goMethodCall(f, t, r.Name, cands)
	}
	methods := filter(cands, func(id SymID) bool { return g.Sym(id).Kind == KindMethod })
	// An unexported method is called only from its own package.
	methods = filter(methods, func(id SymID) bool {
		n := g.Sym(id).Name
		return path.Dir(g.Files[id.F].Path) == dir || n != "" && n[0] >= 'A' && n[0] <= 'Z'
	})
	// A value of a type the file's package declares is likelier than one it imports, which is likelier
	// than one it cannot name: the methods of its own package first, then of imported ones.
	if own := filter(methods, func(id SymID) bool { o := g.Files[id.F]; return path.Dir(o.Path) == dir && o.Pkg == f.Pkg }); len(own) > 0 {
		methods = own
	} else if seen := filter(methods, func(id SymID) bool { return g.goSees(f, id) }); len(seen) > 0 {
		methods = seen
	}
	ids, byName := byNameOnly(methods)
	if byName {
		return ids, ByName
	}
	return ids, Typed
}

// goTypeName is the repository type a receiver names when it is a type and not a value (T, (*T), pkg.T).
func (g *Graph) goTypeName(f *File, from int32, line uint32, recv string) (goType, bool) {
	tn := recv
	if strings.HasPrefix(tn, "(") && strings.HasSuffix(tn, ")") {
		tn = strings.TrimPrefix(tn[1:len(tn)-1], "*")
	}
	if q, n, ok := strings.Cut(tn, "."); ok && !(isIdent(q) && isIdent(n)) || !ok && (!isIdent(tn) || goLocal(f, from, line, tn) != "") {
		return goType{}, false
	}
	t, ok := g.goTypeNamed(f, tn)
	if !ok || t.dir == "" {
		return goType{}, false
	}
	if _, s := g.goTypeDecl(t); s == nil {
		return goType{}, false
	}
	return t, true
}

// goSees reports whether a call in file f may reach method id through an interface: id's package is
// f's or one f imports (a type f's package cannot name reaches it only through others' calls).
func (g *Graph) goSees(f *File, id SymID) bool {
	dir := path.Dir(g.Files[id.F].Path)
	if dir == path.Dir(f.Path) {
		return true
	}
	g.goImport(f, "") // fills the file's import map
	for _, dirs := range g.index().goAliases[f] {
		for _, d := range dirs {
			if d == dir {
				return true
			}
		}
	}
	return false
}

// goImplementations lists the methods among cands of the repository's types that have every method
// the interface declaring im declares (by name: the syntax does not give full method sets); an
// interface with an unexported method is implemented only in its own package.
func (g *Graph) goImplementations(f *File, im SymID, cands []SymID) []SymID {
	decl := g.Files[im.F]
	iface := decl.Syms()[g.Sym(im).Parent]
	names := g.goMethodNames(decl, g.Sym(im).Parent, 0)
	own := false
	for _, n := range names {
		if n != "" && !(n[0] >= 'A' && n[0] <= 'Z') {
			own = true
		}
	}
	var out []SymID
	for _, id := range cands {
		c, o := g.Sym(id), g.Files[id.F]
		if c.Kind != KindMethod || c.Container == "" || c.Container == iface.Name || g.InInterface(id) {
			continue
		}
		if own && (path.Dir(o.Path) != path.Dir(decl.Path) || strings.TrimSuffix(o.Pkg, "_test") != strings.TrimSuffix(decl.Pkg, "_test")) {
			continue
		}
		if g.goHasMethods(goType{dir: path.Dir(o.Path), name: c.Container}, names) {
			out = append(out, id)
		}
	}
	return out
}

// goType is a Go type named in the syntax: the folder of the package that declares it ("" for a
// type from outside the repository or a predeclared one) and its name.
type goType struct {
	dir, name string
	ext       string // for a type from outside the repository, its import path and name ("fmt.Stringer")
}

// goStdInterfaces are interfaces of Go's standard library whose methods the repository's types
// commonly implement: a call on one reaches those methods.
var goStdInterfaces = map[string]bool{"fmt.Stringer": true, "fmt.Formatter": true, "fmt.GoStringer": true, "io.Reader": true,
	"io.Writer": true, "io.Closer": true, "io.ReadCloser": true, "io.WriteCloser": true, "io.ReadWriter": true,
	"io.ReadWriteCloser": true, "io.ReaderAt": true, "io.WriterTo": true, "io.ReaderFrom": true, "sort.Interface": true,
	"flag.Value": true, "encoding.TextMarshaler": true, "encoding.TextUnmarshaler": true, "encoding/json.Marshaler": true,
	"encoding/json.Unmarshaler": true, "io/fs.File": true, "io/fs.FileInfo": true, "io/fs.DirEntry": true, "os.FileInfo": true,
	"net/http.Handler": true, "hash.Hash": true}

// goExprType is the type of a receiver expression as the syntax gives it: a typed local, a field
// of one, a call's declared result, a conversion. ok is false when the syntax does not say.
func (g *Graph) goExprType(f *File, from int32, line uint32, expr string, depth int) (goType, bool) {
	if depth > 8 || expr == "" {
		return goType{}, false
	}
	expr = strings.TrimSpace(expr)
	switch {
	case strings.HasPrefix(expr, "(") && opening(expr) == 0 && strings.HasSuffix(expr, ")"):
		return g.goExprType(f, from, line, expr[1:len(expr)-1], depth+1) // (x)
	case strings.HasPrefix(expr, "<-"):
		return g.goElemType(f, from, line, expr[2:], depth+1) // a receive from a channel
	case strings.HasPrefix(expr, "&"), strings.HasPrefix(expr, "*"):
		return g.goExprType(f, from, line, expr[1:], depth+1) // &T{}, *p: the pointer's type stands for the type
	case strings.HasSuffix(expr, "}"):
		// A composite literal: T{...}, pkg.T{...}, T[X]{...}.
		if open := opening(expr); open > 0 {
			if typ := strings.TrimSpace(expr[:open]); !strings.ContainsAny(typ, " ({") {
				return g.goTypeNamed(f, typ)
			}
		}
		return goType{}, false
	case strings.HasSuffix(expr, "]"):
		// An index: s[i], m[k] (a slice's, array's or map's element).
		if open := opening(expr); open > 0 && expr[open] == '[' {
			return g.goElemType(f, from, line, expr[:open], depth+1)
		}
		return goType{}, false
	case strings.HasSuffix(expr, ")"):
		open := opening(expr)
		if open <= 0 || expr[open] != '(' {
			return goType{}, false
		}
		if strings.HasSuffix(expr[:open], ".") {
			return g.goTypeNamed(f, expr[open+1:len(expr)-1]) // a type assertion x.(T)
		}
		if strings.TrimSpace(expr[:open]) == "new" {
			return g.goTypeNamed(f, expr[open+1:len(expr)-1]) // new(T)
		}
		// A call: f(...), pkg.F(...), x.M(...), T(...).
		return g.goCallType(f, from, line, expr[:open], 0, depth)
	}
	if isIdent(expr) {
		typ := goLocal(f, from, line, expr)
		switch {
		case strings.HasPrefix(typ, "range "):
			return g.goElemType(f, from, line, strings.TrimPrefix(typ, "range "), depth+1)
		case strings.HasPrefix(typ, "="):
			return g.goExprType(f, from, line, typ[1:], depth+1)
		}
		if typ := g.goLocalType(f, from, line, expr); typ != "" {
			if callee, k, ok := goCallLocal(typ); ok {
				return g.goCallType(f, from, line, callee, k, depth+1)
			}
			if c := goLocal(f, from, line, typ); c != "" && isIdent(typ) && !strings.HasPrefix(c, "=") {
				return g.goTypeNamed(f, c) // a type parameter: its constraint
			}
			return g.goTypeNamed(f, typ)
		}
		return g.goPackageVarType(f, expr, depth+1)
	}
	i := strings.LastIndexByte(expr, '.')
	if i <= 0 || !isIdent(expr[i+1:]) {
		return goType{}, false
	}
	a, b := expr[:i], expr[i+1:]
	if isIdent(a) && goLocal(f, from, line, a) == "" {
		if dirs, ok := g.goImport(f, a); ok {
			// A package's variable: pkg.V.
			if len(dirs) == 0 {
				return goType{}, true
			}
			for _, fi := range g.index().dirs[dirs[0]] {
				if t, ok := g.goPackageVarType(g.Files[fi], b, depth+1); ok {
					return t, true
				}
			}
			return goType{}, false
		}
	}
	// A field: s.cache with s *Store and Store's field cache *Cache; s.db.pool a field of a field;
	// a field of an embedded struct.
	t, ok := g.goExprType(f, from, line, a, depth+1)
	if !ok || t.dir == "" {
		return goType{}, false
	}
	if sf, ft := g.goPromotedField(t, b, 0); ft != "" {
		return g.goTypeNamed(sf, ft)
	}
	return goType{}, false
}

// goCallLocal splits a local's type that is a call's result ("f()", "x.M()#1": the second result)
// into the callee and the result's position.
func goCallLocal(typ string) (string, int, bool) {
	k := 0
	if i := strings.LastIndex(typ, "()#"); i > 0 {
		n := 0
		for _, c := range typ[i+3:] {
			if c < '0' || c > '9' {
				return "", 0, false
			}
			n = n*10 + int(c-'0')
		}
		typ, k = typ[:i+2], n
	}
	if !strings.HasSuffix(typ, "()") {
		return "", 0, false
	}
	return strings.TrimSuffix(typ, "()"), k, true
}

// goPackageVarType is the type of package-level variable name of file f's package, as its
// declaration states it.
func (g *Graph) goPackageVarType(f *File, name string, depth int) (goType, bool) {
	dir := path.Dir(f.Path)
	for _, id := range g.Named(name) {
		o, s := g.Files[id.F], g.Sym(id)
		if o.Lang != "go" || s.Kind != KindVar || s.Container != "" || path.Dir(o.Path) != dir {
			continue
		}
		for _, l := range s.Locals {
			if l.Name == name {
				return g.goExprType(o, id.S, 0, l.Name, depth+1)
			}
		}
	}
	return goType{}, false
}

// goElemType is the element type of what expression expr holds (a slice, array, map's values or
// channel), through a named type's underlying type.
func (g *Graph) goElemType(f *File, from int32, line uint32, expr string, depth int) (goType, bool) {
	if arg, ok := goIterArg(f, strings.TrimSpace(expr)); ok {
		return g.goElemType(f, from, line, arg, depth+1)
	}
	df, txt, ok := g.goTypeText(f, from, line, expr, depth+1)
	if !ok {
		t, ok := g.goExprType(f, from, line, expr, depth+1)
		if !ok || t.dir == "" {
			return goType{}, ok // the element of a type from outside the repository is from outside
		}
		df, txt = g.goUnderlying(t)
	}
	for i := 0; i < 3 && df != nil; i++ {
		if el := goElem(txt); el != "" {
			return g.goTypeNamed(df, el)
		}
		t, ok := g.goTypeNamed(df, txt)
		if !ok || t.dir == "" {
			return goType{}, ok
		}
		df, txt = g.goUnderlying(t)
	}
	return goType{}, false
}

// goIterArg is the slice or map a standard iterator ranges over (slices.All(s), slices.Backward(s),
// maps.All(m): what they yield beside the index or key is s's or m's element).
func goIterArg(f *File, expr string) (string, bool) {
	open := opening(expr)
	if !strings.HasSuffix(expr, ")") || open <= 0 {
		return "", false
	}
	q, n, ok := strings.Cut(expr[:open], ".")
	if !ok || !(n == "All" || n == "Backward") {
		return "", false
	}
	for _, im := range f.Imps() {
		if (im.Path == "slices" || im.Path == "maps") && (im.Alias == q || im.Alias == "" && im.Path == q) {
			args := SplitTopLevel(expr[open+1 : len(expr)-1])
			return args[0], len(args) == 1 && args[0] != ""
		}
	}
	return "", false
}

// goTypeText is the type of a typed local or of a field of one as written where it is declared
// (slices and maps included), and the file declaring it.
func (g *Graph) goTypeText(f *File, from int32, line uint32, expr string, depth int) (*File, string, bool) {
	expr = strings.TrimSpace(expr)
	if depth > 4 {
		return nil, "", false
	}
	switch {
	case strings.HasPrefix(expr, "*"): // *p: the pointer's type stands for the type
		return g.goTypeText(f, from, line, expr[1:], depth+1)
	case strings.HasPrefix(expr, "(") && opening(expr) == 0 && strings.HasSuffix(expr, ")"):
		return g.goTypeText(f, from, line, expr[1:len(expr)-1], depth+1)
	}
	if isIdent(expr) {
		if typ := goLocal(f, from, line, expr); typ != "" && !strings.Contains(typ, "()") && !strings.HasPrefix(typ, "range ") && !strings.HasPrefix(typ, "=") {
			return f, typ, true
		}
		return nil, "", false
	}
	i := strings.LastIndexByte(expr, '.')
	if i <= 0 || !isIdent(expr[i+1:]) {
		return nil, "", false
	}
	t, ok := g.goExprType(f, from, line, expr[:i], depth+1)
	if !ok || t.dir == "" {
		return nil, "", false
	}
	sf, ft := g.goPromotedField(t, expr[i+1:], 0)
	return sf, ft, ft != ""
}

// goElem is the element type of a slice, array, map (its values) or channel type as written, or "".
func goElem(t string) string {
	t = strings.TrimPrefix(strings.TrimSpace(t), "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return t[2:]
	case strings.HasPrefix(t, "["):
		if i := strings.IndexByte(t, ']'); i > 0 {
			return t[i+1:]
		}
	case strings.HasPrefix(t, "map["):
		if i := closing(t[3:], 0); i > 0 {
			return t[3+i+1:]
		}
	case strings.HasPrefix(t, "chan "), strings.HasPrefix(t, "<-chan "):
		return t[strings.IndexByte(t, ' ')+1:]
	}
	return ""
}

// goCallType is the type a call of callee returns: a function's or method's declared result at
// position k, or the type itself for a conversion.
func (g *Graph) goCallType(f *File, from int32, line uint32, callee string, k, depth int) (goType, bool) {
	dir := path.Dir(f.Path)
	if strings.HasPrefix(callee, "(") && opening(callee) == 0 && strings.HasSuffix(callee, ")") {
		return g.goTypeNamed(f, callee[1:len(callee)-1]) // a conversion to a type in parentheses: (*T)(x)
	}
	if strings.HasSuffix(callee, "]") { // a generic function's instance: F[T](x)
		if open := opening(callee); open > 0 {
			callee = callee[:open]
		}
	}
	var decl []SymID // the definitions callee may name
	name := callee
	if i := strings.LastIndexByte(callee, '.'); i > 0 && isIdent(callee[i+1:]) {
		q, n := callee[:i], callee[i+1:]
		name = n
		dirs, isImport := []string(nil), false
		if isIdent(q) {
			dirs, isImport = g.goImport(f, q)
		}
		if isImport {
			if len(dirs) == 0 {
				return goType{}, true // a call into a package outside the repository
			}
			decl = filter(g.Named(n), func(id SymID) bool { return g.Sym(id).Container == "" && path.Dir(g.Files[id.F].Path) == dirs[0] })
		} else if t, ok := g.goExprType(f, from, line, q, depth+1); ok {
			if t.dir == "" {
				return goType{}, true
			}
			decl = g.goMethodOf(t, n, g.Named(n), 0)
		} else {
			return goType{}, false
		}
	} else if isIdent(callee) {
		decl = filter(g.Named(callee), func(id SymID) bool {
			o := g.Files[id.F]
			return g.Sym(id).Container == "" && o.Lang == "go" && path.Dir(o.Path) == dir
		})
		if len(decl) == 0 && goPredeclared[callee] {
			return goType{}, true
		}
	} else {
		return goType{}, false
	}
	if len(decl) != 1 {
		return goType{}, false
	}
	s, df := g.Sym(decl[0]), g.Files[decl[0].F]
	if s.Kind.TypeLike() {
		if k > 0 {
			return goType{}, false
		}
		return goType{dir: path.Dir(df.Path), name: name}, true
	}
	if res := goResults(s.Sig); k < len(res) && res[k] != "" {
		return g.goTypeNamed(df, res[k])
	}
	return goType{}, false
}

// goTypeNamed resolves a type as written in file f (T, *T, pkg.T, T[X]).
func (g *Graph) goTypeNamed(f *File, typ string) (goType, bool) {
	typ = strings.TrimPrefix(strings.TrimSpace(typ), "*")
	if i := strings.IndexByte(typ, '['); i > 0 {
		typ = typ[:i]
	}
	if q, n, ok := strings.Cut(typ, "."); ok {
		dirs, ok := g.goImport(f, q)
		if !ok {
			return goType{}, false
		}
		if len(dirs) == 0 {
			ext := n
			for _, im := range f.Imps() {
				if im.Alias == q || im.Alias == "" && goDefaultName(im.Path) == q {
					ext = im.Path + "." + n
					break
				}
			}
			return goType{name: n, ext: ext}, true
		}
		return goType{dir: dirs[0], name: n}, true
	}
	if !isIdent(typ) {
		return goType{}, false
	}
	dir := path.Dir(f.Path)
	for _, id := range g.Named(typ) {
		if s := g.Sym(id); s.Kind.TypeLike() && s.Container == "" && path.Dir(g.Files[id.F].Path) == dir {
			return goType{dir: dir, name: typ}, true
		}
	}
	if goPredeclared[typ] {
		return goType{name: typ}, true
	}
	return goType{}, false
}

// goPredeclared are Go's predeclared types and the builtins that return one.
var goPredeclared = map[string]bool{"bool": true, "byte": true, "complex64": true, "complex128": true, "error": true,
	"float32": true, "float64": true, "int": true, "int8": true, "int16": true, "int32": true, "int64": true, "rune": true,
	"string": true, "uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true, "any": true,
	"len": true, "cap": true, "append": true, "make": true, "complex": true, "real": true, "imag": true, "min": true, "max": true}

// goFieldType is the declared type of field name of struct typ in folder dir, and the file declaring it.
func (g *Graph) goFieldType(dir, typ, name string) (*File, string) {
	for _, id := range g.Named(typ) {
		f := g.Files[id.F]
		s := g.Sym(id)
		if f.Lang != "go" || path.Dir(f.Path) != dir || s.Kind != KindStruct {
			continue
		}
		for _, l := range s.Locals {
			if l.Name == name {
				return f, l.Type
			}
		}
	}
	return nil, ""
}

// goLocalType is the type the syntax gives to identifier name inside symbol from (receiver, parameters, literals).
func (g *Graph) goLocalType(f *File, from int32, line uint32, name string) string {
	t := goLocal(f, from, line, name)
	if i := strings.IndexByte(t, '['); i > 0 {
		t = t[:i]
	}
	return strings.TrimPrefix(t, "*")
}

// goBoundAbove reports whether symbol from or one enclosing it binds name as a local at or above
// line (inside the block that binds it, for a type switch's case or a function literal's parameter).
func goBoundAbove(f *File, from int32, line uint32, name string) bool {
	for s := from; s >= 0; s = f.Syms()[s].Parent {
		for _, l := range f.Syms()[s].Locals {
			if l.Name != name || l.Line == 0 || l.Line > line {
				continue
			}
			if last, _, ok := strings.Cut(strings.TrimPrefix(l.Type, "in "), " "); strings.HasPrefix(l.Type, "in ") && ok {
				if end, err := strconv.Atoi(last); err == nil && line > uint32(end) {
					continue
				}
			}
			return true
		}
	}
	return false
}

// goLocal is the type of local name in symbol from or the nearest symbol enclosing it that binds
// the name: where one binds it more than once (a redeclaration, another closure's), the binding
// nearest above line; a type switch's case or a function literal's parameter binds it only inside
// its block.
func goLocal(f *File, from int32, line uint32, name string) string {
	for s := from; s >= 0; s = f.Syms()[s].Parent {
		best, found := "", false
		var at uint32
		for _, l := range f.Syms()[s].Locals {
			if l.Name == name && strings.HasPrefix(l.Type, "in ") {
				last, typ, _ := strings.Cut(l.Type[3:], " ")
				if end, err := strconv.Atoi(last); err != nil || line < l.Line || line > uint32(end) {
					continue
				}
				l.Type = typ
			}
			switch {
			case l.Name != name:
			case !found:
				best, at, found = l.Type, l.Line, true
			case line > 0 && l.Line <= line && (at > line || l.Line > at):
				best, at = l.Type, l.Line
			}
		}
		if found {
			return best
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

// goImportDirs maps a Go import path to the repository folder holding that package: the root
// module's path, a folder named like the path, or the folder whose module (the go.mod above it,
// nested modules included) and place give that path. An import path naming a folder by its last
// segments only, with no go.mod above it, maps when it names at least two of them.
func (g *Graph) goImportDirs(imp string) []string {
	ix := g.index()
	if dirs, ok := ix.imports[imp]; ok {
		return dirs
	}
	var out []string
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
		out = []string{d}
	} else {
		segs := strings.Split(imp, "/")
		for k := 1; k < len(segs) && out == nil; k++ {
			cand := strings.Join(segs[k:], "/")
			if _, ok := ix.dirs[cand]; !ok {
				continue
			}
			modDir, mod := g.goModuleOf(cand)
			switch {
			case mod != "":
				want := mod
				if cand != modDir {
					rel := cand
					if modDir != "." {
						rel = strings.TrimPrefix(cand, modDir+"/")
					}
					want = mod + "/" + rel
				}
				if want == imp {
					out = []string{cand}
				}
			case len(segs)-k >= 2:
				out = []string{cand}
			}
		}
	}
	if ix.imports == nil {
		ix.imports = map[string][]string{}
	}
	ix.imports[imp] = out
	return out
}

// goModuleOf finds the go.mod nearest above folder dir (dir itself included): its folder and module
// path, or "" when there is none up to the repository root.
func (g *Graph) goModuleOf(dir string) (string, string) {
	ix := g.index()
	if ix.modules == nil {
		ix.modules = map[string][2]string{}
	}
	for d := dir; ; d = path.Dir(d) {
		if m, ok := ix.modules[d]; ok {
			return m[0], m[1]
		}
		if b, err := os.ReadFile(filepath.Join(g.Root, filepath.FromSlash(d), "go.mod")); err == nil {
			mod := ""
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
					mod = strings.Trim(f[1], `"`)
					break
				}
			}
			ix.modules[d] = [2]string{d, mod}
			return d, mod
		}
		if d == "." || d == "/" || d == "" {
			ix.modules[dir] = [2]string{}
			return "", ""
		}
	}
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
