package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

const echoSchema = `{"type":"object","properties":{"text":{"type":"string","minLength":1},"at":{"type":"string","format":"date-time"}},"required":["text"],"additionalProperties":false}`

func echo(_ context.Context, c *Call) (string, error) {
	var a struct{ Text string }
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return "", err
	}
	c.Meta = map[string]any{"len": len(a.Text)}
	return "echo: " + a.Text, nil
}

func TestRegister(t *testing.T) {
	ok := Tool{Name: "note_get", Description: "Read one note.", Schema: json.RawMessage(echoSchema), Handler: echo, Family: "notes"}
	with := func(f func(*Tool)) Tool { t := ok; f(&t); return t }
	tests := []struct {
		name    string
		tool    Tool
		wantErr string
	}{
		{"valid", ok, ""},
		{"empty name", with(func(t *Tool) { t.Name = "" }), "name must match"},
		{"upper case", with(func(t *Tool) { t.Name = "NoteGet" }), "name must match"},
		{"leading digit", with(func(t *Tool) { t.Name = "1note" }), "name must match"},
		{"dash", with(func(t *Tool) { t.Name = "note-get" }), "name must match"},
		{"65 bytes", with(func(t *Tool) { t.Name = "a" + strings.Repeat("b", 64) }), "name must match"},
		{"nil handler", with(func(t *Tool) { t.Handler = nil }), "handler is nil"},
		{"schema not JSON", with(func(t *Tool) { t.Schema = json.RawMessage(`{`) }), "schema is not valid JSON"},
		{"schema missing", with(func(t *Tool) { t.Schema = nil }), "schema is not valid JSON"},
		{"schema an array", with(func(t *Tool) { t.Schema = json.RawMessage(`[]`) }), "schema must be a JSON object"},
		{"schema not type object", with(func(t *Tool) { t.Schema = json.RawMessage(`{"type":"string"}`) }), `must declare "type": "object"`},
		{"schema keyword invalid", with(func(t *Tool) { t.Schema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"strin"}}}`) }), "not a valid JSON Schema"},
		{"schema bad ref", with(func(t *Tool) {
			t.Schema = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`)
		}), "not a valid JSON Schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New().Register(tt.tool)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Register error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRegisterDuplicateAndList(t *testing.T) {
	r := New()
	for _, name := range []string{"record_list", "browser_click", "note_get", "code_search"} {
		r.MustRegister(Tool{Name: name, Schema: json.RawMessage(echoSchema), Handler: echo})
	}
	err := r.Register(Tool{Name: "note_get", Schema: json.RawMessage(echoSchema), Handler: echo})
	if err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("duplicate Register error = %v", err)
	}
	var names []string
	for _, tool := range r.List() {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "browser_click,code_search,note_get,record_list" {
		t.Errorf("List order = %s", got)
	}
	if _, ok := r.Get("note_get"); !ok {
		t.Error("Get(note_get) not found")
	}
	got, _ := r.Get("note_get")
	got.Schema[0] = 'X'
	if again, _ := r.Get("note_get"); again.Schema[0] != '{' {
		t.Error("Get hands out the registry's own schema bytes")
	}
	if _, ok := r.Get("missing"); ok {
		t.Error("Get(missing) found")
	}
	shaped, ok := r.OfferedSchema("note_get")
	if !ok || strings.Contains(string(shaped), "additionalProperties") || strings.Contains(string(shaped), "date-time") {
		t.Errorf("OfferedSchema = %s", shaped)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a duplicate did not panic")
		}
	}()
	r.MustRegister(Tool{Name: "note_get", Schema: json.RawMessage(echoSchema), Handler: echo})
}

