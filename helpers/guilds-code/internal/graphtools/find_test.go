package graphtools

import (
	"strings"
	"testing"
)

// wordCases are names, paths and doc lines with every kind of word boundary words knows.
var wordCases = []string{"", "parseFile", "ParseFile", "HTTPServer", "newHTTPRequest2", "utf8Valid", "x", "X",
	"snake_case_name", "net/http/request.go", "Go 1.26 adds it", "ÉtéCafé", "straße", "ĲssĳX", "a1B2c3", "ALLCAPS",
	"  spaced  out ", "K\u212aelvin", "日本語Name", "trailingUpperX", "__init__"}

// TestHasWordMatchesWords: the allocation-free matchers code_find scores with agree with words.
func TestHasWordMatchesWords(t *testing.T) {
	for _, s := range wordCases {
		ws := words(s)
		for _, q := range append(append([]string{}, ws...), "parse", "file", "http", "server", "request", "ss", "name", "init", "kelvin", "é", "") {
			if q == "" {
				continue
			}
			if got, want := hasWord(s, q), containsWord(ws, q); got != want {
				t.Errorf("hasWord(%q, %q) = %v; words gives %v (%q)", s, q, got, want, ws)
			}
			if got, want := containsFold(s, q), strings.Contains(strings.ToLower(s), q); got != want {
				t.Errorf("containsFold(%q, %q) = %v; want %v", s, q, got, want)
			}
		}
	}
}

// FuzzHasWord checks the same agreement on arbitrary strings.
func FuzzHasWord(f *testing.F) {
	for _, s := range wordCases {
		f.Add(s, "file")
	}
	f.Fuzz(func(t *testing.T, s, q string) {
		for _, w := range words(q) {
			ws := words(s)
			if got, want := hasWord(s, w), containsWord(ws, w); got != want && strings.ToLower(w) == w && !strings.ContainsRune(s+w, '\u212a') {
				t.Fatalf("hasWord(%q, %q) = %v; words gives %v (%q)", s, w, got, want, ws)
			}
			if got, want := containsFold(s, w), strings.Contains(strings.ToLower(s), w); got != want {
				t.Fatalf("containsFold(%q, %q) = %v; want %v", s, w, got, want)
			}
		}
	})
}

// FuzzWords splits arbitrary questions into search words.
func FuzzWords(f *testing.F) {
	f.Add("parseHTTPRequest snake_case")
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range words(s) {
			if w == "" {
				t.Fatal("empty word")
			}
		}
	})
}
