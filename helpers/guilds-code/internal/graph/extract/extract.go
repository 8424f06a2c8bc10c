//go:build cgo

package extract

/*
#include "gx.h"
*/
import "C"

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unsafe"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
)

// kindNamed is the kind a capture's suffix names (def.<kind>, decl.<kind>).
func kindNamed(s string) (graph.Kind, bool) {
	for k := graph.Kind(0); k <= graph.KindImpl; k++ {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// capRole is what a capture name means to the extractor; the query files use these names.
type capRole uint8

const (
	roleNone        capRole = iota
	roleName                // @name: the defined name
	roleDef                 // @def.<kind>: the whole definition
	roleDecl                // @decl.<kind>: a declaration only (C++ method in its class); a definition elsewhere in the file replaces it
	roleRecvType            // @recv.type: the type a method is defined on outside it (Go receiver, C++ Type::)
	roleImplTrait           // @impl.trait: the trait a Rust impl block implements
	roleTypeBody            // @type.body: a Go type's underlying type (struct, interface)
	roleCall                // @call: a call site
	roleCallName            // @call.name
	roleCallRecv            // @call.recv
	roleCallBare            // @call.bare: a bare name that calls a method unless it names a variable of its scope (Ruby)
	roleAssign              // @assign.name: a variable or parameter of its scope (Ruby)
	roleImport              // @import
	roleImportPath          // @import.path
	roleImportAlias         // @import.alias
	roleImportName          // @import.name
	rolePackage             // @package
	roleLocalName           // @local.name: a variable whose type the syntax states
	roleLocalType           // @local.type
	roleLocalRange          // @local.range: what a Go range clause ranges over; @local.name is then its left side ("k, v")
	roleLocalParam          // @local.param: a name bound with no stated type (a parameter): its type is "?"
	roleLocalValue          // @local.value: a literal value; @local.name then has the type "(literal)"
	roleLocalReturn         // @local.return: the type or call a function returns, a local named "(return)"
	roleLocalBase           // @local.base: a class's base, a local of the class named "(base)"
	roleLocalExpr           // @local.expr: the expression a Go local is bound to; its type is "=" and the expression
	roleLocalExprs          // @local.exprs: the expressions of a Go short declaration whose @local.name is its left side ("a, b")
	roleLocalCase           // @local.case: the type of a Go type switch's case; its @local.name (the switch's) is bound to it from the case's line
	roleLocalScope          // @local.scope: the block a Go local is bound in (a type switch's case, a function literal): its type is "in <last line> T"
	roleLocalEmbed          // @local.embed: a Go struct's field declaration or an interface's element: a local named as its type when embedded
	roleValue               // @value: a function or method named as a value (passed, assigned, returned), with @call.name
)

var roleNames = map[string]capRole{
	"name": roleName, "recv.type": roleRecvType, "impl.trait": roleImplTrait, "type.body": roleTypeBody,
	"call": roleCall, "call.name": roleCallName, "call.recv": roleCallRecv, "call.bare": roleCallBare,
	"assign.name": roleAssign, "import": roleImport, "import.path": roleImportPath, "import.alias": roleImportAlias,
	"import.name": roleImportName, "package": rolePackage, "local.name": roleLocalName, "local.type": roleLocalType,
	"local.range": roleLocalRange, "local.param": roleLocalParam, "local.value": roleLocalValue,
	"local.return": roleLocalReturn, "local.base": roleLocalBase, "local.expr": roleLocalExpr, "local.exprs": roleLocalExprs,
	"local.embed": roleLocalEmbed, "local.case": roleLocalCase, "local.scope": roleLocalScope, "value": roleValue,
}

// plan is a language's grammar and query as the C side takes them, with each capture's role.
type plan struct {
	lang    *C.TSLanguage
	query   *C.TSQuery
	roles   []capRole
	kinds   []graph.Kind // the kind of each @def./@decl. capture
	bodyOf  []byte       // 1 for the captures whose body field start is recorded
	body    C.uint16_t
	roots   []byte    // 1 for the grammar symbols the query's patterns start at; nil runs the query over the whole tree
	pats    *patterns // the patterns compiled for gx_match_at; nil matches with the query cursor
	patsErr error     // why pats is nil
}

// Extractor parses files of every language; it is not safe for concurrent use.
type Extractor struct {
	g     *C.gx
	plans map[*graph.Lang]*plan

	names map[string]string // call and receiver names seen, so each distinct one is allocated once

	// Reused between files.
	defs     []defHit
	refs     []refHit
	locals   []localHit
	bare     []assignHit
	importAt [][2]uint32 // each import's statement and name start, for putting them in source order
}

// cmpAt orders two (statement, name) start offsets.
func cmpAt(a, b [2]uint32) int {
	if c := cmp.Compare(a[0], b[0]); c != 0 {
		return c
	}
	return cmp.Compare(a[1], b[1])
}

type defHit struct {
	name     string
	nameAt   uint32
	kind     graph.Kind
	decl     bool
	recvType string
	trait    string
	start    uint32 // bytes
	end      uint32
	startRow uint32
	endRow   uint32
	body     uint32 // start byte + 1 of the body, 0 when none
	typeBody uint32 // start byte + 1 of a Go type's underlying type
}

type refHit struct {
	at    uint32
	end   uint32
	name  string
	recv  string
	line  uint32
	bare  bool
	value bool
}

type localHit struct {
	at        uint32
	line      uint32 // 1-based line of the name
	name, typ string
	ranged    bool   // name is a range clause's left side, typ "range " and what it ranges over
	exprs     string // a Go short declaration's right side; name is then its left side
}

type assignHit struct {
	at   uint32
	name string
}

// New returns an extractor with its own parser and query cursor.
func New() *Extractor {
	return &Extractor{g: C.gx_new(), plans: map[*graph.Lang]*plan{}, names: map[string]string{}}
}

// intern returns b as a string, one allocation per distinct name however many call sites use it.
func (x *Extractor) intern(b []byte) string {
	if s, ok := x.names[string(b)]; ok {
		return s
	}
	if len(x.names) >= 1<<16 {
		clear(x.names)
	}
	s := string(b)
	x.names[s] = s
	return s
}

// useCursorWalk makes the extractor find pattern roots with a tree cursor, the way it does when the tree's
// layout is not the one gx_walk reads; tests compare the two walks.
func (x *Extractor) useCursorWalk() { x.g.cursor_walk = true }

// useQueryCursor makes the extractor match with tree-sitter's query cursor where gx_match_at could; tests
// compare the two.
func (x *Extractor) useQueryCursor() { x.g.query_match = true }

// layoutWalks is how many files had their pattern roots found by reading the tree's layout.
func (x *Extractor) layoutWalks() uint64 { return uint64(x.g.layout_walks) }

// Close frees the parser.
func (x *Extractor) Close() {
	for _, p := range x.plans {
		if p.pats != nil {
			p.pats.free()
		}
	}
	if x.g != nil {
		C.gx_free(x.g)
		x.g = nil
	}
}

// cPointer reads the C handle a go-tree-sitter value keeps as its first field (sitter.Language.ptr,
// sitter.Query.c); plan checks what it reads against the binding's own answers (capture and symbol counts).
func cPointer[T any](v *T) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(v)) }

