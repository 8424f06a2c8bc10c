package gen

import "fmt"

// F30 checks its input.
func F30(v int) error {
	if v == 1 {
		return fmt.Errorf("f30: case 1")
	}
	if v == 2 {
		return fmt.Errorf("f30: case 2")
	}
	if v == 3 {
		return fmt.Errorf("f30: case 3")
	}
	if v == 4 {
		return fmt.Errorf("f30: case 4")
	}
	return nil
}

// needle 1 of 1
