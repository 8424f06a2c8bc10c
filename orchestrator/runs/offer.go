package runs

import (
	"context"
	"slices"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// OfferInput is what an offer decision may look at: the agent, the run's kind and its config snapshot.
type OfferInput struct {
	Agent  orchestrator.Agent
	Kind   string
	Config orchestrator.AgentConfig
}

// OfferPolicy decides which registered native tools a run offers. It is the one place that decision
// is made: the bindings work replaces DefaultOffer with the resolution walk. Tools of the
// orchestrator.FamilyAlways family are offered whatever the policy answers.
type OfferPolicy interface {
	Offer(ctx context.Context, in OfferInput, tools []registry.Tool) ([]registry.Tool, error)
}

// OfferFunc adapts a function to OfferPolicy.
type OfferFunc func(ctx context.Context, in OfferInput, tools []registry.Tool) ([]registry.Tool, error)

// Offer calls f.
func (f OfferFunc) Offer(ctx context.Context, in OfferInput, tools []registry.Tool) ([]registry.Tool, error) {
	return f(ctx, in, tools)
}

// DefaultOffer is the policy before bindings exist: every binding tool is enabled (the platform seed
// enables them all), and the spec's "What a run offers" limits apply: the config flags, the run
// kinds of the schedule, memory and secret_request tools, and the integrations a tool needs.
type DefaultOffer struct {
	// Getenv reads the orchestrator's configuration, for the integrations registry.
	Getenv func(string) string
}

// Offer keeps the tools the rules allow, in their order.
func (d DefaultOffer) Offer(_ context.Context, in OfferInput, tools []registry.Tool) ([]registry.Tool, error) {
	var out []registry.Tool
	for _, t := range tools {
		if d.allows(in, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// allows applies the rules to one tool.
func (d DefaultOffer) allows(in OfferInput, t registry.Tool) bool {
	if ig, ok := integrations.ForTool(t.Name); ok && (d.Getenv == nil || !integrations.Enabled(d.Getenv, ig.Name)) {
		return false // e.g. tavily_search without TAVILY_API_KEY
	}
	if t.Name == "secret_request" && in.Kind != orchestrator.KindDirect {
		return false
	}
	switch t.Family {
	case orchestrator.FamilyBrowser:
		return in.Config.Browser
	case orchestrator.FamilyCode:
		return in.Config.Coding
	case orchestrator.FamilyScripts:
		return in.Config.Scripting
	case orchestrator.FamilyMemory:
		return in.Config.Memory && slices.Contains([]string{orchestrator.KindDirect, orchestrator.KindGroup, orchestrator.KindSchedule}, in.Kind)
	case orchestrator.FamilySchedules:
		return in.Kind == orchestrator.KindDirect || in.Kind == orchestrator.KindGroupChat
	}
	return true
}