// plan returns the language's grammar and query as the C side takes them, made once per extractor.
func (x *Extractor) plan(l *graph.Lang) (*plan, error) {
	if p := x.plans[l]; p != nil {
		return p, nil
	}
	lang, q, captures, err := load(l)
	if err != nil {
		return nil, err
	}
	p := &plan{lang: (*C.TSLanguage)(cPointer[sitter.Language](lang)), query: (*C.TSQuery)(cPointer[sitter.Query](q))}
	if n := int(C.ts_query_capture_count(p.query)); n != len(captures) || C.ts_language_symbol_count(p.lang) != C.uint32_t(lang.SymbolCount()) {
		return nil, fmt.Errorf("query for %s: the tree-sitter binding does not hold its handles where this build expects them; rebuild with the go-tree-sitter version go.mod names", l.Name)
	}
	p.roles = make([]capRole, len(captures))
	p.kinds = make([]graph.Kind, len(captures))
	p.bodyOf = make([]byte, len(captures)+1)
	for i, name := range captures {
		role, kind := roleNames[name], graph.Kind(0)
		if k, ok := strings.CutPrefix(name, "def."); ok {
			role = roleDef
			kind, ok = kindNamed(k)
			if !ok {
				return nil, fmt.Errorf("query for %s: unknown kind in capture @%s", l.Name, name)
			}
		} else if k, ok := strings.CutPrefix(name, "decl."); ok {
			role = roleDecl
			kind, ok = kindNamed(k)
			if !ok {
				return nil, fmt.Errorf("query for %s: unknown kind in capture @%s", l.Name, name)
			}
		}
		p.roles[i], p.kinds[i] = role, kind
		if role == roleDef || role == roleDecl {
			p.bodyOf[i] = 1
		}
	}
	p.body = C.uint16_t(fieldID(p.lang, "body"))
	if src, err := querySource(l.Name); err == nil {
		if names := patternRoots(string(src)); names != nil {
			p.roots = make([]byte, lang.SymbolCount())
			for i := range p.roots {
				sym := sitter.Symbol(i)
				if names[lang.SymbolName(sym)] && lang.SymbolType(sym) == sitter.SymbolTypeRegular {
					p.roots[i] = 1
				}
			}
			// A query beyond what gx_match_at implements is matched by the query cursor (tests require
			// every shipped query to compile).
			p.pats, p.patsErr = compilePatterns(string(src), p.lang, p.query, captures, len(p.roots))
		}
	}
	x.plans[l] = p
	return p, nil
}

