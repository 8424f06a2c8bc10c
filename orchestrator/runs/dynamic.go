package runs

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/pipeline"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// DynamicTools offers and carries per-agent tools that live beside the registry: an agent's
// parameterised scripts, each offered as a first-class tool on new runs. An offered dynamic tool
// has no connection and a RemoteName its provider reads back at call time.
type DynamicTools interface {
	// Offer returns the agent's dynamic tools for a new run, given what the run already offers
	// (so a provider can follow the bindings and flags of its native family). It is the run-start
	// hook: with in.RunID set, the run with that id is starting (its row is written right after), and
	// a provider may store per-run state under that id, such as a snapshot.
	Offer(ctx context.Context, in OfferInput, offered []orchestrator.OfferedTool) ([]orchestrator.OfferedTool, error)
	// Call runs one call of an offered dynamic tool; call.Args is checked against its schema first.
	Call(ctx context.Context, run orchestrator.Run, t orchestrator.OfferedTool, call *registry.Call) (string, error)
}

// appendDynamic adds the dynamic tools whose names no offered tool has taken, sorted by name.
func appendDynamic(out, dyn []orchestrator.OfferedTool, log *slog.Logger) []orchestrator.OfferedTool {
	taken := make(map[string]bool, len(out)+len(dyn))
	for _, t := range out {
		taken[t.Name] = true
	}
	sorted := append([]orchestrator.OfferedTool(nil), dyn...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, t := range sorted {
		if taken[t.Name] {
			log.Warn("dynamic tool left out: its name is taken", "tool", t.Name, "remote_name", t.RemoteName)
			continue
		}
		taken[t.Name] = true
		out = append(out, t)
	}
	return out
}

// offeredDynamic returns the run's offered dynamic tool named name: one without a connection that
// the registry does not hold.
func (s *Service) offeredDynamic(run orchestrator.Run, name string) (orchestrator.OfferedTool, bool) {
	if s.Dynamic == nil {
		return orchestrator.OfferedTool{}, false
	}
	if _, native := s.Registry.Get(name); native {
		return orchestrator.OfferedTool{}, false
	}
	for _, t := range run.OfferedTools {
		if t.Name == name && t.ConnectionID == "" && t.RemoteName != "" {
			return t, true
		}
	}
	return orchestrator.OfferedTool{}, false
}

// invokeDynamic checks the arguments against the offered schema and runs a dynamic tool, with the
// same result forms as invoke.
func (s *Service) invokeDynamic(ctx context.Context, run orchestrator.Run, t orchestrator.OfferedTool, rc *registry.Call, red *pipeline.Redactor) (raw string, filter func(string) string, errKind string) {
	if err := registry.ValidateArgs(t.InputSchema, rc.Args); err != nil {
		return "ERROR: " + err.Error(), nil, "arguments"
	}
	defer func() {
		if p := recover(); p != nil {
			s.log().Error("dynamic tool panicked", "run_id", run.ID, "call_id", rc.CallID, "tool", t.Name, "panic", red.With(rc.Secrets...).Redact(fmt.Sprint(p)), "stack", red.With(rc.Secrets...).Redact(string(debug.Stack())))
			raw, filter, errKind = fmt.Sprintf("ERROR: %s failed with an internal error; the operator can find the details in the orchestrator log under call %s", t.Name, rc.CallID), nil, "panic"
		}
	}()
	out, err := s.Dynamic.Call(ctx, run, t, rc)
	if err != nil {
		s.log().Log(ctx, failureLevel(err), "dynamic tool failed", "run_id", run.ID, "call_id", rc.CallID, "tool", t.Name, "err", red.With(rc.Secrets...).Redact(err.Error()))
		return "ERROR: " + err.Error(), nil, "handler"
	}
	return out, nil, ""
}
