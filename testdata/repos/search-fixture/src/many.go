package src

// Many holds fifteen needles, more than one file shows.
func Many() []string {
	return []string{
		"needle 01",
		"needle 02",
		"needle 03",
		"needle 04",
		"needle 05",
		"needle 06",
		"needle 07",
		"needle 08",
		"needle 09",
		"needle 10",
		"needle 11",
		"needle 12",
		"needle 13",
		"needle 14",
		"needle 15",
	}
}
