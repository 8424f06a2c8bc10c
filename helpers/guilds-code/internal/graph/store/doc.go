// Package store keeps the graph of repos/<name> in .cache/graft/<name>/ and brings it up to date
// before every query (Open).
//
// graph.bin holds a contiguous file table and a stored hash index from symbol name to definitions
// (the graph's graph.Names); it is replaced atomically under a lock, and names the blocks file
// (per-file blocks of symbols and of call sites, the latter behind a 512-bit filter of their
// names), which is only ever appended to. Both are memory-mapped, so a query decodes only the files
// it touches. Before every query a stat walk re-parses (package worker) only files whose size or
// mtime moved and whose content hash changed (one getdents and one fstatat per file, nothing written
// when nothing changed). After a change the changed files' blocks are appended, the name index is
// carried over, and only graph.bin is written again; a fresh blocks file replaces one that is mostly
// dead blocks.
package store
