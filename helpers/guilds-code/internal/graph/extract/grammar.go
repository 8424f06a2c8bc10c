//go:build cgo

package extract

import (
	"embed"
	"fmt"
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

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
)

//go:embed queries/*.scm
var queryFS embed.FS

// sharedQuery names the languages whose query is another's: TSX has TypeScript's shapes.
var sharedQuery = map[string]string{"tsx": "typescript"}

// querySource returns the tree-sitter query of the language named lang.
func querySource(lang string) ([]byte, error) {
	if q, ok := sharedQuery[lang]; ok {
		lang = q
	}
	return queryFS.ReadFile("queries/" + lang + ".scm")
}

// grammar is a language's tree-sitter grammar and compiled query, loaded once per process.
type grammar struct {
	once  sync.Once
	lang  *sitter.Language
	query *sitter.Query
	names []string // capture names by capture id
	err   error
}

// loaded holds each language's grammar, by name, once loaded.
var loaded = func() map[string]*grammar {
	m := map[string]*grammar{}
	for _, name := range graph.LangNames() {
		m[name] = &grammar{}
	}
	return m
}()

// grammars maps each language name in graph.LangNames to its tree-sitter grammar.
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

// load compiles the language's grammar handle and query once per process and returns them with
// the query's capture names.
func load(l *graph.Lang) (*sitter.Language, *sitter.Query, []string, error) {
	gr := loaded[l.Name]
	if gr == nil {
		return nil, nil, nil, fmt.Errorf("no tree-sitter grammar for %s", l.Name)
	}
	gr.once.Do(func() {
		get := grammars[l.Name]
		if get == nil {
			gr.err = fmt.Errorf("no tree-sitter grammar for %s", l.Name)
			return
		}
		gr.lang = get()
		src, err := querySource(l.Name)
		if err != nil {
			gr.err = fmt.Errorf("query for %s: %w", l.Name, err)
			return
		}
		q, err := sitter.NewQuery(src, gr.lang)
		if err != nil {
			gr.err = fmt.Errorf("compile query for %s: %w", l.Name, err)
			return
		}
		gr.query = q
		gr.names = make([]string, q.CaptureCount())
		for i := range gr.names {
			gr.names[i] = q.CaptureNameForId(uint32(i))
		}
	})
	return gr.lang, gr.query, gr.names, gr.err
}
