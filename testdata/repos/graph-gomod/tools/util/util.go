package util

// Trim cuts spaces.
func Trim(s string) string { return s }
