//go:build !cgo

package graph

// grammar is empty without cgo: this build has no tree-sitter and parses through the companion process.
type grammar struct{}
