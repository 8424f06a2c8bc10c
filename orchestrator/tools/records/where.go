package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// MaxWhereTerms is the most terms one where may hold.
const MaxWhereTerms = 8

// forms says, per column type, which where terms it takes (for messages).
var forms = map[string]string{
	orchestrator.ColText:     `a string (substring or similar spelling), an array of strings (exactly one of them), or null (missing)`,
	orchestrator.ColTextList: `a string (an item by substring or similar spelling) or null (missing); exact values do not apply to an array column`,
	orchestrator.ColNumber:   `a number, an array of numbers (exactly one of them), {"gte": n, "lte": n}, or null`,
	orchestrator.ColDatetime: `an ISO timestamp, an array of them, {"gte": t, "lte": t}, or null`,
	orchestrator.ColBoolean:  `true, false, or null`,
	orchestrator.ColID:       `an id, an array of ids (exactly one of them), or null`,
}

// parseWhere checks a where object against the collection and returns its filters and every problem.
func parseWhere(c orchestrator.Collection, raw json.RawMessage) ([]orchestrator.RecordFilter, []string) {
	terms, err := decodeObject(raw, "where")
	if err != nil {
		return nil, []string{err.(*orchestrator.Error).Message}
	}
	var out []orchestrator.RecordFilter
	var problems []string
	if len(terms) > MaxWhereTerms {
		problems = append(problems, fmt.Sprintf("where has %d terms; at most %d", len(terms), MaxWhereTerms))
	}
	for _, name := range sortedKeys(terms) {
		col, ok := c.Column(name)
		if !ok {
			problems = append(problems, fmt.Sprintf("where: unknown column %q (the columns of %s are %s)", name, c.Name, strings.Join(c.ColumnNames(), ", ")))
			continue
		}
		f, problem := parseTerm(col, terms[name])
		if problem != "" {
			problems = append(problems, fmt.Sprintf("where %s (%s): %s; it takes %s", name, col.Type, problem, forms[col.Type]))
			continue
		}
		out = append(out, f)
	}
	return out, problems
}

// parseTerm reads one where term for col.
func parseTerm(col orchestrator.Column, raw json.RawMessage) (orchestrator.RecordFilter, string) {
	f := orchestrator.RecordFilter{Column: col.Name, Type: col.Type}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return f, "not a JSON value"
	}
	switch x := v.(type) {
	case nil:
		f.Op = orchestrator.FilterNull
		return f, ""
	case string:
		if col.Type == orchestrator.ColText || col.Type == orchestrator.ColTextList {
			if strings.TrimSpace(x) == "" {
				return f, "the string is empty"
			}
			f.Op, f.Text = orchestrator.FilterMatch, x
			return f, ""
		}
	case []any:
		if col.Type == orchestrator.ColTextList {
			return f, "got an array"
		}
		if col.Type == orchestrator.ColBoolean {
			return f, "got an array"
		}
		if len(x) == 0 || len(x) > 100 {
			return f, fmt.Sprintf("an array of values must hold 1 to 100 values, got %d", len(x))
		}
		f.Op = orchestrator.FilterIn
		for _, item := range x {
			nv, problem := normalizeValue(col, item)
			if problem != "" {
				return f, "an array item: " + problem
			}
			f.Values = append(f.Values, nv)
		}
		return f, ""
	case map[string]any:
		if col.Type != orchestrator.ColNumber && col.Type != orchestrator.ColDatetime {
			return f, "got an object ({gte, lte} applies to number and datetime columns)"
		}
		f.Op = orchestrator.FilterRange
		for k, bound := range x {
			if k != "gte" && k != "lte" {
				return f, fmt.Sprintf("unknown range key %q (use gte and lte)", k)
			}
			nv, problem := normalizeValue(col, bound)
			if problem != "" {
				return f, k + ": " + problem
			}
			if k == "gte" {
				f.Gte = nv
			} else {
				f.Lte = nv
			}
		}
		if f.Gte == nil && f.Lte == nil {
			return f, "a range needs gte, lte or both"
		}
		return f, ""
	}
	if col.Type == orchestrator.ColTextList {
		return f, "got " + describe(v)
	}
	nv, problem := normalizeValue(col, v)
	if problem != "" {
		return f, problem
	}
	f.Op, f.Values = orchestrator.FilterIn, []any{nv}
	return f, ""
}
