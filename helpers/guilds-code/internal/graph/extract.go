//go:build cgo

package graph

/*
#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>
#include <malloc.h>

// The part of the tree-sitter C API the extractor calls. github.com/smacker/go-tree-sitter compiles
// and links the library (its api.h declares the same); calling it directly costs one cgo call per
// file instead of several per node and capture.
typedef struct TSLanguage TSLanguage;
typedef struct TSParser TSParser;
typedef struct TSTree TSTree;
typedef struct TSQuery TSQuery;
typedef struct TSQueryCursor TSQueryCursor;
typedef struct { uint32_t row, column; } TSPoint;
typedef struct { uint32_t context[4]; const void *id; const TSTree *tree; } TSNode;
typedef struct { TSNode node; uint32_t index; } TSQueryCapture;
typedef struct { uint32_t id; uint16_t pattern_index; uint16_t capture_count; const TSQueryCapture *captures; } TSQueryMatch;
TSParser *ts_parser_new(void);
void ts_parser_delete(TSParser *self);
bool ts_parser_set_language(TSParser *self, const TSLanguage *language);
void ts_parser_set_cancellation_flag(TSParser *self, const size_t *flag);
void ts_parser_reset(TSParser *self);
TSTree *ts_parser_parse_string(TSParser *self, const TSTree *old_tree, const char *string, uint32_t length);
void ts_tree_delete(TSTree *self);
TSNode ts_tree_root_node(const TSTree *self);
uint32_t ts_node_start_byte(TSNode self);
uint32_t ts_node_end_byte(TSNode self);
TSPoint ts_node_start_point(TSNode self);
TSPoint ts_node_end_point(TSNode self);
bool ts_node_is_null(TSNode self);
TSNode ts_node_child_by_field_id(TSNode self, uint16_t field_id);
uint16_t ts_language_field_id_for_name(const TSLanguage *self, const char *name, uint32_t name_length);
uint32_t ts_language_symbol_count(const TSLanguage *self);
TSQueryCursor *ts_query_cursor_new(void);
void ts_query_cursor_delete(TSQueryCursor *self);
void ts_query_cursor_exec(TSQueryCursor *self, const TSQuery *query, TSNode node);
bool ts_query_cursor_next_match(TSQueryCursor *self, TSQueryMatch *match);
uint32_t ts_query_capture_count(const TSQuery *self);
void ts_query_cursor_set_max_start_depth(TSQueryCursor *self, uint32_t max_start_depth);
typedef struct { const void *tree; const void *id; uint32_t context[3]; } TSTreeCursor;
TSTreeCursor ts_tree_cursor_new(TSNode node);
void ts_tree_cursor_delete(TSTreeCursor *self);
bool ts_tree_cursor_goto_first_child(TSTreeCursor *self);
bool ts_tree_cursor_goto_next_sibling(TSTreeCursor *self);
bool ts_tree_cursor_goto_parent(TSTreeCursor *self);
TSNode ts_tree_cursor_current_node(const TSTreeCursor *self);
uint16_t ts_node_symbol(TSNode self);

// gx is one extractor's parser, query cursor, cancellation flag and match buffer.
typedef struct {
	TSParser *parser;
	TSQueryCursor *cursor;
	size_t cancel;
	bool cursor_walk; // walk with a tree cursor even where gx_walk could (tests compare the two)
	uint64_t layout_walks; // files whose pattern roots gx_walk found
	uint32_t *buf;
	size_t len, cap;
} gx;

static gx *gx_new(void) {
	// A tree is freed after every file and the next one allocated: without slack at the top of the heap
	// glibc gives the memory back and faults it in again for every file (tens of microseconds a page here).
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_TOP_PAD, 8 << 20);
	gx *g = calloc(1, sizeof(gx));
	if (!g) return NULL;
	g->parser = ts_parser_new();
	g->cursor = ts_query_cursor_new();
	ts_parser_set_cancellation_flag(g->parser, &g->cancel);
	return g;
}

static void gx_free(gx *g) {
	ts_query_cursor_delete(g->cursor);
	ts_parser_delete(g->parser);
	free(g->buf);
	free(g);
}

static bool gx_grow(gx *g, size_t need) {
	if (g->len + need <= g->cap) return true;
	size_t cap = g->cap ? g->cap * 2 : 1 << 16;
	while (cap < g->len + need) cap *= 2;
	uint32_t *b = realloc(g->buf, cap * sizeof(uint32_t));
	if (!b) return false;
	g->buf = b;
	g->cap = cap;
	return true;
}

// gx_collect records every match of the cursor in buf: the pattern index and capture count, then for each
// capture its id, start and end byte, start row, and for the definitions flagged in body_of its end row and
// the start byte + 1 of its body field (both 0 for other captures, and the body 0 when there is none). It
// returns false when out of memory.
static bool gx_collect(gx *g, const uint8_t *body_of, uint16_t body) {
	TSQueryMatch m;
	while (ts_query_cursor_next_match(g->cursor, &m)) {
		if (!gx_grow(g, 2 + 6 * (size_t)m.capture_count)) return false;
		uint32_t *o = g->buf + g->len;
		*o++ = m.pattern_index;
		*o++ = m.capture_count;
		for (uint16_t i = 0; i < m.capture_count; i++) {
			TSNode nd = m.captures[i].node;
			uint32_t id = m.captures[i].index;
			*o++ = id;
			*o++ = ts_node_start_byte(nd);
			*o++ = ts_node_end_byte(nd);
			*o++ = ts_node_start_point(nd).row;
			uint32_t end = 0, b = 0;
			if (body_of[id]) {
				end = ts_node_end_point(nd).row;
				if (body) {
					TSNode bn = ts_node_child_by_field_id(nd, body);
					if (!ts_node_is_null(bn)) b = ts_node_start_byte(bn) + 1;
				}
			}
			*o++ = end;
			*o++ = b;
		}
		g->len = o - g->buf;
	}
	return true;
}

// The tree's own layout, as this build's tree-sitter (the go-tree-sitter version go.mod names, language ABI
// 14) keeps it; gx_walk reads it to find the query's pattern roots without a tree cursor, and checks what it
// reads against the public API before trusting it (gx_layout_ok).
typedef struct { uint32_t bytes, row, column; } gxLength;
typedef struct {
	bool is_inline : 1, visible : 1, named : 1, extra : 1, has_changes : 1, is_missing : 1, is_keyword : 1;
	uint8_t symbol;
	uint16_t parse_state;
	uint8_t padding_columns;
	uint8_t padding_rows : 4, lookahead_bytes : 4;
	uint8_t padding_bytes;
	uint8_t size_bytes;
} gxInline;
typedef struct {
	uint32_t ref_count;
	gxLength padding, size;
	uint32_t lookahead_bytes, error_cost, child_count;
	uint16_t symbol, parse_state;
	bool visible : 1, named : 1, extra : 1, fragile_left : 1, fragile_right : 1, has_changes : 1,
		has_external_tokens : 1, has_external_scanner_state_change : 1, depends_on_column : 1, is_missing : 1, is_keyword : 1;
	union {
		struct {
			uint32_t visible_child_count, named_child_count, visible_descendant_count;
			int32_t dynamic_precedence;
			uint16_t repeat_depth, production_id;
			struct { uint16_t symbol, parse_state; } first_leaf;
		};
		struct { union { char *long_data; char short_data[24]; }; uint32_t length; } external_scanner_state;
		int32_t lookahead_char;
	};
} gxHeap;
typedef union { gxInline data; const gxHeap *ptr; } gxSubtree;
typedef struct { gxSubtree root; const TSLanguage *language; } gxTree;
typedef struct {
	uint32_t version, symbol_count, alias_count, token_count, external_token_count, state_count,
		large_state_count, production_id_count, field_count;
	uint16_t max_alias_sequence_length;
	const void *parse_table, *small_parse_table, *small_parse_table_map, *parse_actions, *symbol_names,
		*field_names, *field_map_slices, *field_map_entries, *symbol_metadata, *public_symbol_map, *alias_map;
	const uint16_t *alias_sequences;
} gxLanguage;

static inline gxLength gx_add(gxLength a, gxLength b) {
	a.bytes += b.bytes;
	if (b.row > 0) {
		a.row += b.row;
		a.column = b.column;
	} else {
		a.column += b.column;
	}
	return a;
}
static inline gxLength gx_padding(gxSubtree s) {
	if (s.data.is_inline) return (gxLength){s.data.padding_bytes, s.data.padding_rows, s.data.padding_columns};
	return s.ptr->padding;
}
static inline gxLength gx_size(gxSubtree s) {
	if (s.data.is_inline) return (gxLength){s.data.size_bytes, 0, s.data.size_bytes};
	return s.ptr->size;
}

// gx_layout_ok reports whether the tree's root, read through the layout above, is what the public API says.
static bool gx_layout_ok(const TSTree *t, const TSLanguage *lang) {
	const gxTree *gt = (const gxTree *)t;
	TSNode root = ts_tree_root_node(t);
	if (((const gxLanguage *)lang)->version != 14 || gt->language != lang || root.id != (const void *)&gt->root) return false;
	gxSubtree s = gt->root;
	if (s.data.is_inline) return s.data.symbol == ts_node_symbol(root) && root.context[0] + s.data.size_bytes == ts_node_end_byte(root);
	TSPoint end = ts_node_end_point(root);
	gxLength at = gx_add((gxLength){root.context[0], root.context[1], root.context[2]}, s.ptr->size);
	return s.ptr->symbol == ts_node_symbol(root) && at.bytes == ts_node_end_byte(root) && at.row == end.row && at.column == end.column;
}

// gxFrame is one node whose children gx_walk is going through.
typedef struct {
	const gxSubtree *children;
	const uint16_t *aliases;
	uint32_t count, next, structural;
	gxLength at; // where the next child starts, its padding not yet added
} gxFrame;

// gx_walk runs the query at every node of the tree whose type (its alias where it has one) is flagged in
// roots, in document order, as a tree cursor walk over the visible nodes would: the children of hidden nodes
// stand in their place. It reads the subtrees directly, which visits each node for a few loads and adds.
// It returns 0, or 2 when out of memory.
static int gx_walk(gx *g, const TSTree *t, const TSLanguage *lang, const TSQuery *q,
		const uint8_t *body_of, uint16_t body, const uint8_t *roots, uint32_t nroots) {
	const gxTree *gt = (const gxTree *)t;
	const gxLanguage *gl = (const gxLanguage *)lang;
	TSNode root = ts_tree_root_node(t);
	size_t cap = 64, depth = 0;
	gxFrame *stack = malloc(cap * sizeof(gxFrame));
	if (!stack) return 2;
	const gxSubtree *node = &gt->root;
	gxLength at = {root.context[0], root.context[1], root.context[2]};
	uint16_t alias = 0;
	int rc = 0;
	for (;;) {
		gxSubtree s = *node;
		uint16_t sym = alias ? alias : s.data.is_inline ? s.data.symbol : s.ptr->symbol;
		if (sym < nroots && roots[sym]) {
			TSNode nd = {{at.bytes, at.row, at.column, alias}, node, t};
			ts_query_cursor_exec(g->cursor, q, nd);
			if (!gx_collect(g, body_of, body)) {
				rc = 2;
				break;
			}
		}
		if (!s.data.is_inline && s.ptr->child_count > 0) {
			if (depth == cap) {
				gxFrame *grown = realloc(stack, 2 * cap * sizeof(gxFrame));
				if (!grown) {
					rc = 2;
					break;
				}
				stack = grown;
				cap *= 2;
			}
			uint16_t pid = s.ptr->production_id;
			stack[depth++] = (gxFrame){
				.children = (const gxSubtree *)s.ptr - s.ptr->child_count,
				.aliases = pid ? &gl->alias_sequences[pid * gl->max_alias_sequence_length] : NULL,
				.count = s.ptr->child_count,
				.at = at,
			};
		} else if (depth > 0) {
			stack[depth - 1].at = gx_add(at, gx_size(s));
		}
		// The next node: the next child of the innermost node that has one left.
		while (depth > 0 && stack[depth - 1].next == stack[depth - 1].count) {
			depth--;
			if (depth > 0) {
				// The finished node's end is where its parent's next child starts.
				gxFrame *done = &stack[depth];
				stack[depth - 1].at = done->at;
			}
		}
		if (depth == 0) break;
		gxFrame *f = &stack[depth - 1];
		node = &f->children[f->next];
		if (f->next > 0) f->at = gx_add(f->at, gx_padding(*node));
		at = f->at;
		alias = 0;
		bool extra = node->data.is_inline ? node->data.extra : node->ptr->extra;
		if (!extra) {
			if (f->aliases) alias = f->aliases[f->structural];
			f->structural++;
		}
		f->next++;
	}
	free(stack);
	return rc;
}

// gx_run parses src and, when q is set, runs the query over the tree and records its matches (gx_collect).
// With roots (one flag per grammar symbol: the node types the query's patterns start at), it walks the
// tree (gx_walk, or a tree cursor when the layout check fails) and runs the query only at those nodes, each
// match starting at the node itself: the same matches as one run over the whole tree, without the query
// cursor's bookkeeping at every node.
// It returns 0, 1 when there is no tree (cancelled), 2 when out of memory, 3 for a grammar the library
// cannot load.
static int gx_run(gx *g, const TSLanguage *lang, const TSQuery *q, const char *src, uint32_t n,
		const uint8_t *body_of, uint16_t body, const uint8_t *roots, uint32_t nroots) {
	g->len = 0;
	if (!ts_parser_set_language(g->parser, lang)) return 3;
	TSTree *t = ts_parser_parse_string(g->parser, NULL, n ? src : "", n);
	if (!t) {
		ts_parser_reset(g->parser);
		return 1;
	}
	int rc = 0;
	if (q && !roots) {
		ts_query_cursor_set_max_start_depth(g->cursor, UINT32_MAX);
		ts_query_cursor_exec(g->cursor, q, ts_tree_root_node(t));
		if (!gx_collect(g, body_of, body)) rc = 2;
	} else if (q && !g->cursor_walk && gx_layout_ok(t, lang)) {
		ts_query_cursor_set_max_start_depth(g->cursor, 0);
		rc = gx_walk(g, t, lang, q, body_of, body, roots, nroots);
		g->layout_walks++;
	} else if (q) {
		ts_query_cursor_set_max_start_depth(g->cursor, 0);
		TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(t));
		for (;;) {
			TSNode nd = ts_tree_cursor_current_node(&c);
			uint16_t sym = ts_node_symbol(nd);
			if (sym < nroots && roots[sym]) {
				ts_query_cursor_exec(g->cursor, q, nd);
				if (!gx_collect(g, body_of, body)) {
					rc = 2;
					break;
				}
			}
			if (ts_tree_cursor_goto_first_child(&c)) continue;
			while (!ts_tree_cursor_goto_next_sibling(&c)) {
				if (!ts_tree_cursor_goto_parent(&c)) goto done;
			}
		}
	done:
		ts_tree_cursor_delete(&c);
	}
	ts_tree_delete(t);
	return rc;
}
*/
import "C"

