package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/guildsai/guilds/shared/shape"
)

// DefaultCap is the platform byte cap on a result's body.
const DefaultCap = 64 << 10

// WrapUpAt is the largest remaining-call count that gets a wrap-up line above the trailer.
const WrapUpAt = 8

// Options tune one Stamp call.
type Options struct {
	Filter    func(string) string // optional
	Redactor  *Redactor           // optional
	Cap       int                 // bytes; 0 (or less) means DefaultCap; cut on a UTF-8 boundary, with a note saying so
	Remaining int                 // tool calls left in the run after this one (the N of the trailer)
}

// Stamp runs filter → redact → cap → trailer and returns the stamped string: what is stored and
// returned. The raw result is never kept. A filter that panics is skipped (the result goes on
// unfiltered, still redacted and capped). Invalid UTF-8 and NUL bytes become U+FFFD after redaction,
// so the stamped string is always valid UTF-8 that PostgreSQL text accepts. The body is at most Cap
// bytes, truncation note included (unless Cap is smaller than the note itself).
func Stamp(raw string, o Options) string {
	s := applyFilter(o.Filter, raw)
	s = o.Redactor.Redact(s)
	s = clean(s)
	limit := o.Cap
	if limit <= 0 {
		limit = DefaultCap
	}
	body, note := split(s, limit)
	if note == "" {
		// The trailer brings its own blank line; trailing newlines of the body would only widen it.
		body = strings.TrimRight(body, "\n")
	}
	trailer := Trailer(o.Remaining, body == "" && note == "")
	var b strings.Builder
	b.Grow(len(body) + len(note) + len(trailer))
	b.WriteString(body)
	b.WriteString(note)
	b.WriteString(trailer)
	return b.String()
}

func applyFilter(f func(string) string, raw string) (out string) {
	if f == nil {
		return raw
	}
	defer func() {
		if recover() != nil {
			out = raw
		}
	}()
	return f(raw)
}

// clean makes s valid UTF-8 without NUL bytes; a clean s is returned as is.
func clean(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// capBody cuts s to at most limit bytes on a rune boundary, ending with a note that says so.
func capBody(s string, limit int) string {
	body, note := split(s, limit)
	return body + note
}

// split returns the part of s that fits limit bytes with the cut note, and that note ("" when s fits).
func split(s string, limit int) (string, string) {
	if len(s) <= limit {
		return s, ""
	}
	room := limit - len(cutNote(limit, limit, len(s)))
	kept := shape.Prefix(s, room)
	return kept, cutNote(len(kept), limit, len(s))
}

func cutNote(kept, limit, total int) string {
	return fmt.Sprintf("\n[result cut at the %d-byte cap on a UTF-8 boundary: first %d of %d bytes shown; ask for less to see the rest]", limit, kept, total)
}

// Trailer is what Stamp appends: the remaining_tool_calls line, with a wrap-up line above it when
// n <= WrapUpAt. bare leaves out the blank line that separates it from a body.
func Trailer(n int, bare bool) string {
	if n < 0 {
		n = 0
	}
	var b strings.Builder
	if !bare {
		b.WriteString("\n\n")
	}
	switch {
	case n == 0:
		b.WriteString("No tool calls left: write your final answer now.\n")
	case n == 1:
		b.WriteString("Only 1 tool call left: wrap up and give your final answer.\n")
	case n <= WrapUpAt:
		b.WriteString("Only " + strconv.Itoa(n) + " tool calls left: wrap up and give your final answer.\n")
	}
	b.WriteString("remaining_tool_calls: " + strconv.Itoa(n))
	return b.String()
}
