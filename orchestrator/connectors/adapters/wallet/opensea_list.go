package wallet

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// OpenSea's conduit on every chain: the key its orders name and the operator it transfers with.
const (
	openSeaConduitKey = "0x0000007b02230091a7ed01230072f7006a004d60a8d4e71d599b8104250f0000"
	openSeaConduit    = "0x1E0049783F008A0085193E00003D00cd54003c71"
)

// Selectors of the ERC-721 and Seaport reads a listing needs.
var (
	selOwnerOf           = []byte{0x63, 0x52, 0x21, 0x1e}
	selIsApprovedForAll  = []byte{0xe9, 0x85, 0xe9, 0xc5}
	selSetApprovalForAll = []byte{0xa2, 0x2c, 0xb4, 0x65}
	selGetCounter        = []byte{0xf0, 0x7e, 0xc3, 0x73}
)

// Seaport's EIP-712 type hashes.
var (
	offerTypeHash         = crypto.Keccak256([]byte("OfferItem(uint8 itemType,address token,uint256 identifierOrCriteria,uint256 startAmount,uint256 endAmount)"))
	considerationTypeHash = crypto.Keccak256([]byte("ConsiderationItem(uint8 itemType,address token,uint256 identifierOrCriteria,uint256 startAmount,uint256 endAmount,address recipient)"))
	orderTypeHash         = crypto.Keccak256([]byte("OrderComponents(address offerer,address zone,OfferItem[] offer,ConsiderationItem[] consideration,uint8 orderType,uint256 startTime,uint256 endTime,bytes32 zoneHash,uint256 salt,bytes32 conduitKey,uint256 counter)" +
		"ConsiderationItem(uint8 itemType,address token,uint256 identifierOrCriteria,uint256 startAmount,uint256 endAmount,address recipient)" +
		"OfferItem(uint8 itemType,address token,uint256 identifierOrCriteria,uint256 startAmount,uint256 endAmount)"))
	domainTypeHash = crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
)

// u256 is a 32-byte word of n.
func u256(n *big.Int) []byte { return common.LeftPadBytes(n.Bytes(), 32) }

// orderDigest is Seaport 1.6's EIP-712 digest of an order on a chain.
func orderDigest(o orderComponents, chainID uint64, seaport common.Address) []byte {
	var offers, cons []byte
	for _, it := range o.Offer {
		offers = append(offers, crypto.Keccak256(offerTypeHash, u256(big.NewInt(int64(it.ItemType))), word(it.Token), u256(it.IdentifierOrCriteria), u256(it.StartAmount), u256(it.EndAmount))...)
	}
	for _, it := range o.Consideration {
		cons = append(cons, crypto.Keccak256(considerationTypeHash, u256(big.NewInt(int64(it.ItemType))), word(it.Token), u256(it.IdentifierOrCriteria), u256(it.StartAmount), u256(it.EndAmount), word(it.Recipient))...)
	}
	st := crypto.Keccak256(orderTypeHash, word(o.Offerer), word(o.Zone), crypto.Keccak256(offers), crypto.Keccak256(cons), u256(big.NewInt(int64(o.OrderType))),
		u256(o.StartTime), u256(o.EndTime), o.ZoneHash[:], u256(o.Salt), o.ConduitKey[:], u256(o.Counter))
	dom := crypto.Keccak256(domainTypeHash, crypto.Keccak256([]byte("Seaport")), crypto.Keccak256([]byte("1.6")), u256(new(big.Int).SetUint64(chainID)), word(seaport))
	return crypto.Keccak256([]byte{0x19, 0x01}, dom, st)
}

// json is an order as OpenSea's API takes it: numbers as decimal strings.
func (o orderComponents) json() map[string]any {
	var offer, cons []any
	for _, it := range o.Offer {
		offer = append(offer, map[string]any{"itemType": it.ItemType, "token": it.Token.Hex(), "identifierOrCriteria": it.IdentifierOrCriteria.String(),
			"startAmount": it.StartAmount.String(), "endAmount": it.EndAmount.String()})
	}
	for _, it := range o.Consideration {
		cons = append(cons, map[string]any{"itemType": it.ItemType, "token": it.Token.Hex(), "identifierOrCriteria": it.IdentifierOrCriteria.String(),
			"startAmount": it.StartAmount.String(), "endAmount": it.EndAmount.String(), "recipient": it.Recipient.Hex()})
	}
	return map[string]any{"offerer": o.Offerer.Hex(), "zone": o.Zone.Hex(), "offer": offer, "consideration": cons, "orderType": o.OrderType,
		"startTime": o.StartTime.String(), "endTime": o.EndTime.String(), "zoneHash": common.Hash(o.ZoneHash).Hex(), "salt": o.Salt.String(),
		"conduitKey": common.Hash(o.ConduitKey).Hex(), "counter": o.Counter.String(), "totalOriginalConsiderationItems": len(o.Consideration)}
}

