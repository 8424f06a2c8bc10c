package secrets_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/guildsai/guilds/orchestrator/tools/secrets"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestRunSecretValues(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	store := postgres.NewStore(pool)
	now := time.Now().UTC()
	must(t, store.CreateOrg(ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}))
	must(t, store.CreateGuild(ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}))
	for _, id := range []string{"a1", "a2"} {
		must(t, store.CreateAgent(ctx, orchestrator.Agent{ID: id, GuildID: "g1", OrgID: "o1", Name: id, Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}))
	}
	box, err := sealed.FromString(sealed.GenerateKey())
	must(t, err)
	svc := &secrets.Service{Store: store, Box: box}
	_, err = svc.Put(ctx, "a1", "B_KEY", "bbb-value")
	must(t, err)
	_, err = svc.Put(ctx, "a1", "A_KEY", "aaa-value")
	must(t, err)
	_, err = svc.Put(ctx, "a1", "A_KEY", "aaa-value-2") // replaces
	must(t, err)

	vals, err := svc.RunSecretValues(ctx, orchestrator.Run{AgentID: "a1"})
	must(t, err)
	if strings.Join(vals, ",") != "aaa-value-2,bbb-value" {
		t.Fatalf("values %q", vals)
	}
	if vals, err := svc.RunSecretValues(ctx, orchestrator.Run{AgentID: "a2"}); err != nil || len(vals) != 0 {
		t.Fatalf("agent without secrets: %q %v", vals, err)
	}
	// Without the key, storing is refused and stored values cannot be opened: clear errors.
	noKey := &secrets.Service{Store: store}
	if _, err := noKey.Put(ctx, "a2", "X", "v"); err == nil || !strings.Contains(err.Error(), sealed.KeyVar) {
		t.Fatalf("put without key: %v", err)
	}
	if _, err := noKey.RunSecretValues(ctx, orchestrator.Run{AgentID: "a1"}); err == nil || !strings.Contains(err.Error(), sealed.KeyVar) {
		t.Fatalf("open without key: %v", err)
	}
	// A sealed value copied onto another agent's row does not open there.
	_, err = pool.Exec(ctx, "INSERT INTO agent_secrets (agent_id, name, sealed, created_at, updated_at) SELECT 'a2', name, sealed, created_at, updated_at FROM agent_secrets WHERE agent_id = 'a1' AND name = 'A_KEY'")
	must(t, err)
	if _, err := svc.RunSecretValues(ctx, orchestrator.Run{AgentID: "a2"}); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("copied row: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
