package search

import (
	"encoding/json"
	"fmt"
	"strings"
)

// sgMatch is one structural match, reduced to what code_match shows.
type sgMatch struct {
	File string
	Line int    // 1-based line of the match's start
	Text string // the first line of the match, whole
}

type sgData struct {
	File  *string `json:"file"`
	Lines string  `json:"lines"`
	Range *struct {
		Start struct {
			Line int `json:"line"`
		} `json:"start"`
	} `json:"range"`
}

// parseSGMatch decodes one line of the syntax engine's JSON stream.
func parseSGMatch(line []byte) (sgMatch, error) {
	var d sgData
	if err := json.Unmarshal(line, &d); err != nil {
		return sgMatch{}, fmt.Errorf("syntax search output line %q: %w", shortQuote(line), err)
	}
	if d.File == nil || *d.File == "" || d.Range == nil || d.Range.Start.Line < 0 {
		return sgMatch{}, fmt.Errorf("syntax search output line %q has no file or range", shortQuote(line))
	}
	first, _, _ := strings.Cut(d.Lines, "\n")
	return sgMatch{File: *d.File, Line: d.Range.Start.Line + 1, Text: strings.TrimSuffix(first, "\r")}, nil
}

// patternRoot reads the engine's debug print of a parsed pattern ("Debug Pattern:" then one
// node a line, indented two spaces a level) and returns the root node's kind and whether any
// node failed to parse.
func patternRoot(debug string) (root string, broken bool) {
	for _, l := range strings.Split(debug, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "Debug ") || strings.HasPrefix(t, "Warning:") ||
			strings.HasPrefix(t, "Help:") || strings.HasPrefix(t, "See also:") {
			continue
		}
		kind, _, _ := strings.Cut(t, " ")
		if root == "" {
			root = kind
		}
		if kind == "ERROR" || strings.HasPrefix(kind, "ERROR") || kind == "MISSING" {
			broken = true
		}
	}
	return root, broken
}

// syntaxError turns the syntax engine's standard error into the tool's words; ok is false when
// it does not report a pattern that fails to parse.
func syntaxError(stderr string, lang language, known bool) (string, bool) {
	if !strings.Contains(stderr, "Cannot parse query") && !strings.Contains(stderr, "contains an ERROR node") &&
		!strings.Contains(stderr, "Multiple AST nodes") {
		return "", false
	}
	return patternHelp(lang, known), true
}

// patternHelp says that a pattern does not parse and shows a form that does.
func patternHelp(lang language, known bool) string {
	if !known {
		return "pattern does not parse as code: write one complete expression or statement of the language " +
			"with $NAME for one node and $$$NAME for any number, e.g. console.log($$$ARGS); pass lang to pick the language"
	}
	msg := fmt.Sprintf("pattern does not parse as %s code: write one complete %s expression or statement "+
		"with $NAME for one node and $$$NAME for any number, e.g. %s", lang.title, lang.title, lang.example)
	if lang.name == "go" {
		msg += " or if err != nil { $$$BODY }; a call on a package or value such as fmt.Println($$$ARGS) is read as a call"
	}
	return msg
}
