package shape

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

const testLog = "/home/agent/.runs/r1/c1.log"

func TestCommandResultEdges(t *testing.T) {
	const limit = 8192
	trailer := "exit_code: 2"
	tests := []struct {
		name    string
		out     string
		trailer string
		elided  bool
	}{
		{"empty", "", "", false},
		{"empty with trailer", "", trailer, false},
		{"exactly fits", strings.Repeat("a", limit), "", false},
		{"one byte over", strings.Repeat("a", limit+1), "", true},
		{"exactly fits with trailer", strings.Repeat("a", limit-len(trailer)-2) + "\n", trailer, false},
		{"one byte over with trailer", strings.Repeat("a", limit-len(trailer)) + "\n", trailer, true},
		{"large", strings.Repeat("line of output\n", 5000), trailer, true},
		{"multibyte everywhere", strings.Repeat("é日✓", 4000), trailer, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, elided := CommandResult(tt.out, limit, testLog, tt.trailer)
			if elided != tt.elided {
				t.Fatalf("elided = %v, want %v", elided, tt.elided)
			}
			if len(got) > limit {
				t.Fatalf("result is %d bytes, over the %d cap", len(got), limit)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("result is not valid UTF-8")
			}
			if !strings.HasSuffix(got, tt.trailer) {
				t.Fatalf("result does not end with the trailer %q: ...%q", tt.trailer, Suffix(got, 60))
			}
			if !elided {
				want := tt.out
				if tt.trailer != "" {
					if want != "" && !strings.HasSuffix(want, "\n") {
						want += "\n"
					}
					want += tt.trailer
				}
				if got != want {
					t.Fatalf("whole result differs: got %q, want %q", Prefix(got, 80), Prefix(want, 80))
				}
				return
			}
			// Elided: head, marker with the exact count, tail; head + tail + elided = input.
			i := strings.Index(got, "… [")
			if i < 0 {
				t.Fatalf("no marker in %q", Prefix(got, 100))
			}
			var n int64
			var path string
			if _, err := fmt.Sscanf(got[i:], "… [%d bytes elided; full log: %s", &n, &path); err != nil {
				t.Fatalf("marker: %v in %q", err, got[i:i+80])
			}
			if path != testLog+"]" {
				t.Fatalf("marker names log %q, want %q", path, testLog)
			}
			heads := []string{got[:i], strings.TrimSuffix(got[:i], "\n")}
			rest := got[i:]
			tailRaw := strings.TrimSuffix(rest[strings.IndexByte(rest, '\n')+1:], tt.trailer)
			tails := []string{tailRaw, strings.TrimSuffix(tailRaw, "\n")}
			ok := false
			for _, h := range heads {
				for _, tl := range tails {
					if strings.HasPrefix(tt.out, h) && strings.HasSuffix(tt.out, tl) && int64(len(h)+len(tl))+n == int64(len(tt.out)) {
						ok = true
					}
				}
			}
			if !ok {
				t.Fatalf("head + tail + %d elided bytes do not make up the %d-byte output", n, len(tt.out))
			}
			if len(heads[1]) > limit/4 {
				t.Fatalf("head is %d bytes, want at most %d", len(heads[1]), limit/4)
			}
			if len(got) < limit*3/4 {
				t.Fatalf("elided result is %d bytes; it should use the cap (%d)", len(got), limit)
			}
		})
	}
}

func TestCommandResultDefaultSplit(t *testing.T) {
	out := strings.Repeat("x", 100000)
	got, _ := CommandResult(out, 8192, testLog, "")
	head := got[:strings.Index(got, "\n")]
	if len(head) != 2048 {
		t.Fatalf("head is %d bytes, want 2048 (2 KiB, no line end to cut at)", len(head))
	}
	tail := got[strings.LastIndex(got, "\n")+1:]
	marker := ElisionMarker(int64(len(out)-len(head)-len(tail)), testLog)
	if want := 8192 - 2048 - len(marker) - 3; len(tail) < want-1 || len(tail) > 6144 {
		t.Fatalf("tail is %d bytes, want about %d (6 KiB less the marker)", len(tail), want)
	}
}

