package wallet

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
)

// market is anvil with an NFT the second dev account lists, and TestSeaport.
type market struct {
	node          *wallettest.Node
	nft, seaport  string
	fee           string
	price, payout *big.Int
	posted        []map[string]any
}

func newMarket(t *testing.T) *market {
	node := wallettest.Anvil(t, 1, alchemyKey)
	node.PlaceSeaport(t, seaport16)
	m := &market{node: node, nft: common.HexToAddress(node.DeployNFT(t)).Hex(), seaport: seaport16,
		fee: "0x0000000000000000000000000000000000000Fee", price: ether("1"), payout: ether("0.975")}
	node.Transact(t, wallettest.DevAddr, m.nft, "0x"+sel("mint(address,uint256)")+pad(wallettest.Dev2Addr)+fmt.Sprintf("%064x", 42), nil)
	node.Transact(t, wallettest.Dev2Addr, m.nft, "0x"+sel("setApprovalForAll(address,bool)")+pad(m.seaport)+fmt.Sprintf("%064x", 1), nil)
	node.Transact(t, wallettest.DevAddr, m.nft, "0x"+sel("mint(address,uint256)")+pad(wallettest.DevAddr)+fmt.Sprintf("%064x", 7), nil)
	return m
}

func (m *market) owner(t *testing.T, id int64) string {
	var s string
	decode(t, m.node.Must(t, "eth_call", map[string]any{"to": m.nft, "data": "0x" + sel("ownerOf(uint256)") + fmt.Sprintf("%064x", id)}, "latest"), &s)
	return common.HexToAddress(s).Hex()
}