// patternRoots returns the node types the query's top-level patterns start at, or nil when one of them
// starts at a wildcard or an alternation (then the query runs over the whole tree).
func patternRoots(query string) map[string]bool {
	roots := map[string]bool{}
	depth := 0
	for i := 0; i < len(query); i++ {
		switch c := query[i]; {
		case c == ';' && depth == 0:
			for i < len(query) && query[i] != '\n' {
				i++
			}
		case c == '"':
			for i++; i < len(query) && query[i] != '"'; i++ {
				if query[i] == '\\' {
					i++
				}
			}
		case c == '[' && depth == 0:
			return nil
		case c == '(' || c == '[':
			if depth == 0 {
				j := i + 1
				for j < len(query) && (query[j] == '_' || query[j] >= 'a' && query[j] <= 'z' || query[j] >= 'A' && query[j] <= 'Z' || query[j] >= '0' && query[j] <= '9') {
					j++
				}
				name := query[i+1 : j]
				if name == "" || name == "_" {
					return nil
				}
				roots[name] = true
			}
			depth++
		case c == ')' || c == ']':
			depth--
		}
	}
	return roots
}

// run parses src (and runs the language's query when query is set) in one call into C, and returns
// the recorded matches (see gx_run), valid until the next call.
func (x *Extractor) run(ctx context.Context, p *plan, src []byte, query bool) ([]uint32, error) {
	if x.g == nil {
		return nil, errors.New("no tree-sitter parser: the extractor is closed or could not allocate one")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	flag := (*uintptr)(unsafe.Pointer(&x.g.cancel))
	atomic.StoreUintptr(flag, 0)
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { atomic.StoreUintptr(flag, 1) })
		defer stop()
	}
	var s *C.char
	if len(src) > 0 {
		s = (*C.char)(unsafe.Pointer(&src[0]))
	}
	q := p.query
	if !query {
		q = nil
	}
	var roots *C.uint8_t
	if len(p.roots) > 0 {
		roots = (*C.uint8_t)(unsafe.Pointer(&p.roots[0]))
	}
	var ps *C.gxPatterns
	if p.pats != nil {
		ps = p.pats.c
	}
	switch C.gx_run(x.g, p.lang, q, ps, s, C.uint32_t(len(src)), (*C.uint8_t)(unsafe.Pointer(&p.bodyOf[0])), p.body, roots, C.uint32_t(len(p.roots))) {
	case 0:
	case 1:
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("tree-sitter returned no tree")
	case 2:
		return nil, errors.New("out of memory while matching the query")
	default:
		return nil, errors.New("tree-sitter cannot load this grammar")
	}
	if x.g.len == 0 {
		return nil, nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(x.g.buf)), int(x.g.len)), nil
}

// Parse parses src with the language's grammar only (no query, no extraction); benchmarks use it as the baseline.
func (x *Extractor) Parse(ctx context.Context, l *graph.Lang, src []byte) error {
	p, err := x.plan(l)
	if err != nil {
		return err
	}
	if _, err := x.run(ctx, p, src, false); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	return nil
}

