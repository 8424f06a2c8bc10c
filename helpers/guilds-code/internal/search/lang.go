package search

import (
	"path/filepath"
	"slices"
	"strings"
)

// language is one language the syntax search parses.
type language struct {
	name    string   // the name code_match takes and the engine is given
	title   string   // how messages name it
	aliases []string // other names accepted for lang
	exts    []string // file extensions (without the dot) read as this language
	example string   // a pattern that parses in this language
}

// languages the syntax search parses, sorted by name.
var languages = []language{
	{"bash", "Bash", []string{"sh", "shell"}, []string{"bash", "sh", "zsh", "ksh"}, "echo $$$ARGS"},
	{"c", "C", nil, []string{"c", "h"}, "printf($$$ARGS);"},
	{"cpp", "C++", []string{"c++", "cc", "cxx"}, []string{"cpp", "cc", "cxx", "c++", "hpp", "hh", "hxx", "cu", "ino"}, "printf($$$ARGS);"},
	{"csharp", "C#", []string{"cs", "c#"}, []string{"cs"}, "Console.WriteLine($$$ARGS)"},
	{"css", "CSS", nil, []string{"css", "scss"}, "a { color: $V; }"},
	{"elixir", "Elixir", []string{"ex"}, []string{"ex", "exs"}, "IO.puts($$$ARGS)"},
	{"go", "Go", []string{"golang"}, []string{"go"}, "return fmt.Errorf($$$ARGS)"},
	{"haskell", "Haskell", []string{"hs"}, []string{"hs"}, "putStrLn $X"},
	{"hcl", "HCL", []string{"terraform", "tf"}, []string{"hcl", "tf", "tfvars"}, "$KEY = $VALUE"},
	{"html", "HTML", nil, []string{"html", "htm", "xhtml"}, "<a href=$H>$$$C</a>"},
	{"java", "Java", nil, []string{"java"}, "System.out.println($$$ARGS)"},
	{"javascript", "JavaScript", []string{"js", "jsx"}, []string{"js", "jsx", "mjs", "cjs"}, "console.log($$$ARGS)"},
	{"json", "JSON", nil, []string{"json"}, "[$$$ITEMS]"},
	{"kotlin", "Kotlin", []string{"kt"}, []string{"kt", "kts", "ktm"}, "println($$$ARGS)"},
	{"lua", "Lua", nil, []string{"lua"}, "print($$$ARGS)"},
	{"nix", "Nix", nil, []string{"nix"}, "import $P"},
	{"php", "PHP", nil, []string{"php"}, "echo $X;"},
	{"python", "Python", []string{"py", "python3"}, []string{"py", "pyi", "py3", "bzl"}, "print($$$ARGS)"},
	{"ruby", "Ruby", []string{"rb"}, []string{"rb", "rbw", "gemspec"}, "puts($$$ARGS)"},
	{"rust", "Rust", []string{"rs"}, []string{"rs"}, "$X.unwrap()"},
	{"scala", "Scala", nil, []string{"scala", "sc", "sbt"}, "println($$$ARGS)"},
	{"solidity", "Solidity", []string{"sol"}, []string{"sol"}, "contract $C { $$$BODY }"},
	{"swift", "Swift", nil, []string{"swift"}, "print($$$ARGS)"},
	{"tsx", "TSX", nil, []string{"tsx"}, "console.log($$$ARGS)"},
	{"typescript", "TypeScript", []string{"ts"}, []string{"ts", "mts", "cts"}, "console.log($$$ARGS)"},
	{"yaml", "YAML", []string{"yml"}, []string{"yaml", "yml"}, "name: $V"},
}

// lookupLang finds a language by name or alias, ignoring case.
func lookupLang(name string) (language, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, l := range languages {
		if l.name == name || slices.Contains(l.aliases, name) {
			return l, true
		}
	}
	return language{}, false
}

// langOfFile is the language a file's extension says, if any.
func langOfFile(path string) (language, bool) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if ext == "" {
		return language{}, false
	}
	for _, l := range languages {
		if slices.Contains(l.exts, ext) {
			return l, true
		}
	}
	return language{}, false
}

// langNames lists the accepted language names.
func langNames() string {
	names := make([]string, len(languages))
	for i, l := range languages {
		names[i] = l.name
	}
	return strings.Join(names, ", ")
}
