package registry

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzValidateArgs feeds model-made arguments to a realistic schema: never a panic, and every
// failure is an *ArgsError whose problems each name an argument (or the arguments as a whole).
func FuzzValidateArgs(f *testing.F) {
	for _, s := range []string{``, `{}`, `null`, `[]`, `{"collection":"x","where":{"a":{"gte":1}},"limit":101}`,
		`{"collection":1,"order":{"dir":"x"},"tags":["A",1,null]}`, `{"range":{"from":"a"}}`, `{"collection":"x"} trailing`} {
		f.Add([]byte(s))
	}
	sch, err := compile(json.RawMessage(recordListSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		err := ValidateArgs(json.RawMessage(recordListSchema), args)
		if err == nil {
			if len(trimSpace(args)) > 0 && !json.Valid(args) {
				t.Fatalf("invalid JSON %q accepted", args)
			}
			return
		}
		var ae *ArgsError
		if !errors.As(err, &ae) || len(ae.Problems) == 0 {
			t.Fatalf("want *ArgsError with problems, got %#v", err)
		}
		for _, p := range ae.Problems {
			if !strings.HasPrefix(p, "argument ") && !strings.HasPrefix(p, "arguments: ") {
				t.Fatalf("problem %q does not name an argument", p)
			}
		}
		if len(trimSpace(args)) > 0 {
			if err2 := validate(sch, args); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("cached and direct validation disagree: %v / %v", err, err2)
			}
		}
	})
}

// FuzzDropOptionalEmptyStrings feeds remote (MCP) schemas: never a panic, nothing but optional
// empty strings removed, nothing changed.
func FuzzDropOptionalEmptyStrings(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"q":{"type":"string"},"c":{"type":"string"}},"required":["q"]}`), "q", "c")
	f.Add([]byte(`{"properties":{"a":1},"required":"a"}`), "a", "b")
	f.Add([]byte(`[]`), "a", "")
	f.Fuzz(func(t *testing.T, schema []byte, k1, k2 string) {
		args := map[string]any{k1: "", k2: "v", "n": 0.0}
		out := DropOptionalEmptyStrings(schema, args)
		for k, v := range out {
			if args[k] != v {
				t.Fatalf("value of %q changed", k)
			}
		}
		for k, v := range args {
			if _, kept := out[k]; !kept && v != "" {
				t.Fatalf("non-empty %q dropped", k)
			}
		}
	})
}
