package lifecycle_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/runs"
)

// TestConnectionCredentialsJoinRedaction: the credential values of the logins a run offers tools
// through are redacted from its results; a run without them pays nothing.
func TestConnectionCredentialsJoinRedaction(t *testing.T) {
	w := newWorld(t)
	w.connect("qonto", "agent", "a1", map[string]string{"login": "acme-org-4411", "secret_key": "qonto-sk-7f3a9c21"})
	w.runs.Secrets = orchestrator.JoinSecrets(orchestrator.NoRunSecrets{}, connections.ConnectionSecrets{Store: w.store, Box: w.box})
	run, err := w.runs.StartRun(w.ctx, "a1", runs.StartRequest{Kind: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := connections.ConnectionSecrets{Store: w.store, Box: w.box}.RunSecretValues(w.ctx, run)
	if err != nil || !slices.Equal(vals, []string{"acme-org-4411", "qonto-sk-7f3a9c21"}) {
		t.Fatalf("values %v %v", vals, err)
	}
	res, err := w.runs.Call(w.ctx, run.ID, runs.CallRequest{Name: "note_get", Arguments: []byte(`{"q":"key qonto-sk-7f3a9c21 for acme-org-4411"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Result, "qonto-sk-7f3a9c21") || strings.Contains(res.Result, "acme-org-4411") {
		t.Fatalf("credential in the result: %q", res.Result)
	}
	other, err := w.runs.StartRun(w.ctx, "a2", runs.StartRequest{Kind: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	if vals, err := (connections.ConnectionSecrets{Store: w.store, Box: nil}).RunSecretValues(w.ctx, other); err != nil || len(vals) != 0 {
		t.Fatalf("run without MCP tools: %v %v", vals, err)
	}
}
