package lifecycle_test

import (
	"encoding/json"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
)

// TestConnectRequestBody: a connector's settings sit beside the other fields of a Connect body,
// as they did before they had a type of their own.
func TestConnectRequestBody(t *testing.T) {
	for _, tc := range []struct {
		body  string
		coins int
	}{
		{`{"server":"coingecko","scope":"org","scope_id":"o1","credentials":{"api_key":"k"}}`, 0},
		{`{"server":"pinned_prices","scope":"org","scope_id":"o1","coins":[{"id":"bitcoin","symbol":"btc","name":"Bitcoin"}]}`, 1},
	} {
		var req lifecycle.ConnectRequest
		if err := json.Unmarshal([]byte(tc.body), &req); err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if len(req.Coins) != tc.coins {
			t.Errorf("%s: %d coins, want %d", tc.body, len(req.Coins), tc.coins)
		}
		var keys map[string]json.RawMessage
		b, _ := json.Marshal(req)
		if err := json.Unmarshal(b, &keys); err != nil || keys["coins"] == nil || keys["PinnedPrices"] != nil {
			t.Errorf("%s: encodes as %s, want coins beside the other fields", tc.body, b)
		}
	}
}
