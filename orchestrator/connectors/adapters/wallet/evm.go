package wallet

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// ReceiptWait is how long a send waits for its receipt before answering pending.
var ReceiptWait = 60 * time.Second

// receiptPoll is the pause between two receipt requests.
const receiptPoll = 250 * time.Millisecond

// The ERC-20 selectors the wallet uses.
var (
	selDecimals  = []byte{0x31, 0x3c, 0xe5, 0x67}
	selSymbol    = []byte{0x95, 0xd8, 0x9b, 0x41}
	selBalanceOf = []byte{0x70, 0xa0, 0x82, 0x31}
	selTransfer  = []byte{0xa9, 0x05, 0x9c, 0xbb}
	selError     = []byte{0x08, 0xc3, 0x79, 0xa0} // Error(string)
	selPanic     = []byte{0x4e, 0x48, 0x7b, 0x71} // Panic(uint256)
)

// quantity reads a JSON-RPC hex quantity.
func quantity(s string) (*big.Int, error) { return hexutil.DecodeBig(s) }

// evm is one EVM call's chain, RPC and, for the tools that sign, the key.
type evm struct {
	chain Chain
	rpc   *rpc
	key   *ecdsa.PrivateKey
	from  common.Address
	id    uint64 // eth_chainId, checked
}

// openEVM opens a chain's RPC with the wallet's key (decrypted for this call only).
func openEVM(l adapters.Login, chainName string) (*evm, error) {
	c, err := chainOf(chainName)
	if err != nil {
		return nil, err
	}
	if c.Solana {
		return nil, adapters.Invalid(provider, "this tool takes an EVM chain: "+chainNames(true))
	}
	key, err := ParseEVMKey(l.Credential(FieldEVMKey))
	if err != nil {
		return nil, err
	}
	r, err := newRPC(l, c)
	if err != nil {
		return nil, err
	}
	return &evm{chain: c, rpc: r, key: key, from: EVMAddress(key)}, nil
}

// checkChainID asks eth_chainId and refuses a node of another network.
func (e *evm) checkChainID(ctx context.Context) error {
	var s string
	if err := e.rpc.call(ctx, "eth_chainId", nil, &s); err != nil {
		return err
	}
	id, err := quantity(s)
	if err != nil || !id.IsUint64() || id.Sign() == 0 {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: e.rpc.http.Provider, Msg: "answered eth_chainId with something that is not a chain id; nothing was signed"}
	}
	got := id.Uint64()
	if e.chain.ID != 0 && got != e.chain.ID {
		return &adapters.Error{Kind: adapters.KindUpstream, Provider: e.rpc.http.Provider,
			Msg: fmt.Sprintf("answers chain id %d, but %s is chain id %d; nothing was signed (an instance admin points the %s endpoint at the right network)", got, e.chain.Name, e.chain.ID, e.chain.Name)}
	}
	if other, ok := knownID(got); ok && e.chain.ID == 0 {
		return &adapters.Error{Kind: adapters.KindUpstream, Provider: e.rpc.http.Provider,
			Msg: fmt.Sprintf("answers chain id %d, which is %s, not %s; nothing was signed", got, other.Name, e.chain.Name)}
	}
	e.id = got
	return nil
}

// address reads an EVM address argument.
func evmAddress(arg, s string) (common.Address, error) {
	s = strings.TrimSpace(s)
	if !common.IsHexAddress(s) || !strings.HasPrefix(strings.ToLower(s), "0x") {
		return common.Address{}, adapters.Invalid(provider, arg+" is not an EVM address (0x and 40 hex digits)")
	}
	return common.HexToAddress(s), nil
}

// ethCall runs eth_call of data on to at the latest block.
func (e *evm) ethCall(ctx context.Context, to common.Address, data []byte) ([]byte, error) {
	var out string
	if err := e.rpc.call(ctx, "eth_call", []any{map[string]any{"to": to.Hex(), "data": hexutil.Encode(data)}, "latest"}, &out); err != nil {
		return nil, err
	}
	b, err := hexutil.Decode(out)
	if err != nil {
		return nil, &adapters.Error{Kind: adapters.KindMalformed, Provider: e.rpc.http.Provider, Msg: "answered eth_call with something that is not hex data"}
	}
	return b, nil
}

