// Command shop wires the store together.
package main

import (
	"fmt"

	"example.com/shop/other"
	st "example.com/shop/store"
)

func main() {
	s := st.New()
	s.Add("apple")
	run(s)
	other.Add(1, 2)
	fmt.Println(st.Fact(5))
}

// run closes the store after the helper ran.
func run(s *st.Store) {
	helper()
	s.Close()
	st.Close()
}