func TestCommandResultCutsAtLineEnds(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 50000; i++ {
		fmt.Fprintf(&sb, "line %05d of the build output\n", i)
	}
	got, _ := CommandResult(sb.String(), 8192, testLog, "exit_code: 1")
	for _, l := range strings.Split(got, "\n") {
		if l != "exit_code: 1" && !strings.HasPrefix(l, "… [") && (len(l) != len("line 00000 of the build output") || !strings.HasPrefix(l, "line ")) {
			t.Fatalf("a cut fell inside a line: %q", l)
		}
	}
	if len(got) < 8192-len("line 00000 of the build output\n")*2-1 {
		t.Fatalf("line-aligned result is %d bytes; it gave up more than a line at each cut", len(got))
	}
}

func TestCommandResultMultibyteCuts(t *testing.T) {
	// Place a 3-byte character across each cut point; no cut may split it.
	for shift := 0; shift < 4; shift++ {
		out := strings.Repeat("a", 2046+shift) + strings.Repeat("日", 5000)
		got, elided := CommandResult(out, 8192, testLog, "exit_code: 1")
		if !elided || !utf8.ValidString(got) || len(got) > 8192 {
			t.Fatalf("shift %d: elided=%v valid=%v len=%d", shift, elided, utf8.ValidString(got), len(got))
		}
	}
}

func TestCommandResultTinyCap(t *testing.T) {
	long := strings.Repeat("/very/long/path", 40)
	got, elided := CommandResult(strings.Repeat("z", 5000), 100, long, "exit_code: 1")
	if !elided || len(got) > 100 {
		t.Fatalf("tiny cap: elided=%v len=%d", elided, len(got))
	}
}

func TestOutputMatchesCommandResult(t *testing.T) {
	for _, size := range []int{0, 10, 8191, 8192, 8193, 20000, 100000} {
		var sb strings.Builder
		for i := 0; sb.Len() < size; i++ {
			fmt.Fprintf(&sb, "line %d é\n", i)
		}
		out := Prefix(sb.String(), size)
		o := NewOutput(8192)
		for i := 0; i < len(out); i += 777 {
			o.Write([]byte(out[i:min(i+777, len(out))]))
		}
		if o.Len() != int64(len(out)) {
			t.Fatalf("size %d: Len = %d", size, o.Len())
		}
		got, e1 := o.Shape(8192, testLog, "exit_code: 3")
		want, e2 := CommandResult(out, 8192, testLog, "exit_code: 3")
		if got != want || e1 != e2 {
			t.Fatalf("size %d: streaming shape differs from CommandResult", size)
		}
	}
}

func TestTrailer(t *testing.T) {
	if got := Trailer("", "a", "", "exit_code: 1"); got != "a\nexit_code: 1" {
		t.Fatalf("Trailer = %q", got)
	}
	if ExitTrailer(0) != "" || ExitTrailer(124) != "exit_code: 124" {
		t.Fatal("ExitTrailer")
	}
}

// FuzzElide checks CommandResult on rendered text: the cap holds, the result is valid UTF-8 with
// no ESC, ends with the trailer, and is the output itself exactly when that fits.
func FuzzElide(f *testing.F) {
	f.Add([]byte("hello\n"), uint16(600), "exit_code: 1")
	f.Add([]byte(strings.Repeat("日本\x1b[31m\r", 500)), uint16(512), "")
	f.Fuzz(func(t *testing.T, raw []byte, limit uint16, trailer string) {
		out := Terminal(raw)
		trailer = Terminal([]byte(trailer))
		n := int(limit)%4096 + 512
		got, elided := CommandResult(out, n, testLog, trailer)
		if len(got) > n {
			t.Fatalf("result %d bytes over cap %d", len(got), n)
		}
		if !utf8.ValidString(got) || strings.ContainsRune(got, 0x1b) {
			t.Fatalf("result not clean: %q", got)
		}
		if len(out)+len(trailer)+1 <= n && elided {
			t.Fatalf("output of %d bytes fits %d but was elided", len(out), n)
		}
		if elided != strings.Contains(got, "bytes elided; full log: ") && !strings.Contains(out, "bytes elided") {
			t.Fatalf("elided=%v but marker presence disagrees", elided)
		}
		if len(trailer)+len(ElisionMarker(int64(len(out)), testLog))+3 < n && !strings.HasSuffix(got, trailer) {
			t.Fatalf("trailer %q lost", trailer)
		}
	})
}
