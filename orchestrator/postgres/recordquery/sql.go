// Package recordquery compiles checked record queries to SQL over the records table: the index
// terms a record is written with (records.terms, migration 0202), the lookup that prepares a
// query's where terms (Resolve), and the query's WHERE and ORDER BY.
package recordquery

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// Where returns the WHERE clause (over records r) and its arguments for a checked query.
// Column names come from the collection's declaration and are quoted as SQL literals.
func Where(q orchestrator.RecordQuery) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	ids := make([]string, 0, len(q.Collections))
	for id := range q.Collections {
		ids = append(ids, id)
	}
	var conds []string
	if len(ids) == 1 {
		conds = append(conds, "r.collection_id = "+arg(ids[0]))
	} else {
		conds = append(conds, "r.collection_id = ANY("+arg(ids)+"::text[])")
	}
	conds = append(conds, "r.deleted_at IS NULL")
	if q.Search != "" {
		if q.Substring {
			conds = append(conds, "r.search_text ILIKE "+arg(likePattern(q.Search)))
		} else {
			conds = append(conds, "r.search @@ websearch_to_tsquery('simple', "+arg(q.Search)+")")
		}
	}
	if q.Since != nil {
		conds = append(conds, "r.updated_at > "+arg(*q.Since))
	}
	// The index narrows the rows: one condition per group, which the index intersects.
	for _, f := range q.Where {
		for _, g := range f.Narrow {
			conds = append(conds, "r.terms @@ "+arg(tsGroup(g))+"::tsquery")
		}
	}
	for _, f := range q.Where {
		col := quoteLiteral(f.Column)
		switch f.Op {
		case orchestrator.FilterNull:
			conds = append(conds, fmt.Sprintf("(NOT r.data ? %s OR r.data->%s = '[]'::jsonb)", col, col))
		case orchestrator.FilterMatch:
			conds = append(conds, matchSQL(f, col, arg))
		case orchestrator.FilterIn:
			var ors []string
			for _, v := range f.Values {
				doc, _ := json.Marshal(map[string]any{f.Column: v})
				ors = append(ors, "r.data @> "+arg(string(doc))+"::jsonb")
			}
			conds = append(conds, "("+strings.Join(ors, " OR ")+")")
		case orchestrator.FilterRange:
			expr := fmt.Sprintf("(r.data->>%s)", col)
			if f.Type == orchestrator.ColNumber {
				expr = fmt.Sprintf("(CASE jsonb_typeof(r.data->%s) WHEN 'number' THEN (r.data->>%s)::numeric END)", col, col)
			}
			if f.Gte != nil {
				conds = append(conds, expr+" >= "+arg(f.Gte))
			}
			if f.Lte != nil {
				conds = append(conds, expr+" <= "+arg(f.Lte))
			}
		}
	}
	return strings.Join(conds, " AND "), args
}

// matchSQL is a where term matching text, or an item of a text[] column, by substring or similar
// spelling: the whole term as a substring, or each of its words as a substring or as one of the
// collection's words spelled like it (f.Spelling, from Resolve). Unless the index terms
// narrow the term (f.Narrow), a whole-record test lets the trigram index narrow the rows before
// the column test decides.
func matchSQL(f orchestrator.RecordFilter, col string, arg func(any) string) string {
	whole := arg(likePattern(f.Text))
	tokens := orchestrator.TermTokens(f.Text)
	var alts []string
	spelled := false
	for _, tok := range tokens {
		a := append([]string{tok}, f.Spelling[tok]...) // letters and digits only: safe in a regular expression
		spelled = spelled || len(a) > 1
		alts = append(alts, strings.Join(a, "|"))
	}
	var pats []string
	if spelled || len(tokens) != 1 || !strings.EqualFold(tokens[0], f.Text) { // else the substring test says it all
		for _, a := range alts {
			pats = append(pats, arg(a))
		}
	}
	test := func(v string) string {
		if len(pats) == 0 {
			return fmt.Sprintf("%s ILIKE %s", v, whole)
		}
		words := make([]string, len(pats))
		for i, p := range pats {
			words[i] = fmt.Sprintf("%s ~* %s", v, p)
		}
		return fmt.Sprintf("(%s ILIKE %s OR (%s))", v, whole, strings.Join(words, " AND "))
	}
	pre := fmt.Sprintf("r.search_text ILIKE %s AND ", whole)
	if len(f.Narrow) > 0 {
		pre = "" // narrowed by the index terms
	} else if len(pats) > 0 {
		longest := 0
		for i, tok := range tokens {
			if len(tok) > len(tokens[longest]) {
				longest = i
			}
		}
		pre = fmt.Sprintf("(r.search_text ILIKE %s OR r.search_text ~* %s) AND ", whole, pats[longest])
	}
	if f.Type == orchestrator.ColTextList {
		return pre + fmt.Sprintf("EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE jsonb_typeof(r.data->%s) WHEN 'array' THEN r.data->%s ELSE '[]'::jsonb END) e(v) WHERE %s)", col, col, test("e.v"))
	}
	return pre + test(fmt.Sprintf("(r.data->>%s)", col))
}

// Order returns the ORDER BY of a checked query; ties break on id so pages are stable.
func Order(q orchestrator.RecordQuery) string {
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	var expr string
	switch q.OrderBy {
	case "", "updated_at": // never null: the order of records_changed, so a page stops at its limit
		return "r.updated_at" + dir + ", r.id" + dir
	case "created_at":
		return "r.created_at" + dir + ", r.id" + dir
	case "id":
		return "r.id" + dir
	default:
		col := quoteLiteral(q.OrderBy)
		switch q.OrderType {
		case orchestrator.ColNumber:
			expr = fmt.Sprintf("(CASE jsonb_typeof(r.data->%s) WHEN 'number' THEN (r.data->>%s)::numeric END)", col, col)
		case orchestrator.ColBoolean:
			expr = fmt.Sprintf("(r.data->%s)", col)
		default:
			expr = fmt.Sprintf("(r.data->>%s)", col)
		}
	}
	return expr + dir + " NULLS LAST, r.id" + dir
}

// likePattern is an ILIKE pattern matching s anywhere, with LIKE's special characters escaped.
func likePattern(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// quoteLiteral quotes s as an SQL string literal (column names are checked identifiers already).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
