package identity

import (
	"testing"

	"github.com/guildsai/guilds/orchestrator"
)

// The places of the rules' table: organisation A with guilds A1 and A2 (an agent in each), and
// organisation B with guild B1.
var (
	orgA   = orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: "org_a"}
	guildA = orchestrator.Chain{Scope: orchestrator.ScopeGuild, OrgID: "org_a", GuildID: "gld_a1"}
	agentA = orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: "org_a", GuildID: "gld_a1", AgentID: "agt_a1"}
	agentX = orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: "org_a", GuildID: "gld_a2", AgentID: "agt_a2"}
	orgB   = orchestrator.Chain{Scope: orchestrator.ScopeOrg, OrgID: "org_b"}
	agentB = orchestrator.Chain{Scope: orchestrator.ScopeAgent, OrgID: "org_b", GuildID: "gld_b1", AgentID: "agt_b1"}
)

func member(scope, id, org, role string) orchestrator.Membership {
	return orchestrator.Membership{Scope: scope, ScopeID: id, OrgID: org, Role: role}
}

func account(ms ...orchestrator.Membership) Principal {
	return Principal{Kind: orchestrator.CredentialSession, ID: "ses_1", Account: &orchestrator.Account{ID: "acct_1", Email: "a@example.com"}, Members: ms}
}

// TestMay: who may do what, where; outside the reach is ENOTFOUND, inside but above the role
// EFORBIDDEN, and runtime credentials reach only their own agent or run.
func TestMay(t *testing.T) {
	ownerA := account(member("org", "org_a", "org_a", "owner"))
	viewerA := account(member("org", "org_a", "org_a", "viewer"))
	opA1 := account(member("guild", "gld_a1", "org_a", "operator"))
	both := account(member("org", "org_a", "org_a", "viewer"), member("guild", "gld_a1", "org_a", "owner"))
	admin := Principal{Kind: orchestrator.CredentialBootstrap, Admin: true}
	key := Principal{Kind: orchestrator.CredentialAgentKey, ID: "akey_1", Chain: agentA}
	run := Principal{Kind: orchestrator.CredentialRunToken, ID: "run_1", RunID: "run_1", Chain: agentA}
	pat := Principal{Kind: orchestrator.CredentialToken, ID: "tok_1", Account: ownerA.Account, Members: ownerA.Members}

	read := Need{Role: orchestrator.RoleViewer}
	write := Need{Role: orchestrator.RoleOperator}
	manage := Need{Role: orchestrator.RoleOwner}
	within := Need{Role: orchestrator.RoleViewer, Within: true}
	runRoute := Need{Role: orchestrator.RoleOperator, Runtime: RuntimeRun}
	agentRoute := Need{Role: orchestrator.RoleOperator, Runtime: RuntimeAgent}
	at := func(c orchestrator.Chain) Target { return Target{Chain: c} }
	runOf := func(c orchestrator.Chain, id string) Target { return Target{Chain: c, RunID: id} }

	for _, tc := range []struct {
		name string
		p    Principal
		t    Target
		need Need
		want string // "" allowed, else the error code
	}{
		{"admin anywhere", admin, at(orgB), manage, ""},
		{"admin on admin routes", admin, Target{}, Need{Admin: true}, ""},
		{"owner manages own org", ownerA, at(orgA), manage, ""},
		{"owner reaches own agents", ownerA, at(agentX), write, ""},
		{"owner of A outside B", ownerA, at(orgB), read, orchestrator.ENOTFOUND},
		{"owner of A, B's agent", ownerA, at(agentB), read, orchestrator.ENOTFOUND},
		{"owner is no admin", ownerA, Target{}, Need{Admin: true}, orchestrator.EFORBIDDEN},
		{"viewer reads", viewerA, at(agentA), read, ""},
		{"viewer cannot write", viewerA, at(agentA), write, orchestrator.EFORBIDDEN},
		{"guild operator writes its agents", opA1, at(agentA), write, ""},
		{"guild operator cannot manage", opA1, at(guildA), manage, orchestrator.EFORBIDDEN},
		{"guild operator sees its org, not the org's own objects", opA1, at(orgA), read, orchestrator.EFORBIDDEN},
		{"guild operator cannot write the org", opA1, at(orgA), write, orchestrator.EFORBIDDEN},
		{"guild operator reads the org's shared objects", opA1, at(orgA), within, ""},
		{"guild operator, another guild's agent", opA1, at(agentX), read, orchestrator.ENOTFOUND},
		{"guild role above the org role wins there", both, at(agentA), manage, ""},
		{"org role elsewhere", both, at(agentX), write, orchestrator.EFORBIDDEN},
		{"API token acts as its memberships", pat, at(agentA), manage, ""},
		{"session-only route refuses a token", pat, Target{}, Need{Session: true}, orchestrator.EFORBIDDEN},
		{"session-only route takes a session", ownerA, Target{}, Need{Session: true}, ""},
		{"agent key on its agent's run", key, runOf(agentA, "run_9"), runRoute, ""},
		{"agent key starts its agent's runs", key, at(agentA), agentRoute, ""},
		{"agent key on another agent's run", key, runOf(agentX, "run_8"), runRoute, orchestrator.ENOTFOUND},
		{"agent key on its agent, operator route", key, at(agentA), write, orchestrator.EFORBIDDEN},
		{"agent key elsewhere", key, at(agentB), write, orchestrator.ENOTFOUND},
		{"agent key on admin routes", key, Target{}, Need{Admin: true}, orchestrator.EFORBIDDEN},
		{"agent key on a listing", key, Target{}, Need{}, orchestrator.EFORBIDDEN},
		{"run token on the instance view", run, Target{}, Need{Runtime: RuntimeAny}, ""},
		{"an account on the instance view", viewerA, Target{}, Need{Runtime: RuntimeAny}, ""},
		{"run token on its run", run, runOf(agentA, "run_1"), runRoute, ""},
		{"run token on a sibling run", run, runOf(agentA, "run_2"), runRoute, orchestrator.ENOTFOUND},
		{"run token on its agent", run, at(agentA), agentRoute, orchestrator.ENOTFOUND},
		{"run token on an operator route of its run", run, runOf(agentA, "run_1"), write, orchestrator.EFORBIDDEN},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.May(tc.t, tc.need)
			if got := orchestrator.ErrorCode(err); got != tc.want {
				t.Fatalf("May = %v (%s), want %q", err, got, tc.want)
			}
		})
	}
}

