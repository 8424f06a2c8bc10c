package graph

import (
	"path"
	"strings"
)

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
			files := g.withReexports(f, g.moduleFiles(f, im.Path))
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
