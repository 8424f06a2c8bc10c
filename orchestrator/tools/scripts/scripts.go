// Package scripts holds the script tools (script_create, script_list, script_read, script_run,
// script_delete): an agent's saved Python scripts, snapshotted when a run starts (source and hash,
// with description and parameters) and run in the agent's sandbox through guilds-script-run, which
// feeds the arguments object to the script's standard input as JSON and shapes its output like
// shell. The snapshot is taken in the run-start hook (Offer), which also offers the scripts with
// parameters as first-class tools from that same snapshot.
package scripts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/tools"
	"github.com/guildsai/guilds/shared/envelope"
)

// Helper is guilds-script-run's path in every sandbox.
const Helper = sandbox.BinDir + "/guilds-script-run"

// Limits of the script tools (how many scripts an agent keeps is its config's max_scripts).
const (
	MaxDescriptionChars = 400
	MaxSourceBytes      = 256 << 10
	RunTimeout          = 120 * time.Second // the helper stops the script at this
	helperSlack         = 15 * time.Second  // the helper's own start and shaping, past the script's limit
)

// namePattern is what a script name must match; manifest is reserved.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// Store is what the script tools need (postgres.Store implements it).
type Store interface {
	// PutScript saves a script in the agent's catalog (refusing a new name past the agent's
	// max_scripts) and, with runID set, in that run's snapshot, in one transaction.
	PutScript(ctx context.Context, sc orchestrator.Script, runID string, now time.Time) (bool, error)
	ListScripts(ctx context.Context, agentID string) ([]orchestrator.Script, error)
	// DeleteScript drops a script from the catalog and, with runID set, from that run's snapshot.
	DeleteScript(ctx context.Context, agentID, runID, name string) error
	// SnapshotRunScripts takes (once per run id) and returns the snapshot of a starting run.
	SnapshotRunScripts(ctx context.Context, runID, agentID string, at time.Time) ([]orchestrator.Script, error)
	RunScripts(ctx context.Context, runID string) ([]orchestrator.Script, error)
	RunScript(ctx context.Context, runID, name string) (orchestrator.Script, error)
}

// Tools serves the five script tools.
type Tools struct {
	Store     Store
	Sandboxes sandbox.Provider // the agents' sandboxes; nil: script_run and the file side of script_delete fail clearly
	// SecretEnv returns the calling agent's granted secrets as NAME=value for the script's
	// environment (adding their values to the call's redaction); nil exports none.
	SecretEnv func(ctx context.Context, call *registry.Call) ([]string, error)
	Now       func() time.Time
}

// ToolNames are the five script tools.
var ToolNames = []string{"script_create", "script_list", "script_read", "script_run", "script_delete"}

func (t *Tools) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

// Register adds the five script tools to reg, in the scripts family (omitted when config.scripting is false).
func (t *Tools) Register(reg *registry.Registry) error {
	for _, tool := range []registry.Tool{
		{Name: "script_create", Description: "Save a Python script under a name (replacing the script of that name), to run later with script_run. It reads its arguments as a JSON object on standard input. parameters is an optional JSON Schema of those arguments.",
			Schema: json.RawMessage(createSchema), Handler: t.create},
		{Name: "script_list", Description: "List the scripts this run can run: your saved scripts as they were when the run started, with this run's own creates and deletes (name, description, whether they take parameters).",
			Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), Handler: t.list},
		{Name: "script_read", Description: "Show a saved script's source.", Schema: json.RawMessage(nameSchema), Handler: t.read},
		{Name: "script_run", Description: "Run a saved script in your sandbox (working directory /home/agent, 120-second limit). arguments reaches its standard input as JSON ({} without); your secrets are environment variables of their names (e.g. os.environ[\"SERVICE_API_KEY\"]), masked in results. Output is shaped like shell; a non-zero exit adds exit_code: N.",
			Schema: json.RawMessage(runSchema), Handler: t.run},
		{Name: "script_delete", Description: "Delete a saved script.", Schema: json.RawMessage(nameSchema), Handler: t.delete},
	} {
		tool.Family = orchestrator.FamilyScripts
		if err := reg.Register(tool); err != nil {
			return fmt.Errorf("register script tools: %w", err)
		}
	}
	return nil
}

const createSchema = `{"type":"object","properties":{
"name":{"type":"string","description":"lower-case letters, digits, _ and -, starting with a letter (at most 63)"},
"description":{"type":"string","description":"what it does, one line, at most 400 characters"},
"source":{"type":"string","description":"the Python source"},
"parameters":{"type":"object","description":"JSON Schema (type object) of the arguments it reads from stdin"}},
"required":["name","description","source"],"additionalProperties":false}`

const nameSchema = `{"type":"object","properties":{"name":{"type":"string","description":"script name"}},"required":["name"],"additionalProperties":false}`

const runSchema = `{"type":"object","properties":{
"name":{"type":"string","description":"script name"},
"arguments":{"type":"object","description":"passed to the script's standard input as JSON"}},
"required":["name"],"additionalProperties":false}`

