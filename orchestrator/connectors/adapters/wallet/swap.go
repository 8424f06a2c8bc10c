package wallet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// EndpointLiFi names LiFi's API in the catalog.
const EndpointLiFi = "lifi"

// lifiChains are the EVM chains swap routes through LiFi.
var lifiChains = map[string]bool{"ethereum": true, "polygon": true, "base": true, "arbitrum": true, "bsc": true, "optimism": true, "hyperevm": true, "robinhood": true}

// nativeEVM is the address the swap APIs give the native coin.
const nativeEVM = "0x0000000000000000000000000000000000000000"

// Selectors of approvals.
var (
	selAllowance = []byte{0xdd, 0x62, 0xed, 0x3e}
	selApprove   = []byte{0x09, 0x5e, 0xa7, 0xb3}
)

// asset is a swap side: the native coin or an ERC-20.
type asset struct {
	native   bool
	addr     common.Address
	decimals int
	symbol   string
}

// apiAddr is the address the swap APIs name the asset by.
func (a asset) apiAddr() string {
	if a.native {
		return nativeEVM
	}
	return a.addr.Hex()
}

// openSwap opens an EVM swap's chain (its id checked against the RPC's) and reads its two assets
// and the exact amount of from_token it spends.
func openSwap(ctx context.Context, l adapters.Login, chain string, args map[string]any) (e *evm, from, to asset, amt *big.Int, err error) {
	if e, err = openEVM(l, chain); err != nil {
		return nil, asset{}, asset{}, nil, err
	}
	if err = e.checkChainID(ctx); err != nil {
		return nil, asset{}, asset{}, nil, err
	}
	if from, err = e.asset(ctx, "from_token", adapters.Str(args, "from_token")); err != nil {
		return nil, asset{}, asset{}, nil, err
	}
	if to, err = e.asset(ctx, "to_token", adapters.Str(args, "to_token")); err != nil {
		return nil, asset{}, asset{}, nil, err
	}
	if amt, err = ParseAmount(adapters.Str(args, "amount"), from.decimals, false); err != nil {
		return nil, asset{}, asset{}, nil, adapters.Invalid(provider, err.Error())
	}
	return e, from, to, amt, nil
}

// asset reads a token argument: the chain's native symbol, "native", the zero address or a
// token contract.
func (e *evm) asset(ctx context.Context, arg, s string) (asset, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "native") || strings.EqualFold(s, e.chain.Symbol) || strings.EqualFold(s, nativeEVM) || strings.EqualFold(s, "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee") {
		return asset{native: true, decimals: e.chain.Decimals, symbol: e.chain.Symbol}, nil
	}
	addr, err := evmAddress(arg, s)
	if err != nil {
		return asset{}, adapters.Invalid(provider, arg+" is not a token contract address or "+e.chain.Symbol)
	}
	tok, err := e.erc20(ctx, addr)
	if err != nil {
		return asset{}, err
	}
	return asset{addr: addr, decimals: tok.decimals, symbol: tok.symbol}, nil
}

// slippage is basis points as the decimal fraction the APIs take ("0.005" for 50).
func slippage(args map[string]any) (int, string) {
	bps, ok := adapters.Int(args, "slippage_bps")
	if !ok || bps < 1 || bps > 1000 {
		bps = 50
	}
	f := strings.TrimRight(fmt.Sprintf("%d.%04d", bps/10000, bps%10000), "0")
	return bps, f
}

// quoteTx is a transaction a swap API asks the wallet to sign.
type quoteTx struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Data    string `json:"data"`
	Value   any    `json:"value"`
	ChainID any    `json:"chainId"`
}

// checked turns a quote's transaction into an intent after refusing one that targets another
// chain, spends from another address, or sends value the request did not state.
func (e *evm) checked(api string, q quoteTx, wantValue *big.Int) (intent, error) {
	refuse := func(why string) error {
		return adapters.Invalid(provider, api+"'s quote was refused, nothing was signed: "+why)
	}
	id, err := anyUint(q.ChainID)
	if err != nil || id != e.id {
		return intent{}, refuse(fmt.Sprintf("its transaction is for chain id %v, not %s (%d)", q.ChainID, e.chain.Name, e.id))
	}
	if !strings.EqualFold(strings.TrimSpace(q.From), e.from.Hex()) {
		return intent{}, refuse("its transaction spends from " + adapters.Clip(q.From, 42) + ", not the wallet " + e.from.Hex())
	}
	to, err := evmAddress("the quote's to", q.To)
	if err != nil {
		return intent{}, refuse("its transaction has no valid target address")
	}
	data, err := hexutil.Decode(q.Data)
	if err != nil || len(data) < 4 {
		return intent{}, refuse("its transaction's calldata is not hex")
	}
	v, err := anyBig(q.Value)
	if err != nil {
		return intent{}, refuse("its transaction's value is not a quantity")
	}
	if v.Cmp(wantValue) != 0 {
		return intent{}, refuse(fmt.Sprintf("its transaction sends %s %s, but the swap states %s", FormatAmount(v, e.chain.Decimals), e.chain.Symbol, FormatAmount(wantValue, e.chain.Decimals)))
	}
	return intent{to: to, value: v, data: data}, nil
}