// Extract parses src and fills f's symbols, refs, imports and package.
func (x *Extractor) Extract(ctx context.Context, l *graph.Lang, src []byte, f *graph.File) error {
	p, err := x.plan(l)
	if err != nil {
		return err
	}
	buf, err := x.run(ctx, p, src, true)
	if err != nil {
		return fmt.Errorf("parse %s: %w", f.Path, err)
	}
	defs, refs, locals, assigned := x.defs[:0], x.refs[:0], x.locals[:0], x.bare[:0]
	imports, importAt := f.Imports[:0], x.importAt[:0]
	f.Pkg = ""
	for i := 0; i+2 <= len(buf); {
		n := int(buf[i+1])
		caps := buf[i+2 : i+2+6*n]
		i += 2 + 6*n
		var d defHit
		var r refHit
		var im graph.Import
		var loc localHit
		var isDef, isRef, isImport bool
		var stmtAt, nameAt, aliasAt, pathAt uint32 // where the import and its parts start
		var nameEnd, nameLine uint32               // where a call's name ends, and its line
		var caseLine, scopeEnd uint32              // the first line of a type switch's case, the last of a local's block
		for c := 0; c+6 <= len(caps); c += 6 {
			id, sb, eb := caps[c], caps[c+1], caps[c+2]
			switch p.roles[id] {
			case roleName:
				d.name, d.nameAt = string(src[sb:eb]), sb
			case roleDef, roleDecl:
				isDef = true
				d.kind, d.decl = p.kinds[id], p.roles[id] == roleDecl
				d.start, d.end, d.startRow, d.endRow, d.body = sb, eb, caps[c+3], caps[c+4], caps[c+5]
			case roleRecvType:
				d.recvType = lastSegment(string(src[sb:eb]))
			case roleImplTrait:
				d.trait = oneLine(string(src[sb:eb]))
			case roleTypeBody:
				d.typeBody = sb + 1
			case roleCall:
				isRef = true
				r.at, r.end, r.line = sb, eb, caps[c+3]+1
			case roleValue:
				isRef, r.value = true, true
			case roleCallBare:
				isRef = true
				r.at, r.end, r.line, r.name, r.bare = sb, eb, caps[c+3]+1, x.intern(src[sb:eb]), true
			case roleCallName:
				r.name = x.intern(src[sb:eb])
				nameAt, nameEnd, nameLine = sb, eb, caps[c+3]+1
			case roleCallRecv:
				if eb-sb <= 80 && plain(src[sb:eb]) {
					r.recv = x.intern(src[sb:eb])
				} else {
					r.recv = clip(oneLine(string(src[sb:eb])), 80)
				}
			case roleAssign:
				assigned = append(assigned, assignHit{at: sb, name: string(src[sb:eb])})
			case roleImport:
				isImport, stmtAt = true, sb
			case roleImportPath:
				im.Path, pathAt = strings.Trim(string(src[sb:eb]), "\"'`"), sb
			case roleImportAlias:
				im.Alias, aliasAt = string(src[sb:eb]), sb
			case roleImportName:
				im.Name, nameAt = string(src[sb:eb]), sb
			case rolePackage:
				f.Pkg = string(src[sb:eb])
			case roleLocalName:
				loc.name, loc.at, loc.line = string(src[sb:eb]), sb, caps[c+3]+1
			case roleLocalType:
				loc.typ = localType(src[sb:eb])
			case roleLocalParam:
				loc.name, loc.at, loc.line, loc.typ = string(src[sb:eb]), sb, caps[c+3]+1, "?"
			case roleLocalValue:
				loc.typ = "(literal)"
			case roleLocalReturn:
				loc.name, loc.at, loc.line, loc.typ = "(return)", sb, caps[c+3]+1, localType(src[sb:eb])
			case roleLocalBase:
				loc.name, loc.at, loc.line, loc.typ = "(base)", sb, caps[c+3]+1, oneLine(string(src[sb:eb]))
			case roleLocalExpr:
				if e := src[sb:eb]; len(e) <= 120 && !slices.Contains(e, '\n') {
					loc.typ = "=" + string(e)
				}
			case roleLocalCase:
				loc.typ, caseLine = localType(src[sb:eb]), caps[c+3]+1
			case roleLocalScope:
				scopeEnd = caps[c+3] + 1 + uint32(bytes.Count(src[sb:eb], []byte{'\n'}))
			case roleLocalEmbed:
				if t, ok := goEmbeddedType(src[sb:eb]); ok {
					loc.name, loc.at, loc.line, loc.typ = graph.GoBaseName(t), sb, caps[c+3]+1, t
				}
			case roleLocalExprs:
				if e := src[sb:eb]; len(e) <= 240 && !slices.Contains(e, '\n') {
					loc.exprs = string(e)
				}
			case roleLocalRange:
				if over := string(src[sb:eb]); !strings.ContainsAny(over, "\n{") {
					loc.typ, loc.ranged = "range "+over, true
				}
			}
		}
		switch {
		case isDef && d.name != "":
			defs = append(defs, d)
		case isRef && r.name != "":
			if r.value {
				// A value is where its name is (the name of a selector, the identifier itself).
				r.at, r.end, r.line = nameAt, nameEnd, nameLine
			}
			refs = append(refs, r)
		case isImport && im.Path != "":
			at := pathAt
			if im.Name != "" {
				at = nameAt
			} else if im.Alias != "" {
				at = aliasAt
			}
			imports, importAt = append(imports, im), append(importAt, [2]uint32{stmtAt, at})
		case loc.ranged:
			// The value of a two-name range clause has the element type of what it ranges over.
			if _, v, ok := strings.Cut(loc.name, ","); ok && loc.typ != "" {
				if v = strings.TrimSpace(v); v != "_" && v != "" && !strings.Contains(v, ",") {
					loc.name = v
					locals = append(locals, loc)
				}
			}
		case scopeEnd > 0 && loc.name != "" && loc.typ != "":
			if caseLine > 0 {
				loc.line = caseLine
			}
			loc.typ = fmt.Sprintf("in %d %s", scopeEnd, loc.typ)
			locals = append(locals, loc)
		case loc.exprs != "":
			locals = append(locals, goBound(loc)...)
		case loc.name != "" && loc.typ != "":
			locals = append(locals, loc)
		}
	}
	x.defs, x.refs, x.locals, x.bare, x.importAt = defs, refs, locals, assigned, importAt
	// Imports in source order: by statement, then by the name (else alias, else path) each brings in.
	if !slices.IsSortedFunc(importAt, cmpAt) {
		order := make([]int, len(imports))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmpAt(importAt[a], importAt[b]) })
		sorted := make([]graph.Import, len(imports))
		for i, o := range order {
			sorted[i] = imports[o]
		}
		imports = sorted
	}
	f.Imports = imports

	// One definition per name node (the first pattern wins), ordered by position.
	slices.SortStableFunc(defs, func(a, b defHit) int {
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		return cmp.Compare(b.end, a.end)
	})
	seen := make(map[uint32]int, len(defs))
	kept := defs[:0]
	var outOfClass map[string]bool // C++ methods defined outside their class: Type.name
	for _, d := range defs {
		if i, ok := seen[d.nameAt]; ok {
			// A function bound to a constant is a function.
			if d.kind == graph.KindFunction && (kept[i].kind == graph.KindConst || kept[i].kind == graph.KindVar) {
				kept[i].kind = graph.KindFunction
			}
			continue
		}
		seen[d.nameAt] = len(kept)
		kept = append(kept, d)
		if d.recvType != "" && l.Name == "cpp" {
			if outOfClass == nil {
				outOfClass = map[string]bool{}
			}
			outOfClass[d.recvType+"."+d.name] = true
		}
	}
	defs = kept

	// Nest definitions: containers, methods, and module-level-only constants and variables.
	f.Symbols = make([]graph.Symbol, 0, len(defs))
	starts, ends := make([]uint32, 0, len(defs)), make([]uint32, 0, len(defs))
	type open struct {
		end  uint32
		sym  int32 // index into f.Symbols
		name string
		kind graph.Kind
	}
	var stack []open
	for _, d := range defs {
		for len(stack) > 0 && stack[len(stack)-1].end <= d.start {
			stack = stack[:len(stack)-1]
		}
		parent, container := int32(-1), ""
		inFunc := false
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].kind.Callable() {
				inFunc = true
			}
			if parent < 0 && stack[i].sym >= 0 {
				parent = stack[i].sym
			}
			if container == "" && stack[i].kind.TypeLike() && !inFunc {
				container = stack[i].name
			}
		}
		if (d.kind == graph.KindConst || d.kind == graph.KindVar) && inFunc {
			continue
		}
		k := d.kind
		if d.decl && outOfClass[container+"."+d.name] {
			// The definition below its class stands for the method: one symbol, the definition's span.
			continue
		}
		if k == graph.KindType && d.typeBody > 0 {
			if b := src[d.typeBody-1:]; hasWordPrefix(b, "struct") {
				k = graph.KindStruct
			} else if hasWordPrefix(b, "interface") {
				k = graph.KindInterface
			}
		}
		if d.recvType != "" {
			container = d.recvType
		}
		if k == graph.KindFunction && container != "" && !inFunc {
			k = graph.KindMethod
		}
		if k == graph.KindMethod && container == "" {
			k = graph.KindFunction
		}
		name, scope := d.name, d.name
		if k == graph.KindImpl {
			// An impl block is listed as itself; the methods in it belong to its type.
			name, container = "impl "+d.name, ""
			if d.trait != "" {
				name = "impl " + d.trait + " for " + d.name
			}
		}
		sym := graph.Symbol{
			Name: name, Kind: k, Container: container, Parent: parent,
			Start: d.startRow + 1, End: d.endRow + 1,
			Sig: signature(src, d, l.Name, k), Doc: docFor(src, d, l.Name),
		}
		f.Symbols = append(f.Symbols, sym)
		starts, ends = append(starts, d.start), append(ends, d.end)
		stack = append(stack, open{end: d.end, sym: int32(len(f.Symbols) - 1), name: scope, kind: k})
	}

	// Attach each call site and local to its innermost enclosing symbol.
	enclosing := func(at uint32) int32 {
		i := int32(sort.Search(len(starts), func(i int) bool { return starts[i] > at }) - 1)
		for i >= 0 {
			if at < ends[i] {
				return i
			}
			i = f.Symbols[i].Parent
		}
		return -1
	}
	var vars map[int32]map[string]bool // Ruby: names assigned or bound as parameters, by enclosing symbol
	if len(assigned) > 0 {
		vars = map[int32]map[string]bool{}
		for _, a := range assigned {
			s := enclosing(a.at)
			if vars[s] == nil {
				vars[s] = map[string]bool{}
			}
			vars[s][a.name] = true
		}
	}
	// Call sites in source order, an inner call before the outer one that starts with it (f(g(x)) vs g(x).h()).
	slices.SortFunc(refs, func(a, b refHit) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.end, b.end)
	})
	f.Refs = make([]graph.Ref, 0, len(refs))
	for _, r := range refs {
		from := enclosing(r.at)
		if r.bare && vars[from][r.name] {
			continue // a variable of its scope, not a call
		}
		f.Refs = append(f.Refs, graph.Ref{Name: r.name, Recv: r.recv, Line: r.line, From: from, Value: r.value})
	}
	// By position, a stated type before a call's result before a bound expression where patterns
	// meet at one name.
	slices.SortStableFunc(locals, func(a, b localHit) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		rank := func(h localHit) int {
			switch {
			case strings.HasPrefix(h.typ, "=") && l.Name == "go":
				return 2
			case strings.HasSuffix(h.typ, "()"):
				return 1
			case h.typ == "?":
				return 3 // a name with no stated type after the same name with one
			}
			return 0
		}
		if c := cmp.Compare(rank(a), rank(b)); c != 0 || l.Name != "go" {
			return c
		}
		return cmp.Compare(a.typ, b.typ)
	})
	for _, lc := range locals {
		if s := enclosing(lc.at); s >= 0 && (f.Symbols[s].Kind.Callable() || f.Symbols[s].Kind == graph.KindStruct || f.Symbols[s].Kind == graph.KindClass ||
			(l.Name == "python" || l.Name == "go") && f.Symbols[s].Kind == graph.KindVar || (l.Name == "go" || l.Name == "java") && f.Symbols[s].Kind == graph.KindInterface ||
			l.Name == "java" && f.Symbols[s].Kind == graph.KindEnum || l.Name == "rust" && f.Symbols[s].Kind == graph.KindImpl) {
			f.Symbols[s].Locals = append(f.Symbols[s].Locals, graph.Local{Name: lc.name, Type: lc.typ, Line: lc.line})
		}
	}
	return nil
}

