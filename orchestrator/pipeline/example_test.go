package pipeline_test

import (
	"encoding/base64"
	"fmt"

	"github.com/guildsai/guilds/orchestrator/pipeline"
)

func ExampleStamp() {
	red := pipeline.NewRedactor([]string{"tvly-9Xq2LmP4rT"})
	raw := "GET /search?key=tvly-9Xq2LmP4rT -> 200\nauth: " + base64.StdEncoding.EncodeToString([]byte("tvly-9Xq2LmP4rT"))
	fmt.Println(pipeline.Stamp(raw, pipeline.Options{Redactor: red, Remaining: 3}))
	// Output:
	// GET /search?key=[REDACTED] -> 200
	// auth: [REDACTED]
	//
	// Only 3 tool calls left: wrap up and give your final answer.
	// remaining_tool_calls: 3
}
