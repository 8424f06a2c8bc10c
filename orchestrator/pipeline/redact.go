// Package pipeline is the one path every tool result takes: filter, redaction, byte cap, trailer.
package pipeline

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
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
// bytes at each of the three byte offsets it can take inside a longer encoded stream; URL escaping
// (Go's query and path forms, Python's quote, JavaScript's encodeURIComponent); JSON string
// escaping (Go's, with and without HTML escaping, and the \uXXXX ASCII-only form). Overlapping
// matches merge into one marker. A Redactor is immutable and safe for concurrent use; a nil
// *Redactor redacts nothing.
type Redactor struct {
	values []string
	pats   []string // sorted by first 4 bytes, then longest first
	keys   []uint32 // first 4 bytes (little-endian) of each pattern, parallel to pats
	hshift uint32   // right shift that turns a multiplied 4-byte key into a table index
	bits   []uint64 // Bloom-style filter over the hashed first 4 bytes of each pattern
	minLen int      // the shortest pattern's length: the Wu-Manber window
	skip   []uint8  // Wu-Manber shift per hashed 4-byte block (see find)
}

// NewRedactor builds a Redactor for values; values shorter than MinSecretLen bytes and duplicates
// are ignored. The last few Redactors built are kept in memory (they are immutable), so building one
// for the same values again, as every call of a run does, costs a hash of the values.
func NewRedactor(values []string) *Redactor {
	return cached(nil, values, func() *Redactor { return build(nil, nil, values) })
}

// With returns a Redactor holding r's values and more; r is unchanged. Only the new values'
// encodings are computed.
func (r *Redactor) With(more ...string) *Redactor {
	if r == nil {
		return NewRedactor(more)
	}
	if len(more) == 0 {
		return r
	}
	return cached(r.values, more, func() *Redactor { return build(r.values, r.pats, more) })
}

// redactorCacheSize bounds the Redactors kept for reuse.
const redactorCacheSize = 64

var redactorCache struct {
	sync.Mutex
	m     map[[sha256.Size]byte]*Redactor
	order [][sha256.Size]byte
}

