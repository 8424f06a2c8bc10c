package pkg

// Greet says hello to name.
func Greet(name string) string { return "hello " + name }

// Greeter greets with a word.
type Greeter struct{ word string }

// NewGreeter makes a Greeter that says word.
func NewGreeter(word string) *Greeter { return &Greeter{word: word} }

// String is what the greeter says.
func (g *Greeter) String() string { return g.word }

// Reset forgets the word.
func (g *Greeter) Reset() { g.word = "" }

// Name is a person's name.
type Name string

// String is the name as written.
func (n Name) String() string { return string(n) }
