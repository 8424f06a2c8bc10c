package shape

import (
	"fmt"
	"strconv"
	"strings"
)

// Output keeps what a shaped command result can show of a stream of rendered text of any length:
// its first and its last keep bytes, and the total count. It is an io.Writer that never fails.
type Output struct {
	keep  int
	head  []byte
	tail  []byte
	total int64
}

// NewOutput returns an Output for a result capped at keep bytes.
func NewOutput(keep int) *Output { return &Output{keep: max(keep, 0)} }

// Write records p.
func (o *Output) Write(p []byte) (int, error) {
	o.total += int64(len(p))
	if room := o.keep - len(o.head); room > 0 {
		o.head = append(o.head, p[:min(room, len(p))]...)
	}
	if len(p) >= o.keep {
		o.tail = append(o.tail[:0], p[len(p)-o.keep:]...)
		return len(p), nil
	}
	o.tail = append(o.tail, p...)
	if len(o.tail) > 2*o.keep {
		n := copy(o.tail, o.tail[len(o.tail)-o.keep:])
		o.tail = o.tail[:n]
	}
	return len(p), nil
}

// Len is the number of bytes written.
func (o *Output) Len() int64 { return o.total }

// Shape is CommandResult over what was written.
func (o *Output) Shape(limit int, logPath, trailer string) (string, bool) {
	return shapeParts(string(o.head), string(o.tail), o.total, limit, logPath, trailer)
}

// CommandResult shapes a command's rendered output for a model, with trailer (lines such as
// "exit_code: 1", may be empty) on the lines after it, in at most limit bytes. Output that fits is
// returned whole. Otherwise the result keeps the first quarter of limit (2 KiB of 8 KiB) and the
// last bytes that the rest leaves room for (6 KiB less the marker and the trailer), around one
// line giving the elided byte count and logPath. Cuts fall on UTF-8 character boundaries, and on
// line ends when one lies in the quarter of the piece nearest the cut. It reports whether
// anything was elided.
func CommandResult(out string, limit int, logPath, trailer string) (string, bool) {
	return shapeParts(out, out, int64(len(out)), limit, logPath, trailer)
}

// ElisionMarker is the line that stands for the elided middle of a command's output.
func ElisionMarker(elided int64, logPath string) string {
	return "… [" + strconv.FormatInt(elided, 10) + " bytes elided; full log: " + logPath + "]"
}

// shapeParts shapes output of total bytes, of which head holds at least the first limit bytes
// (or all of them) and tail at least the last limit bytes (or all of them).
func shapeParts(head, tail string, total int64, limit int, logPath, trailer string) (string, bool) {
	var b strings.Builder
	join := func(text string) {
		b.WriteString(text)
		if trailer != "" {
			if text != "" && !strings.HasSuffix(text, "\n") {
				b.WriteByte('\n')
			}
			b.WriteString(trailer)
		}
	}
	sep := 0
	if trailer != "" {
		sep = 1
	}
	if total+int64(sep+len(trailer)) <= int64(limit) {
		join(head[:min(int64(len(head)), total)])
		return b.String(), false
	}
	// The marker is sized for the largest count it can hold; the real count is never longer.
	fixed := 1 + len(ElisionMarker(total, logPath)) + 1 + sep + len(trailer)
	avail := limit - fixed
	if avail < 0 {
		// No room even for the marker and trailer: keep what fits of them.
		join(ElisionMarker(total, logPath) + "\n")
		return Prefix(b.String(), limit), true
	}
	h := lineHead(Prefix(head, min(limit/4, avail)))
	t := lineTail(Suffix(tail, avail-len(h)))
	elided := total - int64(len(h)) - int64(len(t))
	b.Grow(limit)
	b.WriteString(h)
	if h != "" && !strings.HasSuffix(h, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(ElisionMarker(elided, logPath))
	b.WriteByte('\n')
	join(t)
	return b.String(), true
}

// lineHead ends a head cut at its last line end, when that keeps at least three quarters of it.
func lineHead(h string) string {
	if i := strings.LastIndexByte(h, '\n'); i >= 0 && i+1 >= len(h)*3/4 {
		return h[:i+1]
	}
	return h
}

// lineTail starts a tail cut after its first line end, when that keeps at least three quarters of it.
func lineTail(t string) string {
	if i := strings.IndexByte(t, '\n'); i >= 0 && len(t)-(i+1) >= len(t)*3/4 {
		return t[i+1:]
	}
	return t
}

// Trailer joins non-empty trailer lines, each ending in a newline except the last.
func Trailer(lines ...string) string {
	var parts []string
	for _, l := range lines {
		if l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "\n")
}

// ExitTrailer is the "exit_code: N" line a non-zero exit adds to a result, or "" for 0.
func ExitTrailer(code int) string {
	if code == 0 {
		return ""
	}
	return fmt.Sprintf("exit_code: %d", code)
}
