package runs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// OfferInput is what an offer decision may look at: the agent, the run's kind and its config snapshot.
type OfferInput struct {
	RunID  string // the id of the run being started ("" for a preview, such as the access views)
	Agent  orchestrator.Agent
	Kind   string
	Config orchestrator.AgentConfig
}

// OfferPolicy decides which registered native tools a run offers. It is the one place that decision
// is made: production wires the bindings policy (bindings.Policy: the resolution walk, then the
// rules of DefaultOffer). Tools of the orchestrator.FamilyAlways family are offered whatever the
// policy answers.
type OfferPolicy interface {
	Offer(ctx context.Context, in OfferInput, tools []registry.Tool) ([]registry.Tool, error)
}

// OfferFunc adapts a function to OfferPolicy.
type OfferFunc func(ctx context.Context, in OfferInput, tools []registry.Tool) ([]registry.Tool, error)

// Offer calls f.
func (f OfferFunc) Offer(ctx context.Context, in OfferInput, tools []registry.Tool) ([]registry.Tool, error) {
	return f(ctx, in, tools)
}

// DefaultOffer holds the rules of the spec's "What a run offers" that apply whatever the bindings
// say: the config flags, the run kinds of the schedule, memory and secret_request tools, and the
// integrations a tool needs. Alone it offers every tool those rules allow (as if every binding were
// on); the bindings policy applies the resolution walk first and then these rules.
type DefaultOffer struct {
	// Integrations is which integrations' variables the box has set (config reads them once).
	Integrations integrations.Set
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
func (d DefaultOffer) allows(in OfferInput, t registry.Tool) bool { return d.Why(in, t) == "" }

// Why says why the rules leave t out of a run with this input ("" when they allow it), in words an
// operator can act on; the access views show it.
func (d DefaultOffer) Why(in OfferInput, t registry.Tool) string {
	if ig, ok := integrations.ForTool(t.Name); ok && !integrations.Enabled(d.Integrations, ig.Name) {
		return fmt.Sprintf("the %s integration is off: set %s", ig.Name, strings.Join(ig.Required, ", ")) // e.g. tavily_search without TAVILY_API_KEY
	}
	if t.Name == "secret_request" && in.Kind != orchestrator.KindDirect {
		return "offered on direct runs only"
	}
	switch t.Family {
	case orchestrator.FamilyBrowser:
		return flagOff(in.Config.Browser, "browser")
	case orchestrator.FamilyCode:
		return flagOff(in.Config.Coding, "coding")
	case orchestrator.FamilyScripts:
		return flagOff(in.Config.Scripting, "scripting")
	case orchestrator.FamilyMemory:
		if !slices.Contains([]string{orchestrator.KindDirect, orchestrator.KindGroup, orchestrator.KindSchedule}, in.Kind) {
			return "offered on direct, group and schedule runs only"
		}
		return flagOff(in.Config.Memory, "memory")
	case orchestrator.FamilySchedules:
		if in.Kind != orchestrator.KindDirect && in.Kind != orchestrator.KindGroupChat {
			return "offered on direct and group-chat runs only"
		}
	}
	return ""
}

// flagOff is the reason for a tool whose config flag is false.
func flagOff(on bool, flag string) string {
	if on {
		return ""
	}
	return "config." + flag + " is false"
}
