package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
)

// tsModules are the real TypeScript packages code_callers is measured on, as npm ships their sources,
// relative to GUILDS_TS_ORACLE's node_modules.
var tsModules = []string{"immer/src", "rxjs/src", "mobx/src"}

// BenchmarkCallersAccuracyTypeScript compares code_callers (in, depth 1) with the TypeScript language
// service's call hierarchy (typescript-language-server over tsserver) over every function and method of
// each package, as BenchmarkCallersAccuracyPython does with pyright.
func BenchmarkCallersAccuracyTypeScript(b *testing.B) {
	dir := os.Getenv("GUILDS_TS_ORACLE")
	server := filepath.Join(dir, "node_modules", ".bin", "typescript-language-server")
	if _, err := os.Stat(server); dir == "" || err != nil {
		b.Skip("the TypeScript oracle is not installed: in a folder of its own, npm install typescript@5.6.3 typescript-language-server@4.3.3 immer@10.1.1 rxjs@7.8.1 mobx@6.13.5, and set GUILDS_TS_ORACLE to it")
	}
	var all, typed counts
	for _, mod := range tsModules {
		src := filepath.Join(dir, "node_modules", mod)
		if _, err := os.Stat(src); err != nil {
			b.Logf("%s is missing: left out", src)
			continue
		}
		a, t := tsAccuracy(b, server, filepath.Join(dir, "node_modules", "typescript", "lib"), mod, src)
		all.add(a)
		typed.add(t)
	}
	if all.functions == 0 {
		b.Skip("no module measured")
	}
	b.ReportMetric(all.precision(), "precision")
	b.ReportMetric(all.recall(), "recall")
	b.ReportMetric(typed.precision(), "typed_precision")
	b.ReportMetric(typed.recall(), "typed_recall")
	b.ReportMetric(float64(all.functions), "functions")
}

// tsAccuracy measures one package copied from src: every listed site, and the typed ones alone.
func tsAccuracy(b *testing.B, server, tsLib, mod, src string) (counts, counts) {
	name := strings.SplitN(mod, "/", 2)[0]
	root := filepath.Join(b.TempDir(), "repo")
	graphtest.CopyTree(b, src, filepath.Join(root, name))
	// One configured project holding every file: without it tsserver infers a project per opened file,
	// and a function's callers in files not yet opened go uncounted.
	tsconfig := `{"compilerOptions": {"target": "es2020", "module": "esnext", "moduleResolution": "node", "lib": ["es2020", "dom"], "noEmit": true, "skipLibCheck": true}, "include": ["**/*.ts", "**/*.tsx"]}`
	if err := os.WriteFile(filepath.Join(root, "tsconfig.json"), []byte(tsconfig), 0o644); err != nil {
		b.Fatal(err)
	}
	g, err := Open(context.Background(), root, filepath.Join(b.TempDir(), "cache"))
	if err != nil {
		b.Fatal(err)
	}
	oracleFile, missFile := "", ""
	if dir := os.Getenv("GUILDS_ORACLE_CACHE"); dir != "" {
		oracleFile = filepath.Join(dir, "tsserver-project-"+name+".json")
		missFile = filepath.Join(dir, "misses-tsserver-"+name+".txt")
	}
	oracle := loadOracle(oracleFile)
	var lsp *lspClient
	uri := func(rel string) string { return "file://" + filepath.Join(root, rel) }
	open := func() *lspClient {
		if lsp != nil {
			return lsp
		}
		lsp = startLSP(b, server, "--stdio")
		if _, err := lsp.call("initialize", map[string]any{"processId": os.Getpid(), "rootUri": "file://" + root,
			"capabilities":          map[string]any{},
			"initializationOptions": map[string]any{"tsserver": map[string]any{"path": filepath.Join(tsLib, "tsserver.js")}},
			"workspaceFolders":      []any{map[string]any{"uri": "file://" + root, "name": "repo"}}}); err != nil {
			b.Fatal(err)
		}
		lsp.send(map[string]any{"jsonrpc": "2.0", "method": "initialized", "params": map[string]any{}})
		return lsp
	}
	var a, t counts
	var misses []string
	unplaced := 0
	opened := map[string]bool{}
	for fi, f := range g.Files {
		if f.Lang != "typescript" && f.Lang != "tsx" {
			continue
		}
		text, _ := os.ReadFile(filepath.Join(root, f.Path))
		lines := strings.Split(string(text), "\n")
		for si, s := range f.Syms() {
			if !s.Kind.Callable() || int(s.Start) > len(lines) {
				continue
			}
			col := tsNameColumn(lines[s.Start-1], s.Name)
			if col < 0 {
				unplaced++
				continue
			}
			pos := fmt.Sprintf("%s:%d:%d", f.Path, s.Start, col)
			theirs, ok := oracle[pos]
			if !ok {
				c := open()
				if !opened[f.Path] {
					opened[f.Path] = true
					c.send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": map[string]any{
						"textDocument": map[string]any{"uri": uri(f.Path), "languageId": "typescript", "version": 1, "text": string(text)}}})
				}
				theirs, err = pyrightCallers(c, uri(f.Path), root, int(s.Start)-1, col)
				if err != nil {
					unplaced++
					continue
				}
				oracle[pos] = theirs
			}
			ours, typedSites, how := graphCallers(g, graph.SymID{F: int32(fi), S: int32(si)})
			misses = append(misses, disagreements(ours, theirs, how, s.Qualified())...)
			tallySites(&a, ours, theirs)
			tallySites(&t, typedSites, theirs)
		}
	}
	saveOracle(b, oracleFile, oracle)
	writeMisses(missFile, misses)
	if unplaced > 0 {
		b.Logf("%s: %d functions the language service could not place, left out", mod, unplaced)
	}
	b.Logf("code_callers vs the TypeScript language service on %s, %d functions: every listed site precision %.3f recall %.3f (%d agreed, %d extra, %d missed); typed only precision %.3f recall %.3f",
		mod, a.functions, a.precision(), a.recall(), a.tp, a.fp, a.fn, t.precision(), t.recall())
	return a, t
}

// tsNameColumn is the 0-based column of a declared name on its line: the name as a whole word, else -1.
func tsNameColumn(line, name string) int {
	for from := 0; ; {
		i := strings.Index(line[from:], name)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(name)
		before := i == 0 || !isWordByte(line[i-1])
		after := end == len(line) || !isWordByte(line[end])
		if before && after {
			return i
		}
		from = end
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
