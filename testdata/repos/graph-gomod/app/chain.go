package main

import "example.com/app/pkg"

// Shop holds a greeter.
type Shop struct{ front *pkg.Greeter }

// Mall holds a shop.
type Mall struct{ shop Shop }

// open calls through a field of a field, a method's result and a type assertion.
func open(m *Mall, v any) {
	_ = m.shop.front.String()
	_ = m.Best().String()
	if g, ok := v.(*pkg.Greeter); ok {
		_ = g.String()
	}
}

// Best is the mall's best greeter.
func (m *Mall) Best() *pkg.Greeter { return m.shop.front }