// TestNarrow: an API token never reaches more than its account does now, nor more than it was made
// for.
func TestNarrow(t *testing.T) {
	a := &orchestrator.Account{ID: "acct_1"}
	ms := []orchestrator.Membership{member("org", "org_a", "org_a", "owner"), member("guild", "gld_b1", "org_b", "operator")}
	scoped := func(kind, id, org, role string) *orchestrator.APIToken {
		return &orchestrator.APIToken{Role: role, Scope: &orchestrator.TokenScope{Kind: kind, ID: id}, OrgID: org}
	}
	for _, tc := range []struct {
		name  string
		tok   *orchestrator.APIToken
		where orchestrator.Chain
		want  string
	}{
		{"no cap: the account's role", &orchestrator.APIToken{}, agentA, "owner"},
		{"a role cap", &orchestrator.APIToken{Role: "viewer"}, agentA, "viewer"},
		{"a role cap above the account's role stays the account's", &orchestrator.APIToken{Role: "owner"}, agentB, "operator"},
		{"an org scope keeps the org", scoped("org", "org_a", "org_a", ""), agentX, "owner"},
		{"an org scope drops the others", scoped("org", "org_a", "org_a", ""), agentB, ""},
		{"a guild scope inside an org role", scoped("guild", "gld_a1", "org_a", "operator"), agentA, "operator"},
		{"a guild scope leaves the org's other guilds", scoped("guild", "gld_a1", "org_a", ""), agentX, ""},
		{"a guild scope leaves the org itself", scoped("guild", "gld_a1", "org_a", ""), orgA, ""},
		{"a scope the account lost reaches nothing", scoped("org", "org_c", "org_c", ""), orchestrator.Chain{Scope: "org", OrgID: "org_c"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Principal{Members: narrow(a, ms, tc.tok)}
			if got := p.RoleAt(tc.where); got != tc.want {
				t.Fatalf("role %q, want %q (members %+v)", got, tc.want, p.Members)
			}
		})
	}
}
