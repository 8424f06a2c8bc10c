//go:build cgo

package graph

import (
	"context"
	"fmt"
	"sort"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

func kindNamed(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

type defHit struct {
	node     *sitter.Node
	name     string
	nameAt   uint32
	kind     Kind
	recvType string
	start    uint32
	end      uint32
}

// Extractor parses files of every language; it is not safe for concurrent use.
type Extractor struct {
	parser *sitter.Parser
	cursor *sitter.QueryCursor
}

// NewExtractor returns an extractor with its own parser.
func NewExtractor() *Extractor {
	return &Extractor{parser: sitter.NewParser(), cursor: sitter.NewQueryCursor()}
}

// Close frees the parser.
func (x *Extractor) Close() {
	x.cursor.Close()
	x.parser.Close()
}

// Parse parses src with the language's grammar only (no extraction); benchmarks use it as the baseline.
func (x *Extractor) Parse(ctx context.Context, l *Lang, src []byte) error {
	lang, _, err := l.load()
	if err != nil {
		return err
	}
	x.parser.SetLanguage(lang)
	tree, err := x.parser.ParseCtx(ctx, nil, src)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	tree.Close()
	return nil
}

// Extract parses src and fills f's symbols, refs, imports and package.
func (x *Extractor) Extract(ctx context.Context, l *Lang, src []byte, f *File) error {
	lang, q, err := l.load()
	if err != nil {
		return err
	}
	x.parser.SetLanguage(lang)
	tree, err := x.parser.ParseCtx(ctx, nil, src)
	if err != nil {
		return fmt.Errorf("parse %s: %w", f.Path, err)
	}
	defer tree.Close()
	root := tree.RootNode()

	var defs []defHit
	type refHit struct {
		at   uint32
		name string
		recv string
		line uint32
	}
	var refs []refHit
	type localHit struct {
		at        uint32
		name, typ string
	}
	var locals []localHit
	imports := f.Imports[:0]
	f.Pkg = ""
	x.cursor.Exec(q, root)
	for {
		m, ok := x.cursor.NextMatch()
		if !ok {
			break
		}
		var d defHit
		var r refHit
		var im Import
		var isDef, isRef, isImport bool
		var loc localHit
		for _, c := range m.Captures {
			n := c.Node
			cname := l.names[c.Index]
			switch {
			case cname == "name":
				d.name = n.Content(src)
				d.nameAt = n.StartByte()
			case strings.HasPrefix(cname, "def."):
				if k, ok := kindNamed(cname[4:]); ok {
					isDef = true
					d.kind = k
					d.node = n
					d.start = n.StartByte()
					d.end = n.EndByte()
				}
			case cname == "recv.type":
				d.recvType = lastSegment(n.Content(src))
			case cname == "call":
				isRef = true
				r.at = n.StartByte()
				r.line = n.StartPoint().Row + 1
			case cname == "call.name":
				r.name = n.Content(src)
			case cname == "call.recv":
				r.recv = clip(oneLine(n.Content(src)), 80)
			case cname == "import":
				isImport = true
			case cname == "import.path":
				im.Path = strings.Trim(n.Content(src), "\"'`")
			case cname == "import.alias":
				im.Alias = n.Content(src)
			case cname == "import.name":
				im.Name = n.Content(src)
			case cname == "package":
				f.Pkg = n.Content(src)
			case cname == "local.name":
				loc.name = n.Content(src)
				loc.at = n.StartByte()
			case cname == "local.type":
				loc.typ = strings.TrimPrefix(n.Content(src), "*")
			}
		}
		switch {
		case isDef && d.name != "":
			defs = append(defs, d)
		case isRef && r.name != "":
			refs = append(refs, r)
		case isImport && im.Path != "":
			imports = append(imports, im)
		case loc.name != "" && loc.typ != "":
			locals = append(locals, loc)
		}
	}
	f.Imports = imports

	// One definition per name node (the first pattern wins), ordered by position.
	sort.SliceStable(defs, func(i, j int) bool {
		if defs[i].start != defs[j].start {
			return defs[i].start < defs[j].start
		}
		return defs[i].end > defs[j].end
	})
	seen := map[uint32]int{}
	kept := defs[:0]
	for _, d := range defs {
		if i, ok := seen[d.nameAt]; ok {
			// A function bound to a constant is a function.
			if d.kind == KindFunction && (kept[i].kind == KindConst || kept[i].kind == KindVar) {
				kept[i].kind = KindFunction
			}
			continue
		}
		seen[d.nameAt] = len(kept)
		kept = append(kept, d)
	}
	defs = kept

	// Nest definitions: containers, methods, and module-level-only constants and variables.
	f.Symbols = f.Symbols[:0]
	var starts, ends []uint32
	type open struct {
		end  uint32
		sym  int32 // index into f.Symbols, -1 for an impl block
		name string
		kind Kind
	}
	var stack []open
	for _, d := range defs {
		for len(stack) > 0 && stack[len(stack)-1].end <= d.start {
			stack = stack[:len(stack)-1]
		}
		parent, container := int32(-1), ""
		inFunc := false
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].kind.callable() {
				inFunc = true
			}
			if parent < 0 && stack[i].sym >= 0 {
				parent = stack[i].sym
			}
			if container == "" && stack[i].kind.typeLike() && !inFunc {
				container = stack[i].name
			}
		}
		if (d.kind == KindConst || d.kind == KindVar) && inFunc {
			continue
		}
		if d.kind == kindImpl {
			stack = append(stack, open{end: d.end, sym: -1, name: d.name, kind: kindImpl})
			continue
		}
		k := d.kind
		if k == KindType && l.Name == "go" {
			if t := d.node.ChildByFieldName("type"); t != nil {
				switch t.Type() {
				case "struct_type":
					k = KindStruct
				case "interface_type":
					k = KindInterface
				}
			}
		}
		if d.recvType != "" {
			container = d.recvType
		}
		if k == KindFunction && container != "" && !inFunc {
			k = KindMethod
		}
		if k == KindMethod && container == "" {
			k = KindFunction
		}
		sym := Symbol{
			Name: d.name, Kind: k, Container: container, Parent: parent,
			Start: d.node.StartPoint().Row + 1, End: d.node.EndPoint().Row + 1,
			Sig: signature(d.node, src, l.Name, k), Doc: docOf(d.node, src),
		}
		f.Symbols = append(f.Symbols, sym)
		starts, ends = append(starts, d.start), append(ends, d.end)
		stack = append(stack, open{end: d.end, sym: int32(len(f.Symbols) - 1), name: d.name, kind: k})
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
	f.Refs = f.Refs[:0]
	for _, r := range refs {
		f.Refs = append(f.Refs, Ref{Name: r.name, Recv: r.recv, Line: r.line, From: enclosing(r.at)})
	}
	sort.SliceStable(f.Refs, func(i, j int) bool { return f.Refs[i].Line < f.Refs[j].Line })
	for _, lc := range locals {
		if s := enclosing(lc.at); s >= 0 && (f.Symbols[s].Kind.callable() || f.Symbols[s].Kind == KindStruct || f.Symbols[s].Kind == KindClass) {
			f.Symbols[s].Locals = append(f.Symbols[s].Locals, Local{Name: lc.name, Type: lc.typ})
		}
	}
	return nil
}

// signature is the declaration text before the body, collapsed onto one line.
func signature(n *sitter.Node, src []byte, lang string, k Kind) string {
	start, end := n.StartByte(), n.EndByte()
	if body := n.ChildByFieldName("body"); body != nil && body.StartByte() > start {
		end = body.StartByte()
	}
	if k.typeLike() || k == KindConst || k == KindVar {
		if nl := indexByte(src[start:end], '\n'); nl >= 0 {
			end = start + uint32(nl)
		}
	}
	s := oneLine(string(src[start:end]))
	s = strings.TrimRight(s, " {:=")
	if lang == "go" {
		switch k {
		case KindConst:
			s = "const " + s
		case KindVar:
			s = "var " + s
		case KindType, KindStruct, KindInterface:
			if !strings.HasPrefix(s, "type ") {
				s = "type " + s
			}
		}
	}
	return clip(s, 200)
}

// docOf returns the first line of the comment right above n (or its wrapping declaration), or a Python docstring.
func docOf(n *sitter.Node, src []byte) string {
	if body := n.ChildByFieldName("body"); body != nil && n.Type() == "function_definition" || n.Type() == "class_definition" {
		if body != nil && body.NamedChildCount() > 0 {
			first := body.NamedChild(0)
			if first.Type() == "expression_statement" && first.NamedChildCount() > 0 && first.NamedChild(0).Type() == "string" {
				return firstDocLine(first.NamedChild(0).Content(src))
			}
		}
	}
	cur := n
	for i := 0; i < 2 && cur != nil; i++ {
		prev := cur.PrevSibling()
		if prev != nil && strings.Contains(prev.Type(), "comment") && prev.EndPoint().Row+1 >= cur.StartPoint().Row {
			// Walk up to the first comment of a contiguous block.
			top := prev
			for {
				p := top.PrevSibling()
				if p == nil || !strings.Contains(p.Type(), "comment") || p.EndPoint().Row+1 < top.StartPoint().Row {
					break
				}
				top = p
			}
			return firstDocLine(top.Content(src))
		}
		parent := cur.Parent()
		if parent == nil || parent.StartPoint().Row != cur.StartPoint().Row && prev != nil {
			break
		}
		switch parent.Type() {
		case "type_declaration", "const_declaration", "var_declaration", "export_statement", "decorated_definition",
			"lexical_declaration", "variable_declaration", "template_declaration":
			cur = parent
		default:
			return ""
		}
	}
	return ""
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
