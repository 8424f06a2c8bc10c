package runs

import (
	"context"

	"github.com/guildsai/guilds/orchestrator"
)

// OfferStore is the part of the run store that replaces a run's offered tools, which NextGeneration needs.
type OfferStore interface {
	SetOfferedTools(ctx context.Context, runID string, tools []orchestrator.OfferedTool) error
}

// Generation is what opening a run's next generation answers: the run as it now stands and the
// native tools dropped from its offer.
type Generation struct {
	Run     orchestrator.Run `json:"run"`
	Dropped []string         `json:"dropped_tools"`
}

// NextGeneration closes the run's generation and opens its next turn. A coding run's exploration
// figures are computed over its calls so far and stored on the run. The offer is decided again for the agent as it is now:
// a native tool that is now off is dropped (a binding turned off, tavily_search whose key is gone,
// the browser, code, script or memory tools whose agent flag turned false, so a flag counts as on
// only while both the run's snapshot and the agent have it on); nothing is added mid-run, MCP tools
// stay, and a tool the registry does not know (not the policy's to decide) stays. Which offered
// tools ask for an operator's approval is resolved again. An enabled MCP
// server whose login is now disconnected stops the generation with an error naming it. It waits for
// the run's calls in flight.
func (s *Service) NextGeneration(ctx context.Context, runID string) (Generation, error) {
	if !orchestrator.ValidID(runID) {
		return Generation{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", runID)
	}
	defer s.exclusive(runID)()
	run, err := s.Runs.GetRun(ctx, runID)
	if err != nil {
		return Generation{}, err
	}
	if run.Status != orchestrator.RunOpen {
		return Generation{}, orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is closed; start a new run", run.ID)
	}
	gen := Generation{Run: run, Dropped: []string{}}
	if err := s.explore(ctx, &gen.Run); err != nil {
		return Generation{}, err
	}
	if s.Offer == nil {
		return gen, nil
	}
	agent, err := s.Scopes.GetAgent(ctx, run.AgentID)
	if err != nil {
		return Generation{}, err
	}
	cfg := orchestrator.AgentConfig{
		Browser: run.Config.Browser && agent.Config.Browser, Coding: run.Config.Coding && agent.Config.Coding,
		Scripting: run.Config.Scripting && agent.Config.Scripting, Memory: run.Config.Memory && agent.Config.Memory,
	}
	all := s.Registry.List()
	dec, err := s.decide(ctx, OfferInput{Agent: agent, Kind: run.Kind, Config: cfg}, all)
	if err != nil {
		return Generation{}, err
	}
	on := map[string]bool{}
	for _, t := range dec.Native {
		on[t.Name] = true
	}
	for _, t := range all {
		if t.Family == orchestrator.FamilyAlways {
			on[t.Name] = true
		}
	}
	mcpAsk := map[string]bool{}
	for _, t := range dec.MCP {
		mcpAsk[t.Name] = t.Ask
	}
	changed := false
	keep := make([]orchestrator.OfferedTool, 0, len(run.OfferedTools))
	for _, t := range run.OfferedTools {
		_, native := s.Registry.Get(t.Name)
		native = native && t.ConnectionID == ""
		if native && !on[t.Name] {
			gen.Dropped = append(gen.Dropped, t.Name)
			continue
		}
		// Ask is resolved again: a native tool as the policy now says; an MCP tool as its overlay
		// now says while it is still on (one turned off stays, and keeps asking if it asked).
		ask := t.Ask
		switch {
		case native:
			ask = dec.Ask[t.Name]
		case t.ConnectionID != "":
			if a, ok := mcpAsk[t.Name]; ok {
				ask = a
			}
		}
		if ask != t.Ask {
			t.Ask, changed = ask, true
		}
		keep = append(keep, t)
	}
	if len(gen.Dropped) == 0 && !changed {
		return gen, nil
	}
	if err := s.Runs.SetOfferedTools(ctx, run.ID, keep); err != nil {
		return Generation{}, err
	}
	s.mu.Lock()
	delete(s.snapshots, run.ID) // the cached snapshot no longer holds
	s.mu.Unlock()
	gen.Run.OfferedTools = keep
	s.log().Info("generation opened", "run_id", run.ID, "dropped", gen.Dropped, "ask_changed", changed)
	return gen, nil
}
