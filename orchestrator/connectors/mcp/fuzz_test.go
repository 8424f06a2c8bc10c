package mcp

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// FuzzResultText feeds untrusted tools/call results to the content mapping: it never panics, and
// the bytes of image, audio and blob blocks never reach the text.
func FuzzResultText(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}`,
		`{"content":[],"structuredContent":{"a":[1,2]}}`,
		`{"content":[{"type":"image","data":"aGVsbG8gd29ybGQgaGVsbG8=","mimeType":"image/png"}]}`,
		`{"content":[{"type":"audio","data":"AAAAAAAAAAAAAAAAAAAAAAAA","mimeType":"audio/wav"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a","blob":"QUJDREVGR0hJSktMTU5PUA=="}}]}`,
		`{"content":[{"type":"resource_link","uri":"x","name":"y","size":18446744073709551615}]}`,
		`{"content":[{"type":"text","text":7}],"isError":true}`,
		`{"content":null,"structuredContent":"\u0000"}`,
		`{"content":[{"type":"image","mimeType":"\n]["}]}`,
		`[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		text, _, err := resultText(data)
		if err != nil {
			return
		}
		var res struct {
			Content []struct {
				Type     string `json:"type"`
				Data     string `json:"data"`
				Resource struct {
					Blob string `json:"blob"`
				} `json:"resource"`
			} `json:"content"`
		}
		if json.Unmarshal(data, &res) != nil {
			return
		}
		for _, c := range res.Content {
			if c.Type == "text" {
				return // a text block may repeat anything
			}
		}
		for _, c := range res.Content {
			for _, b := range []string{c.Data, c.Resource.Blob} {
				if len(b) >= 16 && strings.Contains(text, b) && !strings.Contains(string(data), `"structuredContent"`) {
					t.Fatalf("block bytes %q reached the text %q", b, text)
				}
			}
		}
		for _, line := range strings.Split(text, "\n") {
			if len(line) >= 2 && strings.HasPrefix(line, "[") && strings.ContainsAny(line[1:len(line)-1], "[]") && !strings.Contains(string(data), `"structuredContent"`) {
				t.Fatalf("a descriptive line holds brackets: %q", line)
			}
		}
	})
}

// FuzzListPage feeds untrusted tools/list results to the page parser and the tool shaping: no
// panic, every kept name is namespaced, unique and at most the limit many.
func FuzzListPage(f *testing.F) {
	for _, seed := range []string{
		`{"tools":[{"name":"a.b","inputSchema":{"type":"object"}},{"name":"a_b","inputSchema":{"type":"object"}}],"nextCursor":"2"}`,
		`{"tools":[{"name":"x","inputSchema":"no"},{"name":"","inputSchema":{}},{"name":7}]}`,
		`{"tools":[{"name":"y","inputSchema":{"type":"object","properties":{"q":{"type":12}}}}]}`,
		`{"tools":null,"nextCursor":null}`,
		`{"tools":[{"name":"z","inputSchema":{"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}}}]}`,
		`[]`, `{`,
	} {
		f.Add([]byte(seed))
	}
	log := slog.New(discardHandler{})
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, _, err := parseListPage(data)
		if err != nil {
			return
		}
		tools, skipped := shapeTools(log, "srv", entries, false, 5)
		if len(tools) > 5 {
			t.Fatalf("kept %d tools, limit 5", len(tools))
		}
		for _, sk := range skipped {
			if sk.Reason == "" {
				t.Fatalf("skipped %q without a reason", sk.Name)
			}
		}
		seen := map[string]bool{}
		for _, tool := range tools {
			if seen[tool.Name] || !strings.HasPrefix(tool.Name, "srv_") || len(tool.Name) > 64 || strings.Trim(tool.Name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
				t.Fatalf("bad or duplicate name %q", tool.Name)
			}
			seen[tool.Name] = true
		}
	})
}
