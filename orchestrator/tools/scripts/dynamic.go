package scripts

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// toolName is what a first-class script tool may be called.
var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

var _ runs.DynamicTools = (*Tools)(nil)

// Offer is the run-start hook. For a starting run (in.RunID set) that offers any script tool it
// takes the run's snapshot of the agent's scripts, before the run's row is written, and stored so
// it outlives this process; for a preview it reads the catalog. From that one read it returns the
// scripts with parameters as first-class tools (the name with - written _, the parameters as the
// input schema) when the run offers script_run: the script tools' binding and config.scripting
// decide for these too.
func (t *Tools) Offer(ctx context.Context, in runs.OfferInput, offered []orchestrator.OfferedTool) ([]orchestrator.OfferedTool, error) {
	anyTool, hasRun := false, false
	for _, o := range offered {
		if o.ConnectionID == "" && slices.Contains(ToolNames, o.Name) {
			anyTool, hasRun = true, hasRun || o.Name == "script_run"
		}
	}
	if !in.Config.Scripting || !anyTool {
		return nil, nil
	}
	var all []orchestrator.Script
	var err error
	if in.RunID != "" {
		all, err = t.Store.SnapshotRunScripts(ctx, in.RunID, in.Agent.ID, t.now())
	} else {
		all, err = t.Store.ListScripts(ctx, in.Agent.ID)
	}
	if err != nil || !hasRun {
		return nil, err
	}
	var out []orchestrator.OfferedTool
	for _, s := range all {
		name := strings.ReplaceAll(s.Name, "-", "_")
		if len(s.Parameters) == 0 || !toolName.MatchString(name) {
			continue
		}
		schema, err := registry.ShapeSchema(s.Parameters)
		if err != nil {
			continue // a schema the model cannot be given; script_run still runs it
		}
		out = append(out, orchestrator.OfferedTool{Name: name, RemoteName: s.Name, InputSchema: schema,
			Description: s.Description + " (your saved script " + s.Name + "; its arguments reach the script's standard input as JSON, your secrets its environment)"})
	}
	return out, nil
}

// Call runs a first-class script tool: its arguments object reaches the script's stdin.
func (t *Tools) Call(ctx context.Context, _ orchestrator.Run, tool orchestrator.OfferedTool, call *registry.Call) (string, error) {
	if err := CheckName(tool.RemoteName); err != nil {
		return "", fmt.Errorf("%s is not a script tool: %w", tool.Name, err)
	}
	args := call.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return t.Exec(ctx, call, tool.RemoteName, args)
}