// word is a 32-byte ABI word of an address.
func word(a common.Address) []byte { return common.LeftPadBytes(a.Bytes(), 32) }

// token is an ERC-20's decimals and symbol, read from the contract.
type token struct {
	addr     common.Address
	decimals int
	symbol   string
}

// erc20 reads a token contract's decimals and symbol.
func (e *evm) erc20(ctx context.Context, addr common.Address) (token, error) {
	var d, sym []byte
	var err, symErr error
	both(func() { d, err = e.ethCall(ctx, addr, selDecimals) }, func() { sym, symErr = e.ethCall(ctx, addr, selSymbol) })
	if err != nil {
		return token{}, err
	}
	if len(d) < 32 {
		return token{}, adapters.Invalid(provider, "token "+addr.Hex()+" on "+e.chain.Name+" answers no decimals(): is it an ERC-20 contract?")
	}
	n := new(big.Int).SetBytes(d[:32])
	if !n.IsInt64() || n.Int64() > 77 {
		return token{}, adapters.Invalid(provider, "token "+addr.Hex()+" answers decimals() out of range")
	}
	t := token{addr: addr, decimals: int(n.Int64())}
	if symErr == nil {
		t.symbol = abiString(sym)
	}
	return t, nil
}

// abiString decodes an ABI string return (or a bytes32 one); "" when it is neither.
func abiString(b []byte) string {
	if len(b) == 32 {
		s := strings.TrimRight(string(b), "\x00")
		if utf8.ValidString(s) {
			return s
		}
		return ""
	}
	if len(b) < 64 {
		return ""
	}
	off := new(big.Int).SetBytes(b[:32])
	if !off.IsInt64() || off.Int64()+32 > int64(len(b)) {
		return ""
	}
	o := int(off.Int64())
	n := new(big.Int).SetBytes(b[o : o+32])
	if !n.IsInt64() || int64(o)+32+n.Int64() > int64(len(b)) {
		return ""
	}
	s := string(b[o+32 : o+32+int(n.Int64())])
	if !utf8.ValidString(s) {
		return ""
	}
	return s
}

// tokenBalance is balanceOf(owner) on a token.
func (e *evm) tokenBalance(ctx context.Context, tok, owner common.Address) (*big.Int, error) {
	b, err := e.ethCall(ctx, tok, append(append([]byte{}, selBalanceOf...), word(owner)...))
	if err != nil {
		return nil, err
	}
	if len(b) < 32 {
		return nil, adapters.Invalid(provider, "token "+tok.Hex()+" answers no balanceOf(): is it an ERC-20 contract?")
	}
	return new(big.Int).SetBytes(b[:32]), nil
}

// balance is an address's native balance at a block tag.
func (e *evm) balance(ctx context.Context, a common.Address, tag string) (*big.Int, error) {
	var s string
	if err := e.rpc.call(ctx, "eth_getBalance", []any{a.Hex(), tag}, &s); err != nil {
		return nil, err
	}
	n, err := quantity(s)
	if err != nil {
		return nil, &adapters.Error{Kind: adapters.KindMalformed, Provider: e.rpc.http.Provider, Msg: "answered eth_getBalance with something that is not a quantity"}
	}
	return n, nil
}

// evmBalance answers get_balance on an EVM chain.
func evmBalance(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	e, err := openEVM(l, adapters.Str(args, "chain"))
	if err != nil {
		return "", err
	}
	owner := e.from
	if a := adapters.Str(args, "address"); a != "" {
		if owner, err = evmAddress("address", a); err != nil {
			return "", err
		}
	}
	t := adapters.NewTable("chain", "address", "asset", "symbol", "balance", "decimals", "base_units")
	if tk := adapters.Str(args, "token"); tk != "" {
		addr, err := evmAddress("token", tk)
		if err != nil {
			return "", err
		}
		tok, err := e.erc20(ctx, addr)
		if err != nil {
			return "", err
		}
		n, err := e.tokenBalance(ctx, addr, owner)
		if err != nil {
			return "", err
		}
		t.Add(e.chain.Name, owner.Hex(), addr.Hex(), tok.symbol, FormatAmount(n, tok.decimals), tok.decimals, n.String())
		return t.String(), nil
	}
	n, err := e.balance(ctx, owner, "latest")
	if err != nil {
		return "", err
	}
	t.Add(e.chain.Name, owner.Hex(), "native", e.chain.Symbol, FormatAmount(n, e.chain.Decimals), e.chain.Decimals, n.String())
	return t.String(), nil
}

