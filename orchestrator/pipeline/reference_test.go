package pipeline

import (
	"strings"
	"testing"
)

// redactReference is the obvious quadratic redactor: at each position, the longest pattern that
// starts there; overlapping matches merged. Redact must agree with it on every input.
func redactReference(r *Redactor, s string) string {
	longestAt := func(i int) int {
		best := 0
		for _, p := range r.pats {
			if len(p) > best && strings.HasPrefix(s[i:], p) {
				best = len(p)
			}
		}
		return best
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		n := longestAt(i)
		if n == 0 {
			continue
		}
		end := i + n
		for j := i + 1; j < end; j++ {
			if m := longestAt(j); j+m > end {
				end = j + m
			}
		}
		b.WriteString(s[last:i] + Marker)
		last = end
		i = end - 1
	}
	return b.String() + s[last:]
}

func TestRedactMatchesReference(t *testing.T) {
	secrets := manySecrets(40)
	secrets = append(secrets, "abcd", "bcde", "zzzz1", "日本語!")
	r := NewRedactor(secrets)
	text := corpus(16<<10, secrets) + " abcde zzzz1zzzz1 xbcdex 日本語!日本語"
	if got, want := r.Redact(text), redactReference(r, text); got != want {
		t.Fatalf("Redact and the reference disagree (lengths %d, %d)", len(got), len(want))
	}
	long := NewRedactor(manySecrets(200))
	text = corpus(32<<10, manySecrets(200))
	if got, want := long.Redact(text), redactReference(long, text); got != want {
		t.Fatal("Redact and the reference disagree on 200 secrets")
	}
}
