package graph

import (
	"context"
	"os"
	"path/filepath"
)

// Extractor parses one file's source and fills its symbols, call sites, imports and package; it is
// not safe for concurrent use.
type Extractor interface {
	Extract(ctx context.Context, l *Lang, src []byte, f *File) error
	Close()
}

// NewExtractor makes an Extractor with tree-sitter in this process. Package extract sets it, and it is
// linked only into builds with cgo; nil elsewhere, where guilds-code-parse parses the files.
var NewExtractor func() Extractor

// useWorker makes a build that links extract parse through guilds-code-parse as guilds-code does
// (the tests of the worker path set it).
var useWorker = false

// parseAll brings the files in todo into the graph. A file whose content hash is the one prev[i] holds
// (only its mtime moved) keeps its parse without starting a parser; the rest are parsed in this
// process when it has tree-sitter (NewExtractor), else by guilds-code-parse. It returns the files
// parsed, how many were left for lack of time, and the files the parser crashed on.
func parseAll(ctx context.Context, root string, todo []seen, prev []*File) ([]*File, int, []Failure, error) {
	if len(todo) == 0 {
		return nil, 0, nil, nil
	}
	var kept []*File
	need := todo[:0:0]
	for i, s := range todo {
		var old *File
		if i < len(prev) {
			old = prev[i]
		}
		if old == nil || old.Lang != s.lang.Name {
			need = append(need, s)
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.rel)))
		if err != nil {
			// Gone or unreadable since the walk: leave it out; the next refresh sees it again.
			kept = append(kept, &File{Path: s.rel, Lang: s.lang.Name, Size: -1})
			continue
		}
		if hashBytes(src) == old.Hash {
			c := *old
			c.Size, c.Mtime = int64(len(src)), s.mtime
			kept = append(kept, &c)
			continue
		}
		need = append(need, s)
	}
	if len(need) == 0 {
		return kept, 0, nil, nil
	}
	var out []*File
	var failed []Failure
	if NewExtractor != nil && !useWorker {
		out = parseInProcess(ctx, root, need)
	} else {
		var err error
		if out, failed, err = parseWithWorker(ctx, root, need); err != nil {
			return nil, 0, nil, err
		}
	}
	missing := 0
	for _, f := range out {
		if f == nil {
			missing++
			continue
		}
		kept = append(kept, f)
	}
	for _, fl := range failed {
		for _, s := range need {
			if s.rel == fl.Path {
				kept = append(kept, &File{Path: s.rel, Lang: s.lang.Name, Size: s.size, Mtime: s.mtime, Crash: fl.Reason})
				break
			}
		}
	}
	return kept, missing - len(failed), failed, nil
}
