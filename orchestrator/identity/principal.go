// Package identity decides who is calling and what they may do: accounts and their roles at
// organisations and guilds, sign-in sessions, API tokens, agent keys and run tokens, invitations,
// and the audit log. It knows no HTTP framework; httpapi resolves every request's principal here.
package identity

import (
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
)

// Principal is who made a request: exactly one per request.
type Principal struct {
	Kind string // an orchestrator.Credential* kind
	// ID is the credential's id: the session, token, key or run; "" for the bootstrap token.
	ID string
	// Account is the signed-in person behind a session or an API token; nil otherwise.
	Account *orchestrator.Account
	// Admin is true for the bootstrap token and for an instance admin's session or full token.
	Admin bool
	// Members are the roles the principal holds, already narrowed by an API token's cap.
	Members []orchestrator.Membership
	// Chain is an agent key's or run token's agent.
	Chain orchestrator.Chain
	// RunID is a run token's run.
	RunID string
	// CSRF is a session's token, which a state-changing request made with its cookie must carry.
	CSRF string
	// Narrowed is an API token made with a role cap or a scope: it acts within them, and never on
	// its account's tokens and sessions.
	Narrowed bool
}

// Label names the principal for messages and logs (never a secret).
func (p Principal) Label() string {
	switch p.Kind {
	case orchestrator.CredentialBootstrap:
		return "the bootstrap admin token"
	case orchestrator.CredentialSession:
		return "account " + p.Account.Email
	case orchestrator.CredentialToken:
		return "API token " + p.ID + " of " + p.Account.Email
	case orchestrator.CredentialAgentKey:
		return "agent key " + p.ID
	case orchestrator.CredentialRunToken:
		return "the token of run " + p.RunID
	}
	return "nobody"
}

// AccountID is the account behind the principal, "" when none.
func (p Principal) AccountID() string {
	if p.Account == nil {
		return ""
	}
	return p.Account.ID
}

// Runtime reports whether the principal is a model runtime's credential (an agent key or a run
// token), which reaches one agent's runs and nothing else.
func (p Principal) Runtime() bool {
	return p.Kind == orchestrator.CredentialAgentKey || p.Kind == orchestrator.CredentialRunToken
}

// RoleAt is the highest role the principal holds over the chain's own scope: at its organisation, or
// at its guild for a guild or an agent. Admins are owners everywhere; "" is no role.
func (p Principal) RoleAt(c orchestrator.Chain) string {
	if p.Admin {
		return orchestrator.RoleOwner
	}
	best := ""
	for _, m := range p.Members {
		covers := (m.Scope == orchestrator.ScopeOrg && m.ScopeID == c.OrgID && c.OrgID != "") ||
			(m.Scope == orchestrator.ScopeGuild && m.ScopeID == c.GuildID && c.GuildID != "")
		if covers && orchestrator.RoleRank(m.Role) > orchestrator.RoleRank(best) {
			best = m.Role
		}
	}
	return best
}

// RoleWithin is the highest role the principal holds over the chain's scope or anywhere under it:
// a guild's operator reaches its organisation's shared objects (its logins, say) this way.
func (p Principal) RoleWithin(c orchestrator.Chain) string {
	best := p.RoleAt(c)
	if c.Scope != orchestrator.ScopeOrg && c.Scope != orchestrator.ScopePlatform {
		return best
	}
	for _, m := range p.Members {
		if (c.Scope == orchestrator.ScopePlatform || m.OrgID == c.OrgID) && orchestrator.RoleRank(m.Role) > orchestrator.RoleRank(best) {
			best = m.Role
		}
	}
	return best
}

// RoleAnywhere is the highest role the principal holds at any organisation or guild (owner for
// admins, "" for none).
func (p Principal) RoleAnywhere() string {
	if p.Admin {
		return orchestrator.RoleOwner
	}
	best := ""
	for _, m := range p.Members {
		if orchestrator.RoleRank(m.Role) > orchestrator.RoleRank(best) {
			best = m.Role
		}
	}
	return best
}

// ReachesOrg reports whether the principal holds any role in the organisation (or is an admin).
func (p Principal) ReachesOrg(orgID string) bool {
	return p.RoleWithin(orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: orgID}) != ""
}

// Runtime credentials a route accepts besides accounts.
const (
	RuntimeNone  = iota // agent keys and run tokens are refused
	RuntimeAgent        // the agent's key, for a route on the agent itself (start its runs, read it)
	RuntimeRun          // the run's token and its agent's key, for a route on one run
	RuntimeAny          // any runtime credential, for a route that names no object (the instance view)
)

