package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// NULError is the EINVALID error of a text field holding a NUL character (U+0000), which no
// command argument, environment variable or PostgreSQL text can carry; Fields names the field.
func NULError(field string) *Error {
	e := Errorf(EINVALID, "%s holds a NUL character (\\u0000), which no stored text, command argument or environment variable can carry; remove it", field)
	e.Fields = map[string]any{"field": field}
	return e
}

// CheckNUL refuses s with NULError(field) when it holds a NUL character.
func CheckNUL(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return NULError(field)
	}
	return nil
}

// ControlChar returns the first control character of s (C0, DEL or C1), for a name, where none is
// ever valid.
func ControlChar(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsControl(r) {
			return r, true
		}
	}
	return 0, false
}

// nulEscape is how a NUL character appears inside a JSON string.
var nulEscape = []byte(`\u0000`)

// NULPath returns the JSON path (name, arguments.command, items[2].text; a key that is not a plain
// word is quoted; "" for doc itself) of the first string of doc, key or value, that holds a NUL
// character, and whether there is one. doc is read as JSON; what does not parse is left to the caller's decoder,
// so a malformed doc reports none.
func NULPath(doc []byte) (string, bool) {
	if !bytes.Contains(doc, nulEscape) {
		return "", false // raw control characters cannot stand in a valid JSON string
	}
	type frame struct {
		object    bool
		expectKey bool
		key       string
		index     int
	}
	var stack []frame
	path := func(extraKey *string) string {
		var b strings.Builder
		segments := stack
		for i, f := range segments {
			switch {
			case !f.object:
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			case i == len(segments)-1 && extraKey != nil:
				writeKey(&b, *extraKey)
			default:
				writeKey(&b, f.key)
			}
		}
		return b.String()
	}
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].expectKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{object: true, expectKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return "", false
				}
				valueDone()
			}
			continue
		case string:
			top := len(stack) - 1
			if top >= 0 && stack[top].object && stack[top].expectKey {
				if strings.IndexByte(v, 0) >= 0 {
					return path(&v), true
				}
				stack[top].key, stack[top].expectKey = v, false
				continue
			}
			if strings.IndexByte(v, 0) >= 0 {
				return path(nil), true
			}
		}
		if len(stack) == 0 {
			return "", false
		}
		valueDone()
	}
}

// writeKey appends one object key to a path: a plain word after a dot, anything else quoted.
func writeKey(b *strings.Builder, key string) {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		fmt.Fprintf(b, "[%s]", strconv.QuoteToASCII(key))
		return
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
}
