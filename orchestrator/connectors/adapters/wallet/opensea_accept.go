package wallet

import (
	"context"
	"fmt"
	"math/big"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// openseaAccept answers opensea_accept_offer: the best (or the given) offer on an NFT the wallet
// holds, fulfilled through Seaport's basic order (the NFT for the offer's ERC-20, fees paid out
// of the offer by the offerer), refused unless the transaction takes no value, goes to the
// offer's contract on this chain and gives exactly that NFT.
func openseaAccept(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	e, o, err := openOpenSea(ctx, l, args)
	if err != nil {
		return "", err
	}
	nft, err := evmAddress("contract", adapters.Str(args, "contract"))
	if err != nil {
		return "", err
	}
	id, ok := new(big.Int).SetString(adapters.Str(args, "token_id"), 10)
	if !ok || id.Sign() < 0 {
		return "", adapters.Invalid(provider, "token_id is not a decimal token id")
	}
	b, err := e.ethCall(ctx, nft, append(append([]byte{}, selOwnerOf...), u256(id)...))
	if err != nil {
		return "", err
	}
	if len(b) < 32 || common.BytesToAddress(b[:32]) != e.from {
		return "", adapters.Invalid(provider, "the wallet does not own "+nft.Hex()+" #"+id.String()+"; nothing was signed")
	}
	hash, protocol := adapters.Str(args, "order_hash"), seaport16
	if hash == "" {
		var meta struct {
			NFT struct {
				Collection string `json:"collection"`
			} `json:"nft"`
		}
		if err := o.get(ctx, "/api/v2/chain/"+url.PathEscape(e.chain.Name)+"/contract/"+nft.Hex()+"/nfts/"+id.String(), "NFT "+nft.Hex()+" #"+id.String(), &meta); err != nil {
			return "", err
		}
		var best struct {
			OrderHash       string `json:"order_hash"`
			ProtocolAddress string `json:"protocol_address"`
		}
		if err := o.get(ctx, "/api/v2/offers/collection/"+url.PathEscape(meta.NFT.Collection)+"/nfts/"+id.String()+"/best", "an offer on "+nft.Hex()+" #"+id.String(), &best); err != nil {
			return "", err
		}
		if best.OrderHash == "" {
			return "", &adapters.Error{Kind: adapters.KindNotFound, Provider: "OpenSea", Msg: "no offer on " + nft.Hex() + " #" + id.String()}
		}
		hash = best.OrderHash
		if best.ProtocolAddress != "" {
			protocol = best.ProtocolAddress
		}
	}
	var ful fulfillment
	req := map[string]any{"offer": map[string]any{"hash": hash, "chain": e.chain.Name, "protocol_address": protocol}, "fulfiller": map[string]any{"address": e.from.Hex()},
		"consideration": map[string]any{"asset_contract_address": nft.Hex(), "token_id": id.String()}}
	if err := o.post(ctx, "/api/v2/offers/fulfillment_data", "the offer's fulfillment", req, &ful); err != nil {
		return "", err
	}
	refuse := func(why string) error {
		return adapters.Invalid(provider, "OpenSea's offer was refused, nothing was signed: "+why)
	}
	tx := ful.Data.Tx
	if cid, err := anyUint(tx.Chain); err != nil || cid != e.id {
		return "", refuse(fmt.Sprintf("its transaction is for chain %v, not %s (%d)", tx.Chain, e.chain.Name, e.id))
	}
	if !common.IsHexAddress(tx.To) || !strings.EqualFold(tx.To, protocol) {
		return "", refuse("its transaction calls " + adapters.Clip(tx.To, 42) + ", not the offer's contract " + protocol)
	}
	if v, err := anyBig(tx.Value); err != nil || v.Sign() != 0 {
		return "", refuse(fmt.Sprintf("its transaction sends %v wei; accepting an offer sends none", tx.Value))
	}
	if !strings.HasPrefix(tx.Function, "fulfillBasicOrder") {
		return "", refuse("it fulfills through " + adapters.Clip(tx.Function, 40) + "; this build signs Seaport basic orders only")
	}
	p := tx.Input.Parameters
	f := &fields{m: p}
	ct, cid, camt, offerer, offerToken, offerAmount := f.addr("considerationToken"), f.num("considerationIdentifier"), f.num("considerationAmount"), f.addr("offerer"), f.addr("offerToken"), f.num("offerAmount")
	bot := f.num("basicOrderType")
	if f.err != nil {
		return "", refuse("its order parameters are not a basic order: " + f.err.Error())
	}
	if !bot.IsUint64() || bot.Uint64() < 16 || bot.Uint64() > 19 {
		return "", refuse("its basic order is not an ERC-721 for an ERC-20")
	}
	if ct != nft || cid.Cmp(id) != 0 || camt.Cmp(big.NewInt(1)) != 0 {
		return "", refuse("it takes " + ct.Hex() + " #" + cid.String() + ", not " + nft.Hex() + " #" + id.String())
	}
	if offerer == e.from {
		return "", refuse("the offer is the wallet's own")
	}
	params, _, err := basicOrderParams(withNativeConsideration(p))
	if err != nil {
		return "", refuse("its order parameters are not a basic order: " + err.Error())
	}
	params.ConsiderationToken = ct
	fees := new(big.Int)
	for _, r := range params.AdditionalRecipients {
		fees.Add(fees, r.Amount)
	}
	if fees.Cmp(offerAmount) > 0 {
		return "", refuse("its fees exceed the offer")
	}
	tok, err := e.erc20(ctx, offerToken)
	if err != nil {
		return "", err
	}
	data, err := seaportABI.Pack("fulfillBasicOrder_efficient_6GL6yc", params)
	if err != nil {
		return "", refuse("its order parameters do not encode: " + err.Error())
	}
	operator := common.HexToAddress(protocol)
	if params.FulfillerConduitKey != ([32]byte{}) {
		if common.Hash(params.FulfillerConduitKey) != common.HexToHash(openSeaConduitKey) {
			return "", refuse("it moves the NFT through a conduit that is not OpenSea's")
		}
		operator = common.HexToAddress(openSeaConduit)
	}
	proceeds := new(big.Int).Sub(offerAmount, fees)
	in := intent{to: common.HexToAddress(protocol), value: new(big.Int), data: data, about: [][2]string{{"offer", hash}, {"nft", nft.Hex() + " #" + id.String()},
		{"buyer", offerer.Hex()}, {"receive", FormatAmount(proceeds, tok.decimals) + " " + tok.symbol + " (" + FormatAmount(fees, tok.decimals) + " in fees out of " + FormatAmount(offerAmount, tok.decimals) + ")"}}}
	rows, err := e.approveOperator(ctx, nft, operator, dryRun(args))
	if err != nil {
		return "", err
	}
	in.about = append(in.about, rows...)
	in.noSim = len(rows) > 0
	return e.execute(ctx, in, dryRun(args))
}

// withNativeConsideration is the parameters with the consideration token zeroed, so the basic
// order reader (which takes native-coin orders) reads the rest; the caller restores the token.
func withNativeConsideration(p map[string]any) map[string]any {
	out := make(map[string]any, len(p))
	for k, v := range p {
		out[k] = v
	}
	out["considerationToken"] = nativeEVM
	return out
}