// goEmbeddedType is the type of a Go field declaration that embeds one (T, *T, pkg.T, T[X], with or
// without a tag), or of an interface's embedded interface; ok is false for a named field.
func goEmbeddedType(decl []byte) (string, bool) {
	d := strings.TrimSpace(string(decl))
	end := strings.IndexAny(d, " \t\"`")
	if end < 0 {
		end = len(d)
	}
	typ, rest := d[:end], strings.TrimSpace(d[end:])
	if rest != "" && rest[0] != '"' && rest[0] != '`' || strings.ContainsAny(typ, ",(){}") || typ == "" {
		return "", false
	}
	return typ, true
}

// goBound pairs the names of a Go short declaration with what each is bound to: a, b := x, y binds
// a to "=x" and b to "=y"; a, b := f() binds a to "=f()" and b to f's second result, "f()#1".
func goBound(loc localHit) []localHit {
	names, exprs := graph.SplitTopLevel(loc.name), graph.SplitTopLevel(loc.exprs)
	var out []localHit
	for k, n := range names {
		if n == "_" || n == "" {
			continue
		}
		h := localHit{at: loc.at, line: loc.line, name: n}
		switch {
		case len(exprs) == len(names):
			h.typ = "=" + exprs[k]
		case len(exprs) == 1 && k == 0:
			h.typ = "=" + exprs[0]
		case len(exprs) == 1:
			if t := localType([]byte(exprs[0])); strings.HasSuffix(t, "()") && !strings.HasSuffix(t, ".()") && strings.HasSuffix(exprs[0], ")") {
				h.typ = fmt.Sprintf("%s#%d", t, k)
			}
		}
		if h.typ != "" {
			out = append(out, h)
		}
	}
	return out
}

