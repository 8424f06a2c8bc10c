package files

import "strings"

// Bounds on the diff work; past them the changed middle is counted whole.
const (
	maxEditDistance = 4000
	diffBudget      = 50_000_000
)

// lineChanges counts the lines added and removed going from old to new, as a line diff would
// (git's numstat): common leading and trailing lines are skipped and the middle is diffed with
// Myers' algorithm.
func lineChanges(old, new string) (added, removed int) {
	a, b := splitLines(old), splitLines(new)
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return m, n
	}
	// Intern lines so the inner loop compares ints.
	ids := map[string]int{}
	id := func(s string) int {
		v, ok := ids[s]
		if !ok {
			v = len(ids)
			ids[s] = v
		}
		return v
	}
	x1, y1 := make([]int, n), make([]int, m)
	for i, s := range a {
		x1[i] = id(s)
	}
	for i, s := range b {
		y1[i] = id(s)
	}
	// Myers costs about (n+m)·d; bound d so a huge rewrite stays fast, and past the bound
	// count the changed middle whole.
	limit := min(n+m, maxEditDistance, max(diffBudget/(n+m), 1))
	off := limit + 1
	v := make([]int, 2*limit+3)
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && x1[x] == y1[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				common := (n + m - d) / 2
				return m - common, n - common
			}
		}
	}
	return m, n
}

// splitLines splits s into lines, each keeping its line ending.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
