package alchemy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/alchemy"
)

const key = "alcht_Qm3x9VbN2kLp"

// hasKey is Alchemy's credential check: the key is the path segment after the API prefix.
func hasKey(r *http.Request) bool {
	return strings.Contains(r.URL.Path, "/"+key+"/") || strings.HasSuffix(r.URL.Path, "/"+key)
}

// fakes are the NFT API on ethereum and polygon and Solana's DAS, each on loopback, answering
// the examples of Alchemy's published OpenAPI.
func fakes(t testing.TB) (eth, poly, das *adapterstest.Fake, l adapters.Login) {
	eth, poly, das = adapterstest.NewFake(t, hasKey), adapterstest.NewFake(t, hasKey), adapterstest.NewFake(t, hasKey)
	for _, f := range []*adapterstest.Fake{eth, poly} {
		f.Deny = []byte(`{"error":{"message":"Must be authenticated!"}}`)
		f.Handle("GET /nft/v3/*", func(w http.ResponseWriter, r *http.Request) {
			file := map[string]string{"getNFTsForOwner": "owned.json", "getNFTMetadata": "nft.json", "getOwnersForNFT": "owners.json", "getContractMetadata": "contract.json"}[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]
			if r.URL.Query().Get("owner") == "0x0000000000000000000000000000000000000000" {
				file = "owned_zero.json"
			}
			if file == "" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(adapterstest.Testdata(t, file))
		})
	}
	das.Handle("POST /v2/"+key, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &req) != nil || req.Method != "getAssetsByOwner" || req.Params["ownerAddress"] == nil {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}`)
			return
		}
		_, _ = w.Write(adapterstest.Testdata(t, "das.json"))
	})
	return eth, poly, das, adapters.Login{Credentials: map[string]string{"api_key": key}, URL: eth.URL + "/nft/v3", Client: eth.Client(),
		Endpoints: map[string]string{"polygon": poly.URL + "/nft/v3", alchemy.DASEndpoint: das.URL + "/v2"}}
}

func TestVerify(t *testing.T) {
	eth, _, _, l := fakes(t)
	if _, err := (alchemy.Adapter{}).Verify(context.Background(), l); err != nil {
		t.Fatalf("good key: %v", err)
	}
	r := eth.Last()
	if !strings.HasSuffix(r.URL.Path, "/getNFTsForOwner") || r.URL.Query().Get("owner") != "0x0000000000000000000000000000000000000000" {
		t.Errorf("checked %s", r.URL)
	}
	bad := l
	bad.Credentials = map[string]string{"api_key": "wrong-key-0000"}
	_, err := alchemy.Adapter{}.Verify(context.Background(), bad)
	if !adapters.IsRejected(err) || !strings.Contains(err.Error(), "Must be authenticated") || strings.Contains(err.Error(), "wrong-key") {
		t.Errorf("wrong key: %v", err)
	}
}

func TestTools(t *testing.T) {
	eth, poly, das, l := fakes(t)
	const dusk = "0x0bEed7099AF7514cCEDF642CfEA435731176Fb02"
	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		fake       *adapterstest.Fake
		path       string
		query      map[string]string
	}{
		{"holdings", "holdings", map[string]any{"owner": "vitalik.eth", "limit": 2.0}, eth, "/nft/v3/" + key + "/getNFTsForOwner", map[string]string{"owner": "vitalik.eth", "pageSize": "2", "withMetadata": "true"}},
		{"holdings_polygon", "holdings", map[string]any{"owner": "0xshop", "chain": "polygon", "contract": dusk, "page_key": "88434286"}, poly, "/nft/v3/" + key + "/getNFTsForOwner", map[string]string{"contractAddresses[]": dusk, "pageKey": "88434286"}},
		{"holdings_solana", "holdings", map[string]any{"owner": "86xCnPeV69n6t3DnyGvkKobf9FdN2H9oiVDdaMpo2MMY", "chain": "solana", "limit": 2.0}, das, "/v2/" + key, nil},
		{"nft", "nft", map[string]any{"contract": dusk, "token_id": "28"}, eth, "/nft/v3/" + key + "/getOwnersForNFT", map[string]string{"contractAddress": dusk, "tokenId": "28"}},
		{"collection", "collection", map[string]any{"contract": dusk}, eth, "/nft/v3/" + key + "/getContractMetadata", map[string]string{"contractAddress": dusk}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := alchemy.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.Golden(t, tt.name, got)
			tt.fake.CheckLast(t, tt.path, tt.query)
			if strings.Contains(got, "https://") {
				t.Errorf("a URL (image or token URI) in the result:\n%s", got)
			}
		})
	}
	for _, f := range []*adapterstest.Fake{eth, poly, das} {
		if f.Denied != 0 {
			t.Errorf("%d requests without the key", f.Denied)
		}
	}
}

func TestErrors(t *testing.T) {
	eth, _, _, l := fakes(t)
	eth.Handle("GET /nft/v3/"+key+"/getContractMetadata", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":"bad contract for %s"}}`, r.URL.Path)
	})
	noDAS := l
	noDAS.Endpoints = nil
	for _, tt := range []struct {
		login adapters.Login
		tool  string
		args  map[string]any
		kind  adapters.Kind
		says  string
	}{
		{l, "collection", map[string]any{"contract": "0x1"}, adapters.KindUpstream, "bad contract for /nft/v3/[redacted]/getContractMetadata"},
		{l, "holdings", map[string]any{"owner": "vitalik.eth", "chain": "base"}, adapters.KindInvalid, "ENS names work on ethereum only"},
		{l, "holdings", map[string]any{"owner": "0x1", "chain": "base"}, adapters.KindInvalid, `no "base" endpoint`},
		{noDAS, "holdings", map[string]any{"owner": "So1", "chain": "solana"}, adapters.KindInvalid, `no "solana_das" endpoint`},
		{l, "nft", map[string]any{"contract": "0x1", "token_id": "1", "chain": "solana"}, adapters.KindInvalid, "chain is one of"},
	} {
		_, err := alchemy.Adapter{}.Call(context.Background(), tt.login, tt.tool, tt.args)
		if k, _ := adapters.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s %v: %v (kind %v), want kind %v saying %q", tt.tool, tt.args, err, k, tt.kind, tt.says)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("%s: the key leaked: %v", tt.tool, err)
		}
	}
}
