// Package pipeline is the one path every tool result takes: filter, redaction, byte cap, trailer.
package pipeline

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// Marker replaces every redacted span.
const Marker = "[REDACTED]"

// MinSecretLen is the shortest value a Redactor registers. Shorter values are ignored: a 1-3 byte
// "secret" (a PIN digit, "abc", "on") occurs by chance all over ordinary text, so redacting it would
// shred every result while protecting nothing, and its base64 forms would be 2-4 characters long.
const MinSecretLen = 4

// Redactor replaces registered secret values, and their common encodings, with Marker in one
// left-to-right pass, longest match first. Encodings covered: whole standard and URL-safe base64
// encodings (padded or not); in both alphabets, the characters that depend only on the value's
// bytes at each of the three byte offsets it can take inside a longer encoded stream; URL query and
// path escaping; JSON string escaping (Go's, with and without HTML escaping, and the \uXXXX
// ASCII-only form). Overlapping matches merge into one marker. A Redactor is immutable and safe for
// concurrent use; a nil *Redactor redacts nothing.
type Redactor struct {
	values  []string
	pats    []string
	shift   uint32
	bits    []uint64           // Bloom-style filter over a hash of each pattern's first 4 bytes
	buckets map[uint32][]int32 // first 4 bytes (little-endian) -> pattern indexes, longest first
}

// NewRedactor builds a Redactor for values; values shorter than MinSecretLen bytes and duplicates are ignored.
func NewRedactor(values []string) *Redactor {
	r := &Redactor{buckets: map[uint32][]int32{}}
	seenVal := map[string]bool{}
	seenPat := map[string]bool{}
	for _, v := range values {
		if len(v) < MinSecretLen || seenVal[v] {
			continue
		}
		seenVal[v] = true
		r.values = append(r.values, v)
		for _, p := range Encodings(v) {
			if len(p) >= MinSecretLen && !seenPat[p] {
				seenPat[p] = true
				r.pats = append(r.pats, p)
			}
		}
	}
	size := 1 << 12
	for size < len(r.pats)*64 && size < 1<<22 {
		size <<= 1
	}
	r.bits = make([]uint64, size/64)
	r.shift = 32 - uint32(log2(size))
	for i, p := range r.pats {
		k := key4(p, 0)
		h := (k * hashMul) >> r.shift
		r.bits[h>>6] |= 1 << (h & 63)
		r.buckets[k] = append(r.buckets[k], int32(i))
	}
	for _, b := range r.buckets {
		sort.Slice(b, func(i, j int) bool { return len(r.pats[b[i]]) > len(r.pats[b[j]]) })
	}
	return r
}

// With returns a new Redactor holding r's values and more.
func (r *Redactor) With(more ...string) *Redactor {
	var vals []string
	if r != nil {
		vals = append(vals, r.values...)
	}
	return NewRedactor(append(vals, more...))
}

// Len is the number of values registered (after dropping short and duplicate ones).
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	return len(r.values)
}

const hashMul = 0x9E3779B1

func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

func key4(s string, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

// matchAt returns the length of the longest pattern starting at s[i], or 0.
func (r *Redactor) matchAt(s string, i int, k uint32) int {
	for _, pi := range r.buckets[k] {
		p := r.pats[pi]
		if len(s)-i >= len(p) && s[i:i+len(p)] == p {
			return len(p)
		}
	}
	return 0
}

// Redact returns s with every registered value and encoding replaced by Marker. A string holding
// none is returned as is, without allocating.
func (r *Redactor) Redact(s string) string {
	if r == nil || len(r.pats) == 0 || len(s) < MinSecretLen {
		return s
	}
	var b strings.Builder
	last := 0
	bits, shift := r.bits, r.shift
	for i := 0; i+MinSecretLen <= len(s); i++ {
		k := key4(s, i)
		h := (k * hashMul) >> shift
		if bits[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		n := r.matchAt(s, i, k)
		if n == 0 {
			continue
		}
		end := i + n
		// Merge every match that starts inside this one and reaches further.
		for j := i + 1; j < end && j+MinSecretLen <= len(s); j++ {
			if m := r.matchAt(s, j, key4(s, j)); m > 0 && j+m > end {
				end = j + m
			}
		}
		if b.Cap() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(Marker)
		last = end
		i = end - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// Encodings returns the forms of v a Redactor looks for: v itself, its whole base64 encodings
// (standard and URL-safe, padded and raw), its base64 cores (both alphabets, at byte offsets 0, 1
// and 2 of a longer stream), URL query and path escaping, and JSON escaping.
// Forms equal to v or to each other appear once.
func Encodings(v string) []string {
	out := []string{v}
	add := func(p string) {
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		add(enc.EncodeToString([]byte(v)))
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for off := 0; off < 3; off++ {
			add(base64Core(enc, v, off))
		}
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	add(jsonEscape(v, true))
	add(jsonEscape(v, false))
	add(jsonASCII(v))
	return out
}

// base64Core is the run of characters of v's encoding, when v starts at byte offset off (mod 3) of
// an encoded stream, that depend only on v's bytes: the same whatever surrounds v.
func base64Core(enc *base64.Encoding, v string, off int) string {
	buf := make([]byte, off+len(v))
	copy(buf[off:], v)
	e := enc.EncodeToString(buf)
	lo := (8*off + 5) / 6
	hi := 8 * (off + len(v)) / 6
	if lo >= hi {
		return ""
	}
	return e[lo:hi]
}

// jsonEscape is v as Go's encoding/json writes it inside a string literal, without the quotes.
func jsonEscape(v string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v) // encoding a string cannot fail
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// jsonASCII is v JSON-escaped with every non-ASCII rune as \uXXXX (Python's json.dumps default).
func jsonASCII(v string) string {
	base := jsonEscape(v, false)
	var b strings.Builder
	for _, r := range base {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