// fee is one collection fee in basis points.
type fee struct {
	bps       int64
	recipient common.Address
}

// requiredFees reads a collection's required fees (percentages, kept exact) from OpenSea.
func (o openSea) requiredFees(ctx context.Context, slug string) ([]fee, error) {
	var col struct {
		Fees []struct {
			Fee       json.Number `json:"fee"`
			Recipient string      `json:"recipient"`
			Required  bool        `json:"required"`
		} `json:"fees"`
	}
	if err := o.get(ctx, "/api/v2/collections/"+url.PathEscape(slug), "collection "+slug, &col); err != nil {
		return nil, err
	}
	var out []fee
	for _, f := range col.Fees {
		if !f.Required {
			continue
		}
		bps, err := ParseAmount(f.Fee.String(), 2, true)
		if err != nil || !bps.IsInt64() || bps.Int64() > 10000 || !common.IsHexAddress(f.Recipient) {
			return nil, &adapters.Error{Kind: adapters.KindMalformed, Provider: "OpenSea", Msg: "answered a collection fee that is not a percentage to an address"}
		}
		out = append(out, fee{bps: bps.Int64(), recipient: common.HexToAddress(f.Recipient)})
	}
	return out, nil
}

// randomSalt is an order's salt.
func randomSalt() (*big.Int, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("order salt: %w", err)
	}
	return new(big.Int).SetBytes(b), nil
}

// signOrder signs an order's EIP-712 digest with the wallet's key (v as 27 or 28).
func (e *evm) signOrder(o orderComponents) (string, error) {
	sig, err := crypto.Sign(orderDigest(o, e.id, common.HexToAddress(seaport16)), e.key)
	if err != nil {
		return "", fmt.Errorf("sign the order: %w", err)
	}
	sig[64] += 27
	return "0x" + common.Bytes2Hex(sig), nil
}

// approveConduit lets OpenSea's conduit move the collection's NFTs when it may not yet.
func (e *evm) approveConduit(ctx context.Context, nft common.Address, dry bool) ([][2]string, error) {
	return e.approveOperator(ctx, nft, common.HexToAddress(openSeaConduit), dry)
}

// approveOperator lets an operator (a conduit, or Seaport itself) move the collection's NFTs
// when it may not yet.
func (e *evm) approveOperator(ctx context.Context, nft, conduit common.Address, dry bool) ([][2]string, error) {
	b, err := e.ethCall(ctx, nft, append(append(append([]byte{}, selIsApprovedForAll...), word(e.from)...), word(conduit)...))
	if err != nil {
		return nil, err
	}
	if len(b) >= 32 && new(big.Int).SetBytes(b[:32]).Sign() != 0 {
		return nil, nil
	}
	rows := [][2]string{{"approval", "setApprovalForAll(" + conduit.Hex() + ", true) on " + nft.Hex()}}
	if dry {
		return rows, nil
	}
	data := append(append(append([]byte{}, selSetApprovalForAll...), word(conduit)...), u256(big.NewInt(1))...)
	out, err := e.execute(ctx, intent{to: nft, value: new(big.Int), data: data}, false)
	if err != nil {
		return nil, fmt.Errorf("the approval of %s failed, so nothing else was signed: %w", conduit.Hex(), err)
	}
	if resultField(out, "status") != "success" {
		return nil, adapters.Invalid(provider, "the approval of "+conduit.Hex()+" is "+resultField(out, "status")+"; nothing else was signed")
	}
	return append(rows, [2]string{"approval_hash", resultField(out, "hash")}), nil
}

// counter is the wallet's Seaport counter.
func (e *evm) counter(ctx context.Context) (*big.Int, error) {
	b, err := e.ethCall(ctx, common.HexToAddress(seaport16), append(append([]byte{}, selGetCounter...), word(e.from)...))
	if err != nil {
		return nil, err
	}
	if len(b) < 32 {
		return nil, adapters.Invalid(provider, "Seaport on "+e.chain.Name+" answered no counter")
	}
	return new(big.Int).SetBytes(b[:32]), nil
}

