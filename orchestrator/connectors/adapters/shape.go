package adapters

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Row caps and series sizes of the spec.
const (
	DefaultRows  = 15  // a list's rows when the call names no limit
	MaxRows      = 30  // the most rows one call shows
	ChartPoints  = 48  // a chart's points after downsampling
	Candles      = 48  // OHLCV candles after aggregation
	PostTextClip = 280 // post text is clipped at this many characters, then …
)

// Limit reads args["limit"] between 1 and MaxRows, DefaultRows when absent.
func Limit(args map[string]any) int {
	n, ok := Int(args, "limit")
	if !ok || n <= 0 {
		return DefaultRows
	}
	return min(n, MaxRows)
}

// Int reads an integer argument (a JSON number, or a decimal string).
func Int(args map[string]any, name string) (int, bool) {
	switch x := args[name].(type) {
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<40 {
			return 0, false
		}
		return int(x), true
	case int:
		return x, true
	case int64:
		return int(x), true
	case json.Number:
		n, err := x.Int64()
		return int(n), err == nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		return n, err == nil
	}
	return 0, false
}

// Str reads a string argument, trimmed; "" when absent.
func Str(args map[string]any, name string) string {
	s, _ := args[name].(string)
	return strings.TrimSpace(s)
}

// Need reads a required string argument, or answers the provider's argument error naming it.
func Need(provider string, args map[string]any, name string) (string, error) {
	s := Str(args, name)
	if s == "" {
		return "", Invalid(provider, name+" is required")
	}
	return s, nil
}

// StrOr reads a string argument with a default.
func StrOr(args map[string]any, name, def string) string {
	if s := Str(args, name); s != "" {
		return s
	}
	return def
}

// Bool reads a boolean argument.
func Bool(args map[string]any, name string) bool {
	b, _ := args[name].(bool)
	return b
}

// Strs reads a string-array argument, trimmed, without empty items.
func Strs(args map[string]any, name string) []string {
	var out []string
	switch x := args[name].(type) {
	case []any:
		for _, v := range x {
			if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
	case []string:
		for _, s := range x {
			if strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
	}
	return out
}

// Clip shortens s to at most n characters, the last being … when it was cut.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}

// Point is one point of a chart: a time (Unix milliseconds) and a value.
type Point struct {
	T int64
	V float64
}

// Downsample keeps n points of a series, evenly spaced by index, always the first and the last;
// a series of n points or fewer is returned as it is.
func Downsample(ps []Point, n int) []Point {
	idx := DownsampleIndex(len(ps), n)
	out := make([]Point, len(idx))
	for k, i := range idx {
		out[k] = ps[i]
	}
	return out
}

// DownsampleIndex is the indices Downsample keeps of a series of length m: n evenly spaced,
// the first and the last among them; every index when m is n or fewer.
func DownsampleIndex(m, n int) []int {
	if n < 2 || m <= n {
		out := make([]int, m)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, n)
	last := m - 1
	for k := range n {
		out[k] = int(math.Round(float64(k) * float64(last) / float64(n-1)))
	}
	return out
}

// Candle is one OHLCV candle.
type Candle struct {
	Open, Close   string // times, as the provider sent them (the first candle's open, the last's close)
	O, H, L, C, V float64
}

// Aggregate merges consecutive candles into n: each keeps the open of its first candle, the close
// of its last, the highest high, the lowest low and the summed volume; the first and last
// candles' times are kept. A series of n candles or fewer is returned as it is.
func Aggregate(cs []Candle, n int) []Candle {
	if n < 1 || len(cs) <= n {
		return cs
	}
	out := make([]Candle, 0, n)
	for k := range n {
		lo, hi := k*len(cs)/n, (k+1)*len(cs)/n
		g := cs[lo:hi]
		c := Candle{Open: g[0].Open, Close: g[len(g)-1].Close, O: g[0].O, C: g[len(g)-1].C, H: g[0].H, L: g[0].L}
		for _, x := range g {
			c.H = max(c.H, x.H)
			c.L = min(c.L, x.L)
			c.V += x.V
		}
		out = append(out, c)
	}
	return out
}
