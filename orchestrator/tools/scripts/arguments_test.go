package scripts_test

import (
	"strings"
	"testing"
)

// TestScriptArgumentsAreChecked: script_run and a script offered as a tool check the arguments
// against the script's parameters before anything runs, with the registry's messages, and
// script_create refuses a parameters schema that does not compile.
func TestScriptArgumentsAreChecked(t *testing.T) {
	w := newWorld(t)
	setup := w.run("a3")
	w.call(setup, "script_create", map[string]any{"name": "sum", "description": "add numbers",
		"source":     "import json, sys\nprint('ran')\nprint(sum(json.load(sys.stdin)['xs']))\n",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"xs": map[string]any{"type": "array", "items": map[string]any{"type": "number"}}}, "required": []string{"xs"}}})
	run := w.run("a3")
	for _, tc := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"script_run", map[string]any{"name": "sum", "arguments": map[string]any{"xs": "nope"}}, []string{"ERROR: script sum: invalid arguments: argument xs: got string, want array", `"required":["xs"]`}},
		{"script_run", map[string]any{"name": "sum", "arguments": map[string]any{"xs": []any{1, "two"}}}, []string{"ERROR: script sum: invalid arguments: argument xs[1]: got string, want number"}},
		{"script_run", map[string]any{"name": "sum"}, []string{"ERROR: script sum: invalid arguments: argument xs: required but missing"}},
		{"sum", map[string]any{"xs": "nope"}, []string{"ERROR: invalid arguments: argument xs: got string, want array"}},
	} {
		out := w.call(run, tc.tool, tc.args)
		for _, s := range tc.want {
			if !strings.Contains(out, s) {
				t.Errorf("%s %v: %q does not say %q", tc.tool, tc.args, out, s)
			}
		}
		if strings.Contains(out, "ran") || strings.Contains(out, "Traceback") {
			t.Errorf("%s %v: the script ran: %q", tc.tool, tc.args, out)
		}
	}
	for _, tool := range []string{"script_run", "sum"} {
		args := map[string]any{"xs": []any{1, 2.5}}
		if tool == "script_run" {
			args = map[string]any{"name": "sum", "arguments": args}
		}
		if out := w.call(run, tool, args); out != "ran\n3.5" {
			t.Errorf("%s with good arguments: %q", tool, out)
		}
	}
	out := w.call(run, "script_create", map[string]any{"name": "bad", "description": "d", "source": "print(1)",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "nonsense"}}}})
	if !strings.HasPrefix(out, "ERROR: parameters is not a valid JSON Schema") {
		t.Errorf("script_create with a broken schema: %q", out)
	}
}