func TestInvoke(t *testing.T) {
	r := New()
	r.MustRegister(Tool{Name: "echo", Schema: json.RawMessage(echoSchema), Handler: echo})
	r.MustRegister(Tool{Name: "fails", Schema: json.RawMessage(`{"type":"object"}`), Handler: func(context.Context, *Call) (string, error) {
		return "", errors.New("collection notes not found; call record_search without collection to list them")
	}})
	r.MustRegister(Tool{Name: "panics", Schema: json.RawMessage(`{"type":"object"}`), Handler: func(context.Context, *Call) (string, error) {
		var m map[string]int
		m["x"] = 1
		return "", nil
	}})
	r.MustRegister(Tool{Name: "no_args", Schema: json.RawMessage(`{"type":"object","properties":{}}`), Handler: func(_ context.Context, c *Call) (string, error) {
		return "args " + string(c.Args), nil
	}})
	ctx := context.Background()

	c := &Call{RunID: "r1", CallID: "c1", Args: json.RawMessage(`{"text":"hi"}`)}
	if out, err := r.Invoke(ctx, "echo", c); err != nil || out != "echo: hi" || c.Meta["len"] != 2 {
		t.Errorf("echo: %q, %v, meta %v", out, err, c.Meta)
	}
	if out, err := r.Invoke(ctx, "no_args", &Call{}); err != nil || out != "args {}" {
		t.Errorf("empty args: %q, %v", out, err)
	}

	_, err := r.Invoke(ctx, "echo", &Call{Args: json.RawMessage(`{"text":"","at":"noon","extra":1}`)})
	var ae *ArgsError
	if !errors.As(err, &ae) || len(ae.Problems) != 3 {
		t.Fatalf("bad args: want *ArgsError with 3 problems, got %v", err)
	}

	_, err = r.Invoke(ctx, "fails", &Call{})
	if err == nil || err.Error() != "collection notes not found; call record_search without collection to list them" {
		t.Errorf("handler error passed through changed: %v", err)
	}

	_, err = r.Invoke(ctx, "panics", &Call{})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("panic: want *PanicError, got %v", err)
	}
	if pe.Tool != "panics" || !strings.Contains(string(pe.Stack), "registry_test.go") {
		t.Errorf("PanicError lacks detail: tool %q, stack %.200s", pe.Tool, pe.Stack)
	}
	if strings.Contains(pe.Error(), "goroutine") || strings.Contains(pe.Error(), ".go:") {
		t.Errorf("PanicError message leaks the stack: %s", pe.Error())
	}
	if !strings.Contains(pe.Error(), "assignment to entry in nil map") {
		t.Errorf("PanicError message does not say what failed: %s", pe.Error())
	}
	var rerr interface{ RuntimeError() }
	if !errors.As(err, &rerr) {
		t.Error("PanicError does not unwrap to the runtime error")
	}

	if _, err := r.Invoke(ctx, "nope", &Call{}); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := r.Invoke(ctx, "echo", nil); err == nil {
		t.Error("nil call: no error")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Invoke(cancelled, "echo", &Call{Args: json.RawMessage(`{"text":"x"}`)}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
}

// TestConcurrent registers and invokes from many goroutines; run it with -race.
func TestConcurrent(t *testing.T) {
	r := New()
	r.MustRegister(Tool{Name: "echo", Schema: json.RawMessage(echoSchema), Handler: echo})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			if err := r.Register(Tool{Name: fmt.Sprintf("tool_%d", g), Schema: json.RawMessage(echoSchema), Handler: echo}); err != nil {
				t.Error(err)
			}
			for i := 0; i < 50; i++ {
				out, err := r.Invoke(context.Background(), "echo", &Call{Args: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))})
				if err != nil || out != fmt.Sprintf("echo: %d", i) {
					t.Errorf("Invoke: %q %v", out, err)
				}
				_ = r.List()
				_ = ValidateArgs(json.RawMessage(echoSchema), json.RawMessage(`{}`))
			}
		}(g)
	}
	wg.Wait()
	if n := len(r.List()); n != 9 {
		t.Errorf("List has %d tools, want 9", n)
	}
}

func TestSchemaDialects(t *testing.T) {
	tests := []struct {
		name, schema, args, wantErr string
	}{
		{"draft-07 named", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":"x"}`, "argument n: got string, want integer"},
		{"unknown meta-schema read as 2020-12", `{"$schema":"https://example.com/meta","type":"object","required":["q"]}`, `{}`, "argument q: required but missing"},
		{"OpenAPI nullable ignored by validation", `{"type":"object","properties":{"a":{"type":"string","nullable":true}}}`, `{"a":"x"}`, ""},
		{"unknown format ignored", `{"type":"object","properties":{"a":{"type":"string","format":"int64"}}}`, `{"a":"x"}`, ""},
		{"remote schema without a type", `{"properties":{"n":{"type":"integer"}},"required":["n"]}`, `{}`, "argument n: required but missing"},
		{"known format asserted", `{"type":"object","properties":{"a":{"type":"string","format":"uuid"}}}`, `{"a":"x"}`, "argument a: 'x' is not valid uuid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateArgs(json.RawMessage(tt.schema), json.RawMessage(tt.args))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
	_, err := compile(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`))
	if err == nil || !strings.Contains(err.Error(), "self-contained") {
		t.Errorf("external $ref: %v", err)
	}
}
