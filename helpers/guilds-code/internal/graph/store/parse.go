package store

import (
	"context"
	"os"
	"path/filepath"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/worker"
)

// parseAll brings the files in todo into the graph. A file whose content hash is the one prev[i] holds
// (only its mtime moved) keeps its parse without starting a parser; worker.Parse parses the rest. It returns the files
// parsed, how many were left for lack of time, and the files the parser crashed on.
func parseAll(ctx context.Context, root string, todo []worker.Job, prev []*graph.File) ([]*graph.File, int, []worker.Failure, error) {
	if len(todo) == 0 {
		return nil, 0, nil, nil
	}
	var kept []*graph.File
	need := todo[:0:0]
	for i, s := range todo {
		var old *graph.File
		if i < len(prev) {
			old = prev[i]
		}
		if old == nil || old.Lang != s.Lang.Name {
			need = append(need, s)
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.Rel)))
		if err != nil {
			// Gone or unreadable since the walk: leave it out; the next refresh sees it again.
			kept = append(kept, &graph.File{Path: s.Rel, Lang: s.Lang.Name, Size: -1})
			continue
		}
		if graph.HashContent(src) == old.Hash {
			c := *old
			c.Size, c.Mtime = int64(len(src)), s.Mtime
			kept = append(kept, &c)
			continue
		}
		need = append(need, s)
	}
	if len(need) == 0 {
		return kept, 0, nil, nil
	}
	out, failed, err := worker.Parse(ctx, root, need)
	if err != nil {
		return nil, 0, nil, err
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
			if s.Rel == fl.Path {
				kept = append(kept, &graph.File{Path: s.Rel, Lang: s.Lang.Name, Size: s.Size, Mtime: s.Mtime, Crash: fl.Reason})
				break
			}
		}
	}
	return kept, missing - len(failed), failed, nil
}
