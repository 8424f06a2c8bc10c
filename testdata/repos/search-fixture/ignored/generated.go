package ignored

import "fmt"

// needle: this folder is in .gitignore.
func Gen() error { return fmt.Errorf("needle %d", 1) }
