package wallet

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// seaportABIJSON is Seaport 1.6's fulfillBasicOrder_efficient_6GL6yc and cancel.
//
//go:embed seaport_abi.json
var seaportABIJSON string

// seaportABI is the parsed ABI of those two functions.
var seaportABI = func() abi.ABI {
	a, err := abi.JSON(strings.NewReader(seaportABIJSON))
	if err != nil {
		panic("wallet: the embedded Seaport ABI does not parse: " + err.Error())
	}
	return a
}()

// seaport16 is Seaport 1.6's address, where OpenSea's orders live on every chain.
const seaport16 = "0x0000000000000068F116a894984e2DB1123eB395"

// openSea is OpenSea's REST API with the login's key.
type openSea struct {
	http adapters.HTTP
	base string
}

func newOpenSea(l adapters.Login) (openSea, error) {
	base, err := l.Endpoint(provider, EndpointOpenSea)
	if err != nil {
		return openSea{}, err
	}
	key := l.Credential(FieldOpenSeaKey)
	return openSea{http: adapters.HTTP{Provider: "OpenSea", Login: l, Auth: func(h http.Header) { h.Set("X-API-KEY", key) }}, base: base}, nil
}

// openOpenSea opens an OpenSea tool's chain (its id checked against the RPC's) and OpenSea's API.
func openOpenSea(ctx context.Context, l adapters.Login, args map[string]any) (*evm, openSea, error) {
	e, err := openEVM(l, adapters.Str(args, "chain"))
	if err != nil {
		return nil, openSea{}, err
	}
	o, err := newOpenSea(l)
	if err != nil {
		return nil, openSea{}, err
	}
	if err := e.checkChainID(ctx); err != nil {
		return nil, openSea{}, err
	}
	return e, o, nil
}

// fulfillment is OpenSea's answer to a fulfillment request: the transaction that takes a listing
// or an offer.
type fulfillment struct {
	Data struct {
		Tx struct {
			Function string `json:"function"`
			Chain    any    `json:"chain"`
			To       string `json:"to"`
			Value    any    `json:"value"`
			Input    struct {
				Parameters map[string]any `json:"parameters"`
			} `json:"input_data"`
		} `json:"transaction"`
	} `json:"fulfillment_data"`
}

func (o openSea) get(ctx context.Context, path, what string, out any) error {
	body, err := o.http.Do(ctx, adapters.Get(o.base, path, nil, what))
	if err != nil {
		return err
	}
	if err := decodeNumbers(body, out); err != nil {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: "OpenSea", Msg: "answered " + what + " with something that is not the expected JSON"}
	}
	return nil
}

func (o openSea) post(ctx context.Context, path, what string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode the %s request: %w", path, err)
	}
	body, err := o.http.Do(ctx, adapters.Request{Method: http.MethodPost, URL: o.base + path, Body: b, Type: "application/json", What: what})
	if err != nil {
		return err
	}
	if err := decodeNumbers(body, out); err != nil {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: "OpenSea", Msg: "answered " + what + " with something that is not the expected JSON"}
	}
	return nil
}

// listing is an OpenSea listing as its v2 API answers one.
type listing struct {
	OrderHash       string `json:"order_hash"`
	Chain           string `json:"chain"`
	ProtocolAddress string `json:"protocol_address"`
	Price           struct {
		Current struct {
			Currency string      `json:"currency"`
			Decimals json.Number `json:"decimals"`
			Value    string      `json:"value"`
		} `json:"current"`
	} `json:"price"`
}

