// Package alchemy is the Alchemy adapter: NFT API v3 with the key in the path (holdings, nft,
// collection; EVM chains by named endpoint, Solana holdings through DAS getAssetsByOwner),
// answered as compact TSV without images, descriptions or token URIs.
package alchemy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "alchemy"

// provider names Alchemy in errors.
const provider = "Alchemy"

// zeroOwner is the owner Connect lists to check the key.
const zeroOwner = "0x0000000000000000000000000000000000000000"

// DASEndpoint names the catalog endpoint of Solana's DAS JSON-RPC (solana-mainnet).
const DASEndpoint = "solana_das"

// Chains lists the chains holdings takes; ethereum is the catalog row's url, every other EVM
// chain the endpoint of its name, solana the solana_das endpoint.
var Chains = []string{"ethereum", "polygon", "base", "arbitrum", "bsc", "optimism", "ink", "robinhood", "solana"}

func init() { adapters.Register(Adapter{}) }

// Adapter is the Alchemy adapter.
type Adapter struct{}

// Slug returns "alchemy".
func (Adapter) Slug() string { return Slug }

func client(l adapters.Login) adapters.HTTP {
	return adapters.HTTP{Provider: provider, Login: l}
}

// base is the NFT API base of a chain, with the key appended as Alchemy's path wants it.
func base(l adapters.Login, chain string) (string, error) {
	key := l.Credential("api_key")
	if key == "" {
		return "", &adapters.Error{Kind: adapters.KindRejected, Provider: provider, Msg: "the login has no API key; reconnect the login"}
	}
	u := strings.TrimRight(l.URL, "/")
	if chain != "" && chain != "ethereum" {
		known := false
		for _, c := range Chains {
			known = known || c == chain
		}
		if !known || chain == "solana" {
			return "", adapters.Invalid(provider, "chain is one of "+strings.Join(Chains[:len(Chains)-1], ", ")+" here")
		}
		var err error
		if u, err = l.Endpoint(provider, chain); err != nil {
			return "", err
		}
	}
	return u + "/" + url.PathEscape(key), nil
}

// Verify lists the NFTs of the zero owner on ethereum.
func (Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	b, err := base(l, "ethereum")
	if err != nil {
		return connections.Verification{}, err
	}
	var out struct {
		Owned []json.RawMessage `json:"ownedNfts"`
	}
	q := url.Values{"owner": {zeroOwner}, "withMetadata": {"false"}, "pageSize": {"1"}}
	if err := client(l).JSON(ctx, adapters.Get(b, "/getNFTsForOwner", q, "the NFT API"), &out); err != nil {
		return connections.Verification{}, err
	}
	return connections.Verification{}, nil
}

// Call runs one Alchemy tool.
func (Adapter) Call(ctx context.Context, l adapters.Login, tool string, args map[string]any) (string, error) {
	switch tool {
	case "holdings":
		if adapters.StrOr(args, "chain", "ethereum") == "solana" {
			return solana(ctx, l, args)
		}
		return holdings(ctx, l, args)
	case "nft":
		return nft(ctx, l, args)
	case "collection":
		return collection(ctx, l, args)
	}
	return "", adapters.UnknownTool(provider, tool)
}

// contract is a contract as NFT API v3 describes it.
type contract struct {
	Address     string   `json:"address"`
	Name        string   `json:"name"`
	Symbol      string   `json:"symbol"`
	TotalSupply any      `json:"totalSupply"`
	TokenType   string   `json:"tokenType"`
	Deployer    string   `json:"contractDeployer"`
	Deployed    *float64 `json:"deployedBlockNumber"`
	IsSpam      *bool    `json:"isSpam"`
	OpenSea     struct {
		Floor      *float64 `json:"floorPrice"`
		Collection string   `json:"collectionName"`
		Slug       string   `json:"collectionSlug"`
		Safelist   string   `json:"safelistRequestStatus"`
	} `json:"openSeaMetadata"`
}