// getBalance answers get_balance on any chain.
func getBalance(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	c, err := chainOf(adapters.Str(args, "chain"))
	if err != nil {
		return "", err
	}
	if c.Solana {
		return solanaBalance(ctx, l, args)
	}
	return evmBalance(ctx, l, args)
}

// intent is one transaction the wallet was asked to sign, with what the result describes.
type intent struct {
	to     common.Address
	value  *big.Int
	data   []byte
	token  *token      // an ERC-20 transfer: the token
	amount *big.Int    // the token amount of a transfer
	recv   string      // the recipient of a transfer ("" for call)
	about  [][2]string // rows that head the result (a swap's quote, an approval sent before it)
	noSim  bool        // dry run only: skip the simulation (a swap before its approval is mined)
}

// send answers send: the native coin or an ERC-20 on an EVM chain.
func send(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	c, err := chainOf(adapters.Str(args, "chain"))
	if err != nil {
		return "", err
	}
	if c.Solana {
		return solanaSend(ctx, l, args)
	}
	e, err := openEVM(l, c.Name)
	if err != nil {
		return "", err
	}
	to, err := evmAddress("to", adapters.Str(args, "to"))
	if err != nil {
		return "", err
	}
	in := intent{recv: to.Hex()}
	if tk := adapters.Str(args, "token"); tk != "" {
		addr, err := evmAddress("token", tk)
		if err != nil {
			return "", err
		}
		var tok token
		var have *big.Int
		var tokErr, balErr error
		both(func() { tok, tokErr = e.erc20(ctx, addr) }, func() { have, balErr = e.tokenBalance(ctx, addr, e.from) })
		if err := firstErr(tokErr, balErr); err != nil {
			return "", err
		}
		amt, err := ParseAmount(adapters.Str(args, "amount"), tok.decimals, false)
		if err != nil {
			return "", adapters.Invalid(provider, err.Error())
		}
		if have.Cmp(amt) < 0 {
			return "", adapters.Invalid(provider, fmt.Sprintf("the wallet holds %s %s on %s, less than %s; nothing was signed", FormatAmount(have, tok.decimals), tok.symbol, c.Name, FormatAmount(amt, tok.decimals)))
		}
		data := append(append(append([]byte{}, selTransfer...), word(to)...), common.LeftPadBytes(amt.Bytes(), 32)...)
		in.to, in.value, in.data, in.token, in.amount = addr, new(big.Int), data, &tok, amt
	} else {
		v, err := ParseAmount(adapters.Str(args, "amount"), c.Decimals, false)
		if err != nil {
			return "", adapters.Invalid(provider, err.Error())
		}
		in.to, in.value = to, v
	}
	return e.execute(ctx, in, dryRun(args))
}

// callContract answers call: calldata with an optional value to a contract.
func callContract(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	e, err := openEVM(l, adapters.Str(args, "chain"))
	if err != nil {
		return "", err
	}
	to, err := evmAddress("to", adapters.Str(args, "to"))
	if err != nil {
		return "", err
	}
	data, err := hexutil.Decode(adapters.Str(args, "data"))
	if err != nil {
		if adapters.Str(args, "data") == "0x" {
			data = nil
		} else {
			return "", adapters.Invalid(provider, "data is not 0x-prefixed hex calldata of whole bytes")
		}
	}
	value := new(big.Int)
	if v := adapters.Str(args, "value"); v != "" {
		if value, err = ParseAmount(v, e.chain.Decimals, true); err != nil {
			return "", adapters.Invalid(provider, err.Error())
		}
	}
	return e.execute(ctx, intent{to: to, value: value, data: data}, dryRun(args))
}