import (
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
)

func kindNamed(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
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
)

var roleNames = map[string]capRole{
	"name": roleName, "recv.type": roleRecvType, "impl.trait": roleImplTrait, "type.body": roleTypeBody,
	"call": roleCall, "call.name": roleCallName, "call.recv": roleCallRecv, "call.bare": roleCallBare,
	"assign.name": roleAssign, "import": roleImport, "import.path": roleImportPath, "import.alias": roleImportAlias,
	"import.name": roleImportName, "package": rolePackage, "local.name": roleLocalName, "local.type": roleLocalType,
}

// plan is a language's grammar and query as the C side takes them, with each capture's role.
type plan struct {
	lang   *C.TSLanguage
	query  *C.TSQuery
	roles  []capRole
	kinds  []Kind // the kind of each @def./@decl. capture
	bodyOf []byte // 1 for the captures whose body field start is recorded
	body   C.uint16_t
	roots  []byte // 1 for the grammar symbols the query's patterns start at; nil runs the query over the whole tree
}

// Extractor parses files of every language; it is not safe for concurrent use.
type Extractor struct {
	g     *C.gx
	plans map[*Lang]*plan

	names map[string]string // call and receiver names seen, so each distinct one is allocated once

	// Reused between files.
	defs   []defHit
	refs   []refHit
	locals []localHit
	bare   []assignHit
}

