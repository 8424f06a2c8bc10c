package worker

import (
	"context"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
)

// Extractor parses one file's source and fills its symbols, call sites, imports and package; it is
// not safe for concurrent use.
type Extractor interface {
	Extract(ctx context.Context, l *graph.Lang, src []byte, f *graph.File) error
	Close()
}

// Job is one file to parse: its repository path and language, and its size and mtime as the walk saw them.
type Job struct {
	Rel   string
	Lang  *graph.Lang
	Size  int64
	Mtime int64
}

// InProcess says whether Parse parses in this process: true in builds with tree-sitter (cgo); the
// tests of the worker path clear it.
var InProcess = newExtractor != nil

// Parse parses the files in todo, in this process when InProcess, else through guilds-code-parse, each
// file packed (File.Pack). It returns one file per job, nil for the ones left when ctx ended or the
// parser crashed on, the files it crashed on, and an error when the parser cannot run at all.
func Parse(ctx context.Context, root string, todo []Job) ([]*graph.File, []Failure, error) {
	if InProcess && newExtractor != nil {
		return parseInProcess(ctx, root, todo), nil, nil
	}
	return parseWithWorker(ctx, root, todo)
}
