// Package benchtest holds what the benchmarks share: timing several ways of doing one thing in
// turns on a noisy machine, and their medians.
package benchtest

import (
	"slices"
	"time"
)

// Alternate times each fn n times, rotating which goes first so none always finds the machine
// warmer, and returns their medians in order.
func Alternate(n int, fns ...func()) []time.Duration {
	d := make([][]time.Duration, len(fns))
	for i := range n {
		for j := range fns {
			k := (i + j) % len(fns)
			t0 := time.Now()
			fns[k]()
			d[k] = append(d[k], time.Since(t0))
		}
	}
	out := make([]time.Duration, len(fns))
	for k := range d {
		out[k] = Median(d[k])
	}
	return out
}

// Median is the middle of ds (the upper one of an even count), 0 for none; ds is left unsorted.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
