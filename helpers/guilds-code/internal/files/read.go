package files

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/shape"
	"github.com/guildsai/guilds/shared/toolspec"
)

// Limits of file_read from the spec (toolspec holds them).
const (
	DefaultLimit = toolspec.FileReadDefaultLimit // lines returned when limit is omitted
	MaxLimit     = toolspec.FileReadMaxLimit     // largest limit accepted
	MaxLineChars = toolspec.FileReadMaxLineChars // longer lines are clipped
)

// Read is file_read: numbered lines of a file under a "<path> · lines a–b of n" header, clipped
// to the helper's byte cap, or one line pointing at an earlier identical read of the same run.
// Meta: path, range ("a-b"), content_hash, lines (the file's line count), and repeat_of.
func Read(ctx context.Context, c *runs.Call) envelope.Reply {
	var a toolspec.FileReadArgs
	if err := c.DecodeArgs(&a); err != nil {
		return argError("file_read", err)
	}
	offset, limit := 1, DefaultLimit
	switch {
	case a.Path == "":
		return argError("file_read", errors.New("missing argument path: the file to read"))
	case a.Offset != nil && *a.Offset < 1:
		return argError("file_read", fmt.Errorf("offset %d is out of range: lines start at 1 (omit offset to start there)", *a.Offset))
	case a.Limit != nil && (*a.Limit < 1 || *a.Limit > MaxLimit):
		return argError("file_read", fmt.Errorf("limit %d is out of range: pass 1 to %d lines (default %d)", *a.Limit, MaxLimit, DefaultLimit))
	}
	if a.Offset != nil {
		offset = *a.Offset
	}
	if a.Limit != nil {
		limit = *a.Limit
	}
	t, err := resolve(c, a.Path)
	if err != nil {
		return argError("file_read", err)
	}
	fi, err := statRegular(t, "file_read")
	if err != nil {
		return argError("file_read", err)
	}
	f, err := os.Open(t.real)
	if err != nil {
		return argError("file_read", fmt.Errorf("open %s: %w", t.shown, err))
	}
	defer f.Close()
	sc, err := scan(f, fi.Size(), offset, offset+limit-1)
	if err != nil {
		return argError("file_read", fmt.Errorf("read %s: %w", t.shown, err))
	}
	meta := map[string]any{"path": t.shown, "content_hash": sc.hash}
	if !sc.binary {
		meta["lines"] = sc.total
	}
	switch {
	case sc.binary:
		return envelope.Reply{Text: fmt.Sprintf("%s is a binary file (%s); not shown", t.shown, size(fi.Size())), Meta: meta}
	case sc.total == 0:
		if offset > 1 {
			return envelope.Errorf(meta, "file_read: offset %d is past the end of %s, which is empty (0 lines)", offset, t.shown)
		}
		return envelope.Reply{Text: fmt.Sprintf("%s · empty file (0 lines)", t.shown), Meta: meta}
	case offset > sc.total:
		return envelope.Errorf(meta, "file_read: offset %d is past the end of %s, which has %d lines; pass an offset from 1 to %d",
			offset, t.shown, sc.total, sc.total)
	}
	text, last := render(t.shown, sc, offset, c.Max)
	meta["range"] = fmt.Sprintf("%d-%d", offset, last)
	log := readLog{c: c}
	if seq, ok := log.earlier(t.real, sc.hash, offset, last); ok {
		meta["repeat_of"] = seq
		return envelope.Reply{Text: fmt.Sprintf("%s lines %d–%d: unchanged since step %d; read that result.", t.shown, offset, last, seq), Meta: meta}
	}
	log.record(readEntry{Path: t.real, From: offset, To: last, Hash: sc.hash, Seq: c.Req.Seq})
	return envelope.Reply{Text: text, Meta: meta}
}

// readBuffer sizes scan's buffer: room for the whole file and the binary sniff, at most 64 KiB.
func readBuffer(size int64) int {
	const most = 64 << 10
	if size <= 0 || size >= most {
		return most
	}
	return max(int(size)+1, binarySniff+1)
}

// scanned is one pass over a file: its hash and line count, and the lines in the asked range.
type scanned struct {
	hash   string
	total  int
	binary bool
	lines  []string // lines from..to (or fewer at the end), without their line endings
}

// scan reads r once, hashing all of it and keeping the lines numbered from..to. size is r's
// length when known (else 0): a small file gets a small buffer, since every page a short-lived
// helper touches costs a page fault.
func scan(r io.Reader, size int64, from, to int) (scanned, error) {
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(r, h), readBuffer(size))
	var sc scanned
	head, err := br.Peek(binarySniff)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return sc, err
	}
	if isBinary(head) {
		sc.binary = true
		if _, err := io.Copy(io.Discard, br); err != nil {
			return sc, err
		}
		sc.hash = hex.EncodeToString(h.Sum(nil))
		return sc, nil
	}
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			n := sc.total + 1
			if n >= from && n <= to {
				line = append(line, chunk...)
			}
			if chunk[len(chunk)-1] == '\n' || errors.Is(err, io.EOF) {
				sc.total = n
				if n >= from && n <= to {
					sc.lines = append(sc.lines, strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r"))
				}
				line = line[:0]
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return sc, err
		}
	}
	sc.hash = hex.EncodeToString(h.Sum(nil))
	return sc, nil
}

// render numbers the scanned lines from offset under the header, stopping before the byte cap,
// and returns the text and the last line number it holds.
func render(shown string, sc scanned, offset, capBytes int) (string, int) {
	end := offset + len(sc.lines) - 1
	width := len(strconv.Itoa(end))
	header := func(last int) string {
		return fmt.Sprintf("%s · lines %d–%d of %d\n", shown, offset, last, sc.total)
	}
	// Room for the longest header and the continuation note.
	room := capBytes - len(header(end)) - len(continueNote(end, end, sc.total, true))
	var body strings.Builder
	last := offset - 1
	for i, l := range sc.lines {
		n := offset + i
		row := fmt.Sprintf("%*d\t%s\n", width, n, shape.ClipLine(l, MaxLineChars))
		if body.Len()+len(row) > room {
			if i == 0 { // Not even one line fits: show what fits of it, marked.
				const cut = "… [line cut at the byte cap]\n"
				row = shape.Prefix(row, max(room-len(cut), 0)) + cut
			} else {
				break
			}
		}
		body.WriteString(row)
		last = n
	}
	text := header(last) + body.String()
	if last < sc.total {
		text += continueNote(last, end, sc.total, last < end)
	}
	return strings.TrimSuffix(text, "\n"), last
}

// continueNote says which offset continues a read that stopped at last (end was asked).
func continueNote(last, end, total int, capped bool) string {
	if capped {
		return fmt.Sprintf("… stopped at the result's byte cap; lines %d–%d not shown: continue with offset %d\n", last+1, end, last+1)
	}
	more := fmt.Sprintf("%d more lines", total-last)
	if total-last == 1 {
		more = "1 more line"
	}
	return fmt.Sprintf("… %s: continue with offset %d\n", more, last+1)
}

// size renders a byte count for people.
func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%d bytes, %.1f KiB", n, float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes, %.1f MiB", n, float64(n)/(1<<20))
	}
}
