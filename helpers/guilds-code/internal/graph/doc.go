// Package graph builds and queries the symbol graph behind code_map, code_find, code_outline and code_callers
// (whose handlers are graphtools).
//
// Extraction (package extract, tree-sitter through cgo) fills each file's definitions, call sites,
// imports and typed locals.
// Call sites are resolved when a query asks (resolve.go): imports, receivers, qualified names and
// same-file or same-package scope first; several candidates left are labelled matched by name.
//
// The graph of repos/<name> lives in .cache/graft/<name>/: graph.bin (a contiguous file table and
// a stored hash index from symbol name to definitions), replaced atomically under a lock, and the
// blocks file it names (per-file blocks of symbols and of call sites, the latter behind a 512-bit
// filter of their names), which is only ever appended to. Both are memory-mapped, so a query decodes
// only the files it touches. Before every query a stat walk re-parses only files whose size or
// mtime moved and whose content hash changed (one getdents and one fstatat per file, nothing
// written when nothing changed). After a change the changed files' blocks are appended, the name
// index is carried over, and only graph.bin is written again; a fresh blocks file replaces one that
// is mostly dead blocks.
//
// Parsing needs tree-sitter (cgo). guilds-code is built without cgo and starts the companion
// guilds-code-parse (worker.go) only when files need parsing; builds that link package extract
// (NewExtractor set) parse in process. The worker writes its records in batches, so guilds-code wakes
// once a batch; each parser names the file it is on in a slots file shared with guilds-code, which
// pins a crash on that file.
package graph
