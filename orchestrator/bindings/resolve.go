// Package bindings decides who may call what: the resolution walk over platform, organisation,
// guild and agent binding rows, per-tool overlays, connection visibility, the binding rules the
// API enforces, the access views, and the run offer policy built on them. A login's own life
// (Connect, its tools, its calls) is the connections package's.
package bindings

import "github.com/guildsai/guilds/orchestrator"

// Row is one present binding row of a chain, at one scope.
type Row struct {
	Scope        string
	Enabled      bool
	Ask          bool   // native_tool and mcp_tool rows that are on: each call waits for an operator's approval
	ConnectionID string // mcp rows only; "" keeps the current connection
}

// State is what the walk resolves a catalog item to.
type State struct {
	Enabled        bool
	Ask            bool   // enabled with an operator's approval of each call (Ask)
	ConnectionID   string // the current connection (mcp)
	DecidedBy      string // scope of the last present row; "" for the empty chain
	ConnectionFrom string // scope whose row set the connection
}

// Walk resolves rows by walking platform, organisation, guild, agent: each present row replaces
// enabled and ask (so a row without ask below an Ask row is plainly On) and, when it carries a
// connection, the current connection; an absent row leaves the state; the empty chain is
// disabled. Rows may come in any order; a scope has at most one row.
func Walk(rows []Row) State {
	var st State
	for _, scope := range orchestrator.Scopes {
		for _, r := range rows {
			if r.Scope != scope {
				continue
			}
			st.Enabled, st.Ask, st.DecidedBy = r.Enabled, r.Enabled && r.Ask, scope
			if r.ConnectionID != "" {
				st.ConnectionID, st.ConnectionFrom = r.ConnectionID, scope
			}
		}
	}
	return st
}

// Overlay values of a per-tool overlay.
const (
	OverlayInherit = "inherit" // no mcp_tool row in the chain: the tool follows its server
	OverlayOn      = "on"
	OverlayOff     = "off"
	OverlayAsk     = "ask" // on, with an operator's approval of each call
)

// ToolState is what one listed MCP tool resolves to.
type ToolState struct {
	Enabled   bool
	Ask       bool   // enabled with an operator's approval of each call
	Overlay   string // inherit, on, ask or off: the walked overlay
	DecidedBy string // the scope whose row decided: the overlay's, or the server's when it is off or inherited
}

// WalkTool resolves a listed tool: its overlay rows walk the same chain; with no overlay the tool
// inherits the server grant (which never asks); an overlay On or Ask does not punch through a
// server that is Off.
func WalkTool(server State, overlay []Row) ToolState {
	o := Walk(overlay)
	ts := ToolState{Enabled: server.Enabled, Overlay: OverlayInherit, DecidedBy: server.DecidedBy}
	if o.DecidedBy == "" {
		return ts
	}
	switch {
	case o.Ask:
		ts.Overlay = OverlayAsk
	case o.Enabled:
		ts.Overlay = OverlayOn
	default:
		ts.Overlay = OverlayOff
	}
	if server.Enabled {
		ts.Enabled, ts.Ask, ts.DecidedBy = o.Enabled, o.Ask, o.DecidedBy
	}
	return ts
}

// Visible reports whether a connection owned at owner may be bound at scope at: a platform
// connection anywhere; an organisation one at that organisation or its guilds and agents; a guild
// one at that guild or its members; an agent one only at that agent.
func Visible(owner, at orchestrator.Chain) bool {
	switch owner.Scope {
	case orchestrator.ScopePlatform:
		return true
	case orchestrator.ScopeOrg:
		return at.Scope != orchestrator.ScopePlatform && at.OrgID == owner.OrgID
	case orchestrator.ScopeGuild:
		return (at.Scope == orchestrator.ScopeGuild || at.Scope == orchestrator.ScopeAgent) && at.GuildID == owner.GuildID
	case orchestrator.ScopeAgent:
		return at.Scope == orchestrator.ScopeAgent && at.AgentID == owner.AgentID
	}
	return false
}

// index groups a chain's binding rows by catalog kind and id.
type index map[key][]Row

type key struct{ kind, id string }

// newIndex groups rows.
func newIndex(rows []orchestrator.Binding) index {
	ix := make(index, len(rows))
	for _, b := range rows {
		k := key{b.CatalogKind, b.CatalogID}
		ix[k] = append(ix[k], Row{Scope: b.Scope, Enabled: b.Enabled, Ask: b.Ask, ConnectionID: b.ConnectionID})
	}
	return ix
}

// walk resolves one catalog item of the chain.
func (ix index) walk(kind, id string) State { return Walk(ix[key{kind, id}]) }
