package records_test

import (
	"fmt"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
)

// TestWhereTypos: a where word of 4 letters or more within one edit (insert, delete, substitute,
// swap) of a stored word matches it, in any position of a multi-word value or an array item; a
// 3-letter word does not, two edits do not, and record_search is never fuzzy.
func TestWhereTypos(t *testing.T) {
	w := newWorld(t)
	w.collection("items", "g1",
		orchestrator.Column{Name: "title", Type: orchestrator.ColText, Required: true},
		orchestrator.Column{Name: "tags", Type: orchestrator.ColTextList})
	for _, body := range []string{
		`{"title":"blue widget","tags":["mail room"]}`,
		`{"title":"red widget"}`,
		`{"title":"how to receive mail"}`,
		`{"title":"postal address book"}`,
		`{"title":"the end"}`,
		`{"title":"green gadget","tags":["garden tools"]}`,
	} {
		w.ok(w.a1, "record_add", `{"collection":"items","body":`+body+`}`)
	}
	for _, tc := range []struct {
		name, where string
		want        []string
	}{
		{"substitution", `{"title":"widgit"}`, []string{"blue widget", "red widget"}},
		{"substitution, upper case", `{"title":"WIDGIT"}`, []string{"blue widget", "red widget"}},
		{"swap", `{"title":"recieve"}`, []string{"how to receive mail"}},
		{"swap at the end", `{"title":"widgte"}`, []string{"blue widget", "red widget"}},
		{"swap at the start", `{"title":"iwdget"}`, []string{"blue widget", "red widget"}},
		{"a missing letter", `{"title":"adress"}`, []string{"postal address book"}},
		{"an extra letter", `{"title":"addresss"}`, []string{"postal address book"}},
		{"a missing letter, 5 letters", `{"title":"wdget"}`, []string{"blue widget", "red widget"}},
		{"four letters, substitution", `{"title":"bokk"}`, []string{"postal address book"}},
		{"four letters, swap", `{"title":"mial"}`, []string{"how to receive mail"}},
		{"the last word of the value", `{"title":"recieve mial"}`, []string{"how to receive mail"}},
		{"words in another order", `{"title":"widgit blue"}`, []string{"blue widget"}},
		{"with an exact word", `{"title":"postal bokk"}`, []string{"postal address book"}},
		{"three letters never", `{"title":"teh"}`, nil},
		{"three letters, one wrong", `{"title":"tge end"}`, nil},
		{"two edits", `{"title":"gidgit"}`, nil},
		{"every word must still match", `{"title":"widgit gadget"}`, nil},
		{"an array item", `{"tags":"mial"}`, []string{"blue widget"}},
		{"an array item's second word", `{"tags":"toolz"}`, []string{"green gadget"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w.ok(w.a1, "record_list", `{"collection":"items","where":`+tc.where+`}`)
			if fmt.Sprint(titles(got)) != fmt.Sprint(tc.want) || int(got["total"].(float64)) != len(tc.want) {
				t.Fatalf("where %s: got %v (total %v), want %v", tc.where, titles(got), got["total"], tc.want)
			}
		})
	}
	for _, q := range []string{"widgit", "recieve", "bokk"} {
		if got := w.ok(w.a1, "record_search", `{"query":`+jsonString(q)+`}`); len(titles(got)) != 0 {
			t.Errorf("record_search %q is fuzzy: %v", q, titles(got))
		}
	}
}
