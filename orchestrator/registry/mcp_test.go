package registry

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDropOptionalEmptyStrings(t *testing.T) {
	const schema = `{"type":"object","properties":{"query":{"type":"string"},"cursor":{"type":"string"},"label":{"type":"string"},"count":{"type":"integer"}},"required":["query"]}`
	tests := []struct {
		name   string
		schema string
		args   map[string]any
		want   map[string]any
	}{
		{"optional empty dropped", schema, map[string]any{"query": "x", "cursor": ""}, map[string]any{"query": "x"}},
		{"required empty forwarded", schema, map[string]any{"query": "", "cursor": ""}, map[string]any{"query": ""}},
		{"non-empty kept", schema, map[string]any{"query": "x", "cursor": "abc", "label": " "}, map[string]any{"query": "x", "cursor": "abc", "label": " "}},
		{"other empty values kept", schema, map[string]any{"query": "x", "count": 0, "label": nil}, map[string]any{"query": "x", "count": 0, "label": nil}},
		{"undeclared key forwarded", schema, map[string]any{"query": "x", "extra": ""}, map[string]any{"query": "x", "extra": ""}},
		{"nested empty strings untouched", `{"type":"object","properties":{"o":{"type":"object"}}}`, map[string]any{"o": map[string]any{"a": ""}}, map[string]any{"o": map[string]any{"a": ""}}},
		{"no required list: every declared key optional", `{"type":"object","properties":{"a":{"type":"string"}}}`, map[string]any{"a": ""}, map[string]any{}},
		{"unreadable schema forwards everything", `{"properties":`, map[string]any{"a": ""}, map[string]any{"a": ""}},
		{"nil args", schema, nil, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[string]any{}
			for k, v := range tt.args {
				before[k] = v
			}
			got := DropOptionalEmptyStrings(json.RawMessage(tt.schema), tt.args)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if len(tt.args) > 0 && !reflect.DeepEqual(tt.args, before) {
				t.Error("args were modified")
			}
		})
	}
}