// token is one NFT as NFT API v3 describes it.
type token struct {
	Contract  contract `json:"contract"`
	Address   string   `json:"contractAddress"`
	TokenID   string   `json:"tokenId"`
	TokenType string   `json:"tokenType"`
	Name      string   `json:"name"`
	Balance   string   `json:"balance"`
	Updated   string   `json:"timeLastUpdated"`
	Raw       struct {
		Metadata struct {
			Attributes []struct {
				Trait string `json:"trait_type"`
				Value any    `json:"value"`
			} `json:"attributes"`
		} `json:"metadata"`
	} `json:"raw"`
}

func (t token) address() string {
	if t.Contract.Address != "" {
		return t.Contract.Address
	}
	return t.Address
}

func holdings(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	owner := adapters.Str(args, "owner")
	chain := adapters.StrOr(args, "chain", "ethereum")
	if owner == "" {
		return "", adapters.Invalid(provider, "owner is required (an address, or an ENS name on ethereum)")
	}
	if chain != "ethereum" && !strings.HasPrefix(owner, "0x") {
		return "", adapters.Invalid(provider, "ENS names work on ethereum only; pass the owner's 0x address on "+chain)
	}
	b, err := base(l, chain)
	if err != nil {
		return "", err
	}
	limit := adapters.Limit(args)
	q := url.Values{"owner": {owner}, "withMetadata": {"true"}, "pageSize": {strconv.Itoa(limit)}}
	if c := adapters.Str(args, "contract"); c != "" {
		q.Add("contractAddresses[]", c)
	}
	if pk := adapters.Str(args, "page_key"); pk != "" {
		q.Set("pageKey", pk)
	}
	var out struct {
		Owned   []token  `json:"ownedNfts"`
		Total   *float64 `json:"totalCount"`
		PageKey *string  `json:"pageKey"`
	}
	if err := client(l).JSON(ctx, adapters.Get(b, "/getNFTsForOwner", q, "owner "+owner+" on "+chain), &out); err != nil {
		return "", err
	}
	t := adapters.NewTable("contract", "token_id", "name", "collection", "symbol", "token_type", "balance", "floor_eth")
	for _, x := range out.Owned {
		name := x.Contract.OpenSea.Collection
		if name == "" {
			name = x.Contract.Name
		}
		t.Add(x.address(), x.TokenID, x.Name, name, x.Contract.Symbol, firstOf(x.TokenType, x.Contract.TokenType), x.Balance, x.Contract.OpenSea.Floor)
	}
	t.Cap(limit)
	if out.PageKey != nil && *out.PageKey != "" {
		if out.Total != nil {
			t.Note(fmt.Sprintf("%s NFTs in all", adapters.Number(*out.Total)))
		}
		t.Note(adapters.NextPage("page_key", *out.PageKey))
	}
	return t.String(), nil
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// solana lists a Solana owner's assets through DAS getAssetsByOwner; page_key is the page number.
func solana(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	owner := adapters.Str(args, "owner")
	if owner == "" {
		return "", adapters.Invalid(provider, "owner is required (a Solana address)")
	}
	das, err := l.Endpoint(provider, DASEndpoint)
	if err != nil {
		return "", err
	}
	limit := adapters.Limit(args)
	page := 1
	if pk := adapters.Str(args, "page_key"); pk != "" {
		if page, err = strconv.Atoi(pk); err != nil || page < 1 {
			return "", adapters.Invalid(provider, "page_key on solana is the page number from the previous answer")
		}
	}
	req := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "getAssetsByOwner",
		"params": map[string]any{"ownerAddress": owner, "page": page, "limit": limit}}
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("encode getAssetsByOwner: %w", err)
	}
	var out struct {
		Result *struct {
			Total *float64 `json:"total"`
			Items []struct {
				ID        string `json:"id"`
				Interface string `json:"interface"`
				Content   struct {
					Metadata struct {
						Name   string `json:"name"`
						Symbol string `json:"symbol"`
					} `json:"metadata"`
				} `json:"content"`
				Grouping []struct {
					Key   string `json:"group_key"`
					Value string `json:"group_value"`
				} `json:"grouping"`
				Compression struct {
					Compressed bool `json:"compressed"`
				} `json:"compression"`
			} `json:"items"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	key := l.Credential("api_key")
	r := adapters.Request{Method: http.MethodPost, URL: das + "/" + url.PathEscape(key), Body: body, Type: "application/json", What: "owner " + owner + " on solana"}
	if err := client(l).JSON(ctx, r, &out); err != nil {
		return "", err
	}
	if out.Error != nil {
		return "", &adapters.Error{Kind: adapters.KindUpstream, Provider: provider, Msg: "getAssetsByOwner refused: " + adapters.Clip(out.Error.Message, 160)}
	}
	if out.Result == nil {
		return "", &adapters.Error{Kind: adapters.KindMalformed, Provider: provider, Msg: "answered getAssetsByOwner without a result"}
	}
	filter := adapters.Str(args, "contract")
	t := adapters.NewTable("mint", "name", "symbol", "collection", "interface", "compressed")
	for _, it := range out.Result.Items {
		col := ""
		for _, g := range it.Grouping {
			if g.Key == "collection" {
				col = g.Value
			}
		}
		if filter != "" && col != filter {
			continue
		}
		t.Add(it.ID, it.Content.Metadata.Name, it.Content.Metadata.Symbol, col, it.Interface, it.Compression.Compressed)
	}
	if tot := out.Result.Total; tot != nil && float64(page*limit) < *tot || out.Result.Total == nil && len(out.Result.Items) >= limit {
		t.Note(adapters.NextPage("page_key", strconv.Itoa(page+1)))
	}
	return t.String(), nil
}

func nft(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	addr, id := adapters.Str(args, "contract"), adapters.Str(args, "token_id")
	if addr == "" || id == "" {
		return "", adapters.Invalid(provider, "contract and token_id are required")
	}
	chain := adapters.StrOr(args, "chain", "ethereum")
	b, err := base(l, chain)
	if err != nil {
		return "", err
	}
	c := client(l)
	what := "NFT " + addr + " #" + id + " on " + chain
	q := url.Values{"contractAddress": {addr}, "tokenId": {id}}
	var x token
	if err := c.JSON(ctx, adapters.Get(b, "/getNFTMetadata", q, what), &x); err != nil {
		return "", err
	}
	var owners struct {
		Owners []string `json:"owners"`
	}
	if err := c.JSON(ctx, adapters.Get(b, "/getOwnersForNFT", q, what), &owners); err != nil {
		return "", err
	}
	var attrs []string
	for _, a := range x.Raw.Metadata.Attributes {
		attrs = append(attrs, a.Trait+"="+adapters.Cell(a.Value))
	}
	t := adapters.NewTable("contract", "token_id", "name", "collection", "token_type", "owners", "owner", "attributes")
	first := ""
	if len(owners.Owners) > 0 {
		first = owners.Owners[0]
	}
	col := firstOf(x.Contract.OpenSea.Collection, x.Contract.Name)
	t.Add(x.address(), x.TokenID, x.Name, col, firstOf(x.TokenType, x.Contract.TokenType), len(owners.Owners), first, adapters.Clip(strings.Join(attrs, "; "), 600))
	return t.String(), nil
}

func collection(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	addr := adapters.Str(args, "contract")
	if addr == "" {
		return "", adapters.Invalid(provider, "contract is required")
	}
	chain := adapters.StrOr(args, "chain", "ethereum")
	b, err := base(l, chain)
	if err != nil {
		return "", err
	}
	var x contract
	if err := client(l).JSON(ctx, adapters.Get(b, "/getContractMetadata", url.Values{"contractAddress": {addr}}, "contract "+addr+" on "+chain), &x); err != nil {
		return "", err
	}
	t := adapters.NewTable("contract", "name", "symbol", "token_type", "total_supply", "deployer", "deployed_block", "opensea_collection", "opensea_floor_eth", "opensea_safelist")
	t.Add(x.Address, x.Name, x.Symbol, x.TokenType, x.TotalSupply, x.Deployer, x.Deployed, x.OpenSea.Collection, x.OpenSea.Floor, x.OpenSea.Safelist)
	return t.String(), nil
}
