package search

import (
	"fmt"
	"regexp"
	"strings"
)

// globFilter is how a code_search glob narrows the files searched. The engine's own glob flag
// overrides .gitignore, so an including glob becomes a file type (matched on the file name,
// which keeps .gitignore in force), and a glob that names folders is matched here against each
// path relative to the searched folder.
type globFilter struct {
	engineArgs []string       // arguments for the text engine
	path       *regexp.Regexp // matched against the path relative to the searched folder; nil for none
	exclude    bool           // path leaves out what it matches instead of keeping it
}

// keep reports whether a path relative to the searched folder passes the filter.
func (f globFilter) keep(rel string) bool {
	return f.path == nil || f.path.MatchString(rel) != f.exclude
}

// globTypeName is the file type the including glob is registered under.
const globTypeName = "guildsglob"

// parseGlob turns a glob ("*.go", "src/**/*.ts", "!*_test.go", "*.{js,ts}") into its filter.
func parseGlob(glob string) (globFilter, error) {
	if glob == "" {
		return globFilter{}, nil
	}
	if strings.ContainsRune(glob, 0) {
		return globFilter{}, fmt.Errorf("glob must not contain a NUL byte")
	}
	var f globFilter
	body := glob
	if strings.HasPrefix(glob, "!") {
		f.exclude, body = true, glob[1:]
		if body == "" {
			return globFilter{}, fmt.Errorf("glob %q excludes nothing; write !*_test.go to leave files out", glob)
		}
	}
	body = strings.TrimPrefix(body, "/")
	if strings.Contains(body, "/") {
		re, err := globRegexp(body)
		if err != nil {
			return globFilter{}, err
		}
		f.path = re
	}
	name := body[strings.LastIndexByte(body, '/')+1:]
	switch {
	case f.exclude && f.path == nil:
		// An excluding glob only ever takes files away, so the engine's flag is safe.
		f.engineArgs = []string{"--glob", glob}
	case !f.exclude && name != "" && name != "**":
		f.engineArgs = []string{"--type-add", globTypeName + ":" + name, "--type", globTypeName}
	}
	return f, nil
}

// globRegexp compiles a path glob: * and ? stay within a folder, ** crosses folders,
// [...] is a class and {a,b} an alternative.
func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	g := []rune(glob)
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			if i+1 < len(g) && g[i+1] == '*' {
				i++
				if i+1 < len(g) && g[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexRune(string(g[i+1:]), ']')
			if j < 0 {
				return nil, fmt.Errorf("glob %q is not valid: [ has no closing ]", glob)
			}
			class := string(g[i+1:])[:j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += len([]rune(class)) + 1
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("glob %q is not valid: } has no opening {", glob)
			}
			depth--
			b.WriteString(")")
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		case '\\':
			if i+1 < len(g) {
				i++
				b.WriteString(regexp.QuoteMeta(string(g[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("glob %q is not valid: { has no closing }", glob)
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("glob %q is not valid: %v", glob, err)
	}
	return re, nil
}