// CheckName validates a script name.
func CheckName(name string) error {
	if name == "manifest" {
		return orchestrator.Errorf(orchestrator.EINVALID, "script name manifest is reserved; choose another, e.g. %s", SuggestName(name))
	}
	if !namePattern.MatchString(name) {
		return orchestrator.Errorf(orchestrator.EINVALID, "script name %q must match %s: lower-case letters, digits, _ and -, starting with a letter, e.g. %s", clip(name), namePattern, SuggestName(name))
	}
	return nil
}

// SuggestName turns a refused script name into a valid one: lower case, every other character a
// dash, starting at its first letter, at most 63 characters, never manifest.
func SuggestName(name string) string {
	n := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
	n = strings.TrimLeftFunc(n, func(r rune) bool { return r < 'a' || r > 'z' })
	if len(n) > 63 {
		n = n[:63]
	}
	switch n {
	case "":
		return "my-script"
	case "manifest":
		return "my-manifest"
	}
	return n
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// hashOf is the lowercase hex SHA-256 of a source.
func hashOf(src string) string {
	h := sha256.Sum256([]byte(src))
	return hex.EncodeToString(h[:])
}

func decodeName(c *registry.Call, tool string) (string, error) {
	var in struct{ Name string }
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("%s arguments: %w", tool, err)
	}
	return in.Name, CheckName(in.Name)
}

// needRun refuses a call outside a run: the script tools work on the run's snapshot.
func needRun(c *registry.Call) error {
	if c.RunID == "" {
		return errors.New("script tools need a run: they work on the run's snapshot of your scripts")
	}
	return nil
}

func (t *Tools) create(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Name, Description, Source string
		Parameters                json.RawMessage
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("script_create arguments: %w", err)
	}
	if err := CheckName(in.Name); err != nil {
		return "", err
	}
	desc := strings.TrimSpace(in.Description)
	switch {
	case desc == "":
		return "", orchestrator.Errorf(orchestrator.EINVALID, "description is empty; say in one line what the script does")
	case strings.ContainsAny(desc, "\r\n"):
		return "", orchestrator.Errorf(orchestrator.EINVALID, "description must be one line")
	case utf8.RuneCountInString(desc) > MaxDescriptionChars:
		return "", orchestrator.Errorf(orchestrator.EINVALID, "description is %d characters; at most %d", utf8.RuneCountInString(desc), MaxDescriptionChars)
	case strings.TrimSpace(in.Source) == "":
		return "", orchestrator.Errorf(orchestrator.EINVALID, "source is empty; write the Python program")
	case len(in.Source) > MaxSourceBytes:
		return "", orchestrator.Errorf(orchestrator.EINVALID, "source is %d bytes; at most %d", len(in.Source), MaxSourceBytes)
	case !utf8.ValidString(in.Source) || strings.ContainsRune(in.Source, 0):
		return "", orchestrator.Errorf(orchestrator.EINVALID, "source must be UTF-8 text without NUL bytes")
	}
	if p := bytes.TrimSpace(in.Parameters); len(p) > 0 && string(p) != "null" {
		var sch struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(p, &sch); err != nil || sch.Type != "object" {
			return "", orchestrator.Errorf(orchestrator.EINVALID, `parameters must be a JSON Schema of type object, e.g. {"type":"object","properties":{"city":{"type":"string"}}}`)
		}
		var argsErr *registry.ArgsError
		if err := registry.ValidateArgs(p, json.RawMessage("{}")); err != nil && !errors.As(err, &argsErr) {
			return "", orchestrator.Errorf(orchestrator.EINVALID, "parameters is not a valid JSON Schema: %v", err)
		}
		in.Parameters = p
	} else {
		in.Parameters = nil
	}
	if err := needRun(c); err != nil {
		return "", err
	}
	sc := orchestrator.Script{AgentID: c.AgentID, Name: in.Name, Description: desc, Source: in.Source, Parameters: in.Parameters, Hash: hashOf(in.Source)}
	created, err := t.Store.PutScript(ctx, sc, c.RunID, t.now())
	if err != nil {
		return "", err
	}
	c.Meta["script"], c.Meta["hash"] = sc.Name, sc.Hash
	verb := "replaced"
	if created {
		verb = "created"
	}
	return fmt.Sprintf("%s script %s (%d lines, sha256 %s); run it with script_run", verb, sc.Name, strings.Count(strings.TrimSuffix(sc.Source, "\n"), "\n")+1, sc.Hash[:12]), nil
}

// list shows the run's snapshot: the scripts this run can read and run.
func (t *Tools) list(ctx context.Context, c *registry.Call) (string, error) {
	if err := needRun(c); err != nil {
		return "", err
	}
	all, err := t.Store.RunScripts(ctx, c.RunID)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "no scripts; save one with script_create", nil
	}
	var b strings.Builder
	for _, s := range all {
		params := ""
		if len(s.Parameters) > 0 {
			params = " (takes parameters)"
		}
		fmt.Fprintf(&b, "%s: %s%s\n", s.Name, s.Description, params)
	}
	return b.String(), nil
}

