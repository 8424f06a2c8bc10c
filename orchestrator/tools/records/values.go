package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
)

// Value limits of a record.
const (
	MaxTextChars  = 20000 // one text value
	MaxItemChars  = 2000  // one item of a text[] value
	MaxItems      = 200   // items of a text[] value
	MaxIDBytes    = 200   // one id value
	MaxBodyColumn = 64    // columns in one body
)

// dateLayouts are the datetime forms accepted, most precise first.
var dateLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}

// parseDatetime reads an ISO 8601 timestamp (an offset, or UTC when none is given) or a date.
func parseDatetime(s string) (time.Time, bool) {
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// normalize checks one non-null JSON value against a column and returns it as stored.
func normalize(col orchestrator.Column, raw json.RawMessage) (any, string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Sprintf("%s: not a JSON value", col.Name)
	}
	return normalizeValue(col, v)
}

// normalizeValue checks a decoded value (numbers as json.Number or float64) against a column.
func normalizeValue(col orchestrator.Column, v any) (any, string) {
	want := func(what string) (any, string) {
		return nil, fmt.Sprintf("%s (%s) must be %s, got %s", col.Name, col.Type, what, describe(v))
	}
	switch col.Type {
	case orchestrator.ColText:
		s, ok := v.(string)
		if !ok {
			return want("a string")
		}
		if n := utf8.RuneCountInString(s); n > MaxTextChars {
			return nil, fmt.Sprintf("%s (text) is %d characters; at most %d", col.Name, n, MaxTextChars)
		}
		return s, ""
	case orchestrator.ColNumber:
		f, ok := number(v)
		if !ok {
			return want("a number")
		}
		return f, ""
	case orchestrator.ColDatetime:
		s, ok := v.(string)
		if !ok {
			return want("an ISO 8601 timestamp such as 2026-03-01T09:30:00Z")
		}
		t, ok := parseDatetime(s)
		if !ok {
			return nil, fmt.Sprintf("%s (datetime) must be an ISO 8601 timestamp such as 2026-03-01T09:30:00Z or a date such as 2026-03-01, got %q", col.Name, s)
		}
		return t.Format(orchestrator.DatetimeLayout), ""
	case orchestrator.ColBoolean:
		b, ok := v.(bool)
		if !ok {
			return want("true or false")
		}
		return b, ""
	case orchestrator.ColID:
		s, ok := v.(string)
		if !ok {
			return want("an id string")
		}
		if s == "" || len(s) > MaxIDBytes || strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return nil, fmt.Sprintf("%s (id) must be 1 to %d bytes without spaces, got %q", col.Name, MaxIDBytes, clip(s))
		}
		return s, ""
	case orchestrator.ColTextList:
		items, ok := v.([]any)
		if !ok {
			return want("an array of strings")
		}
		if len(items) > MaxItems {
			return nil, fmt.Sprintf("%s (text[]) has %d items; at most %d", col.Name, len(items), MaxItems)
		}
		out := make([]any, 0, len(items))
		for i, it := range items {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Sprintf("%s (text[]) item %d must be a string, got %s", col.Name, i, describe(it))
			}
			if n := utf8.RuneCountInString(s); n > MaxItemChars {
				return nil, fmt.Sprintf("%s (text[]) item %d is %d characters; at most %d", col.Name, i, n, MaxItemChars)
			}
			out = append(out, s)
		}
		return out, ""
	}
	return nil, fmt.Sprintf("%s: unknown column type %q", col.Name, col.Type)
}

// number reads a finite JSON number.
func number(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, false
		}
	case float64:
		f = n
	default:
		return 0, false
	}
	return f, !math.IsInf(f, 0) && !math.IsNaN(f)
}

// describe names a decoded JSON value for a message.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", clip(x))
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case json.Number, float64:
		return fmt.Sprintf("the number %v", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func clip(s string) string {
	if utf8.RuneCountInString(s) > 60 {
		return string([]rune(s)[:60]) + "…"
	}
	return s
}

// decodeObject reads raw as a JSON object of raw values; what names it in the message.
func decodeObject(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil || m == nil && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "%s must be a JSON object of column: value", what)
	}
	return m, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isNull reports whether raw is JSON null.
func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// checkBody checks a record_add body (add) or a record_update body (!add) against the collection,
// collecting every problem. It returns the values to set and the columns to clear.
func checkBody(c orchestrator.Collection, body map[string]json.RawMessage, add bool) (map[string]any, []string, []string) {
	set := map[string]any{}
	var clear, problems []string
	if len(body) > MaxBodyColumn {
		problems = append(problems, fmt.Sprintf("body has %d columns; at most %d", len(body), MaxBodyColumn))
	}
	for _, name := range sortedKeys(body) {
		col, ok := c.Column(name)
		if !ok {
			problems = append(problems, fmt.Sprintf("unknown column %q (the columns of %s are %s)", name, c.Name, strings.Join(c.ColumnNames(), ", ")))
			continue
		}
		raw := body[name]
		if isNull(raw) {
			if col.Required {
				problems = append(problems, fmt.Sprintf("%s is required and cannot be null", name))
			} else if !add {
				clear = append(clear, name)
			}
			continue
		}
		v, problem := normalize(col, raw)
		if problem != "" {
			problems = append(problems, problem)
			continue
		}
		if col.Type == orchestrator.ColTextList && len(v.([]any)) == 0 && !col.Required {
			if !add {
				clear = append(clear, name)
			}
			continue // an empty optional list is a missing value
		}
		set[name] = v
	}
	if add {
		for _, col := range c.Columns {
			if _, present := body[col.Name]; col.Required && !present {
				problems = append(problems, fmt.Sprintf("%s (%s) is required", col.Name, col.Type))
			}
		}
	}
	return set, clear, problems
}

// write prepares the stored form of a record's values.
func write(c orchestrator.Collection, data map[string]any) orchestrator.RecordWrite {
	w := orchestrator.RecordWrite{Data: data}
	var words, texts []string
	for _, col := range c.Columns {
		v, ok := data[col.Name]
		if !ok {
			continue
		}
		switch x := v.(type) {
		case string:
			words = append(words, x)
			if col.Type == orchestrator.ColText {
				texts = append(texts, x)
			}
		case float64:
			words = append(words, strconv.FormatFloat(x, 'f', -1, 64))
		case []any:
			for _, it := range x {
				if s, ok := it.(string); ok {
					words = append(words, s)
					texts = append(texts, s)
				}
			}
		}
		if col.Unique {
			u := uniqueForm(v)
			w.UniqueValue = &u
		}
	}
	w.SearchText = strings.Join(words, "\n")
	w.Words = orchestrator.SpellingWords(strings.Join(texts, "\n"))
	return w
}

// uniqueForm is the text a unique value is compared by.
func uniqueForm(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// equalValue reports whether two stored values are the same.
func equalValue(a, b any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}
