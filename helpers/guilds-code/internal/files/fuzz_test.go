package files

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzScanRender: any file content, range and cap reads without panicking, fits the cap, and
// its header and range agree.
func FuzzScanRender(f *testing.F) {
	f.Add("a\nb\n", 1, 200, 8192)
	f.Add("x\r\n\x00y", 2, 1, 512)
	f.Add(strings.Repeat("é", 900)+"\n\n", 1, 500, 600)
	f.Add("", 1, 1, 512)
	f.Fuzz(func(t *testing.T, content string, offset, limit, capBytes int) {
		offset = 1 + abs(offset)%1000
		limit = 1 + abs(limit)%MaxLimit
		capBytes = 512 + abs(capBytes)%20000
		sc, err := scan(strings.NewReader(content), int64(len(content)), offset, offset+limit-1)
		if err != nil {
			t.Fatal(err)
		}
		if sc.hash != hashHex([]byte(content)) {
			t.Fatal("hash differs from the whole file's SHA-256")
		}
		if sc.binary || offset > sc.total {
			return
		}
		got, last := render("f.txt", sc, offset, capBytes)
		if len(got) > capBytes {
			t.Fatalf("%d bytes over the %d cap", len(got), capBytes)
		}
		if last < offset || last > sc.total || last > offset+limit-1 {
			t.Fatalf("last line %d outside %d..%d of %d", last, offset, offset+limit-1, sc.total)
		}
		if !strings.HasPrefix(got, fmt.Sprintf("f.txt · lines %d–%d of %d", offset, last, sc.total)) {
			t.Fatalf("header does not match the range: %q", got[:min(len(got), 80)])
		}
		if last < sc.total && !strings.HasSuffix(got, fmt.Sprintf("continue with offset %d", last+1)) {
			t.Fatalf("stops at %d of %d without naming the next offset", last, sc.total)
		}
	})
}

// FuzzEditHelpers: the diff count and the near-match search take any text without panicking,
// and the counts stay within the line counts.
func FuzzEditHelpers(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", "  2\tb")
	f.Add("x\r\ny\r\n", "", "1: x\n2: y")
	f.Add("", "z", "   ")
	f.Fuzz(func(t *testing.T, old, new, needle string) {
		added, removed := lineChanges(old, new)
		if added < 0 || removed < 0 || added > len(splitLines(new)) || removed > len(splitLines(old)) {
			t.Fatalf("lineChanges = +%d −%d for %d → %d lines", added, removed, len(splitLines(old)), len(splitLines(new)))
		}
		if a, r := lineChanges(old, old); a != 0 || r != 0 {
			t.Fatalf("identical texts differ by +%d −%d", a, r)
		}
		if !strings.Contains(old, needle) && nearMatches(old, needle) == "" {
			t.Fatal("nearMatches gave no advice")
		}
		for _, l := range matchLines(old, needle) {
			if needle == "" || l < 1 || l > strings.Count(old, "\n")+1 {
				t.Fatalf("match line %d out of range", l)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // the most negative int
			return 0
		}
		return -n
	}
	return n
}
