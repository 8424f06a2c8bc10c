// gx.h is the C side of the extractor (extract.go): one call per file parses it, finds the query's pattern
// roots and matches the patterns there. It is included by extract.go only, which builds with cgo.

#ifndef GUILDS_GX_H
#define GUILDS_GX_H

#include <stdint.h>
#include <stdlib.h>
#include <stdbool.h>
#include <malloc.h>
#include <string.h>

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
	bool query_match; // match with tree-sitter's query cursor even where gx_match_at could (tests compare the two)
	uint64_t layout_walks; // files whose pattern roots gx_walk found
	// The pattern matcher's scratch (gx_match_at): visible children, captures so far, matches found.
	struct gxNode_ *kids;
	size_t kids_len, kids_cap;
	struct gxCap_ *caps;
	size_t caps_len, caps_cap;
	struct gxCap_ *found;
	size_t found_len, found_cap;
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
	free(g->kids);
	free(g->caps);
	free(g->found);
	free(g);
}

// gx_reserve makes room for need elements of size bytes in *buf, doubling its capacity *cap.
static bool gx_reserve(void **buf, size_t *cap, size_t need, size_t size) {
	if (need <= *cap) return true;
	size_t c = *cap ? *cap * 2 : 256;
	while (c < need) c *= 2;
	void *b = realloc(*buf, c * size);
	if (!b) return false;
	*buf = b;
	*cap = c;
	return true;
}

// gx_grow makes room for need more words in the match buffer.
static bool gx_grow(gx *g, size_t need) {
	return gx_reserve((void **)&g->buf, &g->cap, g->len + need, sizeof(uint32_t));
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
	const void *parse_table, *small_parse_table, *small_parse_table_map, *parse_actions, *symbol_names, *field_names;
	const struct { uint16_t index, length; } *field_map_slices;
	const struct { uint16_t field_id; uint8_t child_index; bool inherited; } *field_map_entries;
	const struct { bool visible, named, supertype; } *symbol_metadata;
	const uint16_t *public_symbol_map;
	const void *alias_map;
	const uint16_t *alias_sequences;
} gxLanguage;

#define GX_SYM_ERROR 0xFFFF
#define GX_SYM_ERROR_REPEAT 0xFFFE

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


// The patterns of a language's query, compiled by compilePatterns (match.go) into a table gx_match reads:
// the same matches as tree-sitter's query cursor for the subset of the query language the query files use
// (node types, (_), fields, ?, [alternatives], a leading . anchor, captures), without its general machinery.
typedef struct {
	uint16_t sym;        // the public symbol the node must have (unless GX_WILD)
	uint16_t field;      // the field it must have in its parent, 0 for any
	int32_t capture;     // capture id, -1 for none
	uint8_t flags;       // GX_*
	uint32_t kids, nkids; // its child steps (or alternatives, for GX_ALT), as indices in gxPatterns.kids
} gxPat;
#define GX_WILD 1     // (_): any named node but ERROR
#define GX_ALT 2      // [ ... ]: one of the alternatives, matched against the same node
#define GX_OPTIONAL 4 // ?: the step may match nothing
#define GX_ANCHOR 8   // . before the step: it must match the first named child after the previous step's

typedef struct {
	const gxPat *pats;
	const uint32_t *kids;
	const uint32_t *by_sym;  // CSR index: the top-level patterns starting at public symbol s are
	const uint32_t *tops;    // tops[by_sym[s]..by_sym[s+1]] (pattern indices, ascending)
	const uint32_t *top_pat; // each top-level pattern's root in pats
	const uint8_t *dedupe;   // per top-level pattern: 1 when two of its matches at one node can overlap
	uint32_t nsyms;
} gxPatterns;

// gxNode is a visible node: its subtree, where it starts, the alias its parent gives it, and the field it has
// in its visible parent.
typedef struct gxNode_ {
	const gxSubtree *s;
	gxLength at;
	uint16_t alias, field, sym; // sym: public symbol
	bool named;
	bool later; // the grammar allows a later sibling with the same field (tree-sitter's query cursor tries
	            // later siblings for a field step only then)
} gxNode;

// gxLevel is a hidden node between a visible node and the children gx_push_children lists: its parent's
// field map entries, its index among the parent's structural children, and the level above it.
typedef struct gxLevel {
	uint32_t from, to;
	uint32_t index;
	bool extra;
	const struct gxLevel *up;
} gxLevel;

