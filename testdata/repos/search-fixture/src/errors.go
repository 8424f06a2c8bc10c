package src

import "fmt"

// fmt.Errorf("in a comment") is not a call.
var message = "fmt.Errorf(not a call either)"

// Open fails with a wrapped error: the needle.
func Open(name string) error {
	if name == "" {
		return fmt.Errorf("open: empty name")
	}
	err := fmt.Errorf("open %s: %w", name, errNeedle)
	return err
}

var errNeedle = fmt.Errorf("needle")