// openseaBuy answers opensea_buy: the best listing of an NFT or a collection's floor, bought
// with the native coin through Seaport's basic order, refused above max_price or when the
// transaction does not pay exactly the listed price to the listing's contract on this chain.
func openseaBuy(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	e, o, err := openOpenSea(ctx, l, args)
	if err != nil {
		return "", err
	}
	chain := e.chain.Name
	slug, contract, id := adapters.Str(args, "collection"), adapters.Str(args, "contract"), adapters.Str(args, "token_id")
	var best listing
	switch {
	case contract != "" && id != "":
		if _, err := evmAddress("contract", contract); err != nil {
			return "", err
		}
		if slug == "" {
			var nft struct {
				NFT struct {
					Collection string `json:"collection"`
				} `json:"nft"`
			}
			if err := o.get(ctx, "/api/v2/chain/"+url.PathEscape(chain)+"/contract/"+url.PathEscape(contract)+"/nfts/"+url.PathEscape(id), "NFT "+contract+" #"+id, &nft); err != nil {
				return "", err
			}
			slug = nft.NFT.Collection
		}
		if err := o.get(ctx, "/api/v2/listings/collection/"+url.PathEscape(slug)+"/nfts/"+url.PathEscape(id)+"/best", "a listing of "+contract+" #"+id, &best); err != nil {
			return "", err
		}
	case slug != "":
		var page struct {
			Listings []listing `json:"listings"`
		}
		if err := o.get(ctx, "/api/v2/listings/collection/"+url.PathEscape(slug)+"/best?limit=1", "a listing of "+slug, &page); err != nil {
			return "", err
		}
		if len(page.Listings) == 0 {
			return "", &adapters.Error{Kind: adapters.KindNotFound, Provider: "OpenSea", Msg: "collection " + slug + " has no listing to buy"}
		}
		best = page.Listings[0]
	default:
		return "", adapters.Invalid(provider, "opensea_buy takes a collection slug (its floor), or contract and token_id")
	}
	refuse := func(why string) error {
		return adapters.Invalid(provider, "OpenSea's listing was refused, nothing was signed: "+why)
	}
	if best.OrderHash == "" {
		return "", &adapters.Error{Kind: adapters.KindNotFound, Provider: "OpenSea", Msg: "no active listing to buy"}
	}
	cur := best.Price.Current
	if !strings.EqualFold(cur.Currency, e.chain.Symbol) {
		return "", refuse("it is priced in " + adapters.Clip(cur.Currency, 12) + "; this build buys with " + e.chain.Symbol + " only")
	}
	price, err := anyBig(cur.Value)
	if err != nil || price.Sign() <= 0 {
		return "", refuse("its price is not a positive quantity")
	}
	if mp := adapters.Str(args, "max_price"); mp != "" {
		limit, err := ParseAmount(mp, e.chain.Decimals, false)
		if err != nil {
			return "", adapters.Invalid(provider, "max_price: "+err.Error())
		}
		if price.Cmp(limit) > 0 {
			return "", adapters.Invalid(provider, fmt.Sprintf("the best listing costs %s %s, above max_price %s; nothing was signed", FormatAmount(price, e.chain.Decimals), e.chain.Symbol, mp))
		}
	}
	var ful fulfillment
	req := map[string]any{"listing": map[string]any{"hash": best.OrderHash, "chain": chain, "protocol_address": best.ProtocolAddress}, "fulfiller": map[string]any{"address": e.from.Hex()}}
	if err := o.post(ctx, "/api/v2/listings/fulfillment_data", "the listing's fulfillment", req, &ful); err != nil {
		return "", err
	}
	tx := ful.Data.Tx
	if cid, err := anyUint(tx.Chain); err != nil || cid != e.id {
		return "", refuse(fmt.Sprintf("its transaction is for chain %v, not %s (%d)", tx.Chain, chain, e.id))
	}
	if !strings.EqualFold(tx.To, best.ProtocolAddress) || !common.IsHexAddress(tx.To) {
		return "", refuse("its transaction calls " + adapters.Clip(tx.To, 42) + ", not the listing's contract " + adapters.Clip(best.ProtocolAddress, 42))
	}
	value, err := anyBig(tx.Value)
	if err != nil || value.Cmp(price) != 0 {
		return "", refuse(fmt.Sprintf("its transaction sends %v wei, not the listed %s", tx.Value, price))
	}
	if !strings.HasPrefix(tx.Function, "fulfillBasicOrder") {
		return "", refuse("it fulfills through " + adapters.Clip(tx.Function, 40) + "; this build signs Seaport basic orders only")
	}
	params, total, err := basicOrderParams(tx.Input.Parameters)
	if err != nil {
		return "", refuse("its order parameters are not a basic order: " + err.Error())
	}
	if total.Cmp(value) != 0 {
		return "", refuse(fmt.Sprintf("its order pays out %s wei but sends %s", total, value))
	}
	data, err := seaportABI.Pack("fulfillBasicOrder_efficient_6GL6yc", params)
	if err != nil {
		return "", refuse("its order parameters do not encode: " + err.Error())
	}
	in := intent{to: common.HexToAddress(tx.To), value: value, data: data, about: [][2]string{
		{"listing", best.OrderHash}, {"nft", params.OfferToken.Hex() + " #" + params.OfferIdentifier.String()},
		{"seller", params.Offerer.Hex()}, {"price", FormatAmount(price, e.chain.Decimals) + " " + e.chain.Symbol}}}
	return e.execute(ctx, in, dryRun(args))
}

