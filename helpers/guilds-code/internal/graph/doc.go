// Package graph is the symbol graph behind code_map, code_find, code_outline and code_callers (whose
// handlers are graphtools): the model of a repository's parsed files (symbols, call sites, imports,
// typed locals), the encoding of each file's blocks, and call resolution over them.
//
// Extraction (package extract, tree-sitter through cgo) fills each file's definitions, call sites,
// imports and typed locals; package worker runs it, in process or through guilds-code-parse; package
// store keeps the graph on disk and brings it up to date. A file read from the store or a worker
// holds its symbols and call sites encoded (Blocks) and decodes them when a query first asks.
// Call sites are resolved when a query asks (resolve.go): imports, receivers, qualified names and
// same-file or same-package scope first; several candidates left are labelled matched by name.
package graph