// anyUint reads a number or a decimal or 0x string.
func anyUint(v any) (uint64, error) {
	n, err := anyBig(v)
	if err != nil || !n.IsUint64() {
		return 0, fmt.Errorf("not a uint64: %v", v)
	}
	return n.Uint64(), nil
}

// anyBig reads a JSON number, a decimal string or a 0x quantity exactly ("" and null are 0).
func anyBig(v any) (*big.Int, error) {
	switch x := v.(type) {
	case nil:
		return new(big.Int), nil
	case json.Number:
		return anyBig(string(x))
	case int:
		if x < 0 {
			return nil, fmt.Errorf("negative: %d", x)
		}
		return big.NewInt(int64(x)), nil
	case float64:
		if x < 0 || x != float64(int64(x)) {
			return nil, fmt.Errorf("not a whole number: %v", x)
		}
		return big.NewInt(int64(x)), nil
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return new(big.Int), nil
		}
		if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
			if s == "0x" || s == "0x0" {
				return new(big.Int), nil
			}
			n, ok := new(big.Int).SetString(s[2:], 16)
			if !ok || n.Sign() < 0 {
				return nil, fmt.Errorf("not a quantity: %s", s)
			}
			return n, nil
		}
		n, ok := new(big.Int).SetString(s, 10)
		if !ok || n.Sign() < 0 {
			return nil, fmt.Errorf("not a quantity: %s", s)
		}
		return n, nil
	}
	return nil, fmt.Errorf("not a quantity: %v", v)
}

// approveFirst sends approve(spender, amount) — the exact amount, never unlimited — when the
// wallet's allowance is short, returning the rows that describe it and whether the swap must wait
// for it (a dry run only describes it).
func (e *evm) approveFirst(ctx context.Context, tok asset, spender common.Address, amount *big.Int, dry bool) ([][2]string, bool, error) {
	if tok.native {
		return nil, false, nil
	}
	b, err := e.ethCall(ctx, tok.addr, append(append(append([]byte{}, selAllowance...), word(e.from)...), word(spender)...))
	if err != nil {
		return nil, false, err
	}
	if len(b) >= 32 && new(big.Int).SetBytes(b[:32]).Cmp(amount) >= 0 {
		return nil, false, nil
	}
	data := append(append(append([]byte{}, selApprove...), word(spender)...), common.LeftPadBytes(amount.Bytes(), 32)...)
	rows := [][2]string{{"approval", fmt.Sprintf("approve %s %s to %s", FormatAmount(amount, tok.decimals), tok.symbol, spender.Hex())}}
	if dry {
		return rows, true, nil
	}
	out, err := e.execute(ctx, intent{to: tok.addr, value: new(big.Int), data: data}, false)
	if err != nil {
		return nil, false, fmt.Errorf("the approval before the swap failed, so the swap was not sent: %w", err)
	}
	status := resultField(out, "status")
	if status != "success" {
		return nil, false, adapters.Invalid(provider, "the approval "+resultField(out, "hash")+" is "+status+"; the swap was not sent")
	}
	return append(rows, [2]string{"approval_hash", resultField(out, "hash")}), false, nil
}

// resultField reads one field of a key/value result.
func resultField(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == name {
			return v
		}
	}
	return ""
}

