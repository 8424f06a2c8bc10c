// Package extract finds a source file's definitions, call sites, imports and typed locals with
// tree-sitter, for the graph; only builds with cgo have it, and package worker parses with it there.
//
// Each language has one tree-sitter query (queries/<lang>.scm) whose captures name definitions
// (@def.<kind> with @name), call sites (@call, @call.name, @call.recv), imports and typed locals.
// Extraction is one cgo call per file (gx.h): parse, find the nodes the patterns start at by reading
// the tree's subtrees, and match the patterns there with a matcher compiled from the query (match.go)
// that gives tree-sitter's query cursor's matches for the query language the files use; the query
// cursor stands in for a query or a tree layout the matcher does not know. Built without cgo the
// package is empty, and the graph parses through guilds-code-parse.
package extract