// gx_field_later reports whether the field map entries [from, to) give field to a child after index.
static inline bool gx_field_later(const gxLanguage *gl, uint32_t from, uint32_t to, uint16_t field, uint32_t index) {
	for (uint32_t e = from; e < to; e++) {
		if (gl->field_map_entries[e].field_id == field && gl->field_map_entries[e].child_index > index) return true;
	}
	return false;
}

typedef struct gxCap_ { int32_t id; gxNode n; } gxCap; // id < 0 in gx.found: a match of -1-id captures follows

// gxM is one matching run: the scratch arrays it grows, reused between files through gx.
typedef struct {
	gx *g;
	const gxLanguage *gl;
	const gxPatterns *ps;
	const uint8_t *body_of;
	uint16_t body;
	bool oom;
} gxM;

static inline uint16_t gx_public(const gxLanguage *gl, uint16_t sym) {
	return sym >= GX_SYM_ERROR_REPEAT ? sym : gl->public_symbol_map[sym];
}

static inline gxNode gx_node(const gxLanguage *gl, const gxSubtree *s, gxLength at, uint16_t alias, uint16_t field) {
	gxNode n = {s, at, alias, field, 0, false, false};
	if (alias) {
		n.sym = gx_public(gl, alias);
		n.named = gl->symbol_metadata[alias].named;
	} else if (s->data.is_inline) {
		n.sym = gx_public(gl, s->data.symbol);
		n.named = s->data.named;
	} else {
		n.sym = gx_public(gl, s->ptr->symbol);
		n.named = s->ptr->named;
	}
	return n;
}

// gx_push_children appends to g->kids the visible children of the subtree s (the children of hidden ones in
// their place), with the field each has as tree-sitter's tree cursor reports it: its own in its parent, else
// that of the hidden node it is in (outer, outer_later; up lists the hidden nodes s is in).
static bool gx_push_children(gxM *m, const gxSubtree *s, gxLength at, uint16_t outer, bool outer_later, const gxLevel *up) {
	if (s->data.is_inline || s->ptr->child_count == 0) return true;
	const gxLanguage *gl = m->gl;
	const gxHeap *h = s->ptr;
	const gxSubtree *kids = (const gxSubtree *)h - h->child_count;
	uint16_t pid = h->production_id;
	const uint16_t *aliases = pid ? &gl->alias_sequences[pid * gl->max_alias_sequence_length] : NULL;
	uint32_t from = 0, to = 0;
	if (gl->field_count) {
		from = gl->field_map_slices[pid].index;
		to = from + gl->field_map_slices[pid].length;
	}
	uint32_t structural = 0;
	for (uint32_t i = 0; i < h->child_count; i++) {
		const gxSubtree *c = &kids[i];
		if (i > 0) at = gx_add(at, gx_padding(*c));
		bool extra = c->data.is_inline ? c->data.extra : c->ptr->extra;
		uint16_t alias = 0, field = 0;
		bool later = false;
		if (!extra) {
			if (aliases) alias = aliases[structural];
			for (uint32_t e = from; e < to; e++) {
				if (!gl->field_map_entries[e].inherited && gl->field_map_entries[e].child_index == structural) {
					field = gl->field_map_entries[e].field_id;
					break;
				}
			}
		}
		if (field) {
			later = gx_field_later(gl, from, to, field, structural);
			for (const gxLevel *l = up; l && !later; l = l->up) {
				if (!l->extra) later = gx_field_later(gl, l->from, l->to, field, l->index);
			}
		} else {
			field = outer;
			later = outer_later;
		}
		bool visible = alias || (c->data.is_inline ? c->data.visible : c->ptr->visible);
		if (visible) {
			gx *g = m->g;
			if (!gx_reserve((void **)&g->kids, &g->kids_cap, g->kids_len + 1, sizeof(gxNode))) return false;
			gxNode n = gx_node(gl, c, at, alias, field);
			n.later = later;
			g->kids[g->kids_len++] = n;
		} else {
			gxLevel level = {from, to, structural, extra, up};
			if (!gx_push_children(m, c, at, field, later, &level)) return false;
		}
		if (!extra) structural++;
		at = gx_add(at, gx_size(*c));
	}
	return true;
}

