package main

import "example.com/app/pkg"

// Crowd is greeters and names.
type Crowd struct {
	all   []*pkg.Greeter
	named map[string]pkg.Name
}

// sayAll calls through the values of ranges over a slice field and a map field.
func (c *Crowd) sayAll() {
	for _, g := range c.all {
		_ = g.String()
	}
	for _, n := range c.named {
		_ = n.String()
	}
}