func (t *Tools) read(ctx context.Context, c *registry.Call) (string, error) {
	name, err := decodeName(c, "script_read")
	if err != nil {
		return "", err
	}
	if err := needRun(c); err != nil {
		return "", err
	}
	sc, err := t.Store.RunScript(ctx, c.RunID, name)
	if err != nil {
		return "", err
	}
	c.Meta["hash"] = sc.Hash
	return fmt.Sprintf("%s.py (sha256 %s)\n%s", name, sc.Hash[:12], sc.Source), nil
}

// scriptPath is the script's file in the sandbox.
func scriptPath(box sandbox.Sandbox, name string) string {
	return path.Join(box.Places().Home, "scripts", name+".py")
}

func (t *Tools) open(ctx context.Context, c *registry.Call, tool string) (sandbox.Sandbox, error) {
	if t.Sandboxes == nil {
		return nil, fmt.Errorf("%s is not available: this orchestrator has no sandbox (set GUILDS_SANDBOX to bubblewrap or local)", tool)
	}
	box, err := t.Sandboxes.Open(ctx, c.AgentID)
	if err != nil {
		return nil, fmt.Errorf("open your sandbox: %w", err)
	}
	return box, nil
}

func (t *Tools) run(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("script_run arguments: %w", err)
	}
	if err := CheckName(in.Name); err != nil {
		return "", err
	}
	return t.Exec(ctx, c, in.Name, in.Arguments)
}

// checkArguments validates a script's arguments (nil: {}) against its parameters schema, before
// anything runs, with the registry's validator: an *registry.ArgsError lists every problem.
func checkArguments(sc orchestrator.Script, arguments json.RawMessage) error {
	if len(sc.Parameters) == 0 {
		return nil
	}
	err := registry.ValidateArgs(sc.Parameters, arguments)
	var argsErr *registry.ArgsError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &argsErr):
		return fmt.Errorf("script %s: %w (its parameters: %s)", sc.Name, err, clipSchema(sc.Parameters))
	default:
		return orchestrator.Errorf(orchestrator.EINVALID, "script %s has a parameters schema that does not compile (%v); save it again with script_create and a valid JSON Schema", sc.Name, err)
	}
}

// clipSchema shows a schema in an error, at most 400 bytes of it.
func clipSchema(s json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, s) != nil {
		b.Reset()
		b.Write(s)
	}
	if b.Len() > 400 {
		return string(b.Bytes()[:400]) + "…"
	}
	return b.String()
}

// Exec runs the run's snapshot of script name with arguments (nil: {}) through guilds-script-run.
func (t *Tools) Exec(ctx context.Context, c *registry.Call, name string, arguments json.RawMessage) (string, error) {
	if err := needRun(c); err != nil {
		return "", err
	}
	sc, err := t.Store.RunScript(ctx, c.RunID, name)
	if err != nil {
		return "", err
	}
	if err := checkArguments(sc, arguments); err != nil {
		return "", err
	}
	src, hash := sc.Source, sc.Hash
	box, err := t.open(ctx, c, "script_run")
	if err != nil {
		return "", err
	}
	if err := box.WriteFile(ctx, scriptPath(box, name), []byte(src), 0o644); err != nil {
		return "", fmt.Errorf("write %s into your sandbox: %w", scriptPath(box, name), err)
	}
	args, _ := json.Marshal(map[string]any{"name": name, "arguments": arguments})
	req := envelope.Request{Tool: "script_run", Args: args, RunID: c.RunID, CallID: c.CallID, Seq: c.Seq}
	if req.CallID == "" {
		req.CallID = orchestrator.NewID(orchestrator.PrefixCall)
	}
	env := []string{"GUILD_AGENT_ID=" + c.AgentID}
	if t.SecretEnv != nil {
		secrets, err := t.SecretEnv(ctx, c)
		if err != nil {
			return "", err
		}
		env = append(secrets, env...) // GUILD_AGENT_ID last: it wins over any name
	}
	reply, err := tools.CallHelper(ctx, box, Helper, req, env, RunTimeout+helperSlack)
	if err != nil {
		return "", err
	}
	for k, v := range reply.Meta {
		c.Meta[k] = v
	}
	c.Meta["hash"] = hash
	if reply.Failed() {
		return "", errors.New(reply.Error)
	}
	return reply.Text, nil
}

func (t *Tools) delete(ctx context.Context, c *registry.Call) (string, error) {
	name, err := decodeName(c, "script_delete")
	if err != nil {
		return "", err
	}
	if err := needRun(c); err != nil {
		return "", err
	}
	if err := t.Store.DeleteScript(ctx, c.AgentID, c.RunID, name); err != nil {
		return "", err
	}
	box, err := t.open(ctx, c, "script_delete")
	if err != nil {
		return fmt.Sprintf("deleted script %s; its sandbox file was not removed: %v", name, err), nil
	}
	file := scriptPath(box, name)
	res, err := box.Exec(ctx, sandbox.ExecRequest{Argv: []string{"rm", "-f", "--", file}, Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 {
		return fmt.Sprintf("deleted script %s; removing %s from your sandbox failed: %v %s", name, file, err, strings.TrimSpace(string(res.Stderr))), nil
	}
	return fmt.Sprintf("deleted script %s (and %s)", name, file), nil
}
