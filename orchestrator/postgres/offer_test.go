package postgres

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
)

// TestEncodeOffered: the offered tools read back as they were, and the encoding is encoding/json's
// but for the schemas' own spelling (kept as given).
func TestEncodeOffered(t *testing.T) {
	for name, tools := range map[string][]orchestrator.OfferedTool{
		"none": nil,
		"native and MCP": {
			{Name: "note_find", Description: `Finds notes; "quoted" <b>, \ and a "input_schema":null inside`, InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
			{Name: "docs_search", Description: "Searches.", InputSchema: json.RawMessage(`{"type": "object", "properties": {}}`), Server: "docs", ConnectionID: "con_1", RemoteName: "search"},
		},
		"no schema": {{Name: "bare", Description: "No schema."}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := encodeOffered(tools)
			if err != nil {
				t.Fatal(err)
			}
			var back []orchestrator.OfferedTool
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			want, _ := json.Marshal(tools)
			var wantBack []orchestrator.OfferedTool
			_ = json.Unmarshal(want, &wantBack)
			for i := range back { // compare schemas by meaning, the rest exactly
				var a, b any
				_ = json.Unmarshal(back[i].InputSchema, &a)
				_ = json.Unmarshal(wantBack[i].InputSchema, &b)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("tool %d schema %s, want %s", i, back[i].InputSchema, wantBack[i].InputSchema)
				}
				back[i].InputSchema, wantBack[i].InputSchema = nil, nil
			}
			if len(back) != len(tools) || (len(tools) > 0 && !reflect.DeepEqual(back, wantBack)) {
				t.Fatalf("read back %+v, want %+v", back, wantBack)
			}
			if tools == nil && string(got) != "[]" {
				t.Fatalf("no tools encode as %s, want []", got)
			}
		})
	}
}