// Need is what a route asks of its caller.
type Need struct {
	// Role is the least role the caller needs over the target; "" means any principal will do
	// (within its reach when there is a target). Without a target, an account needs the role at
	// some organisation or guild (the coin picker of a Connect form needs an operator somewhere).
	Role string
	// Admin restricts the route to the instance admin.
	Admin bool
	// Within lets a role anywhere under the target count: a guild's members read their
	// organisation itself, its logins (which their guild may bind) and its issue inbox (filtered
	// to their guilds); a guild role never covers the organisation's own notes, tables or members.
	Within bool
	// Runtime says which runtime credentials may call the route (RuntimeNone by default).
	Runtime int
	// Session restricts the route to a signed-in account's session (minting an API token).
	Session bool
	// Account marks a route that acts on the caller's own account (its tokens, its sessions): an
	// account's session or an API token made without a role cap or scope.
	Account bool
}

// Target is what a request acts on: where it sits, and the run when it names one.
type Target struct {
	orchestrator.Chain
	RunID string
}

// May returns nil when the principal may do what the route needs to the target, ENOTFOUND when
// the target is outside its reach (the same answer as for an id that does not exist), and
// EFORBIDDEN naming the role needed when it is inside its reach but above its role.
func (p Principal) May(t Target, need Need) error {
	if need.Session && p.Kind != orchestrator.CredentialSession {
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "this needs a signed-in account's session, not %s; sign in (POST /api/sessions) and send the session cookie", p.Label())
	}
	if need.Account && p.Narrowed {
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s is narrowed to a role or a scope, so it cannot manage its account's tokens and sessions; use the account's session (or a token made without a role or scope)", p.Label())
	}
	if p.Runtime() {
		return decideRuntime(p, t, need)
	}
	if p.Admin {
		return nil
	}
	if need.Admin {
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "this needs an instance admin; %s is not one", p.Label())
	}
	if t.Scope == "" { // no target: any account may call it (listings filter what they answer)
		if need.Role != "" && orchestrator.RoleRank(p.RoleAnywhere()) < orchestrator.RoleRank(need.Role) {
			return orchestrator.Errorf(orchestrator.EFORBIDDEN, "this needs the %s role at some organisation or guild; %s holds none", need.Role, p.Label())
		}
		return nil
	}
	// Reach is any role at or under the target (a guild's members see their organisation, as the
	// place their guild sits); the role that counts is the one over the target itself, unless the
	// route lets a role under it count (Within).
	if p.RoleWithin(t.Chain) == "" {
		return notFound(t)
	}
	role := p.RoleAt(t.Chain)
	if need.Within {
		role = p.RoleWithin(t.Chain)
	}
	if orchestrator.RoleRank(role) < orchestrator.RoleRank(need.Role) {
		held := "holds " + role + " there"
		if role == "" {
			held = "holds a role only in its guilds"
		}
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "this needs the %s role at %s; %s %s", need.Role, describe(t.Chain), p.Label(), held)
	}
	return nil
}

// decideRuntime decides for an agent key or a run token: its own agent or run, on routes that
// accept it.
func decideRuntime(p Principal, t Target, need Need) error {
	if t.Scope == "" {
		if need.Runtime == RuntimeAny && !need.Admin && !need.Session {
			return nil
		}
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s may only start, call, read and close its agent's runs; this needs an operator's account or API token", p.Label())
	}
	mine := t.AgentID != "" && t.AgentID == p.Chain.AgentID
	if p.Kind == orchestrator.CredentialRunToken {
		mine = t.RunID != "" && t.RunID == p.RunID
	}
	if !mine {
		return notFound(t)
	}
	switch {
	case need.Admin || need.Session:
		return orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s cannot do this", p.Label())
	case need.Runtime == RuntimeRun && t.RunID != "":
		return nil
	case need.Runtime == RuntimeAgent && p.Kind == orchestrator.CredentialAgentKey && t.RunID == "":
		return nil
	}
	return orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s may only start, call, read and close its agent's runs; this needs an operator's account or API token", p.Label())
}

// notFound is the answer for a target outside the principal's reach.
func notFound(t Target) error {
	if t.RunID != "" {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", t.RunID)
	}
	return orchestrator.Errorf(orchestrator.ENOTFOUND, "%s not found", describe(t.Chain))
}

// describe names the chain's own scope: organisation "org_…", guild "gld_…", agent "agt_…".
func describe(c orchestrator.Chain) string {
	switch c.Scope {
	case orchestrator.ScopeOrg:
		return fmt.Sprintf("organisation %q", c.OrgID)
	case orchestrator.ScopeGuild:
		return fmt.Sprintf("guild %q", c.GuildID)
	case orchestrator.ScopeAgent:
		return fmt.Sprintf("agent %q", c.AgentID)
	}
	return "the platform"
}
