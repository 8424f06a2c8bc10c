//go:build cgo

package graph

import (
	"embed"
	"fmt"

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

// grammar is a language's tree-sitter grammar and compiled query, loaded once per process.
type grammar struct {
	lang  *sitter.Language
	query *sitter.Query
}

// grammars maps each language name in langs to its tree-sitter grammar.
var grammars = map[string]func() *sitter.Language{
	"go":         golang.GetLanguage,
	"python":     python.GetLanguage,
	"javascript": javascript.GetLanguage,
	"typescript": typescript.GetLanguage,
	"tsx":        tsx.GetLanguage,
	"rust":       rust.GetLanguage,
	"java":       java.GetLanguage,
	"c":          c.GetLanguage,
	"cpp":        cpp.GetLanguage,
	"ruby":       ruby.GetLanguage,
	"csharp":     csharp.GetLanguage,
	"php":        php.GetLanguage,
	"kotlin":     kotlin.GetLanguage,
	"bash":       bash.GetLanguage,
}

// load compiles the language's grammar handle and query once per process.
func (l *Lang) load() (*sitter.Language, *sitter.Query, error) {
	l.once.Do(func() {
		get := grammars[l.Name]
		if get == nil {
			l.err = fmt.Errorf("no tree-sitter grammar for %s", l.Name)
			return
		}
		l.gram.lang = get()
		src, err := queryFS.ReadFile("queries/" + l.Name + ".scm")
		if err != nil {
			l.err = fmt.Errorf("query for %s: %w", l.Name, err)
			return
		}
		q, err := sitter.NewQuery(src, l.gram.lang)
		if err != nil {
			l.err = fmt.Errorf("compile query for %s: %w", l.Name, err)
			return
		}
		l.gram.query = q
		l.names = make([]string, q.CaptureCount())
		for i := range l.names {
			l.names[i] = q.CaptureNameForId(uint32(i))
		}
	})
	return l.gram.lang, l.gram.query, l.err
}