// localType is the type a @local.type capture states: the type as written without a leading *, or
// for a value made by a call the callee with "()" (NewT(), pkg.NewT(), x.Get(), a conversion
// T()), and for new(T) the type T. Resolution finds the type of a call from its callee.
func localType(b []byte) string {
	t := strings.TrimPrefix(string(b), "*")
	i := strings.IndexByte(t, '(')
	if i <= 0 {
		return t
	}
	callee := strings.TrimSpace(t[:i])
	if callee == "new" {
		arg := t[i+1:]
		if j := strings.IndexAny(arg, ",)"); j >= 0 {
			arg = arg[:j]
		}
		return strings.TrimPrefix(strings.TrimSpace(arg), "*")
	}
	if strings.ContainsAny(callee, " \t\n()[]{}") {
		return "" // not a plain callee: its type is not stated
	}
	return callee + "()"
}

// plain reports whether b is already on one line with single spaces (oneLine would leave it as it is).
func plain(b []byte) bool {
	for i, c := range b {
		if c == '\n' || c == '\t' || c == '\r' || c == ' ' && (i == 0 || i == len(b)-1 || b[i-1] == ' ') {
			return false
		}
	}
	return true
}

// hasWordPrefix reports whether b starts with word followed by something that cannot continue a name.
func hasWordPrefix(b []byte, word string) bool {
	if len(b) < len(word) || string(b[:len(word)]) != word {
		return false
	}
	if len(b) == len(word) {
		return true
	}
	c := b[len(word)]
	return !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

// signature is the declaration text before the body, collapsed onto one line.
func signature(src []byte, d defHit, lang string, k graph.Kind) string {
	start, end := d.start, d.end
	if d.body > 0 && d.body-1 > start {
		end = d.body - 1
	}
	if k.TypeLike() || k == graph.KindConst || k == graph.KindVar {
		if nl := indexByte(src[start:end], '\n'); nl >= 0 {
			end = start + uint32(nl)
		}
	}
	s := oneLine(string(src[start:end]))
	s = strings.TrimRight(s, " {:=")
	if lang == "go" {
		switch k {
		case graph.KindConst:
			s = "const " + s
		case graph.KindVar:
			s = "var " + s
		case graph.KindType, graph.KindStruct, graph.KindInterface:
			if !strings.HasPrefix(s, "type ") {
				s = "type " + s
			}
		}
	}
	return clip(s, 200)
}

// docFor is the first line of a Python docstring, else of the comment block right above the definition.
func docFor(src []byte, d defHit, lang string) string {
	if lang == "python" && d.body > 0 && (d.kind == graph.KindFunction || d.kind == graph.KindClass) {
		if s := pyDocstring(src[d.body-1:]); s != "" {
			return firstDocLine(s)
		}
	}
	return docAbove(src, d.start, lang)
}

// pyDocstring is the string literal a Python body starts with, quotes included, or "".
func pyDocstring(b []byte) string {
	i := 0
	for i < len(b) && i < 3 && strings.IndexByte("rRuUbB", b[i]) >= 0 {
		i++
	}
	if i >= len(b) || b[i] != '"' && b[i] != '\'' {
		return ""
	}
	q := string(b[i : i+1])
	if i+3 <= len(b) && string(b[i:i+3]) == q+q+q {
		q += q + q
	}
	end := strings.Index(string(b[i+len(q):min(len(b), i+len(q)+4096)]), q)
	if end < 0 {
		return ""
	}
	lit := string(b[:i+len(q)+end+len(q)])
	if len(q) == 1 && strings.ContainsRune(lit, '\n') {
		return ""
	}
	return lit
}

// lineComment is how a line comment starts in each language; C-family languages also have /* */ blocks.
var lineComment = map[string]string{
	"python": "#", "ruby": "#", "bash": "#",
}

// blockComments reports whether the language has /* */ comments.
func blockComments(lang string) bool { return lineComment[lang] == "" }

// isAttribute reports whether a trimmed line is a decorator, annotation or attribute that sits between a
// definition and its doc comment.
func isAttribute(line, lang string) bool {
	switch lang {
	case "python", "java", "kotlin", "javascript", "typescript", "tsx":
		return strings.HasPrefix(line, "@")
	case "rust", "php":
		return strings.HasPrefix(line, "#[")
	case "csharp":
		return strings.HasPrefix(line, "[")
	case "cpp":
		return strings.HasPrefix(line, "template")
	}
	return false
}

// docAbove returns the first line of the comment block that ends on the line right above the one holding
// start (decorators and attributes in between are skipped), or "".
func docAbove(src []byte, start uint32, lang string) string {
	marker := lineComment[lang]
	if marker == "" {
		marker = "//"
	}
	block := blockComments(lang)
	end := lineStartAt(src, int(start)) // the start of the definition's line
	top := -1                           // start of the topmost comment line so far
	inBlock := false
	for end > 0 {
		ls := lineStartAt(src, end-1)
		line := strings.TrimSpace(string(src[ls : end-1]))
		switch {
		case inBlock:
			if strings.Contains(line, "/*") {
				inBlock = false
			}
		case block && strings.HasSuffix(line, "*/"):
			inBlock = !strings.Contains(line, "/*")
		case strings.HasPrefix(line, marker) && !(lang == "php" && strings.HasPrefix(line, "#[")):
		case top < 0 && line != "" && isAttribute(line, lang):
			end = ls
			continue
		default:
			end = 0
			continue
		}
		top, end = ls, ls
	}
	if top < 0 {
		return ""
	}
	stop := lineStartAt(src, int(start))
	return firstDocLine(string(src[top:stop]))
}

// lineStartAt is the offset of the first byte of the line holding offset at.
func lineStartAt(src []byte, at int) int {
	for at > 0 && src[at-1] != '\n' {
		at--
	}
	return at
}

func firstDocLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "/*#!\"' ")
		line = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(line, "*/"), `"""`))
		if line != "" {
			return clip(line, 160)
		}
	}
	return ""
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// oneLine collapses runs of whitespace into single spaces.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\t\r") && !strings.Contains(s, "  ") {
		return strings.TrimSpace(s)
	}
	return strings.Join(strings.Fields(s), " ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// lastSegment returns the last name of a qualified name (a::b::C, a.b.C).
func lastSegment(s string) string {
	if i := strings.LastIndexAny(s, ".:"); i >= 0 {
		return s[i+1:]
	}
	return s
}
