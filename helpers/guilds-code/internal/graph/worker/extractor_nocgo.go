//go:build !cgo

package worker

// newExtractor is nil without cgo: there is no tree-sitter in this process, and guilds-code-parse parses.
var newExtractor func() Extractor
