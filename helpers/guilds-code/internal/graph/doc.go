// Package graph builds and queries the symbol graph behind code_map, code_find, code_outline and code_callers.
//
// Each language has one tree-sitter query (queries/<lang>.scm) whose captures name definitions
// (@def.<kind> with @name), call sites (@call, @call.name, @call.recv), imports and typed locals.
// Call sites are resolved when a query asks (resolve.go): imports, receivers, qualified names and
// same-file or same-package scope first; several candidates left are labelled matched by name.
//
// The graph of repos/<name> lives in .cache/graft/<name>/graph.bin, replaced atomically under a
// lock. Before every query a stat walk re-parses only files whose size or mtime moved and whose
// content hash changed (one getdents and one fstatat per file, nothing written when nothing
// changed). The file is memory-mapped: a contiguous file table, a stored hash index from symbol
// name to definitions, and per-file blocks of symbols and of call sites (the latter behind a
// 512-bit filter of their names), so a query decodes only the files it touches. After a change the
// untouched blocks are copied from the old mapping and the name index is carried over, not rebuilt.
package graph
