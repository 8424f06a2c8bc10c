package adapters_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/alchemy"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/coingecko"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/dexpaprika"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/pinnedprices"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/qonto"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/twitterapi"
	_ "github.com/guildsai/guilds/orchestrator/connectors/adapters/x"
)

// manifest is the part of a seeded manifest the adapters answer to.
type manifest struct {
	Slug   string `toml:"slug"`
	Kind   string `toml:"kind"`
	Config struct {
		Fields []struct {
			Name string `toml:"name"`
		} `toml:"fields"`
	} `toml:"config"`
	Tools []struct {
		Name   string `toml:"name"`
		Schema string `toml:"input_schema"`
	} `toml:"tools"`
}

func readManifest(t *testing.T, slug string) manifest {
	t.Helper()
	var m manifest
	if _, err := toml.DecodeFile("../../catalog/manifests/"+slug+".toml", &m); err != nil {
		t.Fatalf("manifest %s: %v", slug, err)
	}
	return m
}

// TestAll checks the registry lists the seven adapters, sorted, each serving every curated tool
// of its seeded manifest.
func TestAll(t *testing.T) {
	var slugs []string
	for _, a := range adapters.All() {
		slugs = append(slugs, a.Slug())
	}
	want := []string{"alchemy", "coingecko", "dexpaprika", "pinned_prices", "qonto", "twitterapi", "x"}
	if !slices.Equal(slugs, want) {
		t.Fatalf("All() = %v, want %v", slugs, want)
	}
	for _, a := range adapters.All() {
		m := readManifest(t, a.Slug())
		if m.Kind != "local" || m.Slug != a.Slug() {
			t.Errorf("%s: manifest kind %q slug %q", a.Slug(), m.Kind, m.Slug)
		}
		for _, tool := range m.Tools {
			var schema map[string]any
			if err := json.Unmarshal([]byte(tool.Schema), &schema); err != nil {
				t.Errorf("%s_%s: schema: %v", a.Slug(), tool.Name, err)
			}
			_, err := a.Call(context.Background(), adapters.Login{URL: "http://127.0.0.1:1"}, tool.Name, map[string]any{})
			if err != nil && strings.Contains(err.Error(), "no tool") {
				t.Errorf("%s does not serve its manifest's tool %s", a.Slug(), tool.Name)
			}
		}
		if _, ok := adapters.Lookup(a.Slug()); !ok {
			t.Errorf("Lookup(%s) failed", a.Slug())
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("registering coingecko twice did not panic")
		}
	}()
	a, _ := adapters.Lookup("coingecko")
	adapters.Register(a)
}

// pdfReader hands every path a small PDF, so upload_invoice reaches the provider.
type pdfReader struct{}

func (pdfReader) ReadFile(context.Context, string) ([]byte, error) {
	return []byte("%PDF-1.4\n%%EOF\n"), nil
}

// TestKeysNeverInErrors runs every tool of every adapter, and every Connect check, against
// providers that echo the request (URL and every header) back in their error body, with each
// status the frame maps: no credential reaches an error text.
func TestKeysNeverInErrors(t *testing.T) {
	creds := map[string]string{"api_key": "KEY-api-7f3c91d2", "bearer_token": "KEY-bearer-5a8e0b44", "login": "KEY-login-acme-2291", "secret_key": "KEY-secret-c0ffee77"}
	for _, status := range []int{400, 401, 403, 404, 422, 429, 500} {
		f := adapterstest.NewFake(t, nil)
		f.Handle("GET /*", echo(status))
		f.Handle("POST /*", echo(status))
		endpoints := map[string]string{}
		for _, n := range []string{"pro", "polygon", "base", "arbitrum", "bsc", "optimism", "ink", "robinhood", "solana_das"} {
			endpoints[n] = f.URL
		}
		l := adapters.Login{Credentials: creds, URL: f.URL, Endpoints: endpoints, Client: f.Client(), Files: pdfReader{}, Coins: []string{"bitcoin"}}
		for _, a := range adapters.All() {
			_, err := a.Verify(context.Background(), l)
			check(t, fmt.Sprintf("%d %s Verify", status, a.Slug()), err, creds)
			for _, tool := range readManifest(t, a.Slug()).Tools {
				args := map[string]any{"query": "q", "id": "bitcoin", "ids": []any{"bitcoin"}, "network": "ethereum", "address": "0x1", "addresses": []any{"0x1"},
					"pool": "0x1", "user": "someone", "username": "someone", "post": "123", "owner": "0x1", "contract": "0x1", "token_id": "1",
					"transaction_id": "t1", "file_path": "invoice.pdf"}
				_, err := a.Call(context.Background(), l, tool.Name, args)
				check(t, fmt.Sprintf("%d %s_%s", status, a.Slug(), tool.Name), err, creds)
			}
		}
		if f.Count() < 40 {
			t.Errorf("status %d: only %d requests reached the echoing provider", status, f.Count())
		}
	}
}

func echo(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var seen []string
		seen = append(seen, r.URL.String())
		for _, vs := range r.Header {
			seen = append(seen, vs...)
		}
		msg, _ := json.Marshal(strings.Join(seen, " "))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", strings.Join(r.Header.Values("Authorization"), ""))
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"message":%s,"status":"error","msg":%s}`, msg, msg)
	}
}

func check(t *testing.T, what string, err error, creds map[string]string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, v := range creds {
		if strings.Contains(err.Error(), v) {
			t.Errorf("%s: a credential reached the error: %v", what, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: the error is not one line: %q", what, err)
	}
}