// swap answers swap: Jupiter on solana, LiFi on its EVM chains.
func swap(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	c, err := chainOf(adapters.Str(args, "chain"))
	if err != nil {
		return "", err
	}
	if c.Solana {
		return jupiterSwap(ctx, l, args)
	}
	if !lifiChains[c.Name] {
		return "", adapters.Invalid(provider, "swap runs LiFi on ethereum, polygon, base, arbitrum, bsc, optimism, hyperevm and robinhood, and Jupiter on solana; on "+c.Name+" use uniswap_swap")
	}
	e, from, to, amt, err := openSwap(ctx, l, c.Name, args)
	if err != nil {
		return "", err
	}
	base, err := l.Endpoint(provider, EndpointLiFi)
	if err != nil {
		return "", err
	}
	bps, slip := slippage(args)
	id := strconv.FormatUint(e.id, 10)
	q := url.Values{"fromChain": {id}, "toChain": {id}, "fromToken": {from.apiAddr()}, "toToken": {to.apiAddr()},
		"fromAmount": {amt.String()}, "fromAddress": {e.from.Hex()}, "toAddress": {e.from.Hex()}, "slippage": {slip}}
	var quote struct {
		Tool   string `json:"tool"`
		Action struct {
			FromChainID any    `json:"fromChainId"`
			ToChainID   any    `json:"toChainId"`
			FromAmount  string `json:"fromAmount"`
			FromAddress string `json:"fromAddress"`
			ToAddress   string `json:"toAddress"`
			FromToken   struct {
				Address string `json:"address"`
			} `json:"fromToken"`
		} `json:"action"`
		Estimate struct {
			ToAmount        string `json:"toAmount"`
			ToAmountMin     string `json:"toAmountMin"`
			ApprovalAddress string `json:"approvalAddress"`
		} `json:"estimate"`
		Tx *quoteTx `json:"transactionRequest"`
	}
	lifi := adapters.HTTP{Provider: "LiFi", Login: l}
	body, err := lifi.Do(ctx, adapters.Get(base, "/quote", q, "a route for this swap"))
	if err != nil {
		return "", err
	}
	if err := decodeNumbers(body, &quote); err != nil {
		return "", &adapters.Error{Kind: adapters.KindMalformed, Provider: "LiFi", Msg: "answered a quote that is not the expected JSON"}
	}
	refuse := func(why string) error {
		return adapters.Invalid(provider, "LiFi's quote was refused, nothing was signed: "+why)
	}
	if quote.Tx == nil {
		return "", refuse("it carries no transaction")
	}
	if fid, err := anyUint(quote.Action.FromChainID); err != nil || fid != e.id {
		return "", refuse("it swaps from chain id " + fmt.Sprint(quote.Action.FromChainID) + ", not " + id)
	}
	if tid, err := anyUint(quote.Action.ToChainID); err != nil || tid != e.id {
		return "", refuse("it bridges to chain id " + fmt.Sprint(quote.Action.ToChainID) + "; swap stays on " + c.Name)
	}
	if quote.Action.FromAmount != amt.String() || !strings.EqualFold(quote.Action.FromToken.Address, from.apiAddr()) {
		return "", refuse("it spends " + adapters.Clip(quote.Action.FromAmount, 80) + " of " + adapters.Clip(quote.Action.FromToken.Address, 42) + ", not the stated " + amt.String() + " of " + from.apiAddr())
	}
	if !strings.EqualFold(quote.Action.FromAddress, e.from.Hex()) || (quote.Action.ToAddress != "" && !strings.EqualFold(quote.Action.ToAddress, e.from.Hex())) {
		return "", refuse("it moves funds from or to another address than the wallet")
	}
	value := new(big.Int)
	if from.native {
		value = amt
	}
	in, err := e.checked("LiFi", *quote.Tx, value)
	if err != nil {
		return "", err
	}
	toAmt, _ := anyBig(quote.Estimate.ToAmount)
	minAmt, _ := anyBig(quote.Estimate.ToAmountMin)
	in.about = [][2]string{{"route", "LiFi " + adapters.Clip(quote.Tool, 40)},
		{"sell", FormatAmount(amt, from.decimals) + " " + from.symbol},
		{"buy_estimate", FormatAmount(toAmt, to.decimals) + " " + to.symbol},
		{"buy_minimum", FormatAmount(minAmt, to.decimals) + " " + to.symbol + fmt.Sprintf(" (slippage %d bps)", bps)}}
	if !from.native && quote.Estimate.ApprovalAddress != "" {
		spender, err := evmAddress("approvalAddress", quote.Estimate.ApprovalAddress)
		if err != nil || spender != in.to {
			return "", refuse("it asks to approve " + adapters.Clip(quote.Estimate.ApprovalAddress, 42) + ", which is not the contract its transaction calls")
		}
		rows, wait, err := e.approveFirst(ctx, from, spender, amt, dryRun(args))
		if err != nil {
			return "", err
		}
		in.about, in.noSim = append(in.about, rows...), wait
	}
	return e.execute(ctx, in, dryRun(args))
}

// decodeNumbers decodes JSON keeping numbers exact (json.Number).
func decodeNumbers(body []byte, out any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	return d.Decode(out)
}