// cached returns the Redactor for the values known+more, building it on a miss.
func cached(known, more []string, build func() *Redactor) *Redactor {
	h := sha256.New()
	var n [8]byte
	for _, list := range [][]string{known, more} {
		for _, v := range list {
			binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
			h.Write(n[:])
			h.Write([]byte(v))
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	redactorCache.Lock()
	r, ok := redactorCache.m[key]
	redactorCache.Unlock()
	if ok {
		return r
	}
	r = build()
	redactorCache.Lock()
	defer redactorCache.Unlock()
	if redactorCache.m == nil {
		redactorCache.m = map[[sha256.Size]byte]*Redactor{}
	}
	if _, ok := redactorCache.m[key]; !ok {
		if len(redactorCache.order) >= redactorCacheSize {
			delete(redactorCache.m, redactorCache.order[0])
			redactorCache.order = redactorCache.order[1:]
		}
		redactorCache.m[key] = r
		redactorCache.order = append(redactorCache.order, key)
	}
	return r
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
	r.minLen = math.MaxInt
	for _, e := range es {
		r.minLen = min(r.minLen, len(e.pat))
	}
	window := min(r.minLen, maxWindow)
	size := 1 << 12
	for size < len(es)*(window-MinSecretLen+1)*4 && size < 1<<17 {
		size <<= 1
	}
	r.bits = make([]uint64, size/64)
	r.skip = make([]uint8, size)
	r.hshift = 32 - uint32(log2(size))
	// A block that ends no window of any pattern lets the scan jump a whole window minus a block.
	for i := range r.skip {
		r.skip[i] = uint8(window - MinSecretLen + 1)
	}
	for i, e := range es {
		r.pats[i], r.keys[i] = e.pat, e.key
		h := (e.key * hashMul) >> r.hshift
		r.bits[h>>6] |= 1 << (h & 63)
		// The block ending at offset j of the pattern's first window: the scan may move on by
		// window-1-j without passing a place where this pattern could start.
		for j := MinSecretLen - 1; j < window; j++ {
			h := (key4(e.pat, j-MinSecretLen+1) * hashMul) >> r.hshift
			r.skip[h] = min(r.skip[h], uint8(window-1-j))
		}
	}
	r.minLen = window
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

// mayStart reports whether some pattern may start with the 4-byte key k (Bloom filter: no false negatives).
func (r *Redactor) mayStart(k uint32) bool {
	h := (k * hashMul) >> r.hshift
	return r.bits[h>>6]&(1<<(h&63)) != 0
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
// Redact returns s with every registered value and encoding replaced by Marker. A string holding
// none is returned as is, without allocating.
func (r *Redactor) Redact(s string) string {
	if r == nil || len(r.pats) == 0 {
		return s
	}
	i, n := r.find(s, 0)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i >= 0 {
		end := i + n
		// Merge every match that starts inside this one and reaches further.
		for j := i + 1; j < end && j+MinSecretLen <= len(s); j++ {
			if k := key4(s, j); r.mayStart(k) {
				if m := r.matchAt(s, j, k); j+m > end {
					end = j + m
				}
			}
		}
		b.WriteString(s[last:i])
		b.WriteString(Marker)
		last = end
		i, n = r.find(s, end)
	}
	b.WriteString(s[last:])
	return b.String()
}

// The Wu-Manber window: capped so shifts fit a byte and the table stays small; below minWindow
// (a secret of a few bytes is registered) shifts are too short to pay, and find scans every position.
const (
	maxWindow = 32
	minWindow = 10
)

// findLinear is find for short windows: every position's first 4 bytes, rolled along s, go
// through the Bloom filter, and only a hit is checked against the patterns.
func (r *Redactor) findLinear(s string, from int) (int, int) {
	if from+MinSecretLen > len(s) {
		return -1, 0
	}
	bits, hshift := r.bits, r.hshift
	k := key4(s, from)
	for i := from; ; i++ {
		h := (k * hashMul) >> hshift
		if bits[h>>6]&(1<<(h&63)) != 0 {
			if n := r.matchAt(s, i, k); n > 0 {
				return i, n
			}
		}
		if i+MinSecretLen >= len(s) {
			return -1, 0
		}
		k = k>>8 | uint32(s[i+MinSecretLen])<<24
	}
}

// find returns the leftmost position at or after from where a pattern starts, and the length of
// the longest pattern there; -1 when there is none. It is Wu-Manber's scan: a window as long as
// the shortest pattern slides along s; the hashed 4-byte block at its end says how far the window
// can jump without passing the start of any pattern (often most of a window), and only where that
// shift is 0 is the window's start checked against the patterns, behind a Bloom filter on their
// first 4 bytes. Windows are visited left to right, so the first match found is the leftmost.
func (r *Redactor) find(s string, from int) (int, int) {
	if r.minLen < minWindow {
		return r.findLinear(s, from)
	}
	w := r.minLen
	skip, bits, hshift := r.skip, r.bits, r.hshift
	for p := from + w - 1; p < len(s); {
		h := (key4(s, p-MinSecretLen+1) * hashMul) >> hshift
		if d := skip[h]; d > 0 {
			p += int(d)
			continue
		}
		start := p - w + 1
		k := key4(s, start)
		h = (k * hashMul) >> hshift
		if bits[h>>6]&(1<<(h&63)) != 0 {
			if n := r.matchAt(s, start, k); n > 0 {
				return start, n
			}
		}
		p++
	}
	return -1, 0
}

// Encodings returns the forms of v a Redactor looks for: v itself, its whole base64 encodings
// (standard and URL-safe, padded and raw), its base64 cores (both alphabets, at byte offsets 0, 1
// and 2 of a longer stream), URL escaping (Go's query and path escaping, Python's quote, and
// JavaScript's encodeURIComponent, all with upper-case hex), and JSON escaping (with and without HTML
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
	add(percentEscape(v, "-_.~"))      // RFC 3986 unreserved only, space as %20 (Python quote(safe=""))
	add(percentEscape(v, "-_.~/"))     // Python's urllib.parse.quote default
	add(percentEscape(v, "-_.!~*'()")) // JavaScript's encodeURIComponent
	add(jsonEscape(v, true, false))
	add(jsonEscape(v, false, false))
	add(jsonEscape(v, false, true))
	return out
}

// percentEscape escapes every byte of v but ASCII letters, digits and the bytes in keep as %XX.
func percentEscape(v, keep string) string {
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(v)*3)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(keep, c) >= 0 {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return string(b)
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