// additionalRecipient is one fee payment of a basic order.
type additionalRecipient struct {
	Amount    *big.Int
	Recipient common.Address
}

// basicOrder is Seaport's BasicOrderParameters.
type basicOrder struct {
	ConsiderationToken                common.Address
	ConsiderationIdentifier           *big.Int
	ConsiderationAmount               *big.Int
	Offerer                           common.Address
	Zone                              common.Address
	OfferToken                        common.Address
	OfferIdentifier                   *big.Int
	OfferAmount                       *big.Int
	BasicOrderType                    uint8
	StartTime                         *big.Int
	EndTime                           *big.Int
	ZoneHash                          [32]byte
	Salt                              *big.Int
	OffererConduitKey                 [32]byte
	FulfillerConduitKey               [32]byte
	TotalOriginalAdditionalRecipients *big.Int
	AdditionalRecipients              []additionalRecipient
	Signature                         []byte
}

// fields reads typed values out of a JSON object, keeping the first error.
type fields struct {
	m   map[string]any
	err error
}

func (f *fields) fail(name, what string) {
	if f.err == nil {
		f.err = fmt.Errorf("%s is not %s", name, what)
	}
}

func (f *fields) addr(name string) common.Address {
	s, _ := f.m[name].(string)
	if !common.IsHexAddress(s) {
		f.fail(name, "an address")
	}
	return common.HexToAddress(s)
}

func (f *fields) num(name string) *big.Int {
	n, err := anyBig(f.m[name])
	if err != nil {
		f.fail(name, "a number")
		return new(big.Int)
	}
	return n
}

func (f *fields) b32(name string) [32]byte {
	s, _ := f.m[name].(string)
	b, err := hexutil.Decode(s)
	if err != nil || len(b) != 32 {
		f.fail(name, "32 bytes of hex")
	}
	var out [32]byte
	copy(out[:], b)
	return out
}

func (f *fields) bytes(name string) []byte {
	s, _ := f.m[name].(string)
	b, err := hexutil.Decode(s)
	if err != nil && s != "0x" {
		f.fail(name, "hex bytes")
	}
	return b
}

// basicOrderParams reads OpenSea's basic order parameters and what they pay out in all.
func basicOrderParams(m map[string]any) (basicOrder, *big.Int, error) {
	f := &fields{m: m}
	p := basicOrder{ConsiderationToken: f.addr("considerationToken"), ConsiderationIdentifier: f.num("considerationIdentifier"),
		ConsiderationAmount: f.num("considerationAmount"), Offerer: f.addr("offerer"), Zone: f.addr("zone"), OfferToken: f.addr("offerToken"),
		OfferIdentifier: f.num("offerIdentifier"), OfferAmount: f.num("offerAmount"), StartTime: f.num("startTime"), EndTime: f.num("endTime"),
		ZoneHash: f.b32("zoneHash"), Salt: f.num("salt"), OffererConduitKey: f.b32("offererConduitKey"), FulfillerConduitKey: f.b32("fulfillerConduitKey"),
		TotalOriginalAdditionalRecipients: f.num("totalOriginalAdditionalRecipients"), Signature: f.bytes("signature")}
	t := f.num("basicOrderType")
	if !t.IsUint64() || t.Uint64() > 255 {
		f.fail("basicOrderType", "a small number")
	}
	p.BasicOrderType = uint8(t.Uint64())
	if p.ConsiderationToken != (common.Address{}) {
		f.fail("considerationToken", "the native coin")
	}
	total := new(big.Int).Set(p.ConsiderationAmount)
	recips, _ := m["additionalRecipients"].([]any)
	for _, r := range recips {
		rm, _ := r.(map[string]any)
		rf := &fields{m: rm}
		ar := additionalRecipient{Amount: rf.num("amount"), Recipient: rf.addr("recipient")}
		if rf.err != nil && f.err == nil {
			f.err = rf.err
		}
		total.Add(total, ar.Amount)
		p.AdditionalRecipients = append(p.AdditionalRecipients, ar)
	}
	return p, total, f.err
}

// offerItem and considerationItem are Seaport's order items.
type offerItem struct {
	ItemType             uint8
	Token                common.Address
	IdentifierOrCriteria *big.Int
	StartAmount          *big.Int
	EndAmount            *big.Int
}

type considerationItem struct {
	ItemType             uint8
	Token                common.Address
	IdentifierOrCriteria *big.Int
	StartAmount          *big.Int
	EndAmount            *big.Int
	Recipient            common.Address
}

