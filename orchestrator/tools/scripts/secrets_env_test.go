package scripts_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestScriptSeesTheAgentsSecrets: script_run and a script offered as a tool get the agent's
// secrets as environment variables of their names, one stored during the run included; an echoed
// value is masked.
func TestScriptSeesTheAgentsSecrets(t *testing.T) {
	w := newWorld(t)
	const before, during = "svc-before-8c41f0d2a7", "svc-during-3b9e62d1f0"
	_, err := w.sec.Put(w.ctx, "a3", "SERVICE_API_KEY", before)
	must(t, err)
	setup := w.run("a3")
	w.call(setup, "script_create", map[string]any{"name": "keys", "description": "hash the keys",
		"source":     "import hashlib, os\nfor n in ('SERVICE_API_KEY', 'LATER_KEY'):\n    v = os.environ.get(n, '')\n    print(n, hashlib.sha256(v.encode()).hexdigest(), 'echo=' + v)\n",
		"parameters": map[string]any{"type": "object"}})
	run := w.run("a3")
	_, err = w.sec.Put(w.ctx, "a3", "LATER_KEY", during)
	must(t, err)
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	for _, out := range []string{w.call(run, "script_run", map[string]any{"name": "keys"}), w.call(run, "keys", map[string]any{})} {
		if !strings.Contains(out, "SERVICE_API_KEY "+hash(before)) || !strings.Contains(out, "LATER_KEY "+hash(during)) {
			t.Fatalf("the script does not see the secrets: %q", out)
		}
		if strings.Contains(out, before) || strings.Contains(out, during) || strings.Count(out, "REDACTED") != 2 {
			t.Fatalf("echoed secrets are not masked: %q", out)
		}
	}
}
