package records

import (
	"encoding/json"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
)

// FuzzCheckBody feeds record bodies from the model to the validator: it never panics, and a body
// it accepts holds declared columns only, with values that encode and a unique form when required.
func FuzzCheckBody(f *testing.F) {
	coll := orchestrator.Collection{ID: "c", Name: "tasks", Columns: []orchestrator.Column{
		{Name: "title", Type: orchestrator.ColText, Required: true},
		{Name: "n", Type: orchestrator.ColNumber},
		{Name: "at", Type: orchestrator.ColDatetime},
		{Name: "ok", Type: orchestrator.ColBoolean},
		{Name: "ref", Type: orchestrator.ColID, Unique: true},
		{Name: "tags", Type: orchestrator.ColTextList},
	}}
	for _, s := range []string{`{"title":"x"}`, `{"title":"x","n":1e308,"at":"2026-01-01","ok":true,"ref":"r-1","tags":["a"]}`,
		`{"title":null}`, `{"n":"1"}`, `{"tags":[1]}`, `{"at":"2026-13-01"}`, `{"n":1e999}`, `{"ref":"a b"}`, `{}`, `[]`, `null`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, add bool) {
		body, err := decodeObject(raw, "body")
		if err != nil {
			return
		}
		set, clear, problems := checkBody(coll, body, add)
		if len(problems) > 0 {
			return
		}
		for k := range set {
			if _, ok := coll.Column(k); !ok {
				t.Fatalf("accepted undeclared column %q", k)
			}
		}
		for _, k := range clear {
			if c, _ := coll.Column(k); c.Required {
				t.Fatalf("cleared required column %q", k)
			}
		}
		if add {
			if _, ok := set["title"]; !ok {
				t.Fatalf("accepted a body without the required title: %s", raw)
			}
		}
		w := write(coll, set)
		if _, err := json.Marshal(w.Data); err != nil {
			t.Fatalf("accepted values that do not encode: %v", err)
		}
		if _, ok := set["ref"]; ok && w.UniqueValue == nil {
			t.Fatalf("unique column set without a unique value")
		}
	})
}
