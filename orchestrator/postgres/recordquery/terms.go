package recordquery

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
)

// This file holds the index terms of records (migration 0202): the lexemes of records.terms that
// let where terms find their candidate rows through the records_terms index, and the narrowing
// groups of a checked query. Narrowing never decides a match: the exact where test still runs on
// the candidates, so a group only has to hold for every record the test accepts.

// Limits of index terms.
const (
	// maxTermValue is the longest word or exact value (in bytes) kept as a lexeme; a longer word
	// marks its column unindexed, a longer exact value is simply not kept (no query narrows by it).
	maxTermValue = 200
	// maxTermBytes bounds the lexemes of one record (a tsvector holds at most 1 MB); words past it
	// mark their column unindexed.
	maxTermBytes = 256 << 10
	// maxHolders is the most stored words one word of a where term may expand to, and maxKeys the
	// most stored keys a range may hold; a term over either does not narrow (the exact test reads it).
	maxHolders = 100
	maxKeys    = 100
)

// collectionKey is the short key that qualifies a collection's lexemes: the tail of its random id.
// Two collections sharing a key only share candidates, which the collection test drops.
func collectionKey(id string) string {
	if len(id) > 6 {
		return id[len(id)-6:]
	}
	return id
}

// termPrefix is the start of every lexeme of a column: "<collection key>:<column>:".
func termPrefix(collectionID, column string) string {
	return collectionKey(collectionID) + ":" + column + ":"
}

// termWords splits s into runs of letters and digits, as written (case kept).
func termWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// numberKey is the order-preserving key of a number: its IEEE bits with the sign flipped (negative
// numbers inverted), so key order is number order; 0 and -0 share one key.
func numberKey(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	u := math.Float64bits(f)
	if u>>63 == 1 {
		return ^u
	}
	return u | 1<<63
}

// timeKey is the order-preserving key of an instant: its Unix microseconds with the sign flipped.
func timeKey(t time.Time) uint64 { return uint64(t.UnixMicro()) ^ 1<<63 }

// hexKey writes a key as 16 lower-case hex digits.
func hexKey(k uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], k)
	return hex.EncodeToString(b[:])
}

// orderKey returns the key of a stored number (float64) or datetime (a DatetimeLayout string).
func orderKey(colType string, v any) (uint64, bool) {
	switch colType {
	case orchestrator.ColNumber:
		if f, ok := v.(float64); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return numberKey(f), true
		}
	case orchestrator.ColDatetime:
		if s, ok := v.(string); ok {
			if t, err := time.Parse(orchestrator.DatetimeLayout, s); err == nil && t.Format(orchestrator.DatetimeLayout) == s {
				return timeKey(t), true
			}
		}
	}
	return 0, false
}

// Index is what the store writes to index one record.
type Index struct {
	Lexemes []string // records.terms
	Words   []string // the words of its text values as written, sorted: record_vocab
	Keys    []string // "<column>:<hex key>" of its numbers and datetimes, sorted: record_keys
}

// Terms returns the index of a record of collection c holding data; the store writes it with
// every record.
func Terms(c orchestrator.Collection, data map[string]any) Index {
	var ix Index
	size := 0
	words := map[string]bool{}
	add := func(lex string) { ix.Lexemes = append(ix.Lexemes, lex); size += len(lex) + 4 }
	for _, col := range c.Columns {
		v, ok := data[col.Name]
		if !ok || v == nil {
			continue
		}
		p := termPrefix(c.ID, col.Name)
		unindexed := false
		addWords := func(s string) {
			for _, w := range termWords(s) {
				if len(w) > maxTermValue || size+len(p)+len(w)+5 > maxTermBytes {
					unindexed = true
					continue
				}
				add(p + "w" + w)
				words[w] = true
			}
		}
		switch col.Type {
		case orchestrator.ColText:
			s, ok := v.(string)
			if !ok {
				unindexed = true
				break
			}
			if lex, ok := exactLexeme(p, col.Type, s); ok {
				add(lex)
			}
			addWords(s)
		case orchestrator.ColTextList:
			items, ok := v.([]any)
			if !ok {
				unindexed = true
				break
			}
			for _, it := range items {
				if s, ok := it.(string); ok {
					addWords(s)
				} else {
					unindexed = true
				}
			}
		default:
			if lex, ok := exactLexeme(p, col.Type, v); ok {
				add(lex)
				if k, ok := orderKey(col.Type, v); ok {
					ix.Keys = append(ix.Keys, col.Name+":"+hexKey(k))
				}
			} else {
				unindexed = true
			}
		}
		if unindexed {
			add(p + "~")
		}
	}
	ix.Words = make([]string, 0, len(words))
	for w := range words {
		ix.Words = append(ix.Words, w)
	}
	sort.Strings(ix.Words)
	sort.Strings(ix.Keys)
	if ix.Lexemes == nil {
		ix.Lexemes = []string{}
	}
	if ix.Keys == nil {
		ix.Keys = []string{}
	}
	return ix
}

// tsLexeme quotes a lexeme for tsquery input.
func tsLexeme(lex string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(lex) + "'"
}

// group is a narrowing group of column prefix p: its lexemes, and the column's unindexed marker.
func group(p string, lexemes []string) []string {
	return append(lexemes, p+"~")
}

// tsGroup is a narrowing group as tsquery input: any one of its lexemes.
func tsGroup(lexemes []string) string {
	q := make([]string, len(lexemes))
	for i, l := range lexemes {
		q[i] = tsLexeme(l)
	}
	return strings.Join(q, " | ")
}

// exactLexeme is the lexeme a stored value equal to v carries; false when none does.
func exactLexeme(p, colType string, v any) (string, bool) {
	switch colType {
	case orchestrator.ColText, orchestrator.ColID:
		if s, ok := v.(string); ok && len(s) <= maxTermValue {
			return p + "=" + s, true
		}
	case orchestrator.ColBoolean:
		if b, ok := v.(bool); ok {
			return p + "=" + strconv.FormatBool(b), true
		}
	case orchestrator.ColNumber, orchestrator.ColDatetime:
		if k, ok := orderKey(colType, v); ok {
			return p + "#" + hexKey(k), true
		}
	}
	return "", false
}

// narrowableWord reports whether a word of a where term (or one of its spellings) can be looked up
// among the stored words: 3 or more ASCII letters and digits, so the trigram index finds its
// holders and case folding agrees with the exact ILIKE test.
func narrowableWord(w string) bool {
	if utf8.RuneCountInString(w) < 3 {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// isASCII reports whether s holds ASCII characters only.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
