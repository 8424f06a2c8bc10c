package store

import (
	"path"
	"strings"
)

// ignoreRule is one .gitignore line.
type ignoreRule struct {
	base     string   // folder of the .gitignore, relative to the repository ("" at the root)
	segs     []string // pattern split on "/"
	anchored bool     // matches from base, not at any depth
	dirOnly  bool
	negate   bool
}

// parseGitignore reads the rules of one .gitignore found in folder base.
func parseGitignore(base, text string) []ignoreRule {
	var rules []ignoreRule
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = strings.TrimRight(line, " ")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{base: base}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if strings.Contains(line, "/") {
			r.anchored = true
			line = strings.TrimLeft(line, "/")
		}
		if line == "" {
			continue
		}
		r.segs = strings.Split(line, "/")
		rules = append(rules, r)
	}
	return rules
}

// ignored reports whether rel (slash path from the repository root) is ignored by rules; the last matching rule wins.
func ignored(rules []ignoreRule, rel string, isDir bool) bool {
	out := false
	for i := range rules {
		r := &rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		p := rel
		if r.base != "" {
			if !strings.HasPrefix(rel, r.base+"/") {
				continue
			}
			p = rel[len(r.base)+1:]
		}
		var hit bool
		if r.anchored {
			hit = matchSegs(r.segs, strings.Split(p, "/"))
		} else {
			hit = matchSeg(r.segs[0], path.Base(p))
		}
		if hit {
			out = !r.negate
		}
	}
	return out
}

// matchSegs matches pattern segments (with "**" for any number of folders) against path segments.
func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegs(rest, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 || !matchSeg(pat[0], segs[0]) {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

func matchSeg(pat, name string) bool {
	ok, err := path.Match(pat, name)
	return err == nil && ok
}
