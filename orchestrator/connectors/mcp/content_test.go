package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

func TestResultText(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(make([]byte, 68))
	wav := base64.StdEncoding.EncodeToString(make([]byte, 1001))
	cases := []struct {
		name, result, want string
		isError            bool
	}{
		{"text blocks joined", `{"content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}`, "one\ntwo", false},
		{"structured when no text", `{"content":[],"structuredContent":{ "a" : [1, 2] }}`, `{"a":[1,2]}`, false},
		{"text wins over structured", `{"content":[{"type":"text","text":"t"}],"structuredContent":{"a":1}}`, "t", false},
		{"image", `{"content":[{"type":"image","data":"` + png + `","mimeType":"image/png"}]}`, "[image image/png, 68 bytes]", false},
		{"audio", `{"content":[{"type":"audio","data":"` + wav + `","mimeType":"audio/wav"}]}`, "[audio audio/wav, 1001 bytes]", false},
		{"embedded text resource", `{"content":[{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"hello"}}]}`, "[resource file:///a.txt text/plain, 5 bytes]\nhello", false},
		{"embedded text resource keeps its text, structured content aside", `{"content":[{"type":"resource","resource":{"uri":"mem://r","text":"line one\nline two"}}],"structuredContent":{"a":1}}`, "[resource mem://r (no MIME type), 17 bytes]\nline one\nline two", false},
		{"embedded blob resource", `{"content":[{"type":"resource","resource":{"uri":"file:///b","blob":"` + png + `"}}]}`, "[resource file:///b (no MIME type), 68 bytes]", false},
		{"resource link", `{"content":[{"type":"resource_link","uri":"https://x/y.pdf","name":"y","mimeType":"application/pdf","size":1}]}`, "[resource_link https://x/y.pdf application/pdf, 1 byte]", false},
		{"resource link without size", `{"content":[{"type":"resource_link","uri":"https://x/y","name":"y"}]}`, "[resource_link https://x/y (no MIME type), size unknown]", false},
		{"unknown block", `{"content":[{"type":"hologram"}]}`, "[hologram content block]", false},
		{"malformed block", `{"content":[{"type":"text","text":7}]}`, "[malformed content block]", false},
		{"mixed in order", `{"content":[{"type":"text","text":"see"},{"type":"image","data":"","mimeType":"image/gif"},{"type":"text","text":"end"}]}`, "see\n[image image/gif, 0 bytes]\nend", false},
		{"structured with an image", `{"content":[{"type":"image","data":"","mimeType":"image/gif"}],"structuredContent":{"k":"v"}}`, "{\"k\":\"v\"}\n[image image/gif, 0 bytes]", false},
		{"a MIME type cannot break the line", `{"content":[{"type":"image","data":"","mimeType":"image/png\n]x"}]}`, "[image image/png  x, 0 bytes]", false},
		{"isError", `{"content":[{"type":"text","text":"no such repo"}],"isError":true}`, "no such repo", true},
		{"no content", `{}`, "", false},
		{"null structured", `{"content":[],"structuredContent":null}`, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, isErr, err := resultText([]byte(c.result))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || isErr != c.isError {
				t.Errorf("resultText = %q, %v; want %q, %v", got, isErr, c.want, c.isError)
			}
		})
	}
	if _, _, err := resultText([]byte(`[]`)); err == nil {
		t.Error("a result that is not an object was accepted")
	}
}

func TestEveryContentTypeEndToEnd(t *testing.T) {
	f := newFake(t)
	img := base64.StdEncoding.EncodeToString([]byte("not really a png, 32 bytes long!"))
	f.MCP.AddTool(mcpgo.NewTool("everything"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return &mcpgo.CallToolResult{Content: []mcpgo.Content{
			mcpgo.NewTextContent("first"),
			mcpgo.NewImageContent(img, "image/png"),
			mcpgo.NewAudioContent(img, "audio/mpeg"),
			mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{URI: "mem://note", MIMEType: "text/markdown", Text: "# hi"}),
			mcpgo.NewEmbeddedResource(mcpgo.BlobResourceContents{URI: "mem://blob", MIMEType: "application/octet-stream", Blob: img}),
			mcpgo.NewResourceLink("https://example.com/r", "r", "", "text/html"),
			mcpgo.NewTextContent("last"),
		}}, nil
	})
	f.MCP.AddTool(mcpgo.NewTool("structured"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return &mcpgo.CallToolResult{Content: []mcpgo.Content{}, StructuredContent: map[string]any{"price": 1.5, "coin": "eth"}}, nil
	})
	f.MCP.AddTool(mcpgo.NewTool("broken"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultError("the upstream API is down"), nil
	})
	f.MCP.AddTool(mcpgo.NewTool("progress"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		srv := f.MCP
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "total": 2, "message": "halfway"})
		return mcpgo.NewToolResultText("done"), nil
	})
	logs := &logBuffer{}
	p := newPool(t, Config{}, logs)
	conn := Connection{ID: "c1", Slug: "srv", URL: f.URL}

	out, err := p.Call(context.Background(), conn, Tool{RemoteName: "everything"}, nil)
	want := strings.Join([]string{
		"first",
		"[image image/png, 32 bytes]",
		"[audio audio/mpeg, 32 bytes]",
		"[resource mem://note text/markdown, 4 bytes]",
		"# hi",
		"[resource mem://blob application/octet-stream, 32 bytes]",
		"[resource_link https://example.com/r text/html, size unknown]",
		"last",
	}, "\n")
	if err != nil || out != want {
		t.Fatalf("everything = %q, %v\nwant %q", out, err, want)
	}
	if strings.Contains(out, img) {
		t.Error("the result carries the image bytes")
	}
	out, err = p.Call(context.Background(), conn, Tool{RemoteName: "structured"}, nil)
	if err != nil || out != `{"coin":"eth","price":1.5}` {
		t.Fatalf("structured = %q, %v", out, err)
	}
	_, err = p.Call(context.Background(), conn, Tool{RemoteName: "broken"}, nil)
	var te *ToolError
	if !errors.As(err, &te) || te.Text != "the upstream API is down" {
		t.Fatalf("broken = %v, want a ToolError with the content", err)
	}
	out, err = p.Call(context.Background(), conn, Tool{RemoteName: "progress"}, nil)
	if err != nil || out != "done" {
		t.Fatalf("progress = %q, %v", out, err)
	}
	// The notification is handled beside the call's result, so its log line may follow the
	// result by a moment.
	logged := func() bool {
		return strings.Contains(logs.String(), "level=DEBUG msg=\"mcp: progress\"") && strings.Contains(logs.String(), "halfway")
	}
	for deadline := time.Now().Add(30 * time.Second); !logged() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !logged() {
		t.Errorf("no debug line for the progress notification:\n%s", logs.String())
	}
}
