package recordquery

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

// Querier runs the lookup that prepares a query's where terms (a pool, a connection, a
// transaction, or the store's batch that opens a snapshot with it).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// similarSpelling is the least trigram similarity between a term's word and a stored word for the
// two to count as similar spelling.
const similarSpelling = 0.45

// oneEditLetters is the shortest term word (in characters) that also matches every stored word
// within one edit of it (a letter inserted, deleted, substituted, or two neighbours swapped): a
// short word scores too low a trigram similarity for one wrong letter to pass similarSpelling.
const oneEditLetters = 4

// NeedsLookup reports whether preparing the query's where terms reads the database: a match term
// with a word of 3 characters or more, or a range, over one collection.
func NeedsLookup(q orchestrator.RecordQuery) bool {
	if len(q.Collections) != 1 {
		return false
	}
	for _, f := range q.Where {
		if f.Op == orchestrator.FilterRange {
			return true
		}
		if f.Op == orchestrator.FilterMatch {
			for _, t := range orchestrator.TermTokens(f.Text) {
				if len([]rune(t)) >= 3 {
					return true
				}
			}
		}
	}
	return false
}

// Resolve prepares the where terms of a query over one collection, in at most one query: for
// match terms, the words of the collection's vocabulary spelled like each word (3 characters or
// more) of the term: of similar trigrams, or within one edit of a word of 4 or more (Spelling); for every term that can, the groups of index lexemes that narrow
// it (Narrow): the exact values of an in term, the stored keys within a range, and the stored
// words holding each word of a match term or one of its spellings.
// It reads the database through db, once, when NeedsLookup.
func Resolve(ctx context.Context, db Querier, q orchestrator.RecordQuery) (orchestrator.RecordQuery, error) {
	if len(q.Collections) != 1 || len(q.Where) == 0 {
		return q, nil
	}
	var collectionID string
	for id := range q.Collections {
		collectionID = id
	}
	tokens := []string{}
	var editWords, editPatterns []string
	var rangeTerms []int32
	var los, his []string
	for i, f := range q.Where {
		switch f.Op {
		case orchestrator.FilterMatch:
			for _, t := range orchestrator.TermTokens(f.Text) {
				if len([]rune(t)) >= 3 {
					tokens = append(tokens, t)
				}
				if len([]rune(t)) >= oneEditLetters {
					for _, p := range oneEditPatterns(t) {
						editWords, editPatterns = append(editWords, t), append(editPatterns, p)
					}
				}
			}
		case orchestrator.FilterRange:
			lo, hi := uint64(0), uint64(math.MaxUint64)
			ok := true
			if f.Gte != nil {
				lo, ok = orderKey(f.Type, f.Gte)
			}
			if f.Lte != nil && ok {
				hi, ok = orderKey(f.Type, f.Lte)
			}
			if ok {
				rangeTerms = append(rangeTerms, int32(i))
				los = append(los, f.Column+":"+hexKey(lo))
				his = append(his, f.Column+":"+hexKey(hi))
			}
		}
	}
	similar := map[string][]string{}
	holders := map[string][]string{}
	keys := map[int][]string{}
	if NeedsLookup(q) {
		// e: the stored words within one edit of each word of 4 letters or more (LIKE patterns the
		// trigram index looks up); s: those and the words of similar trigrams; h: up to maxHolders+1 stored words holding each
		// word or spelling the trigram index can look up (ASCII letters and digits); k: up to
		// maxKeys+1 stored keys within each range.
		rows, err := db.Query(ctx, `WITH t AS (SELECT DISTINCT unnest($2::text[]) AS t),
			e AS (SELECT e.t, w.word FROM unnest($9::text[], $10::text[]) AS e(t, p)
				JOIN record_words w ON w.collection_id = $1 AND w.word LIKE e.p AND w.word <> e.t),
			s AS (SELECT t.t, w.word FROM t JOIN record_words w ON w.collection_id = $1 AND w.word % t.t AND similarity(w.word, t.t) >= $3 AND w.word <> t.t
				UNION SELECT e.t, e.word FROM e),
			a AS (SELECT t AS a FROM t UNION SELECT word FROM s)
			SELECT 's', s.t, s.word FROM s
			UNION ALL
			SELECT 'h', a.a, h.word FROM a CROSS JOIN LATERAL (SELECT v.word FROM record_vocab v
				WHERE v.collection_id = $1 AND v.word ILIKE '%' || a.a || '%' LIMIT $4) h
			WHERE a.a ~ '^[a-z0-9]{3,}$'
			UNION ALL
			SELECT 'k', r.i::text, k.key FROM unnest($5::int[], $6::text[], $7::text[]) AS r(i, lo, hi) CROSS JOIN LATERAL (SELECT key FROM record_keys
				WHERE collection_id = $1 AND key >= r.lo COLLATE "C" AND key <= r.hi COLLATE "C" ORDER BY key LIMIT $8) k
			ORDER BY 1, 2, 3`, collectionID, tokens, similarSpelling, maxHolders+1, rangeTerms, los, his, maxKeys+1, editWords, editPatterns)
		if err != nil {
			return q, fmt.Errorf("prepare where terms: %w", err)
		}
		for rows.Next() {
			var kind, t, w string
			if err := rows.Scan(&kind, &t, &w); err != nil {
				rows.Close()
				return q, fmt.Errorf("prepare where terms: %w", err)
			}
			switch kind {
			case "s":
				similar[t] = append(similar[t], w)
			case "h":
				holders[t] = append(holders[t], w)
			default:
				i, _ := strconv.Atoi(t)
				keys[i] = append(keys[i], w)
			}
		}
		if err := rows.Err(); err != nil {
			return q, fmt.Errorf("prepare where terms: %w", err)
		}
	}
	where := make([]orchestrator.RecordFilter, len(q.Where))
	copy(where, q.Where)
	for i, f := range where {
		p := termPrefix(collectionID, f.Column)
		f.Narrow = nil
		switch f.Op {
		case orchestrator.FilterIn:
			var lexemes []string
			for _, v := range f.Values {
				lex, ok := exactLexeme(p, f.Type, v)
				if !ok {
					lexemes = nil
					break
				}
				lexemes = append(lexemes, lex)
			}
			if lexemes != nil {
				f.Narrow = [][]string{group(p, lexemes)}
			}
		case orchestrator.FilterRange:
			if ks := keys[i]; slices.Contains(rangeTerms, int32(i)) && len(ks) <= maxKeys {
				lexemes := make([]string, len(ks))
				for j, k := range ks {
					lexemes[j] = p + "#" + strings.TrimPrefix(k, f.Column+":")
				}
				f.Narrow = [][]string{group(p, lexemes)}
			}
		case orchestrator.FilterMatch:
			// Only an ASCII term narrows: then its words and the stored words holding them fold
			// case the same way in Go and in the exact ILIKE test.
			ascii := isASCII(f.Text)
			f.Spelling = map[string][]string{}
			for _, t := range orchestrator.TermTokens(f.Text) {
				f.Spelling[t] = similar[t]
				if hs, ok := tokenHolders(t, similar[t], holders); ok && ascii {
					lexemes := make([]string, len(hs))
					for j, h := range hs {
						lexemes[j] = p + "w" + h
					}
					f.Narrow = append(f.Narrow, group(p, lexemes))
				}
			}
		}
		where[i] = f
	}
	q.Where = where
	return q, nil
}