// gxK is what is left to match once a node has matched: the steps of a parent pattern from step on, against
// the parent's children (g->kids[kids..kids+nkids]) from child on, then what is left of the grandparent (up).
typedef struct gxK {
	const gxPat *parent;
	uint32_t step;
	size_t kids, nkids, child;
	const struct gxK *up;
} gxK;

static void gx_match_node(gxM *m, const gxPat *p, gxNode n, const gxK *k);

// gx_found records the captures on g->caps as one match of the current top-level pattern.
static void gx_found(gxM *m) {
	gx *g = m->g;
	if (!gx_reserve((void **)&g->found, &g->found_cap, g->found_len + g->caps_len + 1, sizeof(gxCap))) {
		m->oom = true;
		return;
	}
	g->found[g->found_len++] = (gxCap){-1 - (int32_t)g->caps_len};
	memcpy(g->found + g->found_len, g->caps, g->caps_len * sizeof(gxCap));
	g->found_len += g->caps_len;
}

static void gx_match_steps(gxM *m, const gxK *k) {
	if (m->oom) return;
	if (!k) {
		gx_found(m);
		return;
	}
	const gxPat *ps = m->ps->pats;
	if (k->step == k->parent->nkids) {
		gx_match_steps(m, k->up);
		return;
	}
	const gxPat *step = &ps[m->ps->kids[k->parent->kids + k->step]];
	gxK next = *k;
	next.step++;
	if (step->flags & GX_OPTIONAL) gx_match_steps(m, &next);
	for (size_t i = k->child; i < k->nkids && !m->oom; i++) {
		gxNode c = m->g->kids[k->kids + i];
		if (step->flags & GX_ANCHOR && !c.named) continue;
		if (!step->field || step->field == c.field) {
			next.child = i + 1;
			gx_match_node(m, step, c, &next);
			// tree-sitter's query cursor gives up a field step at a child with its field when the
			// grammar allows no later sibling with that field, whether or not the child matched.
			if (step->field && !c.later) break;
		}
		if (step->flags & GX_ANCHOR) break;
	}
}

// gx_match_node matches the pattern p against node n, then what k leaves to match.
static void gx_match_node(gxM *m, const gxPat *p, gxNode n, const gxK *k) {
	gx *g = m->g;
	const gxPatterns *ps = m->ps;
	if (p->capture >= 0) {
		if (!gx_reserve((void **)&g->caps, &g->caps_cap, g->caps_len + 1, sizeof(gxCap))) {
			m->oom = true;
			return;
		}
		g->caps[g->caps_len++] = (gxCap){p->capture, n};
	}
	if (p->flags & GX_ALT) {
		for (uint32_t i = 0; i < p->nkids && !m->oom; i++) gx_match_node(m, &ps->pats[ps->kids[p->kids + i]], n, k);
	} else if (p->flags & GX_WILD ? n.named && n.sym != GX_SYM_ERROR : n.sym == p->sym) { // (_) is never an ERROR
		if (p->nkids == 0) {
			gx_match_steps(m, k);
		} else {
			size_t mark = g->kids_len;
			if (!gx_push_children(m, n.s, n.at, 0, false, NULL)) {
				m->oom = true;
			} else {
				gxK sub = {p, 0, mark, g->kids_len - mark, 0, k};
				gx_match_steps(m, &sub);
			}
			g->kids_len = mark;
		}
	}
	if (p->capture >= 0) g->caps_len--;
}

// gx_contains reports whether every capture of b (same capture and node) is one of a's.
static bool gx_contains(const gxCap *a, size_t na, const gxCap *b, size_t nb) {
	for (size_t j = 0; j < nb; j++) {
		bool in = false;
		for (size_t i = 0; i < na && !in; i++) in = a[i].id == b[j].id && a[i].n.s == b[j].n.s;
		if (!in) return false;
	}
	return true;
}