// orderComponents is Seaport's OrderComponents, what cancel takes.
type orderComponents struct {
	Offerer       common.Address
	Zone          common.Address
	Offer         []offerItem
	Consideration []considerationItem
	OrderType     uint8
	StartTime     *big.Int
	EndTime       *big.Int
	ZoneHash      [32]byte
	Salt          *big.Int
	ConduitKey    [32]byte
	Counter       *big.Int
}

// openseaCancel answers opensea_cancel_order: the order read from OpenSea, refused unless the
// wallet made it, then cancelled onchain through its Seaport contract.
func openseaCancel(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	e, err := openEVM(l, adapters.Str(args, "chain"))
	if err != nil {
		return "", err
	}
	o, err := newOpenSea(l)
	if err != nil {
		return "", err
	}
	hash := adapters.Str(args, "order_hash")
	if b, err := hexutil.Decode(hash); err != nil || len(b) != 32 {
		return "", adapters.Invalid(provider, "order_hash is not a 0x hash of 32 bytes")
	}
	var out struct {
		Order struct {
			Hash            string `json:"order_hash"`
			ProtocolAddress string `json:"protocol_address"`
			Data            struct {
				Parameters map[string]any `json:"parameters"`
			} `json:"protocol_data"`
		} `json:"order"`
	}
	if err := o.get(ctx, "/api/v2/orders/chain/"+url.PathEscape(e.chain.Name)+"/protocol/"+seaport16+"/"+url.PathEscape(hash), "order "+hash, &out); err != nil {
		return "", err
	}
	refuse := func(why string) error {
		return adapters.Invalid(provider, "the order was not cancelled, nothing was signed: "+why)
	}
	if !common.IsHexAddress(out.Order.ProtocolAddress) {
		return "", refuse("OpenSea names no contract for it")
	}
	oc, err := orderParams(out.Order.Data.Parameters)
	if err != nil {
		return "", refuse("its parameters are not a Seaport order: " + err.Error())
	}
	if oc.Offerer != e.from {
		return "", refuse("it was made by " + oc.Offerer.Hex() + ", not the wallet " + e.from.Hex())
	}
	data, err := seaportABI.Pack("cancel", []orderComponents{oc})
	if err != nil {
		return "", refuse("its parameters do not encode: " + err.Error())
	}
	in := intent{to: common.HexToAddress(out.Order.ProtocolAddress), value: new(big.Int), data: data, about: [][2]string{{"order", hash}}}
	return e.execute(ctx, in, dryRun(args))
}

// orderParams reads OpenSea's Seaport order parameters (with their counter).
func orderParams(m map[string]any) (orderComponents, error) {
	f := &fields{m: m}
	small := func(ff *fields, name string) uint8 {
		n := ff.num(name)
		if !n.IsUint64() || n.Uint64() > 255 {
			ff.fail(name, "a small number")
		}
		return uint8(n.Uint64())
	}
	oc := orderComponents{Offerer: f.addr("offerer"), Zone: f.addr("zone"), OrderType: small(f, "orderType"), StartTime: f.num("startTime"), EndTime: f.num("endTime"),
		ZoneHash: f.b32("zoneHash"), Salt: f.num("salt"), ConduitKey: f.b32("conduitKey"), Counter: f.num("counter")}
	items := func(name string) []map[string]any {
		raw, _ := m[name].([]any)
		var out []map[string]any
		for _, r := range raw {
			rm, _ := r.(map[string]any)
			out = append(out, rm)
		}
		return out
	}
	for _, it := range items("offer") {
		g := &fields{m: it}
		oc.Offer = append(oc.Offer, offerItem{ItemType: small(g, "itemType"), Token: g.addr("token"), IdentifierOrCriteria: g.num("identifierOrCriteria"), StartAmount: g.num("startAmount"), EndAmount: g.num("endAmount")})
		if g.err != nil && f.err == nil {
			f.err = g.err
		}
	}
	for _, it := range items("consideration") {
		g := &fields{m: it}
		oc.Consideration = append(oc.Consideration, considerationItem{ItemType: small(g, "itemType"), Token: g.addr("token"), IdentifierOrCriteria: g.num("identifierOrCriteria"),
			StartAmount: g.num("startAmount"), EndAmount: g.num("endAmount"), Recipient: g.addr("recipient")})
		if g.err != nil && f.err == nil {
			f.err = g.err
		}
	}
	return oc, f.err
}