// openseaList answers opensea_list: an NFT the wallet owns listed for the native coin, the
// collection's required fees taken from the price, the order signed (EIP-712) and posted.
func openseaList(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	e, o, err := openOpenSea(ctx, l, args)
	if err != nil {
		return "", err
	}
	if c := adapters.StrOr(args, "currency", e.chain.Symbol); !strings.EqualFold(c, e.chain.Symbol) {
		return "", adapters.Invalid(provider, "this build lists for "+e.chain.Symbol+" only")
	}
	nft, err := evmAddress("contract", adapters.Str(args, "contract"))
	if err != nil {
		return "", err
	}
	id, ok := new(big.Int).SetString(adapters.Str(args, "token_id"), 10)
	if !ok || id.Sign() < 0 {
		return "", adapters.Invalid(provider, "token_id is not a decimal token id")
	}
	price, err := ParseAmount(adapters.Str(args, "price"), e.chain.Decimals, false)
	if err != nil {
		return "", adapters.Invalid(provider, "price: "+err.Error())
	}
	hours, ok := adapters.Int(args, "expires_in_hours")
	if !ok || hours < 1 || hours > 4320 {
		hours = 168
	}
	b, err := e.ethCall(ctx, nft, append(append([]byte{}, selOwnerOf...), u256(id)...))
	if err != nil {
		return "", err
	}
	if len(b) < 32 || common.BytesToAddress(b[:32]) != e.from {
		return "", adapters.Invalid(provider, "the wallet does not own "+nft.Hex()+" #"+id.String()+"; nothing was signed")
	}
	var meta struct {
		NFT struct {
			Collection string `json:"collection"`
		} `json:"nft"`
	}
	if err := o.get(ctx, "/api/v2/chain/"+url.PathEscape(e.chain.Name)+"/contract/"+nft.Hex()+"/nfts/"+id.String(), "NFT "+nft.Hex()+" #"+id.String(), &meta); err != nil {
		return "", err
	}
	fees, err := o.requiredFees(ctx, meta.NFT.Collection)
	if err != nil {
		return "", err
	}
	counter, err := e.counter(ctx)
	if err != nil {
		return "", err
	}
	salt, err := randomSalt()
	if err != nil {
		return "", err
	}
	now := l.Clock().Unix()
	seller := new(big.Int).Set(price)
	var cons []considerationItem
	var feeRows [][2]string
	for _, f := range fees {
		amt := new(big.Int).Div(new(big.Int).Mul(price, big.NewInt(f.bps)), big.NewInt(10000))
		seller.Sub(seller, amt)
		cons = append(cons, considerationItem{Token: common.Address{}, IdentifierOrCriteria: new(big.Int), StartAmount: amt, EndAmount: amt, Recipient: f.recipient})
		feeRows = append(feeRows, [2]string{"fee", fmt.Sprintf("%s %s to %s", FormatAmount(amt, e.chain.Decimals), e.chain.Symbol, f.recipient.Hex())})
	}
	if seller.Sign() <= 0 {
		return "", adapters.Invalid(provider, "the collection's fees take the whole price; nothing was signed")
	}
	cons = append([]considerationItem{{Token: common.Address{}, IdentifierOrCriteria: new(big.Int), StartAmount: seller, EndAmount: seller, Recipient: e.from}}, cons...)
	var conduitKey [32]byte
	copy(conduitKey[:], common.FromHex(openSeaConduitKey))
	order := orderComponents{Offerer: e.from, Offer: []offerItem{{ItemType: 2, Token: nft, IdentifierOrCriteria: id, StartAmount: big.NewInt(1), EndAmount: big.NewInt(1)}},
		Consideration: cons, OrderType: 0, StartTime: big.NewInt(now), EndTime: big.NewInt(now + int64(hours)*3600), Salt: salt, ConduitKey: conduitKey, Counter: counter}
	t := adapters.NewTable("field", "value")
	t.Add("chain", fmt.Sprintf("%s (chain id %d)", e.chain.Name, e.id))
	t.Add("nft", nft.Hex()+" #"+id.String())
	t.Add("collection", meta.NFT.Collection)
	t.Add("price", FormatAmount(price, e.chain.Decimals)+" "+e.chain.Symbol)
	for _, r := range feeRows {
		t.Add(r[0], r[1])
	}
	t.Add("seller_receives", FormatAmount(seller, e.chain.Decimals)+" "+e.chain.Symbol)
	t.Add("expires", adapters.Unix(now+int64(hours)*3600))
	rows, err := e.approveConduit(ctx, nft, dryRun(args))
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		t.Add(r[0], r[1])
	}
	if dryRun(args) {
		t.Add("status", "dry_run: the order above would be signed (EIP-712) and posted; nothing signed or sent")
		return t.String(), nil
	}
	sig, err := e.signOrder(order)
	if err != nil {
		return "", err
	}
	var posted struct {
		Order struct {
			Hash string `json:"order_hash"`
		} `json:"order"`
	}
	body := map[string]any{"parameters": order.json(), "signature": sig, "protocol_address": seaport16}
	if err := o.post(ctx, "/api/v2/orders/"+url.PathEscape(e.chain.Name)+"/seaport/listings", "the listing", body, &posted); err != nil {
		return "", err
	}
	t.Add("order_hash", posted.Order.Hash)
	t.Add("status", "listed")
	return t.String(), nil
}
