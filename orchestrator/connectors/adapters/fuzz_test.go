package adapters_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// FuzzEscape checks a cell never breaks a row or a column and unescapes to what went in.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\tb", "x\ny", `back\slash`, "\r\n\t\\", "é…"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := adapters.Escape(s)
		if strings.ContainsAny(e, "\t\n\r") {
			t.Fatalf("Escape(%q) = %q holds a separator", s, e)
		}
		if got := unescape(e); got != s {
			t.Fatalf("unescape(Escape(%q)) = %q", s, got)
		}
	})
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FuzzNumber checks a formatted number has no exponent, parses back, and is within 15
// significant digits of the value.
func FuzzNumber(f *testing.F) {
	for _, v := range []float64{0, 0.1 + 0.2, 67187.3358936566, 2.4645873833743e-05, -1e21, 1e-9, 123456789012345} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		s := adapters.Number(v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if s != "" {
				t.Fatalf("Number(%v) = %q, want empty", v, s)
			}
			return
		}
		if strings.ContainsAny(s, "eE") {
			t.Fatalf("Number(%v) = %q has an exponent", v, s)
		}
		got, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("Number(%v) = %q does not parse: %v", v, s, err)
		}
		if v != 0 && math.Abs(got-v)/math.Abs(v) > 1e-14 {
			t.Fatalf("Number(%v) = %q drifts", v, s)
		}
	})
}

// FuzzProviderMessage checks the error-body parser never panics and answers a short line.
func FuzzProviderMessage(f *testing.F) {
	for _, s := range []string{`{"error":"x"}`, `{"errors":[{"message":"m"}]}`, `[[[[[]]]]]`, `"s"`, `{"status":{"error_message":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = adapters.ProviderMessage(b)
	})
}

// FuzzPairs checks the chart parser never panics and, on what encoding/json reads as an object
// of [number, number] series, agrees with it.
func FuzzPairs(f *testing.F) {
	for _, s := range []string{`{"prices":[[1711843200000,69702.3087473573],[1711929600000,71246.95]],"x":{"a":[1,"b"]}}`,
		`{"circulating_supply":[[1712448000000,"19675268.0"]]}`, `{}`, `{"a":[[1,null]]}`, `[`, `{"a":[[1,2]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := adapters.Pairs(b)
		var ref map[string][][]float64
		if json.Unmarshal(b, &ref) != nil || bytes.Contains(b, []byte("null")) {
			return
		}
		for _, v := range ref {
			for _, p := range v {
				if len(p) != 2 {
					return
				}
			}
		}
		if err != nil {
			t.Fatalf("Pairs failed on %q, which encoding/json reads: %v", b, err)
		}
		for k, v := range ref {
			if len(got[k]) != len(v) {
				t.Fatalf("%s: %d points, encoding/json %d", k, len(got[k]), len(v))
			}
			for i := range v {
				if got[k][i].V != v[i][1] || got[k][i].T != int64(v[i][0]) {
					t.Fatalf("%s[%d] = %v, encoding/json %v", k, i, got[k][i], v[i])
				}
			}
		}
	})
}

// FuzzPostID checks the status-URL parser never panics and only answers digit ids.
func FuzzPostID(f *testing.F) {
	for _, s := range []string{"123", "https://x.com/a/status/1", "twitter.com/a/statuses/9?x=1", "://", "x.com/status/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := adapters.PostID(s)
		if ok && (id == "" || strings.Trim(id, "0123456789") != "") {
			t.Fatalf("PostID(%q) = %q", s, id)
		}
	})
}
