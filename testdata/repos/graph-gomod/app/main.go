package main

import (
	"fmt"
	"strings"

	"example.com/app/pkg"
)

func main() {
	fmt.Println(pkg.Greet("world"))
	g := pkg.NewGreeter("hi")
	fmt.Println(g.String())
	var b strings.Builder
	b.WriteString("x")
	fmt.Println(b.String())
	n := pkg.Name("ann")
	fmt.Println(n.String())
	p := &pkg.Greeter{}
	p.Reset()
	q := new(pkg.Greeter)
	q.Reset()
	shout(g)
}

// shout greets loudly through a parameter of the package's type.
func shout(g *pkg.Greeter) string { return strings.ToUpper(g.String()) }

// mystery calls String on something whose type the syntax does not give (an unnamed interface's method result).
func mystery(x interface{ Get() fmt.Stringer }) string { return x.Get().String() }
