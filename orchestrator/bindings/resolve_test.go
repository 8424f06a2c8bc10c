package bindings

import (
	"fmt"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
)

const (
	P = orchestrator.ScopePlatform
	O = orchestrator.ScopeOrg
	G = orchestrator.ScopeGuild
	A = orchestrator.ScopeAgent
)

func on(scope string) Row           { return Row{Scope: scope, Enabled: true} }
func off(scope string) Row          { return Row{Scope: scope, Enabled: false} }
func onVia(scope, conn string) Row  { return Row{Scope: scope, Enabled: true, ConnectionID: conn} }
func offVia(scope, conn string) Row { return Row{Scope: scope, Enabled: false, ConnectionID: conn} }

// TestWalkNamedCases: the spec's named situations of the resolution walk.
func TestWalkNamedCases(t *testing.T) {
	tests := []struct {
		name string
		rows []Row
		want State
	}{
		{"empty chain is disabled", nil, State{}},
		{"enable-downward: a platform row reaches every agent", []Row{on(P)}, State{Enabled: true, DecidedBy: P}},
		{"enable-downward: an organisation row reaches its agents", []Row{on(O)}, State{Enabled: true, DecidedBy: O}},
		{"opt-out: the agent turns off what the platform enabled", []Row{on(P), off(A)}, State{Enabled: false, DecidedBy: A}},
		{"opt-out: the guild turns off what the organisation enabled", []Row{on(O), off(G)}, State{Enabled: false, DecidedBy: G}},
		{"enable-extra: only this agent gets it", []Row{on(A)}, State{Enabled: true, DecidedBy: A}},
		{"enable-extra: the guild adds what the platform left absent", []Row{off(P), on(G)}, State{Enabled: true, DecidedBy: G}},
		{"re-enable: the agent turns back on what its guild turned off", []Row{on(P), off(G), on(A)}, State{Enabled: true, DecidedBy: A}},
		{"re-enable: the guild turns back on what the organisation turned off", []Row{on(P), off(O), on(G)}, State{Enabled: true, DecidedBy: G}},
		{"guild login reaches members", []Row{onVia(G, "c_guild")}, State{Enabled: true, ConnectionID: "c_guild", DecidedBy: G, ConnectionFrom: G}},
		{"override-login: an agent relogin replaces the guild login", []Row{onVia(G, "c_guild"), onVia(A, "c_agent")},
			State{Enabled: true, ConnectionID: "c_agent", DecidedBy: A, ConnectionFrom: A}},
		{"opt-out keeps the inherited login", []Row{onVia(O, "c_org"), off(A)}, State{Enabled: false, ConnectionID: "c_org", DecidedBy: A, ConnectionFrom: O}},
		{"re-enable without a login uses the inherited one", []Row{onVia(O, "c_org"), off(G), on(A)}, State{Enabled: true, ConnectionID: "c_org", DecidedBy: A, ConnectionFrom: O}},
		{"an off row may still set the login below", []Row{offVia(G, "c_guild"), on(A)}, State{Enabled: true, ConnectionID: "c_guild", DecidedBy: A, ConnectionFrom: G}},
		{"row order does not matter", []Row{on(A), off(P), onVia(O, "c_org")}, State{Enabled: true, ConnectionID: "c_org", DecidedBy: A, ConnectionFrom: O}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Walk(tt.rows); got != tt.want {
				t.Fatalf("Walk = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestWalkEveryCombination walks every combination of absent, off, on, off with a login and on
// with a login at the four scopes (625 chains) and checks each against the rule read backwards:
// enabled is the narrowest present row's, the login the narrowest present login, the empty chain off.
func TestWalkEveryCombination(t *testing.T) {
	kinds := []string{"absent", "off", "on", "off+login", "on+login"}
	scopes := orchestrator.Scopes
	n := 0
	for c := 0; c < 625; c++ {
		var rows []Row
		var label string
		code := c
		for _, sc := range scopes {
			k := kinds[code%5]
			code /= 5
			label += fmt.Sprintf("%s=%s ", sc, k)
			switch k {
			case "off":
				rows = append(rows, off(sc))
			case "on":
				rows = append(rows, on(sc))
			case "off+login":
				rows = append(rows, offVia(sc, "c_"+sc))
			case "on+login":
				rows = append(rows, onVia(sc, "c_"+sc))
			}
		}
		var want State
		for i := len(scopes) - 1; i >= 0; i-- {
			for _, r := range rows {
				if r.Scope != scopes[i] {
					continue
				}
				if want.DecidedBy == "" {
					want.Enabled, want.DecidedBy = r.Enabled, r.Scope
				}
				if want.ConnectionID == "" && r.ConnectionID != "" {
					want.ConnectionID, want.ConnectionFrom = r.ConnectionID, r.Scope
				}
			}
		}
		if got := Walk(rows); got != want {
			t.Errorf("%s: Walk = %+v, want %+v", label, got, want)
		}
		n++
	}
	if n != 625 {
		t.Fatalf("walked %d chains", n)
	}
}

// TestWalkTool: per-tool Inherit / On / Off overlays over the server grant.
func TestWalkTool(t *testing.T) {
	serverOn := Walk([]Row{onVia(G, "c")})
	serverOffAtAgent := Walk([]Row{onVia(G, "c"), off(A)})
	tests := []struct {
		name    string
		server  State
		overlay []Row
		want    ToolState
	}{
		{"a new listed tool inherits the server grant", serverOn, nil, ToolState{Enabled: true, Overlay: OverlayInherit, DecidedBy: G}},
		{"tool Off at the owner (default-off) keeps it off", serverOn, []Row{off(G)}, ToolState{Enabled: false, Overlay: OverlayOff, DecidedBy: G}},
		{"tool On at the agent over a default-off", serverOn, []Row{off(G), on(A)}, ToolState{Enabled: true, Overlay: OverlayOn, DecidedBy: A}},
		{"tool Off at the agent", serverOn, []Row{off(A)}, ToolState{Enabled: false, Overlay: OverlayOff, DecidedBy: A}},
		{"tool On does not punch through server Off", serverOffAtAgent, []Row{on(A)}, ToolState{Enabled: false, Overlay: OverlayOn, DecidedBy: A}},
		{"tool On at the platform does not punch through an absent server", Walk(nil), []Row{on(P)}, ToolState{Enabled: false, Overlay: OverlayOn, DecidedBy: ""}},
		{"server Off keeps an inherited tool off", serverOffAtAgent, nil, ToolState{Enabled: false, Overlay: OverlayInherit, DecidedBy: A}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WalkTool(tt.server, tt.overlay); got != tt.want {
				t.Fatalf("WalkTool = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestVisible: who may bind a login owned where.
func TestVisible(t *testing.T) {
	platform := orchestrator.Chain{Scope: P}
	org1 := orchestrator.Chain{Scope: O, OrgID: "o1"}
	org2 := orchestrator.Chain{Scope: O, OrgID: "o2"}
	guild1 := orchestrator.Chain{Scope: G, OrgID: "o1", GuildID: "g1"}
	guild2 := orchestrator.Chain{Scope: G, OrgID: "o1", GuildID: "g2"}
	agent1 := orchestrator.Chain{Scope: A, OrgID: "o1", GuildID: "g1", AgentID: "a1"}
	agent2 := orchestrator.Chain{Scope: A, OrgID: "o1", GuildID: "g1", AgentID: "a2"}
	agent3 := orchestrator.Chain{Scope: A, OrgID: "o1", GuildID: "g2", AgentID: "a3"}
	agentOther := orchestrator.Chain{Scope: A, OrgID: "o2", GuildID: "g9", AgentID: "a9"}
	tests := []struct {
		name      string
		owner, at orchestrator.Chain
		want      bool
	}{
		{"platform login at the platform", platform, platform, true},
		{"platform login at any agent", platform, agentOther, true},
		{"org login at its org", org1, org1, true},
		{"org login at its guild", org1, guild1, true},
		{"org login at its agent", org1, agent3, true},
		{"org login at another org", org1, org2, false},
		{"org login at another org's agent", org1, agentOther, false},
		{"org login at the platform", org1, platform, false},
		{"guild login at its guild", guild1, guild1, true},
		{"guild login at a member", guild1, agent2, true},
		{"guild login at a sibling guild", guild1, guild2, false},
		{"guild login at a sibling guild's agent", guild1, agent3, false},
		{"guild login at its org", guild1, org1, false},
		{"agent login at that agent", agent1, agent1, true},
		{"agent login at a teammate", agent1, agent2, false},
		{"agent login at its guild", agent1, guild1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Visible(tt.owner, tt.at); got != tt.want {
				t.Fatalf("Visible = %v, want %v", got, tt.want)
			}
		})
	}
}
