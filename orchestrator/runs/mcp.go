package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/pipeline"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// MCPOfferPolicy is an OfferPolicy that also decides the run's MCP tools and which offered tools
// ask for an operator's approval, in the same decision (one resolution for all). The bindings
// policy implements it; a plain OfferPolicy offers no MCP tools and none that asks.
type MCPOfferPolicy interface {
	OfferPolicy
	// OfferWithMCP returns the offer: the native tools, the MCP tools namespaced ({slug}_{name})
	// with their server, connection, remote name and Ask set, and the native tools that ask. An
	// enabled server whose login is disconnected is an error naming the server: the generation
	// must not start.
	OfferWithMCP(ctx context.Context, in OfferInput, tools []registry.Tool) (Offer, error)
}

// Offer is what a policy offers a run.
type Offer struct {
	Native []registry.Tool
	MCP    []orchestrator.OfferedTool
	// Ask names the native tools of Native resolved Ask: each call waits for an operator's approval.
	Ask map[string]bool
}

// decide asks the policy for the native tools and, when it can, the MCP tools and what asks.
func (s *Service) decide(ctx context.Context, in OfferInput, all []registry.Tool) (Offer, error) {
	if p, ok := s.Offer.(MCPOfferPolicy); ok {
		return p.OfferWithMCP(ctx, in, all)
	}
	native, err := s.Offer.Offer(ctx, in, all)
	return Offer{Native: native}, err
}

// appendMCP adds the MCP tools after the native ones, sorted by name; an MCP tool whose name a
// native tool already has is left out (and logged), since a call must name one tool.
func appendMCP(out, mcp []orchestrator.OfferedTool, log *slog.Logger) []orchestrator.OfferedTool {
	if len(mcp) == 0 {
		return out
	}
	taken := make(map[string]bool, len(out)+len(mcp))
	for _, t := range out {
		taken[t.Name] = true
	}
	sorted := append([]orchestrator.OfferedTool(nil), mcp...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, t := range sorted {
		if taken[t.Name] {
			log.Warn("MCP tool left out: its name is taken", "tool", t.Name, "server", t.Server, "connection_id", t.ConnectionID)
			continue
		}
		taken[t.Name] = true
		out = append(out, t)
	}
	return out
}

// offeredMCP returns the run's offered MCP tool named name.
func offeredMCP(run orchestrator.Run, name string) (orchestrator.OfferedTool, bool) {
	for _, t := range run.OfferedTools {
		if t.Name == name && t.ConnectionID != "" {
			return t, true
		}
	}
	return orchestrator.OfferedTool{}, false
}

// mcpUnavailable is the result of calling an offered MCP tool on a service built without an MCP
// caller: the call is answered with an error, never a made-up result.
func mcpUnavailable(t orchestrator.OfferedTool) string {
	return fmt.Sprintf("ERROR: %s is the %s tool of the %s connector (login %s); this orchestrator runs without an MCP client, so MCP and adapter tools cannot be called. Use another offered tool, or call report_issue if you need this one.",
		t.Name, t.RemoteName, t.Server, t.ConnectionID)
}

// MCPCaller carries calls of offered MCP tools to their servers (connections.Caller over the MCP
// client). An error is the call's ERROR: result; its text names what went wrong, never a credential.
type MCPCaller interface {
	CallMCP(ctx context.Context, run orchestrator.Run, t orchestrator.OfferedTool, args json.RawMessage) (string, error)
}

// toolReported is an error a tool itself reported (an MCP result marked isError).
type toolReported interface{ ReportedByTool() bool }

// invokeMCP calls an offered MCP tool and returns the invoke triple.
func (s *Service) invokeMCP(ctx context.Context, run orchestrator.Run, t orchestrator.OfferedTool, rc *registry.Call, red *pipeline.Redactor) (string, func(string) string, string) {
	if s.MCP == nil {
		return mcpUnavailable(t), nil, "mcp_unavailable"
	}
	out, err := s.MCP.CallMCP(ctx, run, t, rc.Args)
	if err == nil {
		return out, nil, ""
	}
	var argsErr *registry.ArgsError
	var tr toolReported
	switch {
	case errors.As(err, &argsErr):
		return "ERROR: " + err.Error(), nil, "arguments"
	case errors.As(err, &tr) && tr.ReportedByTool():
		return "ERROR: " + err.Error(), nil, "tool_error"
	}
	s.log().Warn("MCP call failed", "run_id", run.ID, "seq", rc.Seq, "call_id", rc.CallID, "tool", t.Name, "server", t.Server,
		"connection_id", t.ConnectionID, "err", red.Redact(err.Error()))
	return "ERROR: " + err.Error(), nil, "mcp"
}
