//go:build cgo

package extract

/*
#include "gx.h"
uint16_t ts_language_symbol_for_name(const TSLanguage *self, const char *string, uint32_t length, bool is_named);
uint32_t ts_query_pattern_count(const TSQuery *self);
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// patNode is one node of a query pattern as gx_match_at takes it (see gxPat in gx.h).
type patNode struct {
	sym, field uint16
	capture    int32
	flags      uint8
	kids       []*patNode
}

// errUnsupported says a query uses more of tree-sitter's query language than gx_match_at implements; the
// query cursor then matches it.
type errUnsupported string

func (e errUnsupported) Error() string { return "not for gx_match_at: " + string(e) }

// patParser reads the subset of tree-sitter's query syntax the query files use.
type patParser struct {
	src   string
	i     int
	lang  *C.TSLanguage
	names map[string]int32 // capture name to the query's capture id
}

// fieldID is the grammar's id of the field name, 0 when it has none.
func fieldID(lang *C.TSLanguage, name string) uint16 {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return uint16(C.ts_language_field_id_for_name(lang, cs, C.uint32_t(len(name))))
}

// namedSymbol is the grammar's id of the named node type, 0 when it has none.
func namedSymbol(lang *C.TSLanguage, name string) uint16 {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return uint16(C.ts_language_symbol_for_name(lang, cs, C.uint32_t(len(name)), true))
}

// closes skips to the next token and reports whether it is the closing bracket c, consuming it; the
// source ending first is an error.
func (p *patParser) closes(c byte) (bool, error) {
	p.skip()
	if p.i >= len(p.src) {
		return false, errUnsupported("unclosed " + string(c))
	}
	if p.src[p.i] == c {
		p.i++
		return true, nil
	}
	return false, nil
}

func (p *patParser) skip() {
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == ';':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		default:
			return
		}
	}
}

func nameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *patParser) ident() string {
	j := p.i
	for j < len(p.src) && nameByte(p.src[j]) && p.src[j] != '.' {
		j++
	}
	s := p.src[p.i:j]
	p.i = j
	return s
}

// pattern reads one pattern: a node or an alternation, then its quantifier and capture.
func (p *patParser) pattern() (*patNode, error) {
	p.skip()
	if p.i >= len(p.src) {
		return nil, errUnsupported("unexpected end")
	}
	n := &patNode{capture: -1}
	switch p.src[p.i] {
	case '(':
		p.i++
		p.skip()
		name := p.ident()
		switch name {
		case "":
			return nil, errUnsupported(fmt.Sprintf("no node type at offset %d", p.i))
		case "_":
			n.flags |= C.GX_WILD
		default:
			if n.sym = namedSymbol(p.lang, name); n.sym == 0 {
				return nil, errUnsupported("unknown node type " + name)
			}
		}
		for first := true; ; first = false {
			done, err := p.closes(')')
			if err != nil {
				return nil, err
			}
			if done {
				break
			}
			var anchor bool
			if p.src[p.i] == '.' {
				if !first {
					return nil, errUnsupported("an anchor after the first child")
				}
				anchor = true
				p.i++
				p.skip()
			}
			var field uint16
			if j := p.i; j < len(p.src) && p.src[j] >= 'a' && p.src[j] <= 'z' {
				f := p.ident()
				if p.i >= len(p.src) || p.src[p.i] != ':' {
					return nil, errUnsupported("a bare name " + f)
				}
				p.i++
				if field = fieldID(p.lang, f); field == 0 {
					return nil, errUnsupported("unknown field " + f)
				}
			}
			kid, err := p.pattern()
			if err != nil {
				return nil, err
			}
			kid.field = field
			if anchor {
				kid.flags |= C.GX_ANCHOR
			}
			n.kids = append(n.kids, kid)
		}
	case '[':
		p.i++
		n.flags |= C.GX_ALT
		for {
			done, err := p.closes(']')
			if err != nil {
				return nil, err
			}
			if done {
				break
			}
			alt, err := p.pattern()
			if err != nil {
				return nil, err
			}
			if alt.flags&C.GX_OPTIONAL != 0 {
				return nil, errUnsupported("an optional alternative")
			}
			n.kids = append(n.kids, alt)
		}
		if len(n.kids) == 0 {
			return nil, errUnsupported("an empty alternation")
		}
	default:
		return nil, errUnsupported(fmt.Sprintf("%q at offset %d", p.src[p.i], p.i))
	}
	if p.i < len(p.src) {
		switch p.src[p.i] {
		case '?':
			n.flags |= C.GX_OPTIONAL
			p.i++
		case '*', '+':
			return nil, errUnsupported("a repetition")
		}
	}
	p.skip()
	if p.i < len(p.src) && p.src[p.i] == '@' {
		p.i++
		j := p.i
		for j < len(p.src) && nameByte(p.src[j]) {
			j++
		}
		id, ok := p.names[p.src[p.i:j]]
		if !ok {
			return nil, errUnsupported("unknown capture @" + p.src[p.i:j])
		}
		n.capture = id
		p.i = j
		p.skip()
		if p.i < len(p.src) && p.src[p.i] == '@' {
			return nil, errUnsupported("two captures on one node")
		}
	}
	return n, nil
}

// captures reports whether n or a node under it has a capture.
func (n *patNode) captures() bool {
	if n.capture >= 0 {
		return true
	}
	for _, k := range n.kids {
		if k.captures() {
			return true
		}
	}
	return false
}

// overlapping reports whether two matches of n at one node could share captures, one holding all the
// other's: with an optional step or alternatives, or a step with no capture under it that can match several
// children. tree-sitter keeps only the larger (or first) of such matches.
func (n *patNode) overlapping(top bool) bool {
	if n.flags&(C.GX_OPTIONAL|C.GX_ALT) != 0 || !top && !n.captures() {
		return true
	}
	for _, k := range n.kids {
		if k.overlapping(false) {
			return true
		}
	}
	return false
}

// patterns is a language's compiled patterns in C memory, as gx_match_at reads them.
type patterns struct {
	c    *C.gxPatterns
	mems []unsafe.Pointer
}

func (ps *patterns) free() {
	for _, m := range ps.mems {
		C.free(m)
	}
	ps.mems, ps.c = nil, nil
}

// cArray copies s into C memory that ps frees.
func cArray[T any](ps *patterns, s []T) *T {
	var zero T
	size := max(len(s), 1) * int(unsafe.Sizeof(zero))
	m := C.malloc(C.size_t(size))
	ps.mems = append(ps.mems, m)
	out := unsafe.Slice((*T)(m), max(len(s), 1))
	copy(out, s)
	return &out[0]
}

// compilePatterns compiles the query source for gx_match_at: the same patterns, in the same order, as
// tree-sitter's compiled query q, with capture ids from names. It fails with errUnsupported for a query
// that uses more of the query language than gx_match_at implements, and for a top-level pattern that does
// not start at a named node type.
func compilePatterns(src string, lang *C.TSLanguage, q *C.TSQuery, names []string, symbols int) (*patterns, error) {
	pp := &patParser{src: src, lang: lang, names: map[string]int32{}}
	for i, n := range names {
		pp.names[n] = int32(i)
	}
	var tops []*patNode
	for {
		pp.skip()
		if pp.i >= len(pp.src) {
			break
		}
		n, err := pp.pattern()
		if err != nil {
			return nil, err
		}
		if n.flags&(C.GX_WILD|C.GX_ALT|C.GX_OPTIONAL) != 0 {
			return nil, errUnsupported("a top-level pattern that does not start at a named node type")
		}
		tops = append(tops, n)
	}
	if int(C.ts_query_pattern_count(q)) != len(tops) {
		return nil, fmt.Errorf("read %d patterns where tree-sitter compiled %d", len(tops), C.ts_query_pattern_count(q))
	}
	var pats []C.gxPat
	var kids []C.uint32_t
	var add func(n *patNode) uint32
	add = func(n *patNode) uint32 {
		at := uint32(len(pats))
		pats = append(pats, C.gxPat{sym: C.uint16_t(n.sym), field: C.uint16_t(n.field), capture: C.int32_t(n.capture), flags: C.uint8_t(n.flags)})
		idx := make([]uint32, len(n.kids))
		for i, k := range n.kids {
			idx[i] = add(k)
		}
		pats[at].kids, pats[at].nkids = C.uint32_t(len(kids)), C.uint32_t(len(idx))
		for _, i := range idx {
			kids = append(kids, C.uint32_t(i))
		}
		return at
	}
	topPat := make([]C.uint32_t, len(tops))
	dedupe := make([]C.uint8_t, len(tops))
	count := make([]int, symbols+1)
	for i, n := range tops {
		topPat[i] = C.uint32_t(add(n))
		if n.overlapping(true) {
			dedupe[i] = 1
		}
		if int(n.sym) >= symbols {
			return nil, fmt.Errorf("pattern %d starts at symbol %d of %d", i, n.sym, symbols)
		}
		count[n.sym+1]++
	}
	bySym := make([]C.uint32_t, symbols+1)
	for s := 1; s <= symbols; s++ {
		bySym[s] = bySym[s-1] + C.uint32_t(count[s])
	}
	topsBySym := make([]C.uint32_t, len(tops))
	next := make([]C.uint32_t, symbols)
	for i, n := range tops {
		topsBySym[bySym[n.sym]+next[n.sym]] = C.uint32_t(i)
		next[n.sym]++
	}
	ps := &patterns{}
	ps.c = (*C.gxPatterns)(C.malloc(C.size_t(unsafe.Sizeof(C.gxPatterns{}))))
	ps.mems = append(ps.mems, unsafe.Pointer(ps.c))
	*ps.c = C.gxPatterns{
		pats: cArray(ps, pats), kids: cArray(ps, kids), by_sym: cArray(ps, bySym), tops: cArray(ps, topsBySym),
		top_pat: cArray(ps, topPat), dedupe: cArray(ps, dedupe), nsyms: C.uint32_t(symbols),
	}
	return ps, nil
}
