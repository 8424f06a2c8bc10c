package lifecycle

import (
	"encoding/json"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/catalog"
)

// FuzzConnectInput: any credentials and coins a Connect body can carry are either accepted as
// known, non-blank, bounded fields and well-formed coins, or refused with EINVALID; never a panic.
func FuzzConnectInput(f *testing.F) {
	servers, err := catalog.Load()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(`{"api_key":"CG-1"}`, `[{"id":"bitcoin","symbol":"btc","name":"Bitcoin"}]`, uint8(0))
	f.Add(`{"login":"a","secret_key":"b","x":"c"}`, `[]`, uint8(5))
	f.Add(`{"api_key":"   "}`, `[{"id":"Bad Id","symbol":"","name":""}]`, uint8(9))
	f.Fuzz(func(t *testing.T, credsJSON, coinsJSON string, pick uint8) {
		srv := servers[int(pick)%len(servers)]
		var creds map[string]string
		if json.Unmarshal([]byte(credsJSON), &creds) != nil {
			return
		}
		var coins []orchestrator.Coin
		if json.Unmarshal([]byte(coinsJSON), &coins) != nil {
			return
		}
		out, err := checkFields(srv, creds)
		if err != nil {
			if orchestrator.ErrorCode(err) != orchestrator.EINVALID {
				t.Fatalf("checkFields: %v", err)
			}
		} else {
			known := map[string]bool{}
			for _, fl := range srv.Config.Fields {
				known[fl.Name] = true
				if fl.Required && out[fl.Name] == "" {
					t.Fatalf("required %s accepted empty", fl.Name)
				}
			}
			for k, v := range out {
				if !known[k] || v == "" || len(v) > maxCredential {
					t.Fatalf("accepted %s=%q", k, v)
				}
			}
		}
		settings, err := checkCoins(srv, coins)
		if err != nil {
			if orchestrator.ErrorCode(err) != orchestrator.EINVALID {
				t.Fatalf("checkCoins: %v", err)
			}
			return
		}
		if !json.Valid(settings) {
			t.Fatalf("settings %q", settings)
		}
		if srv.Config.MaxCoins == 0 && len(coins) > 0 {
			t.Fatal("coins accepted for a server without them")
		}
	})
}
