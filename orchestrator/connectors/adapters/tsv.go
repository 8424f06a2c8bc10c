package adapters

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Table is a compact TSV result: a header row, then one row per item.
type Table struct {
	Cols    []string
	rows    [][]string
	trailer []string
}

// NewTable starts a table with its header.
func NewTable(cols ...string) *Table { return &Table{Cols: cols} }

// Add appends a row; each cell is formatted by Cell.
func (t *Table) Add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = Cell(c)
	}
	t.rows = append(t.rows, row)
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Note appends a line after the rows (a paging hint).
func (t *Table) Note(line string) { t.trailer = append(t.trailer, line) }

// Cap keeps the first limit rows; when rows were left out it notes how many and how to get them.
func (t *Table) Cap(limit int) {
	if limit <= 0 || len(t.rows) <= limit {
		return
	}
	n := len(t.rows) - limit
	t.rows = t.rows[:limit]
	t.Note(MoreRows(n, limit))
}

// MoreRows is the trailing line of a capped list: how many rows were left out and how to get them.
func MoreRows(n, limit int) string {
	rows := "rows"
	if n == 1 {
		rows = "row"
	}
	if limit >= MaxRows {
		return fmt.Sprintf("… %d more %s: %d is the most one call shows; narrow the request", n, rows, MaxRows)
	}
	return fmt.Sprintf("… %d more %s: pass limit (up to %d)", n, rows, MaxRows)
}

// NextPage is the trailing line of a list with a further page.
func NextPage(arg, key string) string {
	return fmt.Sprintf("… more rows: pass %s=%s", arg, Cell(key))
}

// String renders the table as TSV lines.
func (t *Table) String() string {
	var b strings.Builder
	b.WriteString(strings.Join(escapeAll(t.Cols), "\t"))
	for _, r := range t.rows {
		b.WriteByte('\n')
		b.WriteString(strings.Join(r, "\t"))
	}
	for _, l := range t.trailer {
		b.WriteByte('\n')
		b.WriteString(Escape(l))
	}
	return b.String()
}

func escapeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Escape(s)
	}
	return out
}

// Escape writes backslash, tab, newline and carriage return in a cell as \\, \t, \n and \r, so a
// cell never breaks a row or a column.
func Escape(s string) string {
	if !strings.ContainsAny(s, "\\\t\n\r") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch r := s[i]; r {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(r)
		}
	}
	return b.String()
}

// Cell formats one value: strings escaped, numbers without float noise, times as RFC 3339 UTC,
// nil and NaN empty.
func Cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return Escape(x)
	case *string:
		if x == nil {
			return ""
		}
		return Escape(*x)
	case float64:
		return Number(x)
	case *float64:
		if x == nil {
			return ""
		}
		return Number(*x)
	case float32:
		return Number(float64(x))
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		if f, err := x.Float64(); err == nil && !strings.ContainsAny(string(x), ".eE") && math.Abs(f) < 1<<53 {
			return string(x)
		}
		if f, err := x.Float64(); err == nil {
			return Number(f)
		}
		return Escape(string(x))
	case time.Time:
		if x.IsZero() {
			return ""
		}
		return x.UTC().Format(time.RFC3339)
	case fmt.Stringer:
		return Escape(x.String())
	default:
		return Escape(fmt.Sprint(x))
	}
}

// Number formats a float with at most 15 significant digits and no exponent, so sums and
// averages drop their binary noise (0.1+0.2 is 0.3) while prices keep their digits.
func Number(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	if f == 0 {
		return "0"
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 15, 64), 64)
	if err != nil {
		r = f
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// Num reads a JSON number that a provider may send as a number or a decimal string; ok is
// false when it is neither.
func Num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// Unix formats a Unix time in seconds as RFC 3339 UTC ("" for zero).
func Unix(sec int64) string {
	if sec == 0 {
		return ""
	}
	return time.Unix(sec, 0).UTC().Format(time.RFC3339)
}

// UnixMilli formats a Unix time in milliseconds as RFC 3339 UTC.
func UnixMilli(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}