// fees are a transaction's gas price terms: EIP-1559's tip and cap, or a legacy gas price.
type fees struct {
	legacy   bool
	tip, cap *big.Int // EIP-1559
	price    *big.Int // legacy
}

// max is the most a unit of gas may cost.
func (f fees) max() *big.Int {
	if f.legacy {
		return f.price
	}
	return f.cap
}

// fees reads the latest block's base fee (EIP-1559: cap = 2 × base + tip), or the gas price on a
// chain whose blocks carry none.
func (e *evm) fees(ctx context.Context) (fees, error) {
	var blk struct {
		BaseFee *string `json:"baseFeePerGas"`
	}
	var ts string
	var blkErr, tipErr error
	both(func() { blkErr = e.rpc.call(ctx, "eth_getBlockByNumber", []any{"latest", false}, &blk) },
		func() { tipErr = e.rpc.call(ctx, "eth_maxPriorityFeePerGas", nil, &ts) })
	if blkErr != nil {
		return fees{}, blkErr
	}
	malformed := func(m string) error {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: e.rpc.http.Provider, Msg: "answered " + m + " with something that is not a quantity"}
	}
	if blk.BaseFee == nil {
		var gp string
		if err := e.rpc.call(ctx, "eth_gasPrice", nil, &gp); err != nil {
			return fees{}, err
		}
		p, err := quantity(gp)
		if err != nil {
			return fees{}, malformed("eth_gasPrice")
		}
		return fees{legacy: true, price: p}, nil
	}
	base, err := quantity(*blk.BaseFee)
	if err != nil {
		return fees{}, malformed("the block's baseFeePerGas")
	}
	tip := big.NewInt(1_000_000_000) // a node without eth_maxPriorityFeePerGas: 1 gwei
	if tipErr == nil {
		if t, err := quantity(ts); err == nil {
			tip = t
		}
	}
	c := new(big.Int).Add(new(big.Int).Mul(base, big.NewInt(2)), tip)
	return fees{tip: tip, cap: c}, nil
}

// estimate simulates the transaction (eth_estimateGas); a revert is an error with its reason.
func (e *evm) estimate(ctx context.Context, in intent) (uint64, error) {
	msg := map[string]any{"from": e.from.Hex(), "to": in.to.Hex(), "value": hexutil.EncodeBig(in.value)}
	if len(in.data) > 0 {
		msg["data"] = hexutil.Encode(in.data)
	}
	var s string
	if err := e.rpc.call(ctx, "eth_estimateGas", []any{msg}, &s); err != nil {
		var ne *nodeError
		if errors.As(err, &ne) {
			return 0, &adapters.Error{Kind: adapters.KindInvalid, Provider: provider,
				Msg: "the simulation on " + e.chain.Name + " failed, so nothing was signed or sent: " + revertReason(ne.rpc)}
		}
		return 0, err
	}
	g, err := quantity(s)
	if err != nil || !g.IsUint64() {
		return 0, &adapters.Error{Kind: adapters.KindMalformed, Provider: e.rpc.http.Provider, Msg: "answered eth_estimateGas with something that is not a gas amount"}
	}
	gas := g.Uint64()
	if len(in.data) > 0 {
		gas += gas / 5 // a contract's gas varies with state between the estimate and the block
	}
	return gas, nil
}

// revertReason decodes a node's revert: Error(string), Panic(uint256), custom error data, or its message.
func revertReason(e *rpcError) string {
	var data string
	if len(e.Data) > 0 {
		if json.Unmarshal(e.Data, &data) != nil {
			var obj struct {
				Data string `json:"data"`
			}
			if json.Unmarshal(e.Data, &obj) == nil {
				data = obj.Data
			}
		}
	}
	msg := adapters.Clip(strings.Join(strings.Fields(e.Message), " "), 200)
	b, err := hexutil.Decode(data)
	switch {
	case err != nil || len(b) < 4:
		return msg
	case string(b[:4]) == string(selError):
		if s := abiString(b[4:]); s != "" {
			return "reverted: " + adapters.Clip(strings.Join(strings.Fields(s), " "), 200)
		}
	case string(b[:4]) == string(selPanic) && len(b) >= 36:
		return "reverted with panic code 0x" + new(big.Int).SetBytes(b[4:36]).Text(16)
	}
	return "reverted with custom error 0x" + hex.EncodeToString(b[:4]) + " (" + msg + ")"
}

