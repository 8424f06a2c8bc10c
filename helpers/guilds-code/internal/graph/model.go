package graph

import "strings"

// Kind is what a symbol is.
type Kind uint8

// The symbol kinds; KindImpl is a Rust impl block, listed in outlines and never a call target.
const (
	KindFunction Kind = iota
	KindMethod
	KindClass
	KindStruct
	KindInterface
	KindTrait
	KindEnum
	KindType
	KindConst
	KindVar
	KindModule
	KindImpl
)

var kindNames = []string{"function", "method", "class", "struct", "interface", "trait", "enum", "type", "const", "var", "module", "impl"}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "symbol"
}

// TypeLike reports whether symbols of this kind hold methods.
func (k Kind) TypeLike() bool {
	switch k {
	case KindClass, KindStruct, KindInterface, KindTrait, KindEnum, KindType, KindModule, KindImpl:
		return true
	}
	return false
}

// Callable reports whether the kind has a body that makes calls.
func (k Kind) Callable() bool { return k == KindFunction || k == KindMethod }

// Symbol is one definition in a file.
type Symbol struct {
	Name      string
	Kind      Kind
	Container string // enclosing type, class, receiver type or module; "" at top level
	Start     uint32 // first line, 1-based
	End       uint32 // last line
	Sig       string // the declaration without its body, on one line
	Doc       string // the first line of its doc comment or docstring
	Refs      uint32 // how many resolved call sites and references point at it (computed at save)
	Parent    int32  // index of the enclosing symbol in the file, -1 at top level
	Locals    []Local
}

// Local is a parameter or variable whose type the syntax states, and the line binding it (0: unknown).
type Local struct {
	Name, Type string
	Line       uint32
}

// Ref is one call site or reference.
type Ref struct {
	Name  string
	Recv  string // the qualifier or receiver expression, "" when unqualified
	Line  uint32
	From  int32 // index of the enclosing symbol, -1 at top level
	Value bool  // a function or method named as a value (passed, assigned, returned), not called
}

// Import binds a local name to another module.
type Import struct {
	Alias string // local name as written ("" when implied)
	Path  string // module path or source as written, quotes removed
	Name  string // imported member ("" for the whole module)
}

// File is one parsed source file of the graph.
type File struct {
	Path    string // slash-separated, relative to the repository
	Lang    string
	Size    int64
	Mtime   int64
	Hash    uint64
	Pkg     string   // Go package name
	Crash   string   // why the parser crashed on this version of the file ("" when it did not): it has no symbols
	Symbols []Symbol // nil until Syms when read from disk
	Refs    []Ref    // nil until LoadRefs when read from disk
	Imports []Import

	Blocks Blocks // the encoded form the store and the parse worker hold
}

// lastSegment returns the last name of a qualified name (a::b::C, a.b.C).
func lastSegment(s string) string {
	if i := strings.LastIndexAny(s, ".:"); i >= 0 {
		return s[i+1:]
	}
	return s
}
