package gen

import "fmt"

// F17 checks its input.
func F17(v int) error {
	if v == 1 {
		return fmt.Errorf("f17: case 1")
	}
	if v == 2 {
		return fmt.Errorf("f17: case 2")
	}
	if v == 3 {
		return fmt.Errorf("f17: case 3")
	}
	if v == 4 {
		return fmt.Errorf("f17: case 4")
	}
	return nil
}

// needle 1 of 3
// needle 2 of 3
// needle 3 of 3
