package code_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/runs"
	"github.com/guildsai/guilds/orchestrator/sealed"
	"github.com/guildsai/guilds/orchestrator/tools/code"
	"github.com/guildsai/guilds/orchestrator/tools/secrets"
)

// connectorKey stands for a connection's credential in the run's redaction set: it must never
// reach the sandbox.
const connectorKey = "conn-key-0f3a9c2e51d8"

// joined is the run's redaction sources: the agent's secrets and a connection's credential.
type joined struct {
	sec   *secrets.Service
	other fixedSecrets
}

func (j joined) RunSecretValues(ctx context.Context, run orchestrator.Run) ([]string, error) {
	v, err := j.sec.RunSecretValues(ctx, run)
	return append(v, j.other...), err
}

// TestShellSeesTheAgentsSecrets: through the real sandboxes, shell's environment holds the agent's
// granted secrets under their names, one stored during the run included, each masked when echoed;
// the Tavily key and a connection's credential never enter it.
func TestShellSeesTheAgentsSecrets(t *testing.T) {
	t.Setenv("TAVILY_API_KEY", "tvly-0123456789abcdef")
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			pool := pgtest.NewDB(t)
			store := postgres.NewStore(pool)
			box, err := sealed.FromString(sealed.GenerateKey())
			if err != nil {
				t.Fatal(err)
			}
			sec := &secrets.Service{Store: store, Box: box}
			log := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
			reg := registry.New()
			if err := (&code.Tools{Sandbox: p, SecretEnv: sec.SandboxEnv}).Register(reg); err != nil {
				t.Fatal(err)
			}
			if sh, _ := reg.Get("shell"); !strings.Contains(sh.Description, "$SERVICE_API_KEY") {
				t.Fatalf("shell's description does not say where secrets are: %q", sh.Description)
			}
			svc := &runs.Service{Scopes: store, Runs: store, Registry: reg, Offer: runs.DefaultOffer{},
				Secrets: joined{sec, fixedSecrets{connectorKey}}, Log: log}
			app := httpapi.New(&httpapi.Server{Scopes: store, Runs: svc, Log: log, Identity: &identity.Service{Store: store, Bootstrap: token}, Places: store})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = app.Listener(ln) }()
			t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
			e := &env{t: t, pool: pool, base: "http://" + ln.Addr().String(), hc: &http.Client{Timeout: 2 * time.Minute}}

			agentID, run := e.startRun(map[string]any{"coding": true})
			const value = "svc-live-5d1e8a07c3b94f62"
			if _, err := sec.Put(context.Background(), agentID, "SERVICE_API_KEY", value); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(value))
			for _, runID := range []string{run["id"].(string), e.do(201, "POST", "/api/agents/"+agentID+"/runs", map[string]any{"kind": "direct", "config": map[string]any{"coding": true}})["id"].(string)} {
				res, _ := e.call(runID, "shell", map[string]any{"command": `printf %s "$SERVICE_API_KEY" | sha256sum`})
				if !strings.Contains(res, hex.EncodeToString(sum[:])) {
					t.Fatalf("shell does not see the secret: %q", res)
				}
				res, _ = e.call(runID, "shell", map[string]any{"command": `echo "key=$SERVICE_API_KEY"`})
				if strings.Contains(res, value) || !strings.Contains(res, "key=") || !strings.Contains(res, "REDACTED") {
					t.Fatalf("an echoed secret is not masked: %q", res)
				}
				res, _ = e.call(runID, "shell", map[string]any{"command": `env | grep -c -e ^TAVILY_ -e ` + connectorKey + ` -e tvly- ; true`})
				if !strings.HasPrefix(res, "0\n") {
					t.Fatalf("the Tavily key or a connection's credential reached the sandbox: %q", res)
				}
			}
		})
	}
}
