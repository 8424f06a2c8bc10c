package adapters_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Example shows the wiring a caller needs: a Login from the catalog row and the stored
// credentials, Verify at Connect (a rejected key is EINVALID, 422; a provider that is down is
// EUPSTREAM, 502), and a call's answer through Result.
func Example() {
	cg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("x-cg-pro-api-key") != "good-key":
			w.WriteHeader(401)
			fmt.Fprint(w, `{"status":{"error_code":10002,"error_message":"API Key Missing"}}`)
		case r.URL.Path == "/api/v3/ping":
			fmt.Fprint(w, `{"gecko_says":"(V3) To the Moon!"}`)
		default:
			w.WriteHeader(503)
		}
	}))
	defer cg.Close()

	srv := orchestrator.MCPServer{Slug: "coingecko", URL: cg.URL + "/api/v3"}
	a, _ := adapters.Lookup(srv.Slug)
	for _, key := range []string{"good-key", "bad-key"} {
		_, err := a.Verify(context.Background(), adapters.NewLogin(srv, map[string]string{"api_key": key}, nil, nil))
		fmt.Printf("%s: code %q, disconnects %v\n", key, orchestrator.ErrorCode(err), adapters.Disconnects(err))
	}
	out, err := a.Call(context.Background(), adapters.NewLogin(srv, map[string]string{"api_key": "good-key"}, nil, nil), "trending", nil)
	fmt.Println(adapters.Result(out, err))
	fmt.Println(orchestrator.ErrorCode(err))
	// Output:
	// good-key: code "", disconnects false
	// bad-key: code "EINVALID", disconnects true
	// ERROR: CoinGecko: is down (HTTP 503); try again later
	// EUPSTREAM
}
