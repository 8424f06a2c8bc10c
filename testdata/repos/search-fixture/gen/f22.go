package gen

import "fmt"

// F22 checks its input.
func F22(v int) error {
	if v == 1 {
		return fmt.Errorf("f22: case 1")
	}
	if v == 2 {
		return fmt.Errorf("f22: case 2")
	}
	if v == 3 {
		return fmt.Errorf("f22: case 3")
	}
	if v == 4 {
		return fmt.Errorf("f22: case 4")
	}
	return nil
}

// needle 1 of 2
// needle 2 of 2
