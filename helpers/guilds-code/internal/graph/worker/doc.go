// Package worker parses source files for the graph store: in this process where the build has
// tree-sitter (cgo, package extract), else through the companion guilds-code-parse, whose protocol
// it owns at both ends (the request and records, the slots file, ServeParse and ParseMain).
//
// guilds-code is built without cgo and starts the worker only when files need parsing. The worker
// writes its records in batches, so guilds-code wakes once a batch; each parser names the file it
// is on in a slots file shared with guilds-code, which pins a crash on that file.
package worker
