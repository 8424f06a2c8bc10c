package graph

import (
	"path"
	"strings"
)

// goTypeDecl is the declaration of repository type t: its file and symbol, or nil.
func (g *Graph) goTypeDecl(t goType) (*File, *Symbol) {
	if t.dir == "" {
		return nil, nil
	}
	for _, id := range g.Named(t.name) {
		f, s := g.Files[id.F], g.Sym(id)
		if f.Lang == "go" && s.Kind.TypeLike() && s.Container == "" && path.Dir(f.Path) == t.dir {
			return f, s
		}
	}
	return nil, nil
}

// goUnderlying is the type a declaration of repository type t names after its own name, as written
// ("[]PathStep" for "type Path []PathStep", "= B" for an alias), and the file declaring it.
func (g *Graph) goUnderlying(t goType) (*File, string) {
	f, s := g.goTypeDecl(t)
	if s == nil {
		return nil, ""
	}
	rest := strings.TrimPrefix(s.Sig, "type ")
	rest = strings.TrimPrefix(rest, t.name)
	if strings.HasPrefix(rest, "[") { // type parameters
		if i := closing(rest, 0); i > 0 {
			rest = rest[i+1:]
		}
	}
	return f, strings.TrimSpace(rest)
}

// goEmbedded reports whether a struct's or interface's local is an embedded type: named as its type is.
func goEmbedded(l Local) bool { return l.Name != "" && l.Name == GoBaseName(l.Type) }

// GoBaseName is the name of a type as written, without pointer, package or type arguments (*pkg.T[X] → T).
func GoBaseName(t string) string {
	t = strings.TrimPrefix(strings.TrimSpace(t), "*")
	if i := strings.IndexByte(t, '['); i > 0 {
		t = t[:i]
	}
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		t = t[i+1:]
	}
	return t
}

// goMethodOf finds method name of repository type t among cands: its own, else one promoted from a
// field it embeds (an interface's embedded interfaces included), else through an alias.
func (g *Graph) goMethodOf(t goType, name string, cands []SymID, depth int) []SymID {
	own := filter(cands, func(id SymID) bool {
		return g.Sym(id).Container == t.name && path.Dir(g.Files[id.F].Path) == t.dir && g.Files[id.F].Lang == "go"
	})
	if len(own) > 0 || depth >= 4 {
		return own
	}
	df, s := g.goTypeDecl(t)
	if s == nil {
		return nil
	}
	if _, u := g.goUnderlying(t); strings.HasPrefix(u, "=") {
		if at, ok := g.goTypeNamed(df, strings.TrimSpace(u[1:])); ok && at.dir != "" && at != t {
			return g.goMethodOf(at, name, cands, depth+1)
		}
		return nil
	}
	for _, l := range s.Locals {
		if !goEmbedded(l) {
			continue
		}
		if et, ok := g.goTypeNamed(df, l.Type); ok && et.dir != "" && et != t {
			if m := g.goMethodOf(et, name, cands, depth+1); len(m) > 0 {
				return m
			}
		}
	}
	return nil
}

// goPromotedField is the type of field name of repository struct t, its own or promoted from an
// embedded struct, and the file declaring it.
func (g *Graph) goPromotedField(t goType, name string, depth int) (*File, string) {
	if sf, ft := g.goFieldType(t.dir, t.name, name); ft != "" || depth >= 4 {
		return sf, ft
	}
	df, s := g.goTypeDecl(t)
	if s == nil {
		return nil, ""
	}
	for _, l := range s.Locals {
		if goEmbedded(l) {
			if et, ok := g.goTypeNamed(df, l.Type); ok && et.dir != "" && et != t {
				if sf, ft := g.goPromotedField(et, name, depth+1); ft != "" {
					return sf, ft
				}
			}
		}
	}
	return nil, ""
}

// goMethodNames are the names of the methods interface iface (a symbol of file f) declares,
// those of the interfaces it embeds included.
func (g *Graph) goMethodNames(f *File, iface int32, depth int) []string {
	var names []string
	for i := range f.Syms() {
		if s := &f.Syms()[i]; s.Parent == iface && s.Kind == KindMethod {
			names = append(names, s.Name)
		}
	}
	if depth >= 3 {
		return names
	}
	for _, l := range f.Syms()[iface].Locals {
		if !goEmbedded(l) {
			continue
		}
		et, ok := g.goTypeNamed(f, l.Type)
		if !ok || et.dir == "" {
			continue
		}
		for _, id := range g.Named(et.name) {
			if o := g.Files[id.F]; path.Dir(o.Path) == et.dir && g.Sym(id).Kind == KindInterface {
				names = append(names, g.goMethodNames(o, id.S, depth+1)...)
			}
		}
	}
	return names
}

// goHasMethods reports whether repository type t has a method of every name.
func (g *Graph) goHasMethods(t goType, names []string) bool {
	for _, n := range names {
		if len(g.goMethodOf(t, n, g.Named(n), 0)) == 0 {
			return false
		}
	}
	return true
}

// goMethodCall resolves a call of method name on a value of repository type t: the type's own or
// promoted method; for an interface, its method and those of the types implementing it (via
// interface). A method the type does not have resolves to nothing: a field of function type, or a
// method promoted from a type from outside the repository.
func (g *Graph) goMethodCall(f *File, t goType, name string, cands []SymID) ([]SymID, How) {
	out := g.goMethodOf(t, name, cands, 0)
	if len(out) == 0 {
		return nil, Typed
	}
	if g.InInterface(out[0]) {
		return append(out, g.goImplementations(f, out[0], cands)...), ViaInterface
	}
	return out, Typed
}

// SplitTopLevel splits s at its commas outside brackets and string literals ("a, f(b, c)" → "a", "f(b, c)").
func SplitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// goResults are the result types of a function signature, one per result
// ("func (r T) F(a int) (x, y *X, err error)" → "*X", "*X", "error").
func goResults(sig string) []string {
	rest := strings.TrimSpace(strings.TrimPrefix(sig, "func"))
	if strings.HasPrefix(rest, "(") { // the receiver
		i := closing(rest, 0)
		if i < 0 {
			return nil
		}
		rest = strings.TrimSpace(rest[i+1:])
	}
	i := strings.IndexByte(rest, '(')
	if i < 0 {
		return nil
	}
	if j := strings.IndexByte(rest[:i], '['); j >= 0 { // type parameters
		k := closing(rest[j:], 0)
		if k < 0 {
			return nil
		}
		rest = rest[j+k+1:]
		if i = strings.IndexByte(rest, '('); i < 0 {
			return nil
		}
	}
	end := closing(rest[i:], 0)
	if end < 0 {
		return nil
	}
	res := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest[i+end+1:]), "{"))
	if res == "" {
		return nil
	}
	if !strings.HasPrefix(res, "(") {
		return []string{res}
	}
	if k := closing(res, 0); k > 0 {
		res = res[1:k]
	}
	parts := SplitTopLevel(res)
	out := make([]string, len(parts))
	// Named results: "x, y *X" names two results of the type the last of them states.
	named := false
	for _, p := range parts {
		if fs := strings.Fields(p); len(fs) >= 2 && isIdent(fs[0]) && !strings.HasPrefix(fs[1], ".") {
			named = true
		}
	}
	typ := ""
	for k := len(parts) - 1; k >= 0; k-- {
		p := parts[k]
		if named {
			if fs := strings.Fields(p); len(fs) >= 2 {
				typ = strings.Join(fs[1:], " ")
			}
			out[k] = typ
		} else {
			out[k] = p
		}
	}
	return out
}
