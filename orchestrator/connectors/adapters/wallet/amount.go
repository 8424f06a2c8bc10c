package wallet

import (
	"fmt"
	"math/big"
	"strings"
)

// ParseAmount converts a human decimal string ("0.05") to base units with the asset's decimals,
// exactly: no exponent, sign, "max", or more decimal places than the asset has; zero is refused
// unless zeroOK.
func ParseAmount(s string, decimals int, zeroOK bool) (*big.Int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("the amount is empty; pass a decimal string such as \"0.05\"")
	}
	if strings.EqualFold(s, "max") || strings.EqualFold(s, "all") {
		return nil, fmt.Errorf("%q is not accepted; pass the exact decimal amount (get_balance shows the balance)", s)
	}
	if strings.HasPrefix(s, "-") {
		return nil, fmt.Errorf("the amount %q is negative; pass a positive decimal", s)
	}
	whole, frac, dot := strings.Cut(s, ".")
	if (whole == "" && frac == "") || (dot && frac == "") || !digits(whole) || !digits(frac) {
		return nil, fmt.Errorf("the amount %q is not a plain decimal such as \"12.5\" (digits, at most one dot, no sign or exponent)", clipArg(s))
	}
	if len(frac) > decimals {
		return nil, fmt.Errorf("the amount %s has %d decimal places; this asset has %d", s, len(frac), decimals)
	}
	if len(whole)+decimals > 80 {
		return nil, fmt.Errorf("the amount %s is too large", clipArg(s))
	}
	n, ok := new(big.Int).SetString(whole+frac+strings.Repeat("0", decimals-len(frac)), 10)
	if !ok {
		return nil, fmt.Errorf("the amount %q is not a plain decimal", clipArg(s))
	}
	if n.Sign() == 0 && !zeroOK {
		return nil, fmt.Errorf("the amount is zero; pass a positive amount")
	}
	return n, nil
}

// FormatAmount writes base units as a human decimal with the asset's decimals, trailing zeros cut.
func FormatAmount(n *big.Int, decimals int) string {
	if n == nil {
		return ""
	}
	neg := n.Sign() < 0
	s := new(big.Int).Abs(n).String()
	if decimals > 0 {
		if len(s) <= decimals {
			s = strings.Repeat("0", decimals-len(s)+1) + s
		}
		s = s[:len(s)-decimals] + "." + s[len(s)-decimals:]
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if neg {
		return "-" + s
	}
	return s
}

// digits reports whether s is only ASCII digits ("" is).
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// clipArg shortens an argument echoed in an error.
func clipArg(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
