package wallet

import (
	"math/big"
	"strings"
	"testing"
)

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		in       string
		decimals int
		want     string // base units, "" for an error
		says     string
	}{
		{"1", 18, "1000000000000000000", ""},
		{"0.05", 18, "50000000000000000", ""},
		{".5", 6, "500000", ""},
		{"12.", 6, "", "plain decimal"},
		{"0.000000000000000001", 18, "1", ""},
		{"0.0000000000000000001", 18, "", "19 decimal places"},
		{"1.5", 0, "", "1 decimal places"},
		{"123456789.123456", 6, "123456789123456", ""},
		{"0", 18, "", "zero"},
		{"0.000", 6, "", "zero"},
		{"-1", 18, "", "negative"},
		{"max", 18, "", "not accepted"},
		{"1e18", 18, "", "plain decimal"},
		{"1,5", 18, "", "plain decimal"},
		{"+1", 18, "", "plain decimal"},
		{"", 18, "", "empty"},
		{"1.2.3", 18, "", "plain decimal"},
		{"0x10", 18, "", "plain decimal"},
	} {
		got, err := ParseAmount(tc.in, tc.decimals, false)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%q/%d: %v %v, want an error saying %q", tc.in, tc.decimals, got, err, tc.says)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%q/%d = %v %v, want %s", tc.in, tc.decimals, got, err, tc.want)
		}
	}
	if n, err := ParseAmount("0", 18, true); err != nil || n.Sign() != 0 {
		t.Errorf("zero allowed: %v %v", n, err)
	}
}

func TestFormatAmount(t *testing.T) {
	for _, tc := range []struct {
		n        string
		decimals int
		want     string
	}{
		{"1000000000000000000", 18, "1"},
		{"50000000000000000", 18, "0.05"},
		{"1", 18, "0.000000000000000001"},
		{"0", 9, "0"},
		{"123456789123456", 6, "123456789.123456"},
		{"-1500", 3, "-1.5"},
		{"42", 0, "42"},
	} {
		n, _ := new(big.Int).SetString(tc.n, 10)
		if got := FormatAmount(n, tc.decimals); got != tc.want {
			t.Errorf("FormatAmount(%s, %d) = %q, want %q", tc.n, tc.decimals, got, tc.want)
		}
	}
}

// FuzzAmount: whatever ParseAmount accepts formats back to the same value.
func FuzzAmount(f *testing.F) {
	for _, s := range []string{"1", "0.05", ".5", "1e5", "-1", "00012.3400", "max"} {
		f.Add(s, 18)
	}
	f.Fuzz(func(t *testing.T, s string, decimals int) {
		if decimals < 0 || decimals > 40 {
			return
		}
		n, err := ParseAmount(s, decimals, true)
		if err != nil {
			return
		}
		back, err := ParseAmount(FormatAmount(n, decimals), decimals, true)
		if err != nil || back.Cmp(n) != 0 {
			t.Fatalf("%q → %s → %q → %v %v", s, n, FormatAmount(n, decimals), back, err)
		}
	})
}