// tokenHolders returns the stored words holding a term word or one of its spellings, sorted and
// distinct; false when a spelling cannot be looked up or is held by too many words to narrow.
func tokenHolders(t string, spellings []string, holders map[string][]string) ([]string, bool) {
	seen := map[string]bool{}
	var out []string
	for _, a := range append([]string{t}, spellings...) {
		if !narrowableWord(a) || len(holders[a]) > maxHolders {
			return nil, false
		}
		for _, h := range holders[a] {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	sort.Strings(out)
	return out, true
}

// oneEditPatterns returns LIKE patterns that together match exactly the words within one edit of
// w (w itself too): a letter substituted or inserted (one _), deleted, or two neighbours swapped.
// Term words hold letters and digits only, so nothing in them needs escaping.
func oneEditPatterns(w string) []string {
	r := []rune(w)
	seen := map[string]bool{}
	var out []string
	add := func(parts ...string) {
		if p := strings.Join(parts, ""); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for i := 0; i <= len(r); i++ {
		add(string(r[:i]), "_", string(r[i:])) // inserted
		if i < len(r) {
			add(string(r[:i]), "_", string(r[i+1:])) // substituted
			add(string(r[:i]), string(r[i+1:]))      // deleted
		}
		if i+1 < len(r) && r[i] != r[i+1] {
			add(string(r[:i]), string(r[i+1]), string(r[i]), string(r[i+2:])) // swapped
		}
	}
	return out
}
