package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// wrappedNative is the wrapped native coin OpenSea's offers are made in, by chain.
var wrappedNative = map[string]string{
	"ethereum": "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
	"base":     "0x4200000000000000000000000000000000000006",
	"optimism": "0x4200000000000000000000000000000000000006",
	"arbitrum": "0x82aF49447D8a07e3bd95BD0d56f35241523fBab1",
	"polygon":  "0x7ceB23fD6bC0adD59E62ac25578270cFf1b9f619",
}

// openseaCollectionOffer answers opensea_collection_offer: OpenSea builds the collection's
// criteria, the wallet offers price × quantity of the wrapped native coin (checked against its
// balance, approved to OpenSea's conduit for exactly that), less the required fees to their
// recipients, signs the Seaport order (EIP-712) and posts it.
func openseaCollectionOffer(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	e, err := openEVM(l, adapters.Str(args, "chain"))
	if err != nil {
		return "", err
	}
	wn, ok := wrappedNative[e.chain.Name]
	if !ok {
		return "", adapters.Invalid(provider, "collection offers are made in wrapped ETH on ethereum, base, optimism, arbitrum and polygon")
	}
	o, err := newOpenSea(l)
	if err != nil {
		return "", err
	}
	if err := e.checkChainID(ctx); err != nil {
		return "", err
	}
	slug := adapters.Str(args, "collection")
	if slug == "" {
		return "", adapters.Invalid(provider, "collection (the slug) is required")
	}
	qty, ok := adapters.Int(args, "quantity")
	if !ok || qty < 1 {
		qty = 1
	}
	hours, ok := adapters.Int(args, "expires_in_hours")
	if !ok || hours < 1 || hours > 720 {
		hours = 24
	}
	weth := common.HexToAddress(wn)
	tok, err := e.erc20(ctx, weth)
	if err != nil {
		return "", err
	}
	price, err := ParseAmount(adapters.Str(args, "price"), tok.decimals, false)
	if err != nil {
		return "", adapters.Invalid(provider, "price: "+err.Error())
	}
	total := new(big.Int).Mul(price, big.NewInt(int64(qty)))
	have, err := e.tokenBalance(ctx, weth, e.from)
	if err != nil {
		return "", err
	}
	if have.Cmp(total) < 0 {
		return "", adapters.Invalid(provider, fmt.Sprintf("the wallet holds %s %s, less than the offer's %s; wrap ETH first; nothing was signed", FormatAmount(have, tok.decimals), tok.symbol, FormatAmount(total, tok.decimals)))
	}
	var built struct {
		Partial struct {
			Consideration []map[string]any `json:"consideration"`
			Zone          string           `json:"zone"`
			ZoneHash      string           `json:"zoneHash"`
		} `json:"partialParameters"`
		Criteria json.RawMessage `json:"criteria"`
	}
	req := map[string]any{"offerer": e.from.Hex(), "quantity": qty, "criteria": map[string]any{"collection": map[string]any{"slug": slug}}, "protocol_address": seaport16}
	if err := o.post(ctx, "/api/v2/offers/build", "collection "+slug, req, &built); err != nil {
		return "", err
	}
	refuse := func(why string) error {
		return adapters.Invalid(provider, "OpenSea's offer was refused, nothing was signed: "+why)
	}
	if len(built.Partial.Consideration) != 1 {
		return "", refuse("it asks for other than one criteria item in return")
	}
	want, err := orderParams(map[string]any{"offerer": e.from.Hex(), "zone": built.Partial.Zone, "orderType": 0, "startTime": "0", "endTime": "0",
		"zoneHash": built.Partial.ZoneHash, "salt": "0", "conduitKey": openSeaConduitKey, "counter": "0", "consideration": anySlice(built.Partial.Consideration)})
	if err != nil {
		return "", refuse("its criteria are not a Seaport order part: " + err.Error())
	}
	item := want.Consideration[0]
	if item.Recipient != e.from || (item.ItemType != 4 && item.ItemType != 5) || item.StartAmount.Cmp(big.NewInt(int64(qty))) != 0 {
		return "", refuse("its criteria item does not give the wallet the stated quantity of the collection's NFTs")
	}
	fees, err := o.requiredFees(ctx, slug)
	if err != nil {
		return "", err
	}
	cons := []considerationItem{item}
	t := adapters.NewTable("field", "value")
	t.Add("chain", fmt.Sprintf("%s (chain id %d)", e.chain.Name, e.id))
	t.Add("collection", slug)
	t.Add("offer", fmt.Sprintf("%s %s each for %d (%s %s in all)", FormatAmount(price, tok.decimals), tok.symbol, qty, FormatAmount(total, tok.decimals), tok.symbol))
	for _, f := range fees {
		amt := new(big.Int).Div(new(big.Int).Mul(total, big.NewInt(f.bps)), big.NewInt(10000))
		cons = append(cons, considerationItem{ItemType: 1, Token: weth, IdentifierOrCriteria: new(big.Int), StartAmount: amt, EndAmount: amt, Recipient: f.recipient})
		t.Add("fee", fmt.Sprintf("%s %s to %s", FormatAmount(amt, tok.decimals), tok.symbol, f.recipient.Hex()))
	}
	salt, err := randomSalt()
	if err != nil {
		return "", err
	}
	counter, err := e.counter(ctx)
	if err != nil {
		return "", err
	}
	now := l.Clock().Unix()
	orderType := uint8(2) // PARTIAL_OPEN
	if want.Zone != (common.Address{}) {
		orderType = 3 // PARTIAL_RESTRICTED: OpenSea's zone checks the fill
	}
	order := orderComponents{Offerer: e.from, Zone: want.Zone, Offer: []offerItem{{ItemType: 1, Token: weth, IdentifierOrCriteria: new(big.Int), StartAmount: total, EndAmount: total}},
		Consideration: cons, OrderType: orderType, StartTime: big.NewInt(now), EndTime: big.NewInt(now + int64(hours)*3600), ZoneHash: want.ZoneHash, Salt: salt,
		ConduitKey: want.ConduitKey, Counter: counter}
	t.Add("expires", adapters.Unix(now+int64(hours)*3600))
	rows, wait, err := e.approveFirst(ctx, asset{addr: weth, decimals: tok.decimals, symbol: tok.symbol}, common.HexToAddress(openSeaConduit), total, dryRun(args))
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		t.Add(r[0], r[1])
	}
	if dryRun(args) || wait {
		t.Add("status", "dry_run: the order above would be signed (EIP-712) and posted; nothing signed or sent")
		return t.String(), nil
	}
	sig, err := e.signOrder(order)
	if err != nil {
		return "", err
	}
	var posted struct {
		Hash string `json:"order_hash"`
	}
	body := map[string]any{"protocol_data": map[string]any{"parameters": order.json(), "signature": sig}, "criteria": built.Criteria, "protocol_address": seaport16}
	if err := o.post(ctx, "/api/v2/offers", "the offer", body, &posted); err != nil {
		return "", err
	}
	t.Add("order_hash", posted.Hash)
	t.Add("status", "offered")
	return t.String(), nil
}

// anySlice is a []map[string]any as the []any the field readers take.
func anySlice(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}