// execute prices, simulates, checks the balance, then (unless a dry run) signs and broadcasts
// under the nonce lock and waits for the receipt.
func (e *evm) execute(ctx context.Context, in intent, dry bool) (string, error) {
	// The chain id, the fees, the simulation and the balance are independent reads: asked at once.
	var f fees
	var gas uint64
	var have *big.Int
	var idErr, feeErr, gasErr, balErr error
	both(func() { idErr = e.checkChainID(ctx) }, func() { f, feeErr = e.fees(ctx) },
		func() {
			if !(dry && in.noSim) {
				gas, gasErr = e.estimate(ctx, in)
			}
		}, func() { have, balErr = e.balance(ctx, e.from, "pending") })
	if err := firstErr(idErr, gasErr, feeErr, balErr); err != nil {
		return "", err
	}
	maxFee := new(big.Int).Mul(new(big.Int).SetUint64(gas), f.max())
	need := new(big.Int).Add(in.value, maxFee)
	sym, dec := e.chain.Symbol, e.chain.Decimals
	if have.Cmp(need) < 0 {
		return "", adapters.Invalid(provider, fmt.Sprintf("the wallet holds %s %s on %s, less than %s %s (value %s plus at most %s of gas); nothing was signed",
			FormatAmount(have, dec), sym, e.chain.Name, FormatAmount(need, dec), sym, FormatAmount(in.value, dec), FormatAmount(maxFee, dec)))
	}
	t := adapters.NewTable("field", "value")
	add := func(k string, v any) { t.Add(k, v) }
	for _, r := range in.about {
		add(r[0], r[1])
	}
	add("chain", fmt.Sprintf("%s (chain id %d)", e.chain.Name, e.id))
	add("from", e.from.Hex())
	if in.recv != "" {
		add("to", in.recv)
	}
	if in.token != nil {
		add("token", in.token.addr.Hex()+" "+in.token.symbol)
		add("amount", FormatAmount(in.amount, in.token.decimals)+" "+in.token.symbol)
		add("contract", in.to.Hex())
	} else if in.recv == "" {
		add("contract", in.to.Hex())
	}
	add("value", FormatAmount(in.value, dec)+" "+sym)
	if len(in.data) > 0 {
		add("calldata", adapters.Clip(hexutil.Encode(in.data), 600))
	}
	add("gas_limit", gas)
	if f.legacy {
		add("gas_price_wei", f.price.String())
	} else {
		add("max_fee_per_gas_wei", f.cap.String())
		add("max_priority_fee_per_gas_wei", f.tip.String())
	}
	add("max_gas_fee", FormatAmount(maxFee, dec)+" "+sym)
	if dry && in.noSim {
		add("status", "dry_run: not simulated (it needs the approval above mined first), nothing signed or sent")
		return t.String(), nil
	}
	if dry {
		add("status", "dry_run: simulated, nothing signed or sent")
		return t.String(), nil
	}
	var hash common.Hash
	var nonce uint64
	err := currentNonces().Use(ctx, e.id, strings.ToLower(e.from.Hex()), func(stored *orchestrator.NonceState) (*orchestrator.NonceState, error) {
		n, err := e.nextNonce(ctx, stored)
		if err != nil {
			return nil, err
		}
		nonce = n
		var tx *types.Transaction
		to := in.to
		if f.legacy {
			tx = types.NewTx(&types.LegacyTx{Nonce: nonce, GasPrice: f.price, Gas: gas, To: &to, Value: in.value, Data: in.data})
		} else {
			tx = types.NewTx(&types.DynamicFeeTx{ChainID: new(big.Int).SetUint64(e.id), Nonce: nonce, GasTipCap: f.tip, GasFeeCap: f.cap, Gas: gas, To: &to, Value: in.value, Data: in.data})
		}
		signed, err := types.SignTx(tx, types.LatestSignerForChainID(new(big.Int).SetUint64(e.id)), e.key)
		if err != nil {
			return nil, fmt.Errorf("sign the transaction: %w", err)
		}
		raw, err := signed.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("encode the signed transaction: %w", err)
		}
		hash = signed.Hash()
		var got string
		if err := e.rpc.call(ctx, "eth_sendRawTransaction", []any{hexutil.Encode(raw)}, &got); err != nil {
			var ne *nodeError
			if errors.As(err, &ne) {
				return nil, &adapters.Error{Kind: adapters.KindUpstream, Provider: e.rpc.http.Provider, Msg: "refused the transaction, so nothing was sent: " + adapters.Clip(ne.rpc.Message, 200)}
			}
			// The node may have taken it: the next nonce comes from its pending count.
			return nil, &adapters.Error{Kind: adapters.KindDown, Provider: e.rpc.http.Provider,
				Msg: "did not confirm the broadcast, so the transaction " + hash.Hex() + " may or may not be sent; look it up at " + e.chain.txURL(hash.Hex()) + " before sending again"}
		}
		return &orchestrator.NonceState{Next: nonce + 1, Hash: hash.Hex()}, nil
	})
	if err != nil {
		return "", err
	}
	add("nonce", nonce)
	add("hash", hash.Hex())
	add("explorer", e.chain.txURL(hash.Hex()))
	status, block := e.receipt(ctx, hash)
	if block != "" {
		add("block", block)
	}
	add("status", status)
	return t.String(), nil
}

