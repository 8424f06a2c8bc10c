package wallet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// EndpointJupiter names Jupiter's swap API in the catalog.
const EndpointJupiter = "jupiter"

// wrappedSOL is the mint Jupiter names SOL by.
const wrappedSOL = "So11111111111111111111111111111111111111112"

// solAsset reads a swap side on solana: SOL or a mint, with its decimals.
func (s *sol) solAsset(ctx context.Context, arg, v string) (mint string, decimals int, native bool, err error) {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, "SOL") || strings.EqualFold(v, "native") || v == wrappedSOL {
		return wrappedSOL, 9, true, nil
	}
	k, ok := parseKey(v)
	if !ok {
		return "", 0, false, adapters.Invalid(provider, arg+" is not a Solana mint address or SOL")
	}
	_, d, err := s.mintInfo(ctx, k)
	return k.String(), d, false, err
}

// jupiterSwap answers swap on solana: Jupiter's quote, then its swap transaction, refused unless
// the wallet is its only signer and fee payer and it moves no more SOL out than the swap states;
// signed, simulated and sent like submit.
func jupiterSwap(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	s, err := openSolana(l)
	if err != nil {
		return "", err
	}
	defer clear(s.key)
	in, inDec, inSOL, err := s.solAsset(ctx, "from_token", adapters.Str(args, "from_token"))
	if err != nil {
		return "", err
	}
	out, outDec, _, err := s.solAsset(ctx, "to_token", adapters.Str(args, "to_token"))
	if err != nil {
		return "", err
	}
	amt, err := ParseAmount(adapters.Str(args, "amount"), inDec, false)
	if err != nil {
		return "", adapters.Invalid(provider, err.Error())
	}
	if !amt.IsUint64() {
		return "", adapters.Invalid(provider, "the amount is more than a token account can hold")
	}
	base, err := l.Endpoint(provider, EndpointJupiter)
	if err != nil {
		return "", err
	}
	bps, _ := slippage(args)
	jup := adapters.HTTP{Provider: "Jupiter", Login: l}
	q := url.Values{"inputMint": {in}, "outputMint": {out}, "amount": {amt.String()}, "slippageBps": {strconv.Itoa(bps)}, "swapMode": {"ExactIn"}}
	raw, err := jup.Do(ctx, adapters.Get(base, "/quote", q, "a route for this swap"))
	if err != nil {
		return "", err
	}
	var quote struct {
		InputMint  string `json:"inputMint"`
		OutputMint string `json:"outputMint"`
		InAmount   string `json:"inAmount"`
		OutAmount  string `json:"outAmount"`
		Threshold  string `json:"otherAmountThreshold"`
		SwapMode   string `json:"swapMode"`
	}
	if err := decodeNumbers(raw, &quote); err != nil {
		return "", &adapters.Error{Kind: adapters.KindMalformed, Provider: "Jupiter", Msg: "answered a quote that is not the expected JSON"}
	}
	refuse := func(why string) error {
		return adapters.Invalid(provider, "Jupiter's answer was refused, nothing was signed: "+why)
	}
	if quote.InputMint != in || quote.OutputMint != out || quote.InAmount != amt.String() || (quote.SwapMode != "" && quote.SwapMode != "ExactIn") {
		return "", refuse("its quote sells " + adapters.Clip(quote.InAmount, 40) + " of " + adapters.Clip(quote.InputMint, 44) + " for " + adapters.Clip(quote.OutputMint, 44) + ", not the stated " + amt.String() + " of " + in + " for " + out)
	}
	body, err := json.Marshal(map[string]any{"quoteResponse": json.RawMessage(raw), "userPublicKey": s.from.String(), "wrapAndUnwrapSol": true, "dynamicComputeUnitLimit": true})
	if err != nil {
		return "", fmt.Errorf("encode the swap request: %w", err)
	}
	var sw struct {
		Tx string `json:"swapTransaction"`
	}
	if err := jup.JSON(ctx, adapters.Request{Method: http.MethodPost, URL: base + "/swap", Body: body, Type: "application/json", What: "the swap transaction"}, &sw); err != nil {
		return "", err
	}
	txb, err := base64.StdEncoding.DecodeString(sw.Tx)
	if err != nil {
		return "", refuse("its swapTransaction is not base64")
	}
	tx, err := decodeTx(txb)
	if err != nil {
		return "", refuse("its swapTransaction is not a Solana transaction: " + err.Error())
	}
	if len(tx.signers) != 1 || tx.signers[0] != s.from {
		return "", refuse(fmt.Sprintf("its transaction needs %d signers with %s paying, not the wallet %s alone", len(tx.signers), tx.signers[0], s.from))
	}
	allowed := uint64(0)
	if inSOL {
		allowed = amt.Uint64()
	}
	moved, ok := tx.lamportsOut(s.from)
	if !ok || moved > allowed {
		return "", refuse(fmt.Sprintf("its transaction moves %s SOL out of the wallet, more than the swap states", FormatAmount(new(big.Int).SetUint64(moved), 9)))
	}
	copy(tx.sigs[0][:], ed25519Sign(s, tx.message))
	outAmt, _ := anyBig(quote.OutAmount)
	minAmt, _ := anyBig(quote.Threshold)
	t := adapters.NewTable("field", "value")
	t.Add("chain", "solana")
	t.Add("route", "Jupiter")
	t.Add("signer", s.from.String())
	t.Add("sell", FormatAmount(amt, inDec)+" "+in)
	t.Add("buy_estimate", FormatAmount(outAmt, outDec)+" "+out)
	t.Add("buy_minimum", FormatAmount(minAmt, outDec)+" "+out+fmt.Sprintf(" (slippage %d bps)", bps))
	return s.simulateAndSend(ctx, t, tx, dryRun(args))
}
