package secrets_test

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
	if _, err := noKey.Put(ctx, "a2", "X", "value-of-x"); err == nil || !strings.Contains(err.Error(), sealed.KeyVar) {
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

// TestValueAndNameChecks: a value shorter than 8 bytes, or a name the sandbox sets, is refused
// with an error that says why; the reserved name's suggestion is itself accepted.
func TestValueAndNameChecks(t *testing.T) {
	ctx := context.Background()
	store := postgres.NewStore(pgtest.NewDB(t))
	now := time.Now().UTC()
	must(t, store.CreateOrg(ctx, orchestrator.Org{ID: "o1", Name: "O", CreatedAt: now}))
	must(t, store.CreateGuild(ctx, orchestrator.Guild{ID: "g1", OrgID: "o1", Name: "G", CreatedAt: now}))
	must(t, store.CreateAgent(ctx, orchestrator.Agent{ID: "a1", GuildID: "g1", OrgID: "o1", Name: "a1", Config: orchestrator.DefaultAgentConfig(), CreatedAt: now, UpdatedAt: now}))
	box, err := sealed.FromString(sealed.GenerateKey())
	must(t, err)
	svc := &secrets.Service{Store: store, Box: box}
	for _, tc := range []struct{ name, value, want string }{
		{"TINY", "hi", "value is 2 bytes; a secret is at least 8 bytes"},
		{"TINY", "1234567", "would mask ordinary text"},
		{"PATH", "long-enough-value", "secret name PATH is reserved"},
		{"GUILD_AGENT_ID", "long-enough-value", "e.g. MY_GUILD_AGENT_ID"},
		{"LD_PRELOAD", "long-enough-value", "reserved"},
		{"NUL_VALUE", "long-enough\x00value", "value holds a NUL character"},
	} {
		_, err := svc.Put(ctx, "a1", tc.name, tc.value)
		if orchestrator.ErrorCode(err) != orchestrator.EINVALID || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("put %s=%q: %v, want EINVALID saying %q", tc.name, tc.value, err, tc.want)
		}
	}
	reg := registry.New()
	must(t, svc.Register(reg))
	call := &registry.Call{AgentID: "a1", Args: json.RawMessage(`{"name":"TINY","value":"hi"}`), Meta: map[string]any{}}
	if _, err := reg.Invoke(ctx, "secret_store", call); orchestrator.ErrorCode(err) != orchestrator.EINVALID || !strings.Contains(err.Error(), "at least 8 bytes") || len(call.Secrets) != 0 {
		t.Errorf("secret_store of 2 bytes: %v, redaction %q", err, call.Secrets)
	}
	for _, name := range []string{"TINY", "MY_PATH", "MY_GUILD_AGENT_ID"} {
		if _, err := svc.Put(ctx, "a1", name, "12345678"); err != nil {
			t.Errorf("put %s with 8 bytes: %v", name, err)
		}
	}
	// A value holding a NUL stored before values were checked stays out of the sandbox's
	// environment, which no process could start with, and is still masked.
	_, err = store.PutSealedSecret(ctx, "a1", "OLD_NUL", box.Seal([]byte("before\x00checks"), []byte("agent_secrets:a1/OLD_NUL")), now)
	must(t, err)
	env, err := svc.SandboxEnv(ctx, &registry.Call{AgentID: "a1"})
	must(t, err)
	for _, kv := range env {
		if strings.HasPrefix(kv, "OLD_NUL=") || strings.IndexByte(kv, 0) >= 0 {
			t.Errorf("the environment holds %q", kv)
		}
	}
	if len(env) != 3 {
		t.Errorf("environment %q: want the three valid secrets", env)
	}
}
