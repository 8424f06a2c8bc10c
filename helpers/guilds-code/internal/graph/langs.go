package graph

import (
	"path/filepath"
	"strings"
)

// Lang is one language the graph parses: its name, extensions and whether its query yields call edges.
// Its grammar and compiled query live in package extract, linked only where cgo is.
type Lang struct {
	Name  string
	Exts  []string
	Calls bool // the query captures call sites
}

// langs lists every language in the graph; the order is the one answers use.
var langs = []*Lang{
	{Name: "go", Exts: []string{".go"}, Calls: true},
	{Name: "python", Exts: []string{".py", ".pyi"}, Calls: true},
	{Name: "javascript", Exts: []string{".js", ".mjs", ".cjs", ".jsx"}, Calls: true},
	{Name: "typescript", Exts: []string{".ts", ".mts", ".cts"}, Calls: true},
	{Name: "tsx", Exts: []string{".tsx"}, Calls: true},
	{Name: "rust", Exts: []string{".rs"}, Calls: true},
	{Name: "java", Exts: []string{".java"}, Calls: true},
	{Name: "c", Exts: []string{".c", ".h"}, Calls: true},
	{Name: "cpp", Exts: []string{".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"}, Calls: true},
	{Name: "ruby", Exts: []string{".rb"}, Calls: true},
	{Name: "csharp", Exts: []string{".cs"}, Calls: true},
	{Name: "php", Exts: []string{".php"}, Calls: true},
	{Name: "kotlin", Exts: []string{".kt", ".kts"}, Calls: true},
	{Name: "bash", Exts: []string{".sh", ".bash"}, Calls: true},
}

var byExt = func() map[string]*Lang {
	m := map[string]*Lang{}
	for _, l := range langs {
		for _, e := range l.Exts {
			m[e] = l
		}
	}
	return m
}()

// LangFor returns the language of a file by its extension, or nil when the graph does not parse it.
func LangFor(path string) *Lang { return byExt[strings.ToLower(filepath.Ext(path))] }

// LangNamed returns the language with that name, or nil.
func LangNamed(name string) *Lang {
	for _, l := range langs {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// LangNames lists the languages the graph parses.
func LangNames() []string {
	out := make([]string, len(langs))
	for i, l := range langs {
		out[i] = l.Name
	}
	return out
}