type defHit struct {
	name     string
	nameAt   uint32
	kind     Kind
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
	at   uint32
	end  uint32
	name string
	recv string
	line uint32
	bare bool
}

type localHit struct {
	at        uint32
	name, typ string
}

type assignHit struct {
	at   uint32
	name string
}

// NewExtractor returns an extractor with its own parser and query cursor.
func NewExtractor() *Extractor {
	return &Extractor{g: C.gx_new(), plans: map[*Lang]*plan{}, names: map[string]string{}}
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

// layoutWalks is how many files had their pattern roots found by reading the tree's layout.
func (x *Extractor) layoutWalks() uint64 { return uint64(x.g.layout_walks) }

// Close frees the parser.
func (x *Extractor) Close() {
	if x.g != nil {
		C.gx_free(x.g)
		x.g = nil
	}
}

// cPointer reads the C handle a go-tree-sitter value keeps as its first field (sitter.Language.ptr,
// sitter.Query.c); plan checks what it reads against the binding's own answers (capture and symbol counts).
func cPointer[T any](v *T) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(v)) }

// plan returns the language's grammar and query as the C side takes them, made once per extractor.
func (x *Extractor) plan(l *Lang) (*plan, error) {
	if p := x.plans[l]; p != nil {
		return p, nil
	}
	lang, q, err := l.load()
	if err != nil {
		return nil, err
	}
	p := &plan{lang: (*C.TSLanguage)(cPointer[sitter.Language](lang)), query: (*C.TSQuery)(cPointer[sitter.Query](q))}
	if n := int(C.ts_query_capture_count(p.query)); n != len(l.names) || C.ts_language_symbol_count(p.lang) != C.uint32_t(lang.SymbolCount()) {
		return nil, fmt.Errorf("query for %s: the tree-sitter binding does not hold its handles where this build expects them; rebuild with the go-tree-sitter version go.mod names", l.Name)
	}
	p.roles = make([]capRole, len(l.names))
	p.kinds = make([]Kind, len(l.names))
	p.bodyOf = make([]byte, len(l.names)+1)
	for i, name := range l.names {
		role, kind := roleNames[name], Kind(0)
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
	body := C.CString("body")
	p.body = C.ts_language_field_id_for_name(p.lang, body, 4)
	C.free(unsafe.Pointer(body))
	if src, err := queryFS.ReadFile("queries/" + l.Name + ".scm"); err == nil {
		if names := patternRoots(string(src)); names != nil {
			p.roots = make([]byte, lang.SymbolCount())
			for i := range p.roots {
				sym := sitter.Symbol(i)
				if names[lang.SymbolName(sym)] && lang.SymbolType(sym) == sitter.SymbolTypeRegular {
					p.roots[i] = 1
				}
			}
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
	switch C.gx_run(x.g, p.lang, q, s, C.uint32_t(len(src)), (*C.uint8_t)(unsafe.Pointer(&p.bodyOf[0])), p.body, roots, C.uint32_t(len(p.roots))) {
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
func (x *Extractor) Parse(ctx context.Context, l *Lang, src []byte) error {
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
func (x *Extractor) Extract(ctx context.Context, l *Lang, src []byte, f *File) error {
	p, err := x.plan(l)
	if err != nil {
		return err
	}
	buf, err := x.run(ctx, p, src, true)
	if err != nil {
		return fmt.Errorf("parse %s: %w", f.Path, err)
	}
	defs, refs, locals, assigned := x.defs[:0], x.refs[:0], x.locals[:0], x.bare[:0]
	imports := f.Imports[:0]
	f.Pkg = ""
	for i := 0; i+2 <= len(buf); {
		n := int(buf[i+1])
		caps := buf[i+2 : i+2+6*n]
		i += 2 + 6*n
		var d defHit
		var r refHit
		var im Import
		var loc localHit
		var isDef, isRef, isImport bool
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
			case roleCallBare:
				isRef = true
				r.at, r.end, r.line, r.name, r.bare = sb, eb, caps[c+3]+1, x.intern(src[sb:eb]), true
			case roleCallName:
				r.name = x.intern(src[sb:eb])
			case roleCallRecv:
				if eb-sb <= 80 && plain(src[sb:eb]) {
					r.recv = x.intern(src[sb:eb])
				} else {
					r.recv = clip(oneLine(string(src[sb:eb])), 80)
				}
			case roleAssign:
				assigned = append(assigned, assignHit{at: sb, name: string(src[sb:eb])})
			case roleImport:
				isImport = true
			case roleImportPath:
				im.Path = strings.Trim(string(src[sb:eb]), "\"'`")
			case roleImportAlias:
				im.Alias = string(src[sb:eb])
			case roleImportName:
				im.Name = string(src[sb:eb])
			case rolePackage:
				f.Pkg = string(src[sb:eb])
			case roleLocalName:
				loc.name, loc.at = string(src[sb:eb]), sb
			case roleLocalType:
				loc.typ = strings.TrimPrefix(string(src[sb:eb]), "*")
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
	x.defs, x.refs, x.locals, x.bare = defs, refs, locals, assigned
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
			if d.kind == KindFunction && (kept[i].kind == KindConst || kept[i].kind == KindVar) {
				kept[i].kind = KindFunction
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
	f.Symbols = make([]Symbol, 0, len(defs))
	starts, ends := make([]uint32, 0, len(defs)), make([]uint32, 0, len(defs))
	type open struct {
		end  uint32
		sym  int32 // index into f.Symbols
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
		k := d.kind
		if d.decl && outOfClass[container+"."+d.name] {
			// The definition below its class stands for the method: one symbol, the definition's span.
			continue
		}
		if k == KindType && d.typeBody > 0 {
			if b := src[d.typeBody-1:]; hasWordPrefix(b, "struct") {
				k = KindStruct
			} else if hasWordPrefix(b, "interface") {
				k = KindInterface
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
		name, scope := d.name, d.name
		if k == kindImpl {
			// An impl block is listed as itself; the methods in it belong to its type.
			name, container = "impl "+d.name, ""
			if d.trait != "" {
				name = "impl " + d.trait + " for " + d.name
			}
		}
		sym := Symbol{
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
	f.Refs = make([]Ref, 0, len(refs))
	for _, r := range refs {
		from := enclosing(r.at)
		if r.bare && vars[from][r.name] {
			continue // a variable of its scope, not a call
		}
		f.Refs = append(f.Refs, Ref{Name: r.name, Recv: r.recv, Line: r.line, From: from})
	}
	for _, lc := range locals {
		if s := enclosing(lc.at); s >= 0 && (f.Symbols[s].Kind.callable() || f.Symbols[s].Kind == KindStruct || f.Symbols[s].Kind == KindClass) {
			f.Symbols[s].Locals = append(f.Symbols[s].Locals, Local{Name: lc.name, Type: lc.typ})
		}
	}
	return nil
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
func signature(src []byte, d defHit, lang string, k Kind) string {
	start, end := d.start, d.end
	if d.body > 0 && d.body-1 > start {
		end = d.body - 1
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

// docFor is the first line of a Python docstring, else of the comment block right above the definition.
func docFor(src []byte, d defHit, lang string) string {
	if lang == "python" && d.body > 0 && (d.kind == KindFunction || d.kind == KindClass) {
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
