// Package wallet is the Wallet adapter: an EVM and a Solana key signing over each chain's JSON-RPC
// (Alchemy's, arc's own, public fallbacks), with exact amounts, a simulation before every
// broadcast, and one nonce at a time per address and chain.
package wallet

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "wallet"

// provider names the wallet in its own errors.
const provider = "Wallet"

// The catalog endpoints besides the chains'.
const (
	EndpointOpenSea = "opensea"
	EndpointUniswap = "uniswap"
)

func init() { adapters.Register(Adapter{}) }

// Adapter is the Wallet adapter.
type Adapter struct{}

// Slug returns "wallet".
func (Adapter) Slug() string { return Slug }

// Verify checks both keys' forms, then eth_blockNumber on ethereum, getSlot on solana, OpenSea's
// chain list and, when a Uniswap key is given, Uniswap's supported chains.
func (Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	evm, err := ParseEVMKey(l.Credential(FieldEVMKey))
	if err != nil {
		return connections.Verification{}, err
	}
	sol, err := ParseSolanaKey(l.Credential(FieldSolanaKey))
	if err != nil {
		return connections.Verification{}, err
	}
	solAddr := SolanaAddress(sol)
	clear(sol)
	for _, f := range []string{FieldAlchemyKey, FieldOpenSeaKey} {
		if l.Credential(f) == "" {
			return connections.Verification{}, adapters.Invalid(provider, "credentials."+f+" is required")
		}
	}
	eth, _ := chainOf("ethereum")
	r, err := newRPC(l, eth)
	if err != nil {
		return connections.Verification{}, err
	}
	var block string
	if err := r.call(ctx, "eth_blockNumber", nil, &block); err != nil {
		return connections.Verification{}, err
	}
	if _, err := quantity(block); err != nil {
		return connections.Verification{}, &adapters.Error{Kind: adapters.KindMalformed, Provider: r.http.Provider, Msg: "answered eth_blockNumber with something that is not a block number"}
	}
	solana, _ := chainOf("solana")
	s, err := newRPC(l, solana)
	if err != nil {
		return connections.Verification{}, err
	}
	var slot uint64
	if err := s.call(ctx, "getSlot", nil, &slot); err != nil {
		return connections.Verification{}, err
	}
	if err := openSeaChains(ctx, l); err != nil {
		return connections.Verification{}, err
	}
	if l.Credential(FieldUniswapKey) != "" {
		if err := uniswapChains(ctx, l); err != nil {
			return connections.Verification{}, err
		}
	}
	return connections.Verification{AccountHint: AccountHint(EVMAddress(evm), solAddr)}, nil
}

// openSeaChains lists OpenSea's chains with the key (GET /api/v2/chains, X-API-KEY).
func openSeaChains(ctx context.Context, l adapters.Login) error {
	base, err := l.Endpoint(provider, EndpointOpenSea)
	if err != nil {
		return err
	}
	key := l.Credential(FieldOpenSeaKey)
	c := adapters.HTTP{Provider: "OpenSea", Login: l, Auth: func(h http.Header) { h.Set("X-API-KEY", key) }}
	var out struct {
		Chains []json.RawMessage `json:"chains"`
	}
	if err := c.JSON(ctx, adapters.Get(base, "/api/v2/chains", nil, "the chain list"), &out); err != nil {
		return err
	}
	if len(out.Chains) == 0 {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: "OpenSea", Msg: "answered an empty chain list"}
	}
	return nil
}

// uniswapChains lists the Trading API's supported chains with the key (x-api-key).
func uniswapChains(ctx context.Context, l adapters.Login) error {
	base, err := l.Endpoint(provider, EndpointUniswap)
	if err != nil {
		return err
	}
	key := l.Credential(FieldUniswapKey)
	c := adapters.HTTP{Provider: "Uniswap", Login: l, Auth: func(h http.Header) { h.Set("x-api-key", key) }}
	body, err := c.Do(ctx, adapters.Get(base, "/supported_chains", nil, "the supported chains"))
	if err != nil {
		return err
	}
	var out any
	if err := c.Decode(body, &out); err != nil {
		return err
	}
	return nil
}

// Call runs one Wallet tool.
func (Adapter) Call(ctx context.Context, l adapters.Login, tool string, args map[string]any) (string, error) {
	switch tool {
	case "get_address":
		return getAddress(l)
	case "get_balance":
		return getBalance(ctx, l, args)
	case "send":
		return send(ctx, l, args)
	case "call":
		return callContract(ctx, l, args)
	case "submit":
		return submit(ctx, l, args)
	case "swap":
		return swap(ctx, l, args)
	case "uniswap_swap":
		return uniswapSwap(ctx, l, args)
	case "opensea_buy":
		return openseaBuy(ctx, l, args)
	case "opensea_cancel_order":
		return openseaCancel(ctx, l, args)
	case "opensea_list":
		return openseaList(ctx, l, args)
	case "opensea_collection_offer":
		return openseaCollectionOffer(ctx, l, args)
	case "opensea_accept_offer":
		return openseaAccept(ctx, l, args)
	}
	return "", adapters.UnknownTool(provider, tool)
}

// getAddress answers both addresses.
func getAddress(l adapters.Login) (string, error) {
	evm, err := ParseEVMKey(l.Credential(FieldEVMKey))
	if err != nil {
		return "", err
	}
	sol, err := ParseSolanaKey(l.Credential(FieldSolanaKey))
	if err != nil {
		return "", err
	}
	defer clear(sol)
	t := adapters.NewTable("kind", "address", "chains")
	t.Add("evm", EVMAddress(evm).Hex(), chainNames(true))
	t.Add("solana", SolanaAddress(sol), "solana")
	return t.String(), nil
}

// dryRun reads the dry_run argument.
func dryRun(args map[string]any) bool { return adapters.Bool(args, "dry_run") }
