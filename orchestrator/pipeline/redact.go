// Package pipeline is the one path every tool result takes: filter, redaction, byte cap, trailer.
package pipeline

import (
	"cmp"
	"encoding/base64"
	"net/url"
	"slices"
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
	values []string
	pats   []string // sorted by first 4 bytes, then longest first
	keys   []uint32 // first 4 bytes (little-endian) of each pattern, parallel to pats
	shift  uint32
	bits   []uint64 // Bloom-style filter over a hash of each pattern's first 4 bytes
}

// NewRedactor builds a Redactor for values; values shorter than MinSecretLen bytes and duplicates are ignored.
func NewRedactor(values []string) *Redactor {
	return build(nil, nil, values)
}

// With returns a new Redactor holding r's values and more; r is unchanged. Only the new values'
// encodings are computed.
func (r *Redactor) With(more ...string) *Redactor {
	if r == nil {
		return NewRedactor(more)
	}
	return build(r.values, r.pats, more)
}

// build indexes the patterns of known values (already encoded as pats) plus those of more.
func build(known, pats []string, more []string) *Redactor {
	r := &Redactor{values: append([]string(nil), known...), pats: append([]string(nil), pats...)}
	seen := make(map[string]bool, len(known)+len(more))
	for _, v := range known {
		seen[v] = true
	}
	for _, v := range more {
		if len(v) < MinSecretLen || seen[v] {
			continue
		}
		seen[v] = true
		r.values = append(r.values, v)
		for _, p := range Encodings(v) {
			if len(p) >= MinSecretLen {
				r.pats = append(r.pats, p)
			}
		}
	}
	type entry struct {
		key uint32
		pat string
	}
	es := make([]entry, len(r.pats))
	for i, p := range r.pats {
		es[i] = entry{key4(p, 0), p}
	}
	slices.SortFunc(es, func(a, b entry) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		if len(a.pat) != len(b.pat) {
			return len(b.pat) - len(a.pat)
		}
		return strings.Compare(a.pat, b.pat)
	})
	es = slices.CompactFunc(es, func(a, b entry) bool { return a.pat == b.pat })
	r.pats, r.keys = make([]string, len(es)), make([]uint32, len(es))
	size := 1 << 12
	for size < len(es)*64 && size < 1<<22 {
		size <<= 1
	}
	r.bits = make([]uint64, size/64)
	r.shift = 32 - uint32(log2(size))
	for i, e := range es {
		r.pats[i], r.keys[i] = e.pat, e.key
		h := (e.key * hashMul) >> r.shift
		r.bits[h>>6] |= 1 << (h & 63)
	}
	return r
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

// matchAt returns the length of the longest pattern starting at s[i], whose first 4 bytes are k, or 0.
func (r *Redactor) matchAt(s string, i int, k uint32) int {
	lo, hi := 0, len(r.keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r.keys[m] < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for ; lo < len(r.keys) && r.keys[lo] == k; lo++ {
		p := r.pats[lo]
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
// and 2 of a longer stream), URL query and path escaping, and JSON escaping (with and without HTML
// escaping, and with every non-ASCII rune as \uXXXX). Forms equal to v or to each other appear once.
func Encodings(v string) []string {
	out := make([]string, 0, 16)
	out = append(out, v)
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	buf := make([]byte, 2+len(v))
	enc := make([]byte, base64.StdEncoding.EncodedLen(len(buf)))
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		n := e.EncodedLen(len(v))
		e.Encode(enc[:n], []byte(v))
		add(string(enc[:n]))
	}
	for _, e := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for off := 0; off < 3; off++ {
			// The characters of v's encoding, when v starts at byte offset off (mod 3) of a
			// stream, that depend only on v's bytes: the same whatever surrounds v.
			in := buf[:off+len(v)]
			clear(in[:off])
			copy(in[off:], v)
			e.Encode(enc, in)
			if lo, hi := (8*off+5)/6, 8*(off+len(v))/6; lo < hi {
				add(string(enc[lo:hi]))
			}
		}
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	add(jsonEscape(v, true, false))
	add(jsonEscape(v, false, false))
	add(jsonEscape(v, false, true))
	return out
}

// jsonEscape is v as written inside a JSON string literal, without the quotes: Go's encoding/json
// escaping (html adds \u003c, \u003e and \u0026), or with ascii every non-ASCII rune as a
// lower-case \uXXXX escape (surrogate pairs above U+FFFF), the way Python's json.dumps writes it.
func jsonEscape(v string, html, ascii bool) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(v)+8)
	u := func(r rune) { b = append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF]) }
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || html && (c == '<' || c == '>' || c == '&'):
				u(rune(c))
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			u(0xFFFD)
		case ascii && r > 0xFFFF:
			r -= 0x10000
			u(0xD800 + r>>10)
			u(0xDC00 + r&0x3FF)
		case ascii || r == 0x2028 || r == 0x2029:
			u(r)
		default:
			b = append(b, v[i:i+size]...)
		}
		i += size
	}
	return string(b)
}
