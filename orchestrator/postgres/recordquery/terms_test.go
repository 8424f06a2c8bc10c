package recordquery

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// TestOrderKeys: number and datetime keys sort (as hex text) the way their values do.
func TestOrderKeys(t *testing.T) {
	nums := []float64{math.Inf(-1), -math.MaxFloat64, -1e300, -2.5, -1, -math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 1e-300, 0.1, 1, 2, 2.5, 3, 10, 1e300, math.MaxFloat64, math.Inf(1)}
	var keys []string
	for _, f := range nums {
		keys = append(keys, hexKey(numberKey(f)))
	}
	if !sort.StringsAreSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
		t.Fatalf("number keys out of order: %v", keys)
	}
	if numberKey(math.Copysign(0, -1)) != numberKey(0) {
		t.Fatal("-0 and 0 have different keys")
	}
	times := []string{"0001-01-01T00:00:00.000000Z", "1969-12-31T23:59:59.999999Z", "1970-01-01T00:00:00.000000Z", "2026-03-01T09:30:00.000000Z", "2026-03-01T09:30:00.000001Z", "9999-12-31T23:59:59.999999Z"}
	keys = nil
	for _, s := range times {
		k, ok := orderKey(orchestrator.ColDatetime, s)
		if !ok {
			t.Fatalf("no key for %s", s)
		}
		keys = append(keys, hexKey(k))
	}
	if !sort.StringsAreSorted(keys) {
		t.Fatalf("datetime keys out of order: %v", keys)
	}
	if _, ok := orderKey(orchestrator.ColDatetime, "2026-03-01T09:30:00Z"); ok {
		t.Fatal("a datetime not in the stored layout got a key")
	}
	if _, ok := orderKey(orchestrator.ColNumber, "3"); ok {
		t.Fatal("a string got a number key")
	}
}

// TestRecordTerms: the lexemes, words and keys of a record, and the unindexed marker.
func TestTerms(t *testing.T) {
	c := orchestrator.Collection{ID: "art_abcdefghijklmn", Columns: []orchestrator.Column{
		{Name: "title", Type: orchestrator.ColText}, {Name: "n", Type: orchestrator.ColNumber},
		{Name: "at", Type: orchestrator.ColDatetime}, {Name: "ok", Type: orchestrator.ColBoolean},
		{Name: "ref", Type: orchestrator.ColID}, {Name: "tags", Type: orchestrator.ColTextList},
		{Name: "body", Type: orchestrator.ColText}, {Name: "bad", Type: orchestrator.ColNumber},
	}}
	long := strings.Repeat("x", maxTermValue+1)
	ix := Terms(c, map[string]any{
		"title": "Fix the Parser, straße!", "n": 2.0, "at": "2026-03-01T09:30:00.000000Z", "ok": true,
		"ref": "T-1", "tags": []any{"a b", "c"}, "body": "short " + long, "bad": "not a number",
	})
	want := []string{
		"ijklmn:title:=Fix the Parser, straße!", "ijklmn:title:wFix", "ijklmn:title:wthe", "ijklmn:title:wParser", "ijklmn:title:wstraße",
		"ijklmn:n:#c000000000000000", "ijklmn:ok:=true", "ijklmn:ref:=T-1",
		"ijklmn:tags:wa", "ijklmn:tags:wb", "ijklmn:tags:wc",
		"ijklmn:body:wshort", "ijklmn:body:~", // the long word is not kept; its column is marked
		"ijklmn:bad:~",
	}
	for _, w := range want {
		if !slices.Contains(ix.Lexemes, w) {
			t.Errorf("missing lexeme %q in %q", w, ix.Lexemes)
		}
	}
	for _, l := range ix.Lexemes {
		if strings.Contains(l, long) || !strings.HasPrefix(l, "ijklmn:") {
			t.Errorf("unexpected lexeme %q", l)
		}
	}
	if !slices.Contains(ix.Lexemes, "ijklmn:at:#"+hexKey(timeKey(time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)))) {
		t.Errorf("no datetime key in %q", ix.Lexemes)
	}
	if strings.Join(ix.Words, " ") != "Fix Parser a b c short straße the" {
		t.Errorf("words %q", ix.Words)
	}
	if len(ix.Keys) != 2 || !strings.HasPrefix(ix.Keys[0], "at:") || ix.Keys[1] != "n:c000000000000000" {
		t.Errorf("keys %q", ix.Keys)
	}
	// A record past the byte budget keeps its first words and marks the rest unindexed.
	var many []any
	for i := range 40000 {
		many = append(many, strings.Repeat(string(rune('a'+i%26)), 3)+hexKey(uint64(i)))
	}
	ix = Terms(c, map[string]any{"tags": many})
	size := 0
	for _, l := range ix.Lexemes {
		size += len(l) + 4
	}
	if size > maxTermBytes || !slices.Contains(ix.Lexemes, "ijklmn:tags:~") {
		t.Fatalf("budget: %d bytes, marker %v", size, slices.Contains(ix.Lexemes, "ijklmn:tags:~"))
	}
}

func TestNarrowableWord(t *testing.T) {
	for w, want := range map[string]bool{"par": true, "parser2": true, "pa": false, "straße": false, "Parser": false, "a_b": false} {
		if narrowableWord(w) != want {
			t.Errorf("narrowableWord(%q) = %v", w, !want)
		}
	}
}

// TestOneEditPatterns: the LIKE patterns of a word match exactly the strings within one edit of
// it (optimal string alignment: insert, delete, substitute, swap of neighbours), over every string
// of 3 to 6 letters of a small alphabet.
func TestOneEditPatterns(t *testing.T) {
	like := func(p, s string) bool {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(p), "_", ".") + "$"
		return regexp.MustCompile(re).MatchString(s)
	}
	var all []string
	var grow func(s string)
	grow = func(s string) {
		if len(s) >= 3 {
			all = append(all, s)
		}
		if len(s) < 6 {
			for _, c := range "abcé" {
				grow(s + string(c))
			}
		}
	}
	grow("")
	for _, w := range []string{"abca", "abcab", "aabé", "ébcaa"} {
		pats := oneEditPatterns(w)
		for _, s := range all {
			matched := slices.ContainsFunc(pats, func(p string) bool { return like(p, s) })
			if want := osaDistance(w, s) <= 1; matched != want {
				t.Fatalf("%q against %q: patterns match %v, within one edit %v (patterns %q)", w, s, matched, want, pats)
			}
		}
	}
}

// osaDistance is the optimal string alignment distance between a and b, by characters.
func osaDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range y {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
