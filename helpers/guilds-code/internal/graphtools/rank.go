package graphtools

import (
	"strings"
	"unicode/utf8"
)

// evidence is what a code_find hit matched.
type evidence uint8

const (
	byExactName evidence = 1 << iota // the question is the symbol's name
	byName                           // a word of its name (or its type's name)
	byDoc                            // a word of its doc comment
	byPath                           // a word of its file's path
)

// String lists the evidence, strongest first: "name, doc".
func (e evidence) String() string {
	var parts []string
	if e&(byExactName|byName) != 0 {
		parts = append(parts, "name")
	}
	if e&byDoc != 0 {
		parts = append(parts, "doc")
	}
	if e&byPath != 0 {
		parts = append(parts, "path")
	}
	return strings.Join(parts, ", ")
}

// matchScore scores a symbol's name, container and doc line against the question's words (lower
// case) and their stems: a word of the name counts most, a part of the name or a word of its
// type's name less, a word of its doc comment least; the sum is scaled by how much of the question
// the symbol covers, so a hit on every word outranks many hits on one. Each text is read once.
func matchScore(qwords, qstems []string, name, container, doc string) (float64, evidence) {
	if len(qstems) > 64 {
		qstems, qwords = qstems[:64], qwords[:64]
	}
	inName, inContainer, inDoc := stemHits(name, qstems), uint64(0), uint64(0)
	if container != "" {
		inContainer = stemHits(container, qstems)
	}
	if doc != "" {
		inDoc = stemHits(doc, qstems)
	}
	var sc float64
	var why evidence
	covered := 0
	for i := range qstems {
		bit := uint64(1) << i
		hit := true
		switch {
		case inName&bit != 0:
			sc += 3
			why |= byName
		case len(qstems[i]) >= 3 && containsFold(name, qwords[i]):
			sc += 2
			why |= byName
		case inContainer&bit != 0:
			sc += 1.5
			why |= byName
		default:
			hit = false
		}
		if inDoc&bit != 0 {
			sc++
			why |= byDoc
			hit = true
		}
		if hit {
			covered++
		}
	}
	if sc == 0 {
		return 0, 0
	}
	if n := len(qstems); n > 1 {
		sc *= 0.5 + float64(covered)/float64(n)
	}
	return sc, why
}

// stemHits is the set (bit i for qstems[i]) of the stems that some word of s has, in one pass over s.
func stemHits(s string, qstems []string) uint64 {
	var hits uint64
	eachWord(s, func(w string) bool {
		n := stemLen(w)
		for i, q := range qstems {
			if n == len(q) && equalFoldASCII(w[:n], q) {
				hits |= 1 << i
			}
		}
		return false
	})
	return hits
}

// hasStem reports whether one of the words of s (split as words splits them) has the stem q (lower case).
func hasStem(s, q string) bool {
	return eachWord(s, func(w string) bool { return len(w) >= len(q) && stemLen(w) == len(q) && equalFoldASCII(w[:len(q)], q) })
}

// equalFoldASCII is strings.EqualFold for a lower-case ASCII b.
func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		c := a[i]
		if c >= utf8.RuneSelf {
			return strings.EqualFold(a, b)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// stemLen is the length of w's stem: w without its inflection (plural s or es, ies and y, ed, ing,
// er, a final e), so weigh, weighs, weighed, weighing and weigher share one. The stem is always a
// prefix of the word, so finding it allocates nothing; a word with other than ASCII letters is its own stem.
func stemLen(w string) int {
	n := len(w)
	at := func(i int) byte {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c
	}
	for i := 0; i < n; i++ {
		if c := at(i); c < 'a' || c > 'z' {
			return n
		}
	}
	ends := func(suffix string) bool {
		if n < len(suffix) {
			return false
		}
		for i := 0; i < len(suffix); i++ {
			if at(n-len(suffix)+i) != suffix[i] {
				return false
			}
		}
		return true
	}
	switch {
	case n > 4 && ends("ies"):
		n -= 3
	case n > 4 && ends("sses"):
		n -= 2
	case n > 3 && (ends("xes") || ends("ches") || ends("shes") || ends("zes")):
		n -= 2
	case n > 3 && ends("s") && !ends("ss") && !ends("us") && !ends("is"):
		n--
	}
	switch {
	case n > 5 && ends("ing"):
		n -= 3
	case n > 4 && ends("ed"):
		n -= 2
	case n > 5 && ends("er"):
		n -= 2
	}
	switch {
	case n > 3 && ends("e"):
		n--
	case n > 3 && ends("y"):
		n--
	}
	return n
}
