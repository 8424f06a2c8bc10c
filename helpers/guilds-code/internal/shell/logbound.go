package shell

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// LogHalf is half of a shell log's bound: a log keeps the first and the last LogHalf bytes of what
// the command wrote, with the elided byte count in between (the shaping's rule at a larger scale).
const LogHalf = 32 << 20

// boundedLog writes a command's log into f, keeping its first half bytes, then a marker line, then
// its last half bytes: the tail grows in the file (so the log can be read while the command runs)
// and is cut back to its last half bytes each time it reaches twice that, so the file never holds
// more than about three halves. Cuts fall on UTF-8 boundaries. Close writes the final marker (or
// removes it when nothing was elided) and trims the file.
type boundedLog struct {
	f        *os.File
	half     int64
	head     int64 // bytes of the head written
	headDone bool
	markerAt int64 // where the marker starts, once the head is done
	markerN  int64 // the marker's length in the file
	tail     int64 // bytes of tail after the marker
	elided   int64
	err      error
}

// newBoundedLog writes at f's start; f must be empty and opened without O_APPEND.
func newBoundedLog(f *os.File, half int64) *boundedLog { return &boundedLog{f: f, half: half} }

// logMarker is the line standing for the elided middle of a log.
func logMarker(elided, half int64) string {
	return fmt.Sprintf("\n… [%d bytes elided: a shell log keeps the first and last %s of a command's output]\n", elided, sizeName(half))
}

// sizeName writes n bytes as MiB or KiB when it is a whole number of them.
func sizeName(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// runningMarker stands between head and tail while the command runs.
func runningMarker(half int64) string {
	return fmt.Sprintf("\n… [output elided here while the command runs: a shell log keeps the first and last %s of a command's output]\n", sizeName(half))
}

// Write takes p whole; a failure is kept and returned by this and every later Write and Close.
func (b *boundedLog) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n := len(p)
	if !b.headDone {
		k := int(min(int64(len(p)), b.half-b.head))
		cut := k
		if k < len(p) { // the head ends here: on a rune boundary when there is one near
			for cut > 0 && cut > k-utf8.UTFMax && !utf8.RuneStart(p[cut]) {
				cut--
			}
			if !utf8.RuneStart(p[cut]) {
				cut = k
			}
		}
		if _, err := b.f.WriteAt(p[:cut], b.head); err != nil {
			b.err = fmt.Errorf("write the log: %w", err)
			return 0, b.err
		}
		b.head += int64(cut)
		p = p[cut:]
		if len(p) == 0 {
			return n, nil
		}
		b.headDone, b.markerAt = true, b.head
		if b.err = b.writeMarker(runningMarker(b.half)); b.err != nil {
			return 0, b.err
		}
	}
	for len(p) > 0 {
		room := 2*b.half - b.tail
		k := min(int64(len(p)), room)
		if _, err := b.f.WriteAt(p[:k], b.markerAt+b.markerN+b.tail); err != nil {
			b.err = fmt.Errorf("write the log: %w", err)
			return 0, b.err
		}
		b.tail += k
		p = p[k:]
		if b.tail >= 2*b.half {
			if b.err = b.keepLast(b.half); b.err != nil {
				return 0, b.err
			}
		}
	}
	return n, nil
}

// writeMarker writes the marker m, moving the tail when the marker's length changes.
func (b *boundedLog) writeMarker(m string) error {
	tailAt := b.markerAt + b.markerN
	newTailAt := b.markerAt + int64(len(m))
	if b.tail > 0 && newTailAt != tailAt {
		if err := moveRegion(b.f, tailAt, newTailAt, b.tail); err != nil {
			return err
		}
	}
	if _, err := b.f.WriteAt([]byte(m), b.markerAt); err != nil {
		return fmt.Errorf("write the log's marker: %w", err)
	}
	b.markerN = int64(len(m))
	return b.f.Truncate(b.markerAt + b.markerN + b.tail)
}

// keepLast cuts the tail to its last n bytes (from a rune start), counting the rest as elided.
func (b *boundedLog) keepLast(n int64) error {
	if b.tail <= n {
		return nil
	}
	tailAt := b.markerAt + b.markerN
	from := tailAt + b.tail - n
	var probe [utf8.UTFMax]byte
	if k, _ := b.f.ReadAt(probe[:], from); k > 0 {
		for i := 0; i < k && !utf8.RuneStart(probe[i]); i++ {
			from++
		}
	}
	keep := tailAt + b.tail - from
	if err := moveRegion(b.f, from, tailAt, keep); err != nil {
		return err
	}
	b.elided += b.tail - keep
	b.tail = keep
	if err := b.f.Truncate(tailAt + b.tail); err != nil {
		return fmt.Errorf("trim the log: %w", err)
	}
	return nil
}

// Close writes the final marker (none when nothing was elided) and trims the file; it does not
// close f.
func (b *boundedLog) Close() error {
	if b.err != nil || !b.headDone {
		return b.err
	}
	if b.err = b.keepLast(b.half); b.err != nil {
		return b.err
	}
	if b.elided == 0 { // head and tail fit: no marker
		if b.err = moveRegion(b.f, b.markerAt+b.markerN, b.markerAt, b.tail); b.err != nil {
			return b.err
		}
		b.markerN = 0
		if err := b.f.Truncate(b.markerAt + b.tail); err != nil {
			b.err = fmt.Errorf("trim the log: %w", err)
		}
		return b.err
	}
	b.err = b.writeMarker(logMarker(b.elided, b.half))
	return b.err
}

// End is where the log's content ends in f: later lines (a background command's end) go there.
func (b *boundedLog) End() int64 {
	if !b.headDone {
		return b.head
	}
	return b.markerAt + b.markerN + b.tail
}

// moveRegion copies n bytes of f from src to dst (the regions may overlap).
func moveRegion(f *os.File, src, dst, n int64) error {
	if n <= 0 || src == dst {
		return nil
	}
	buf := make([]byte, min(n, 1<<20))
	copyChunk := func(off, k int64) error {
		if _, err := f.ReadAt(buf[:k], src+off); err != nil && err != io.EOF {
			return fmt.Errorf("move the log's tail: %w", err)
		}
		if _, err := f.WriteAt(buf[:k], dst+off); err != nil {
			return fmt.Errorf("move the log's tail: %w", err)
		}
		return nil
	}
	if dst < src { // forwards
		for off := int64(0); off < n; off += int64(len(buf)) {
			if err := copyChunk(off, min(int64(len(buf)), n-off)); err != nil {
				return err
			}
		}
		return nil
	}
	for end := n; end > 0; { // backwards
		k := min(int64(len(buf)), end)
		if err := copyChunk(end-k, k); err != nil {
			return err
		}
		end -= k
	}
	return nil
}
