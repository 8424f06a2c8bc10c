package main

import (
	"testing"

	"example.com/app/pkg"
)

func TestGreet(t *testing.T) {
	if pkg.Greet("x") == "" {
		t.Fatal("empty")
	}
}