// nextNonce is the node's pending count, or the stored next nonce when it is ahead and the node
// knows the stored last transaction (a node behind another replica's broadcast); a stored
// transaction the node does not know was dropped, and its nonce is free again.
func (e *evm) nextNonce(ctx context.Context, stored *orchestrator.NonceState) (uint64, error) {
	var s string
	if err := e.rpc.call(ctx, "eth_getTransactionCount", []any{e.from.Hex(), "pending"}, &s); err != nil {
		return 0, err
	}
	p, err := quantity(s)
	if err != nil || !p.IsUint64() {
		return 0, &adapters.Error{Kind: adapters.KindMalformed, Provider: e.rpc.http.Provider, Msg: "answered eth_getTransactionCount with something that is not a nonce"}
	}
	n := p.Uint64()
	if stored == nil || stored.Next <= n {
		return n, nil
	}
	var tx *struct {
		Hash string `json:"hash"`
	}
	if err := e.rpc.call(ctx, "eth_getTransactionByHash", []any{stored.Hash}, &tx); err != nil {
		return 0, err
	}
	if tx == nil {
		return n, nil
	}
	return stored.Next, nil
}

// receipt waits up to ReceiptWait for the transaction's receipt: success, reverted or pending.
func (e *evm) receipt(ctx context.Context, hash common.Hash) (status, block string) {
	ctx, cancel := context.WithTimeout(ctx, ReceiptWait)
	defer cancel()
	for {
		var r *struct {
			Status string `json:"status"`
			Block  string `json:"blockNumber"`
		}
		if err := e.rpc.call(ctx, "eth_getTransactionReceipt", []any{hash.Hex()}, &r); err == nil && r != nil {
			b := ""
			if n, err := quantity(r.Block); err == nil {
				b = n.String()
			}
			if r.Status == "0x1" {
				return "success", b
			}
			return "reverted (the transaction was mined but failed; its gas is spent)", b
		}
		select {
		case <-ctx.Done():
			return "pending: no receipt within " + ReceiptWait.String() + "; look the hash up later", ""
		case <-time.After(receiptPoll):
		}
	}
}

// both runs fns at once and waits for them all.
func both(fns ...func()) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); fn() }()
	}
	wg.Wait()
}

// firstErr is the first non-nil error, in the order that says most (a wrong chain before a revert).
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
