package orchestrator

import (
	"encoding/json"
	"testing"
)

func TestExplore(t *testing.T) {
	call := func(name string, isErr bool, meta string) ToolCall {
		return ToolCall{Name: name, IsError: isErr, Metadata: json.RawMessage(meta)}
	}
	intp := func(n int) *int { return &n }
	tests := []struct {
		name  string
		calls []ToolCall
		first *int
		bytes int64
	}{
		{"no calls", nil, nil, 0},
		{"reads only", []ToolCall{
			call("code_search", false, `{"matches":3}`),
			call("file_read", false, `{"path":"a.go","bytes":100}`),
			call("file_read", false, `{"path":"b.go","bytes":50}`),
		}, nil, 150},
		{"failed edit does not count", []ToolCall{
			call("file_read", false, `{"path":"a.go","bytes":100}`),
			call("file_edit", true, `{"error":"handler"}`),
			call("shell", false, `{"exit_code":0}`),
			call("file_edit", false, `{"path":"a.go","lines_added":1}`),
			call("file_read", false, `{"path":"a.go","bytes":70}`),
			call("file_read", false, `{"path":"c.go","bytes":30}`),
		}, intp(3), 30},
		{"write first", []ToolCall{call("file_write", false, `{"path":"n.go"}`)}, intp(0), 0},
		{"failed read and odd metadata ignored", []ToolCall{
			call("file_read", true, `{"path":"x","bytes":9}`),
			call("file_read", false, `"not an object"`),
		}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Explore(tt.calls)
			if (got.CallsBeforeFirstEdit == nil) != (tt.first == nil) || (tt.first != nil && *got.CallsBeforeFirstEdit != *tt.first) || got.ReadBytesUnedited != tt.bytes {
				t.Fatalf("got %+v (first %v), want first %v bytes %d", got, got.CallsBeforeFirstEdit, tt.first, tt.bytes)
			}
		})
	}
	b, _ := json.Marshal(Exploration{})
	if string(b) != `{"calls_before_first_edit":null,"read_bytes_unedited":0}` {
		t.Fatalf("json: %s", b)
	}
}

// FuzzExplore feeds arbitrary stored metadata (it comes from helper envelopes) to Explore: it must
// never panic, and its figures stay sane.
func FuzzExplore(f *testing.F) {
	f.Add("file_read", false, `{"path":"a","bytes":10}`, "file_edit", false, `{"path":"a"}`)
	f.Add("file_write", true, `null`, "file_read", false, `{"path":1,"bytes":"x"}`)
	f.Fuzz(func(t *testing.T, n1 string, e1 bool, m1 string, n2 string, e2 bool, m2 string) {
		calls := []ToolCall{{Name: n1, IsError: e1, Metadata: json.RawMessage(m1)}, {Name: n2, IsError: e2, Metadata: json.RawMessage(m2)}}
		got := Explore(calls)
		if got.CallsBeforeFirstEdit != nil && (*got.CallsBeforeFirstEdit < 0 || *got.CallsBeforeFirstEdit > 1) {
			t.Fatalf("calls_before_first_edit %d out of range", *got.CallsBeforeFirstEdit)
		}
	})
}
