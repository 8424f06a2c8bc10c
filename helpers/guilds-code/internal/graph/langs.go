package graph

import (
	"embed"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/bash"
	"github.com/smacker/go-tree-sitter/c"
	"github.com/smacker/go-tree-sitter/cpp"
	"github.com/smacker/go-tree-sitter/csharp"
	"github.com/smacker/go-tree-sitter/golang"
	"github.com/smacker/go-tree-sitter/java"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/kotlin"
	"github.com/smacker/go-tree-sitter/php"
	"github.com/smacker/go-tree-sitter/python"
	"github.com/smacker/go-tree-sitter/ruby"
	"github.com/smacker/go-tree-sitter/rust"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"
)

//go:embed queries/*.scm
var queryFS embed.FS

// Lang is one language the graph parses: its grammar, its query and whether it yields call edges.
type Lang struct {
	Name  string
	Exts  []string
	get   func() *sitter.Language
	Calls bool // the query captures call sites

	once  sync.Once
	lang  *sitter.Language
	query *sitter.Query
	names []string // capture names by capture id
	err   error
}

// langs lists every language in the graph; the order is the one answers use.
var langs = []*Lang{
	{Name: "go", Exts: []string{".go"}, get: golang.GetLanguage, Calls: true},
	{Name: "python", Exts: []string{".py", ".pyi"}, get: python.GetLanguage, Calls: true},
	{Name: "javascript", Exts: []string{".js", ".mjs", ".cjs", ".jsx"}, get: javascript.GetLanguage, Calls: true},
	{Name: "typescript", Exts: []string{".ts", ".mts", ".cts"}, get: typescript.GetLanguage, Calls: true},
	{Name: "tsx", Exts: []string{".tsx"}, get: tsx.GetLanguage, Calls: true},
	{Name: "rust", Exts: []string{".rs"}, get: rust.GetLanguage, Calls: true},
	{Name: "java", Exts: []string{".java"}, get: java.GetLanguage, Calls: true},
	{Name: "c", Exts: []string{".c", ".h"}, get: c.GetLanguage, Calls: true},
	{Name: "cpp", Exts: []string{".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"}, get: cpp.GetLanguage, Calls: true},
	{Name: "ruby", Exts: []string{".rb"}, get: ruby.GetLanguage, Calls: true},
	{Name: "csharp", Exts: []string{".cs"}, get: csharp.GetLanguage, Calls: true},
	{Name: "php", Exts: []string{".php"}, get: php.GetLanguage, Calls: true},
	{Name: "kotlin", Exts: []string{".kt", ".kts"}, get: kotlin.GetLanguage, Calls: true},
	{Name: "bash", Exts: []string{".sh", ".bash"}, get: bash.GetLanguage, Calls: true},
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

// load compiles the language's grammar handle and query once per process.
func (l *Lang) load() (*sitter.Language, *sitter.Query, error) {
	l.once.Do(func() {
		l.lang = l.get()
		src, err := queryFS.ReadFile("queries/" + l.Name + ".scm")
		if err != nil {
			l.err = fmt.Errorf("query for %s: %w", l.Name, err)
			return
		}
		q, err := sitter.NewQuery(src, l.lang)
		if err != nil {
			l.err = fmt.Errorf("compile query for %s: %w", l.Name, err)
			return
		}
		l.query = q
		l.names = make([]string, q.CaptureCount())
		for i := range l.names {
			l.names[i] = q.CaptureNameForId(uint32(i))
		}
	})
	return l.lang, l.query, l.err
}
