package search

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graphtools"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
)

// symbolsCap is symbols mode's cap: at most 20 groups.
const symbolsCap = 20

// maxSymbolHits bounds the matching lines symbols mode reads before grouping them.
const maxSymbolHits = 2000

// symbols answers code_search mode symbols: the engine finds the matching lines, and the symbol
// graph groups them under their enclosing function or class (graphtools.GroupHits).
func symbols(ctx context.Context, c *runs.Call, a TextArgs, limit int) envelope.Reply {
	pl, err := resolvePlace(c, a.Path)
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	bin, err := textEngine.locate()
	if err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, DefaultBudget)
	defer cancel()
	t := &textSearch{a: a, mode: "symbols", pl: pl, bin: bin, limit: limit, budget: DefaultBudget}
	if err := t.count(tctx); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	var hits []graphtools.Hit
	if len(t.counts) > 0 {
		glob, _ := parseGlob(a.Glob)
		args := append(t.args("--json", "--max-count", strconv.Itoa(maxSymbolHits)), glob.engineArgs...)
		args = append(args, "--regexp", a.Pattern, "--")
		// The files with the most matching lines come first, ties by path, and only as many are
		// read as can fill maxSymbolHits, so the same search always groups the same hits.
		rank := t.rankFiles()
		for _, fc := range rank {
			args = append(args, fc.raw)
		}
		// The engine names files as they were given, relative to the search folder or absolute.
		abs := func(p string) string {
			if filepath.IsAbs(p) {
				return p
			}
			return filepath.Join(pl.dir, p)
		}
		var cur string
		o, err := collect(tctx, pl.dir, bin, args, func(line []byte) bool {
			m, err := parseRGMessage(line)
			if err != nil {
				return true
			}
			switch m.Type {
			case "begin":
				cur = abs(m.Path)
			case "match":
				hits = append(hits, graphtools.Hit{Path: cur, Line: m.Line, Text: showLine(m.Text)})
			}
			return true
		})
		if err != nil {
			return envelope.Errorf(nil, "%v", err)
		}
		t.timedOut = t.timedOut || o.timedOut
		order := make(map[string]int, len(rank))
		for i, fc := range rank {
			order[abs(fc.raw)] = i
		}
		// The engine searches files in parallel and reports them in the order they finish.
		slices.SortStableFunc(hits, func(x, y graphtools.Hit) int {
			return cmp.Or(cmp.Compare(order[x.Path], order[y.Path]), cmp.Compare(x.Line, y.Line))
		})
		if len(hits) > maxSymbolHits {
			hits = hits[:maxSymbolHits]
		}
	}
	text, meta, err := graphtools.GroupHits(ctx, c, a.Path, hits, limit)
	if err != nil {
		return envelope.Errorf(meta, "mode symbols groups hits with the symbol graph of a repository under repos/: %v; modes files and content search any folder", err)
	}
	meta["matches"] = t.matches
	meta["files"] = len(t.counts)
	if len(hits) < t.matches {
		text += fmt.Sprintf("grouped the first %d of %s\n", len(hits), plural(t.matches, "match", "matches"))
	}
	if t.timedOut {
		text += fmt.Sprintf("the text search stopped after %s; results are partial: narrow path or glob\n", DefaultBudget)
	}
	return envelope.Reply{Text: text, Meta: meta}
}

// rankFiles orders the matching files by matching lines, most first, ties by path, and keeps the
// first ones whose lines fill maxSymbolHits.
func (t *textSearch) rankFiles() []fileCount {
	rank := slices.Clone(t.counts)
	slices.SortFunc(rank, func(x, y fileCount) int {
		return cmp.Or(cmp.Compare(y.n, x.n), cmp.Compare(x.raw, y.raw))
	})
	n := 0
	for i, fc := range rank {
		if n >= maxSymbolHits {
			return rank[:i]
		}
		n += fc.n
	}
	return rank
}
