package issues_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/issues"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestReportIssue(t *testing.T) {
	ctx := context.Background()
	store := postgres.NewStore(pgtest.NewDB(t))
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	must(t, store.CreateOrg(ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}))
	must(t, store.CreateGuild(ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}))
	must(t, store.CreateAgent(ctx, orchestrator.Agent{ID: "a1", GuildID: "g1", OrgID: "o1", Name: "A", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}))
	reg := registry.New()
	must(t, (&issues.Tools{Store: store, Now: func() time.Time { return now }}).Register(reg))
	tool, _ := reg.Get("report_issue")
	if tool.Family != orchestrator.FamilyAlways {
		t.Fatalf("family %q, want always", tool.Family)
	}

	cases := []struct {
		name, args, want string
		ok               bool
	}{
		{"filed", `{"kind":"tool_failure","message":"  shell timed out on make test  "}`, "filed issue iss_", true},
		{"bad kind", `{"kind":"bug","message":"x"}`, "kind", false},
		{"blank message", `{"kind":"other","message":"   "}`, "message is empty", false},
		{"too long", `{"kind":"api","message":"` + strings.Repeat("é", issues.MaxMessageChars+1) + `"}`, "at most 4000", false},
		{"missing message", `{"kind":"api"}`, "message", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &registry.Call{AgentID: "a1", GuildID: "g1", OrgID: "o1", Args: json.RawMessage(tc.args), Meta: map[string]any{}}
			out, err := reg.Invoke(ctx, "report_issue", c)
			if tc.ok != (err == nil) {
				t.Fatalf("ok=%v, got out=%q err=%v", tc.ok, out, err)
			}
			got := out
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want it to contain %q", got, tc.want)
			}
		})
	}
	list, err := store.ListIssues(ctx, orchestrator.IssueQuery{Level: orchestrator.LevelGuild, Owner: "g1", Status: orchestrator.IssueOpen, Limit: orchestrator.DefaultIssuePage})
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("want exactly the one valid issue stored (nothing half-stored for bad input), got %+v", list)
	}
	i := list[0]
	if i.Kind != "tool_failure" || i.Message != "shell timed out on make test" || i.OrgID != "o1" || i.AgentID != "a1" || !i.CreatedAt.Equal(now) {
		t.Fatalf("stored issue %+v", i)
	}

	// A guild that does not exist is a clear error.
	_, err = reg.Invoke(ctx, "report_issue", &registry.Call{AgentID: "a1", GuildID: "nope", Args: json.RawMessage(`{"kind":"other","message":"x"}`), Meta: map[string]any{}})
	if orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Fatalf("missing guild: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
