package wallet

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
)

const (
	alchemyKey = "alch-test-key-5e2f"
	openseaKey = "os-test-key-91ab"
	uniswapKey = "uni-test-key-33cd"
)

// jsonRPC is a JSON-RPC node on loopback answering each method from a table, checking that the
// Alchemy key is the path's last segment.
type jsonRPC struct {
	*httptest.Server
	mu      sync.Mutex
	methods map[string]func(params []json.RawMessage) (any, *rpcError)
	seen    []string
	paths   []string
}

func newJSONRPC(t *testing.T) *jsonRPC {
	j := &jsonRPC{methods: map[string]func([]json.RawMessage) (any, *rpcError){}}
	j.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(400)
			return
		}
		j.mu.Lock()
		j.seen = append(j.seen, req.Method)
		j.paths = append(j.paths, r.URL.Path)
		h := j.methods[req.Method]
		j.mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/"+alchemyKey) {
			w.WriteHeader(401)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Must be authenticated!"}}`))
			return
		}
		out := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if h == nil {
			out["error"] = rpcError{Code: -32601, Message: "the method " + req.Method + " does not exist"}
		} else if res, e := h(req.Params); e != nil {
			out["error"] = e
		} else {
			out["result"] = res
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(j.Close)
	return j
}

func (j *jsonRPC) on(method string, h func([]json.RawMessage) (any, *rpcError)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.methods[method] = h
}

func (j *jsonRPC) answer(method string, v any) {
	j.on(method, func([]json.RawMessage) (any, *rpcError) { return v, nil })
}

// login is a Wallet login whose every endpoint points at the fakes.
func login(t *testing.T, rpcURL, apiURL string, creds map[string]string) adapters.Login {
	eps := map[string]string{}
	for _, c := range chains {
		eps[c.Name] = rpcURL + "/" + c.Name
		if c.Public {
			eps[c.Name+"_public"] = rpcURL + "/public/" + c.Name
		}
	}
	eps[EndpointOpenSea], eps[EndpointUniswap] = apiURL, apiURL+"/v1"
	return adapters.NewLogin(orchestrator.MCPServer{Slug: Slug, Endpoints: eps}, creds, nil, nil)
}

func goodCreds(t testing.TB) map[string]string {
	_, b58s, _ := solKey(t)
	return map[string]string{FieldEVMKey: "0x" + devKey, FieldSolanaKey: b58s, FieldAlchemyKey: alchemyKey, FieldOpenSeaKey: openseaKey}
}

func apiFake(t *testing.T) *adapterstest.Fake {
	f := adapterstest.NewFake(t, func(r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			return r.Header.Get("x-api-key") == uniswapKey
		}
		return r.Header.Get("X-API-KEY") == openseaKey
	})
	f.JSON("GET /api/v2/chains", 200, []byte(`{"chains":[{"chain":"ethereum","name":"Ethereum","symbol":"ETH"},{"chain":"base","name":"Base","symbol":"ETH"}]}`))
	f.JSON("GET /v1/supported_chains", 200, []byte(`{"chains":[1,10,137,8453,42161]}`))
	return f
}

// TestVerify: Connect's checks in order, each refusal one line naming the field or the provider,
// never a key; the account hint is both truncated addresses.
func TestVerify(t *testing.T) {
	node := newJSONRPC(t)
	node.answer("eth_blockNumber", "0x1406f40")
	node.answer("getSlot", 312000123)
	api := apiFake(t)
	k, _, arr := solKey(t)
	sol := SolanaAddress(k)

	v, err := Adapter{}.Verify(context.Background(), login(t, node.URL, api.URL, goodCreds(t)))
	if err != nil || v.AccountHint != "0xf39f…2266 · "+sol[:4]+"…"+sol[len(sol)-4:] {
		t.Fatalf("verify: %+v %v", v, err)
	}
	if node.paths[0] != "/ethereum/"+alchemyKey || node.paths[1] != "/solana/"+alchemyKey {
		t.Fatalf("asked %v", node.paths)
	}
	if api.Count() != 1 {
		t.Fatalf("no Uniswap key, yet %d API requests", api.Count())
	}

	with := func(k, v string) map[string]string {
		c := goodCreds(t)
		c[k] = v
		return c
	}
	for _, tc := range []struct {
		name  string
		creds map[string]string
		says  string
		code  string
	}{
		{"JSON array Solana key", with(FieldSolanaKey, arr), "", ""},
		{"Uniswap key accepted", with(FieldUniswapKey, uniswapKey), "", ""},
		{"Uniswap key refused", with(FieldUniswapKey, "uni-wrong-0000"), "Uniswap: refused", orchestrator.EINVALID},
		{"malformed EVM key", with(FieldEVMKey, "0x1234abcd"), "credentials.evm_private_key is not an EVM private key", orchestrator.EINVALID},
		{"malformed Solana key", with(FieldSolanaKey, "not-a-key-0OIl"), "credentials.solana_private_key is not a Solana private key", orchestrator.EINVALID},
		{"Alchemy key refused", with(FieldAlchemyKey, "alch-wrong-0000"), "Alchemy ethereum RPC: refused the login's credentials (HTTP 401): Must be authenticated!", orchestrator.EINVALID},
		{"OpenSea key refused", with(FieldOpenSeaKey, "os-wrong-0000"), "OpenSea: refused", orchestrator.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Adapter{}.Verify(context.Background(), login(t, node.URL, api.URL, tc.creds))
			if tc.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(adapters.Message(err), tc.says) || orchestrator.ErrorCode(err) != tc.code {
				t.Fatalf("error %v (%s), want %q", err, orchestrator.ErrorCode(err), tc.says)
			}
			for _, v := range tc.creds {
				if strings.Contains(adapters.Message(err), v) {
					t.Fatalf("the error shows a credential: %v", err)
				}
			}
		})
	}

	// A node that is down is a 502, a malformed block number is refused.
	node.on("eth_blockNumber", func([]json.RawMessage) (any, *rpcError) { return "soon", nil })
	if _, err := (Adapter{}).Verify(context.Background(), login(t, node.URL, api.URL, goodCreds(t))); err == nil || !strings.Contains(err.Error(), "not a block number") {
		t.Fatalf("malformed block number: %v", err)
	}
	node.Close()
	if _, err := (Adapter{}).Verify(context.Background(), login(t, node.URL, api.URL, goodCreds(t))); orchestrator.ErrorCode(err) != orchestrator.EUPSTREAM || !strings.Contains(err.Error(), "down") {
		t.Fatalf("node down: %v (%s)", err, orchestrator.ErrorCode(err))
	}
}

func decode(t testing.TB, raw json.RawMessage, out any) {
	t.Helper()
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
