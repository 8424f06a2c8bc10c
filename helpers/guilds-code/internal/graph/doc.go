// Package graph is the symbol graph behind code_map, code_find, code_outline and code_callers (whose
// handlers are graphtools): the model of a repository's parsed files (symbols, call sites, imports,
// typed locals), the encoding of each file's blocks, and call resolution over them.
//
// Extraction (package extract, tree-sitter through cgo) fills each file's definitions, call sites,
// imports and typed locals; package worker runs it, in process or through guilds-code-parse; package
// store keeps the graph on disk and brings it up to date. A file read from the store or a worker
// holds its symbols and call sites encoded (Blocks) and decodes them when a query first asks.
// Call sites are resolved when a query asks (resolve.go), and Resolve says how (How):
//   - Typed: by what the syntax gives: the file's imports (nested go.mod files, aliases, dot
//     imports; Python and JS/TS module imports), the same file's, package's or class's scope, and
//     for Go the receiver's type from parameters, composite literals, new(T), conversions, type
//     assertions, fields of fields and the declared results of calls. A receiver typed by something
//     outside the repository calls nothing in it.
//   - ViaInterface: a Go call on a value of interface type goes to the interface's method and to the
//     methods of the types that have all of its methods, seen from the calling package.
//   - ByName: no typed candidate; the methods of that name (the file's own package's first, then
//     imported ones', then all), each edge labelled with how many there were. Only typed, interface
//     and single by-name edges count as references (CountRefs).
package graph
