package benchtest

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3}, 3},
		{[]time.Duration{5, 1, 3}, 3},
		{[]time.Duration{4, 1, 3, 2}, 3},
	} {
		in := append([]time.Duration(nil), tc.in...)
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("Median sorted its input: %v", tc.in)
			}
		}
	}
}

func TestAlternateRunsEachInTurn(t *testing.T) {
	var order []int
	fns := []func(){func() { order = append(order, 0) }, func() { order = append(order, 1) }, func() { order = append(order, 2) }}
	if got := Alternate(3, fns...); len(got) != 3 {
		t.Fatalf("%d medians for 3 functions", len(got))
	}
	want := []int{0, 1, 2, 1, 2, 0, 2, 0, 1}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
}
