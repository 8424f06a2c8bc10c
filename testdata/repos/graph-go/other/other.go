// Package other has a function named like a method of store.Store.
package other

// Add sums two numbers.
func Add(a, b int) int { return a + b }
