package graphtools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/shape"
)

// Hit is one text search match: an absolute path, its line and the line's text.
type Hit struct {
	Path string
	Line int
	Text string
}

// Group limits of code_search mode symbols.
const (
	MaxGroups     = 20
	MaxGroupLines = 5
)

// GroupHits answers code_search mode symbols: it groups text hits under their enclosing function or
// class, with that symbol's span and how many places reference it. scope is the searched path ("" for
// the working directory); maxGroups (at most MaxGroups) caps the groups. It returns the text and the
// meta fields repository and hits.
func GroupHits(ctx context.Context, c *runs.Call, scope string, hits []Hit, maxGroups int) (string, map[string]any, error) {
	if maxGroups < 1 || maxGroups > MaxGroups {
		maxGroups = MaxGroups
	}
	r, err := repoFor(c, scope)
	if err != nil {
		return "", nil, err
	}
	if err := r.open(ctx, c); err != nil {
		return "", meta(r, 0), err
	}
	r.g.Counted(ctx)
	type group struct {
		key   string
		head  string
		lines []string
		more  int
	}
	var groups []*group
	byKey := map[string]*group{}
	outside := 0
	for _, h := range hits {
		rel, ok := relSlash(r.root, h.Path)
		if !ok {
			if real, err := filepath.EvalSymlinks(h.Path); err == nil {
				rel, ok = relSlash(r.root, real)
			}
		}
		if !ok {
			outside++
			continue
		}
		shown := r.rel(c, rel)
		key, head := rel+"#", fmt.Sprintf("%s (top level)", shown)
		if f := r.g.File(rel); f != nil {
			if s := innermost(f, uint32(h.Line)); s >= 0 {
				sym := &f.Syms()[s]
				key = fmt.Sprintf("%s#%d", rel, s)
				head = fmt.Sprintf("%s:%d-%d  %s  (%d refs)", shown, sym.Start, sym.End, sym.Sig, sym.Refs)
			}
		} else if graph.LangFor(rel) == nil {
			head = fmt.Sprintf("%s (not in the graph)", shown)
		}
		g := byKey[key]
		if g == nil {
			g = &group{key: key, head: head}
			byKey[key] = g
			groups = append(groups, g)
		}
		if len(g.lines) < MaxGroupLines {
			g.lines = append(g.lines, fmt.Sprintf("  %d: %s", h.Line, shape.ClipLine(strings.TrimRight(h.Text, "\r\n"), 300)))
		} else {
			g.more++
		}
	}
	var lines []string
	for i, g := range groups {
		if i == maxGroups {
			lines = append(lines, fmt.Sprintf("… %d more groups left out; narrow path or glob", len(groups)-maxGroups))
			break
		}
		lines = append(lines, g.head)
		lines = append(lines, g.lines...)
		if g.more > 0 {
			lines = append(lines, fmt.Sprintf("  … %d more hits here", g.more))
		}
	}
	header := r.missingNote(c)
	if outside > 0 {
		header += fmt.Sprintf("note: %d hits outside repository %s are left out\n", outside, r.name)
	}
	if len(groups) == 0 {
		lines = append(lines, "no matches")
	}
	return fit(c, header, lines), meta(r, len(hits)-outside), nil
}

// innermost is the deepest function, method or type whose span holds line, or -1.
func innermost(f *graph.File, line uint32) int32 {
	best := int32(-1)
	for i := range f.Syms() {
		s := &f.Syms()[i]
		if s.Start <= line && line <= s.End && (s.Kind.Callable() || s.Kind.TypeLike()) {
			best = int32(i) // later symbols start later, so the last holder is the innermost
		}
	}
	return best
}
