// Package registry holds the orchestrator's native tools: their schemas, argument checks and handlers.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Handler runs one native tool call; it returns the raw result string or an error.
type Handler func(ctx context.Context, call *Call) (string, error)

// Call is what a handler knows about the call it serves.
type Call struct {
	RunID, AgentID, GuildID, OrgID string
	CallID                         string
	Seq                            int64           // message seq this call's result will have in the run
	Args                           json.RawMessage // validated against the tool's schema
	Meta                           map[string]any  // a handler may add fields; they are stored as the call's metadata
	Secrets                        []string        // values to add to this run's redaction set (handlers that fetch credentials add them)
	// Progress, when set, takes a line saying how the call is going (the shell's latest output
	// line); the runs service passes the latest one, redacted, to the caller that asked for
	// progress. nil when nobody asked: a tool then does no work to report.
	Progress func(line string)
	// Image is a picture the call produced besides its text (browser_screenshot's JPEG): MCP
	// answers it as an image block, capped like every result; the REST answer and the stored
	// call keep the text only.
	Image *Image
}

// Image is a picture a tool call produced.
type Image struct {
	MIMEType string
	Data     []byte
}

// Tool is one native tool.
type Tool struct {
	Name        string              // ^[a-z][a-z0-9_]{0,63}$, unique
	Description string              // what the model reads about the tool
	Schema      json.RawMessage     // explicit JSON Schema, type object
	Handler     Handler             // runs a call
	Filter      func(string) string // optional custom filter, first step of the pipeline
	Family      string              // e.g. "code", "browser", "notes": used by offers and access views
	// SecretArgs names top-level arguments whose values are secrets (secret_store's value): the
	// call's record, written before the handler runs, masks them.
	SecretArgs []string
	// Transactional says the tool writes only to the orchestrator's database: its writes and the
	// call's completion then share one transaction (and a failed call's writes are rolled back).
	Transactional bool
}

// ErrUnknownTool is wrapped by Invoke when no tool has the requested name.
var ErrUnknownTool = errors.New("unknown tool")

// PanicError is what Invoke returns when a handler panics. Error() is the short message the
// model may read; Value and Stack are the full detail, for the operational log only.
type PanicError struct {
	Tool  string // the tool whose handler panicked
	Value any    // the value passed to panic
	Stack []byte // the handler goroutine's stack at the panic
}

// Error says which tool failed and the panic value, never the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("%s failed with an internal error (%v); the operator can see the details in the logs", e.Tool, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

type entry struct {
	tool   Tool
	schema *jsonschema.Schema
	shaped json.RawMessage
}

// Registry is a set of native tools keyed by name. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*entry
}

// New returns an empty registry.
func New() *Registry { return &Registry{tools: map[string]*entry{}} }

// Register adds t. A bad or duplicate name, a nil handler or an invalid schema is an error, and
// the registry is left unchanged. The schema is compiled and shaped once, here.
func (r *Registry) Register(t Tool) error {
	if !namePattern.MatchString(t.Name) {
		return fmt.Errorf("register tool %q: name must match %s (lower-case letter, then lower-case letters, digits or _, at most 64)", t.Name, namePattern)
	}
	if t.Handler == nil {
		return fmt.Errorf("register tool %s: handler is nil", t.Name)
	}
	sch, err := compile(t.Schema)
	if err != nil {
		return fmt.Errorf("register tool %s: %w", t.Name, err)
	}
	shaped, err := ShapeSchema(t.Schema)
	if err != nil {
		return fmt.Errorf("register tool %s: %w", t.Name, err)
	}
	t.Schema = append(json.RawMessage(nil), t.Schema...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("register tool %s: a tool with that name is already registered", t.Name)
	}
	r.tools[t.Name] = &entry{tool: t, schema: sch, shaped: shaped}
	return nil
}

// MustRegister is Register for package-level wiring; it panics on error.
func (r *Registry) MustRegister(t Tool) {
	if err := r.Register(t); err != nil {
		panic(err)
	}
}

// Get returns the tool named name. Its Schema is a copy.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return Tool{}, false
	}
	return e.copyTool(), true
}

// copyTool returns the tool with its own copy of the schema, so a caller cannot change the registry's.
func (e *entry) copyTool() Tool {
	t := e.tool
	t.Schema = append(json.RawMessage(nil), t.Schema...)
	t.SecretArgs = append([]string(nil), t.SecretArgs...)
	return t
}

// OfferedSchema returns the tool's schema as shaped for the model (see ShapeSchema), computed at Register.
func (r *Registry) OfferedSchema(name string) (json.RawMessage, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return nil, false
	}
	return append(json.RawMessage(nil), e.shaped...), true
}

// List returns every tool, sorted by name. Schemas are copies.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, e := range r.tools {
		out = append(out, e.copyTool())
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Check validates args against the named tool's schema as Invoke does, without running it: nil,
// or an *ArgsError listing every problem. Empty args are taken as {}.
func (r *Registry) Check(name string, args json.RawMessage) error {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	if len(trimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return validate(e.schema, args)
}

// Invoke validates call.Args against the tool's schema (every problem named, in one error of type
// *ArgsError), runs the handler with panics recovered (a panic becomes a *PanicError), and returns
// the raw result. A handler error or panic is returned as error; the caller renders "ERROR: <message>".
// Empty Args are taken as {} and call.Args is set to that.
func (r *Registry) Invoke(ctx context.Context, name string, call *Call) (out string, err error) {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return "", fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	if call == nil {
		return "", fmt.Errorf("invoke %s: call is nil", name)
	}
	if len(trimSpace(call.Args)) == 0 {
		call.Args = json.RawMessage("{}")
	}
	if err := validate(e.schema, call.Args); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("%s not run: %w", name, err)
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = "", &PanicError{Tool: name, Value: p, Stack: debug.Stack()}
		}
	}()
	return e.tool.Handler(ctx, call)
}
