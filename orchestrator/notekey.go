package orchestrator

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The limits of notes and memory, one definition for the tools that write them and the operator
// API that seeds them.

// NoteMaxChars is the most characters one note may hold.
const NoteMaxChars = 200000

// NoteMaxKeyBytes is the longest note key.
const NoteMaxKeyBytes = 200

// ValidNoteKey checks a note key: a .md file name, no folders. An error names a valid key to use
// instead (SuggestNoteKey).
func ValidNoteKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("key is empty; give the note's file name, e.g. plan.md")
	case strings.ContainsAny(key, `/\`):
		return fmt.Errorf("key %q contains a slash; notes have no folders: use a file name such as %s", key, SuggestNoteKey(key))
	case !strings.HasSuffix(key, ".md") || key == ".md":
		return fmt.Errorf("key %q must be a file name ending in .md, e.g. %s", key, SuggestNoteKey(key))
	case strings.HasPrefix(key, "."):
		return fmt.Errorf("key %q must not start with a dot, e.g. %s", key, SuggestNoteKey(key))
	case len(key) > NoteMaxKeyBytes:
		return fmt.Errorf("key is %d bytes; at most %d, e.g. %s", len(key), NoteMaxKeyBytes, SuggestNoteKey(key))
	case !utf8.ValidString(key):
		return fmt.Errorf("key is not valid UTF-8, e.g. %s", SuggestNoteKey(key))
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return fmt.Errorf("key %q contains a control character, e.g. %s", key, SuggestNoteKey(key))
		}
	}
	return nil
}

// SuggestNoteKey turns a refused key into a valid one: slashes become dashes, control characters and
// invalid UTF-8 go, leading dots and dashes go, .md ends it, and it fits NoteMaxKeyBytes.
func SuggestNoteKey(key string) string {
	k := strings.ToValidUTF8(key, "")
	k = strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\':
			return '-'
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, k)
	base := strings.TrimLeft(strings.TrimSuffix(strings.TrimSuffix(k, "."), ".md"), ".-")
	for len(base) > NoteMaxKeyBytes-len(".md") {
		_, size := utf8.DecodeLastRuneInString(base)
		base = base[:len(base)-size]
	}
	if strings.TrimSpace(base) == "" {
		base = "note"
	}
	return base + ".md"
}

// NoteProblems lists what is wrong with a note's key and content (none: it may be written).
func NoteProblems(key, content string) []string {
	var problems []string
	if err := ValidNoteKey(key); err != nil {
		problems = append(problems, err.Error())
	}
	if n := utf8.RuneCountInString(content); n > NoteMaxChars {
		problems = append(problems, fmt.Sprintf("content is %d characters; a note holds at most %d: split it into several notes", n, NoteMaxChars))
	}
	if !utf8.ValidString(content) {
		problems = append(problems, "content is not valid UTF-8")
	}
	return problems
}

// CheckMemory refuses (EINVALID) a memory content past MemoryMaxChars or not valid UTF-8.
func CheckMemory(content string) error {
	if n := utf8.RuneCountInString(content); n > MemoryMaxChars {
		return Errorf(EINVALID, "memory not written: content is %d characters; memory holds at most %d, so cut %d (keep what future runs need, move details into notes)",
			n, MemoryMaxChars, n-MemoryMaxChars)
	}
	if !utf8.ValidString(content) {
		return Errorf(EINVALID, "memory not written: content is not valid UTF-8")
	}
	return nil
}