// openseaFake is OpenSea's v2 API on loopback (X-API-KEY checked): a collection's best listing,
// an NFT's collection and best listing, the listing's fulfillment data (Seaport's basic order,
// 0.975 ETH to the seller and 0.025 ETH fee), and orders by hash; tamper edits the fulfillment.
func openseaFake(t *testing.T, m *market, tamper *func(map[string]any)) *adapterstest.Fake {
	f := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("X-API-KEY") == openseaKey })
	l := map[string]any{"order_hash": "0x" + strings.Repeat("ab", 32), "chain": "ethereum", "protocol_address": m.seaport, "type": "basic", "status": "ACTIVE", "remaining_quantity": 1,
		"price": map[string]any{"current": map[string]any{"currency": "ETH", "decimals": 18, "value": m.price.String()}}}
	f.JSON("GET /api/v2/listings/collection/test-apes/best", 200, mustJSON(map[string]any{"listings": []any{l}, "next": ""}))
	f.JSON("GET /api/v2/listings/collection/test-apes/nfts/42/best", 200, mustJSON(l))
	f.JSON("GET /api/v2/chain/ethereum/contract/"+m.nft+"/nfts/42", 200, mustJSON(map[string]any{"nft": map[string]any{"identifier": "42", "collection": "test-apes", "contract": m.nft}}))
	f.Handle("POST /api/v2/listings/fulfillment_data", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Fulfiller struct{ Address string } `json:"fulfiller"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		now := time.Now().Unix()
		params := map[string]any{"considerationToken": nativeEVM, "considerationIdentifier": "0", "considerationAmount": m.payout.String(),
			"offerer": wallettest.Dev2Addr, "zone": nativeEVM, "offerToken": m.nft, "offerIdentifier": "42", "offerAmount": "1", "basicOrderType": 0,
			"startTime": fmt.Sprint(now - 3600), "endTime": fmt.Sprint(now + 86400), "zoneHash": "0x" + strings.Repeat("00", 32), "salt": "27182818284590452353",
			"offererConduitKey": "0x0000007b02230091a7ed01230072f7006a004d60a8d4e71d599b8104250f0000", "fulfillerConduitKey": "0x" + strings.Repeat("00", 32),
			"totalOriginalAdditionalRecipients": "1", "additionalRecipients": []any{map[string]any{"amount": new(big.Int).Sub(m.price, m.payout).String(), "recipient": m.fee}},
			"signature": "0x" + strings.Repeat("11", 65)}
		tx := map[string]any{"function": "fulfillBasicOrder_efficient_6GL6yc((address,uint256,uint256,address,address,address,uint256,uint256,uint8,uint256,uint256,bytes32,uint256,bytes32,bytes32,uint256,(uint256,address)[],bytes))",
			"chain": 1, "to": m.seaport, "value": m.price.String(), "input_data": map[string]any{"parameters": params}}
		out := map[string]any{"protocol": "seaport1.6", "fulfillment_data": map[string]any{"transaction": tx, "orders": []any{}}}
		if *tamper != nil {
			(*tamper)(out)
		}
		_ = jsonEncode(w, out)
	})
	f.JSON("GET /api/v2/chain/ethereum/contract/"+m.nft+"/nfts/7", 200, mustJSON(map[string]any{"nft": map[string]any{"identifier": "7", "collection": "test-apes", "contract": m.nft}}))
	f.JSON("GET /api/v2/collections/test-apes", 200, mustJSON(map[string]any{"collection": "test-apes", "name": "Test Apes", "fees": []any{
		map[string]any{"fee": 1, "recipient": "0x0000a26b00c1F0DF003000390027140000fAa719", "required": true},
		map[string]any{"fee": 2.5, "recipient": "0x00000000000000000000000000000000000C0FFE", "required": true},
		map[string]any{"fee": 5, "recipient": "0x000000000000000000000000000000000000beef", "required": false}}}))
	f.Handle("POST /api/v2/orders/ethereum/seaport/listings", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Parameters map[string]any `json:"parameters"`
			Signature  string         `json:"signature"`
			Protocol   string         `json:"protocol_address"`
		}
		d := json.NewDecoder(r.Body)
		d.UseNumber()
		if err := d.Decode(&req); err != nil || req.Protocol != seaport16 {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"errors":["bad listing"]}`))
			return
		}
		m.posted = append(m.posted, req.Parameters)
		// The signer as TestSeaport recovers it from the EIP-712 digest it computes in Solidity.
		oc, err := orderParams(req.Parameters)
		a, aerr := abi.JSON(strings.NewReader(wallettest.SeaportABI(t)))
		if err != nil || aerr != nil {
			w.WriteHeader(400)
			return
		}
		data, err := a.Pack("signerOf", oc, common.FromHex(req.Signature))
		if err != nil {
			w.WriteHeader(400)
			return
		}
		var got string
		decode(t, m.node.Must(t, "eth_call", map[string]any{"to": seaport16, "data": "0x" + common.Bytes2Hex(data)}, "latest"), &got)
		if common.HexToAddress(got) != common.HexToAddress(req.Parameters["offerer"].(string)) {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"errors":["Invalid signature"]}`))
			return
		}
		_ = jsonEncode(w, map[string]any{"order": map[string]any{"order_hash": "0x" + strings.Repeat("5e", 32), "protocol_address": seaport16}})
	})
	f.JSON("GET /api/v2/offers/collection/test-apes/nfts/7/best", 200, mustJSON(map[string]any{"order_hash": "0x" + strings.Repeat("77", 32), "chain": "ethereum", "protocol_address": seaport16,
		"price": map[string]any{"currency": "WETH", "decimals": 18, "value": "1000000"}}))
	f.Handle("POST /api/v2/offers/fulfillment_data", func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().Unix()
		params := map[string]any{"considerationToken": m.nft, "considerationIdentifier": "7", "considerationAmount": "1",
			"offerer": wallettest.Dev2Addr, "zone": nativeEVM, "offerToken": wrappedNative["ethereum"], "offerIdentifier": "0", "offerAmount": "1000000", "basicOrderType": 16,
			"startTime": fmt.Sprint(now - 3600), "endTime": fmt.Sprint(now + 86400), "zoneHash": "0x" + strings.Repeat("00", 32), "salt": "3141592653589793",
			"offererConduitKey": "0x" + strings.Repeat("00", 32), "fulfillerConduitKey": openSeaConduitKey,
			"totalOriginalAdditionalRecipients": "1", "additionalRecipients": []any{map[string]any{"amount": "25000", "recipient": m.fee}},
			"signature": "0x" + strings.Repeat("22", 65)}
		tx := map[string]any{"function": "fulfillBasicOrder_efficient_6GL6yc((address,uint256,uint256,address,address,address,uint256,uint256,uint8,uint256,uint256,bytes32,uint256,bytes32,bytes32,uint256,(uint256,address)[],bytes))",
			"chain": 1, "to": seaport16, "value": "0", "input_data": map[string]any{"parameters": params}}
		out := map[string]any{"protocol": "seaport1.6", "fulfillment_data": map[string]any{"transaction": tx, "orders": []any{}}}
		if *tamper != nil {
			(*tamper)(out)
		}
		_ = jsonEncode(w, out)
	})
	f.Handle("POST /api/v2/offers/build", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Offerer  string `json:"offerer"`
			Quantity int    `json:"quantity"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		_ = jsonEncode(w, map[string]any{"partialParameters": map[string]any{
			"consideration": []any{map[string]any{"itemType": 4, "token": m.nft, "identifierOrCriteria": "0", "startAmount": fmt.Sprint(req.Quantity), "endAmount": fmt.Sprint(req.Quantity), "recipient": req.Offerer}},
			"zone":          "0x000056F7000000EcE9003ca63978907a00FFD100", "zoneHash": "0x" + strings.Repeat("00", 32)},
			"criteria": map[string]any{"collection": map[string]any{"slug": "test-apes"}, "contract": map[string]any{"address": m.nft}}, "encodedTokenIds": "*"})
	})
	f.Handle("POST /api/v2/offers", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Data struct {
				Parameters map[string]any `json:"parameters"`
				Signature  string         `json:"signature"`
			} `json:"protocol_data"`
		}
		d := json.NewDecoder(r.Body)
		d.UseNumber()
		if err := d.Decode(&req); err != nil || !m.signedBy(t, req.Data.Parameters, req.Data.Signature) {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"errors":["Invalid signature"]}`))
			return
		}
		m.posted = append(m.posted, req.Data.Parameters)
		_ = jsonEncode(w, map[string]any{"order_hash": "0x" + strings.Repeat("0f", 32), "chain": "ethereum", "protocol_address": seaport16})
	})
	order := func(offerer string) []byte {
		return mustJSON(map[string]any{"order": map[string]any{"order_hash": "0x" + strings.Repeat("cd", 32), "protocol_address": m.seaport, "protocol_data": map[string]any{
			"parameters": map[string]any{"offerer": offerer, "zone": nativeEVM, "orderType": 0, "startTime": "1700000000", "endTime": "1900000000",
				"zoneHash": "0x" + strings.Repeat("00", 32), "salt": "77", "conduitKey": "0x" + strings.Repeat("00", 32), "counter": "0", "totalOriginalConsiderationItems": 1,
				"offer":         []any{map[string]any{"itemType": 2, "token": m.nft, "identifierOrCriteria": "7", "startAmount": "1", "endAmount": "1"}},
				"consideration": []any{map[string]any{"itemType": 0, "token": nativeEVM, "identifierOrCriteria": "0", "startAmount": "1000", "endAmount": "1000", "recipient": offerer}}},
			"signature": "0x"}}})
	}
	f.JSON("GET /api/v2/orders/chain/ethereum/protocol/"+seaport16+"/0x"+strings.Repeat("cd", 32), 200, order(wallettest.DevAddr))
	f.JSON("GET /api/v2/orders/chain/ethereum/protocol/"+seaport16+"/0x"+strings.Repeat("ef", 32), 200, order(wallettest.Dev2Addr))
	return f
}

// signedBy reports whether TestSeaport recovers the order's offerer from the signature.
func (m *market) signedBy(t *testing.T, params map[string]any, sig string) bool {
	oc, err := orderParams(params)
	a, aerr := abi.JSON(strings.NewReader(wallettest.SeaportABI(t)))
	if err != nil || aerr != nil {
		return false
	}
	data, err := a.Pack("signerOf", oc, common.FromHex(sig))
	if err != nil {
		return false
	}
	var got string
	decode(t, m.node.Must(t, "eth_call", map[string]any{"to": seaport16, "data": "0x" + common.Bytes2Hex(data)}, "latest"), &got)
	return common.HexToAddress(got) == oc.Offerer
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestOpenSeaBuyAndCancel(t *testing.T) {
	m := newMarket(t)
	var tamper func(map[string]any)
	f := openseaFake(t, m, &tamper)
	l := login(t, m.node.Proxy, f.URL, goodCreds(t))
	seller, fee := m.node.Balance(t, wallettest.Dev2Addr), m.node.Balance(t, m.fee)

	if _, err := call(t, l, "opensea_buy", map[string]any{"chain": "ethereum", "collection": "test-apes", "max_price": "0.5"}); err == nil || !strings.Contains(err.Error(), "costs 1 ETH, above max_price 0.5") {
		t.Fatalf("max_price: %v", err)
	}
	n := m.node.Nonce(t, wallettest.DevAddr)
	for _, tc := range []struct {
		name   string
		tamper func(map[string]any)
		says   string
	}{
		{"another chain", func(o map[string]any) {
			o["fulfillment_data"].(map[string]any)["transaction"].(map[string]any)["chain"] = 8453
		}, "for chain 8453"},
		{"more value", func(o map[string]any) {
			o["fulfillment_data"].(map[string]any)["transaction"].(map[string]any)["value"] = ether("2").String()
		}, "not the listed 1000000000000000000"},
		{"another contract", func(o map[string]any) {
			o["fulfillment_data"].(map[string]any)["transaction"].(map[string]any)["to"] = wallettest.Dev2Addr
		}, "not the listing's contract"},
		{"a hidden extra payout", func(o map[string]any) {
			p := o["fulfillment_data"].(map[string]any)["transaction"].(map[string]any)["input_data"].(map[string]any)["parameters"].(map[string]any)
			p["considerationAmount"] = ether("1").String()
		}, "pays out 1025000000000000000 wei but sends 1000000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tamper = tc.tamper
			defer func() { tamper = nil }()
			if _, err := call(t, l, "opensea_buy", map[string]any{"chain": "ethereum", "collection": "test-apes"}); err == nil || !strings.Contains(adapters.Message(err), tc.says) {
				t.Fatalf("%v, want %q", err, tc.says)
			}
		})
	}
	if m.node.Nonce(t, wallettest.DevAddr) != n {
		t.Fatal("a refused listing sent a transaction")
	}
	out, err := call(t, l, "opensea_buy", map[string]any{"chain": "ethereum", "contract": m.nft, "token_id": "42", "max_price": "1"})
	if err != nil || field(out, "status") != "success" || field(out, "price") != "1 ETH" {
		t.Fatalf("buy %q %v", out, err)
	}
	if got := m.owner(t, 42); got != wallettest.DevAddr {
		t.Fatalf("NFT owner %s", got)
	}
	if d := new(big.Int).Sub(m.node.Balance(t, wallettest.Dev2Addr), seller); d.Cmp(m.payout) != 0 {
		t.Fatalf("the seller got %s", d)
	}
	if d := new(big.Int).Sub(m.node.Balance(t, m.fee), fee); d.Cmp(ether("0.025")) != 0 {
		t.Fatalf("the fee recipient got %s", d)
	}

	out, err = call(t, l, "opensea_cancel_order", map[string]any{"chain": "ethereum", "order_hash": "0x" + strings.Repeat("cd", 32)})
	if err != nil || field(out, "status") != "success" || field(out, "order") != "0x"+strings.Repeat("cd", 32) {
		t.Fatalf("cancel %q %v", out, err)
	}
	if _, err := call(t, l, "opensea_cancel_order", map[string]any{"chain": "ethereum", "order_hash": "0x" + strings.Repeat("ef", 32)}); err == nil || !strings.Contains(err.Error(), "not the wallet") {
		t.Fatalf("another's order: %v", err)
	}
}

// TestOpenSeaList: the wallet's NFT listed with the collection's required fees out of the price,
// OpenSea's conduit approved once, the order signed so that Seaport's own digest (computed in
// Solidity by TestSeaport) recovers the wallet.
func TestOpenSeaList(t *testing.T) {
	m := newMarket(t)
	var tamper func(map[string]any)
	f := openseaFake(t, m, &tamper)
	l := login(t, m.node.Proxy, f.URL, goodCreds(t))
	args := map[string]any{"chain": "ethereum", "contract": m.nft, "token_id": "7", "price": "2", "expires_in_hours": 24}
	dry := map[string]any{"dry_run": true}
	for k, v := range args {
		dry[k] = v
	}
	n := m.node.Nonce(t, wallettest.DevAddr)
	out, err := call(t, l, "opensea_list", dry)
	if err != nil || field(out, "seller_receives") != "1.93 ETH" || !strings.Contains(field(out, "approval"), openSeaConduit) || len(m.posted) != 0 || m.node.Nonce(t, wallettest.DevAddr) != n {
		t.Fatalf("dry run %q %v", out, err)
	}
	out, err = call(t, l, "opensea_list", args)
	if err != nil || field(out, "status") != "listed" || field(out, "order_hash") != "0x"+strings.Repeat("5e", 32) || field(out, "approval_hash") == "" {
		t.Fatalf("list %q %v", out, err)
	}
	cons := m.posted[0]["consideration"].([]any)
	if len(cons) != 3 || cons[0].(map[string]any)["startAmount"] != "1930000000000000000" || cons[2].(map[string]any)["startAmount"] != "50000000000000000" {
		t.Fatalf("consideration %v", cons)
	}
	// Approved now: a second listing sends no approval.
	out, err = call(t, l, "opensea_list", args)
	if err != nil || field(out, "approval") != "" || field(out, "status") != "listed" {
		t.Fatalf("second list %q %v", out, err)
	}
	if _, err := call(t, l, "opensea_list", map[string]any{"chain": "ethereum", "contract": m.nft, "token_id": "42", "price": "2"}); err == nil || !strings.Contains(err.Error(), "does not own") {
		t.Fatalf("not owned: %v", err)
	}
}

// TestOpenSeaCollectionOffer: an offer of price × quantity in WETH (its balance checked, approved
// to OpenSea's conduit for exactly that), the required fees in WETH, signed so TestSeaport
// recovers the wallet.
func TestOpenSeaCollectionOffer(t *testing.T) {
	m := newMarket(t)
	weth := wrappedNative["ethereum"]
	m.node.PlaceToken(t, weth, wallettest.DevAddr, big.NewInt(5_000_000)) // 5 "WETH" at the fixture's 6 decimals
	var tamper func(map[string]any)
	f := openseaFake(t, m, &tamper)
	l := login(t, m.node.Proxy, f.URL, goodCreds(t))
	if _, err := call(t, l, "opensea_collection_offer", map[string]any{"chain": "ethereum", "collection": "test-apes", "price": "3", "quantity": 2}); err == nil || !strings.Contains(err.Error(), "less than the offer's 6") {
		t.Fatalf("too little WETH: %v", err)
	}
	out, err := call(t, l, "opensea_collection_offer", map[string]any{"chain": "ethereum", "collection": "test-apes", "price": "1.5", "quantity": 2})
	if err != nil || field(out, "status") != "offered" || field(out, "order_hash") != "0x"+strings.Repeat("0f", 32) || !strings.Contains(field(out, "approval"), "approve 3 TUSD to "+openSeaConduit) {
		t.Fatalf("offer %q %v", out, err)
	}
	p := m.posted[len(m.posted)-1]
	offer, cons := p["offer"].([]any), p["consideration"].([]any)
	if offer[0].(map[string]any)["startAmount"] != "3000000" || len(cons) != 3 || cons[0].(map[string]any)["startAmount"] != "2" || cons[2].(map[string]any)["startAmount"] != "75000" || p["orderType"] != json.Number("3") {
		t.Fatalf("posted %v", p)
	}
	data := "0x" + sel("allowance(address,address)") + pad(wallettest.DevAddr) + pad(openSeaConduit)
	var allowance string
	decode(t, m.node.Must(t, "eth_call", map[string]any{"to": weth, "data": data}, "latest"), &allowance)
	if new(big.Int).SetBytes(common.FromHex(allowance)).Int64() != 3_000_000 {
		t.Fatalf("allowance %s", allowance)
	}
}

// TestOpenSeaAcceptOffer: the best offer on the wallet's NFT accepted through Seaport's basic
// order: OpenSea's conduit approved, the NFT to the buyer, the offer less its fee to the wallet.
func TestOpenSeaAcceptOffer(t *testing.T) {
	m := newMarket(t)
	weth := wrappedNative["ethereum"]
	m.node.PlaceConduit(t, openSeaConduit)
	m.node.PlaceToken(t, weth, wallettest.Dev2Addr, big.NewInt(5_000_000))
	m.node.Transact(t, wallettest.Dev2Addr, weth, "0x"+sel("approve(address,uint256)")+pad(seaport16)+fmt.Sprintf("%064x", 5_000_000), nil)
	var tamper func(map[string]any)
	f := openseaFake(t, m, &tamper)
	l := login(t, m.node.Proxy, f.URL, goodCreds(t))
	args := map[string]any{"chain": "ethereum", "contract": m.nft, "token_id": "7"}
	n := m.node.Nonce(t, wallettest.DevAddr)
	params := func(o map[string]any) map[string]any {
		return o["fulfillment_data"].(map[string]any)["transaction"].(map[string]any)["input_data"].(map[string]any)["parameters"].(map[string]any)
	}
	for _, tc := range []struct {
		name   string
		tamper func(map[string]any)
		says   string
	}{
		{"value", func(o map[string]any) {
			o["fulfillment_data"].(map[string]any)["transaction"].(map[string]any)["value"] = "1"
		}, "accepting an offer sends none"},
		{"another NFT", func(o map[string]any) { params(o)["considerationIdentifier"] = "8" }, "not " + m.nft + " #7"},
		{"a purchase", func(o map[string]any) { params(o)["basicOrderType"] = 0 }, "not an ERC-721 for an ERC-20"},
		{"another conduit", func(o map[string]any) { params(o)["fulfillerConduitKey"] = "0x" + strings.Repeat("99", 32) }, "not OpenSea's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tamper = tc.tamper
			defer func() { tamper = nil }()
			if _, err := call(t, l, "opensea_accept_offer", args); err == nil || !strings.Contains(adapters.Message(err), tc.says) {
				t.Fatalf("%v, want %q", err, tc.says)
			}
		})
	}
	if m.node.Nonce(t, wallettest.DevAddr) != n {
		t.Fatal("a refused offer sent a transaction")
	}
	before := m.node.TokenBalance(t, weth, wallettest.DevAddr)
	out, err := call(t, l, "opensea_accept_offer", args)
	if err != nil || field(out, "status") != "success" || !strings.HasPrefix(field(out, "receive"), "0.975 TUSD") || field(out, "approval_hash") == "" {
		t.Fatalf("accept %q %v", out, err)
	}
	if got := m.owner(t, 7); got != wallettest.Dev2Addr {
		t.Fatalf("NFT owner %s", got)
	}
	if d := new(big.Int).Sub(m.node.TokenBalance(t, weth, wallettest.DevAddr), before); d.Int64() != 975_000 {
		t.Fatalf("the wallet got %s", d)
	}
	if got := m.node.TokenBalance(t, weth, m.fee); got.Int64() != 25_000 {
		t.Fatalf("the fee recipient got %s", got)
	}
	if _, err := call(t, l, "opensea_accept_offer", args); err == nil || !strings.Contains(err.Error(), "does not own") {
		t.Fatalf("sold already: %v", err)
	}
}