// gx_emit writes the matches of top-level pattern pi found at one node to the match buffer, as gx_collect
// does, dropping (when the pattern can produce them) each match whose captures another one also has.
static bool gx_emit(gxM *m, uint32_t pi) {
	gx *g = m->g;
	size_t end = g->found_len;
	for (size_t i = 0; i < end;) {
		size_t n = (size_t)(-1 - g->found[i].id);
		const gxCap *c = g->found + i + 1;
		bool drop = false;
		if (m->ps->dedupe[pi]) {
			for (size_t j = 0; j < end && !drop;) {
				size_t nj = (size_t)(-1 - g->found[j].id);
				const gxCap *cj = g->found + j + 1;
				// A match is dropped for a larger one, or for an equal one found before it.
				if (j != i && gx_contains(cj, nj, c, n) && (nj > n || j < i)) drop = true;
				j += 1 + nj;
			}
		}
		if (!drop) {
			if (!gx_grow(g, 2 + 6 * n)) return false;
			uint32_t *o = g->buf + g->len;
			*o++ = pi;
			*o++ = (uint32_t)n;
			for (size_t q = 0; q < n; q++) {
				gxNode nd = c[q].n;
				gxLength e = gx_add(nd.at, gx_size(*nd.s));
				*o++ = (uint32_t)c[q].id;
				*o++ = nd.at.bytes;
				*o++ = e.bytes;
				*o++ = nd.at.row;
				uint32_t endrow = 0, b = 0;
				if (m->body_of[c[q].id]) {
					endrow = e.row;
					if (m->body) {
						size_t mark = g->kids_len;
						if (!gx_push_children(m, nd.s, nd.at, 0, false, NULL)) return false;
						for (size_t x = mark; x < g->kids_len; x++) {
							if (g->kids[x].field == m->body) {
								b = g->kids[x].at.bytes + 1;
								break;
							}
						}
						g->kids_len = mark;
					}
				}
				*o++ = endrow;
				*o++ = b;
			}
			g->len = o - g->buf;
		}
		i += 1 + n;
	}
	return true;
}

// gx_match_at matches every top-level pattern that starts at node n's type, in pattern order.
static bool gx_match_at(gxM *m, gxNode n) {
	const gxPatterns *ps = m->ps;
	if (n.sym >= ps->nsyms) return true;
	for (uint32_t t = ps->by_sym[n.sym]; t < ps->by_sym[n.sym + 1]; t++) {
		uint32_t pi = ps->tops[t];
		m->g->found_len = 0;
		m->g->caps_len = 0;
		gx_match_node(m, &ps->pats[ps->top_pat[pi]], n, NULL);
		if (m->oom || !gx_emit(m, pi)) return false;
	}
	return true;
}

// gxFrame is one node whose children gx_walk is going through.
typedef struct {
	const gxSubtree *children;
	const uint16_t *aliases;
	uint32_t count, next, structural;
	gxLength at; // where the next child starts, its padding not yet added
} gxFrame;

// gx_walk matches the patterns (gx_match_at with ps, else the query q) at every node of the tree whose type
// (its alias where it has one) is flagged in roots, in document order, as a tree cursor walk over the
// visible nodes would: the children of hidden nodes stand in their place. It reads the subtrees directly,
// which visits each node for a few loads and adds. It returns 0, or 2 when out of memory.
static int gx_walk(gx *g, const TSTree *t, const TSLanguage *lang, const TSQuery *q, const gxPatterns *ps,
		const uint8_t *body_of, uint16_t body, const uint8_t *roots, uint32_t nroots) {
	gxM m = {g, (const gxLanguage *)lang, ps, body_of, body, false};
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
			if (ps) {
				if (!gx_match_at(&m, gx_node(m.gl, node, at, alias, 0))) {
					rc = 2;
					break;
				}
			} else {
				TSNode nd = {{at.bytes, at.row, at.column, alias}, node, t};
				ts_query_cursor_exec(g->cursor, q, nd);
				if (!gx_collect(g, body_of, body)) {
					rc = 2;
					break;
				}
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
// tree (gx_walk, or a tree cursor when the layout check fails) and matches only at those nodes, each match
// starting at the node itself: the same matches as one run over the whole tree, without the query cursor's
// bookkeeping at every node. With ps (the query's patterns compiled for gx_match_at) and the layout walk,
// the patterns are matched there without the query cursor.
// It returns 0, 1 when there is no tree (cancelled), 2 when out of memory, 3 for a grammar the library
// cannot load.
static int gx_run(gx *g, const TSLanguage *lang, const TSQuery *q, const gxPatterns *ps, const char *src, uint32_t n,
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
		rc = gx_walk(g, t, lang, q, g->query_match ? NULL : ps, body_of, body, roots, nroots);
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

#endif
