package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// uniswapChainNames are the chains uniswap_swap runs on.
var uniswapChainNames = map[string]bool{"ethereum": true, "polygon": true, "base": true, "arbitrum": true, "bsc": true, "optimism": true, "ink": true, "robinhood": true, "arc": true}

// uniswapSwap answers uniswap_swap through the Trading API: check_approval (sent as an exact
// approve of the spender it names), a CLASSIC quote, then the swap transaction it builds, each
// checked against the request before anything is signed.
func uniswapSwap(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	c, err := chainOf(adapters.Str(args, "chain"))
	if err != nil {
		return "", err
	}
	if !uniswapChainNames[c.Name] {
		return "", adapters.Invalid(provider, "uniswap_swap runs on ethereum, polygon, base, arbitrum, bsc, optimism, ink, robinhood and arc")
	}
	key := l.Credential(FieldUniswapKey)
	if key == "" {
		return "", adapters.Invalid(provider, "the login has no Uniswap API key; reconnect the Wallet with one to use uniswap_swap")
	}
	base, err := l.Endpoint(provider, EndpointUniswap)
	if err != nil {
		return "", err
	}
	e, from, to, amt, err := openSwap(ctx, l, c.Name, args)
	if err != nil {
		return "", err
	}
	uni := adapters.HTTP{Provider: "Uniswap", Login: l, Auth: func(h http.Header) { h.Set("x-api-key", key) }}
	post := func(path string, body any, out any) error {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode the %s request: %w", path, err)
		}
		raw, err := uni.Do(ctx, adapters.Request{Method: http.MethodPost, URL: base + path, Body: b, Type: "application/json", What: "a route for this swap"})
		if err != nil {
			return err
		}
		if err := decodeNumbers(raw, out); err != nil {
			return &adapters.Error{Kind: adapters.KindMalformed, Provider: "Uniswap", Msg: "answered " + path + " with something that is not the expected JSON"}
		}
		return nil
	}
	refuse := func(why string) error {
		return adapters.Invalid(provider, "Uniswap's answer was refused, nothing was signed: "+why)
	}
	bps, _ := slippage(args)
	dry := dryRun(args)
	slip := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%d.%02d", bps/100, bps%100), "0"), ".")
	var q struct {
		Routing    string          `json:"routing"`
		Quote      json.RawMessage `json:"quote"`
		PermitData json.RawMessage `json:"permitData"`
	}
	req := map[string]any{"type": "EXACT_INPUT", "amount": amt.String(), "tokenInChainId": e.id, "tokenOutChainId": e.id,
		"tokenIn": from.apiAddr(), "tokenOut": to.apiAddr(), "swapper": e.from.Hex(), "slippageTolerance": json.Number(slip), "routingPreference": "CLASSIC"}
	if err := post("/quote", req, &q); err != nil {
		return "", err
	}
	if q.Routing != "CLASSIC" {
		return "", refuse("it routed through " + adapters.Clip(q.Routing, 20) + "; uniswap_swap signs CLASSIC routes only")
	}
	if len(q.PermitData) > 0 && string(q.PermitData) != "null" {
		return "", refuse("it asks for a Permit2 signature, which this build does not sign")
	}
	var quote struct {
		ChainID any    `json:"chainId"`
		Swapper string `json:"swapper"`
		Input   struct {
			Amount string `json:"amount"`
			Token  string `json:"token"`
		} `json:"input"`
		Output struct {
			Amount    string `json:"amount"`
			Token     string `json:"token"`
			Recipient string `json:"recipient"`
		} `json:"output"`
	}
	if err := decodeNumbers(q.Quote, &quote); err != nil {
		return "", &adapters.Error{Kind: adapters.KindMalformed, Provider: "Uniswap", Msg: "answered a quote that is not the expected JSON"}
	}
	if id, err := anyUint(quote.ChainID); err != nil || id != e.id {
		return "", refuse(fmt.Sprintf("its quote is for chain id %v, not %s (%d)", quote.ChainID, c.Name, e.id))
	}
	if quote.Input.Amount != amt.String() || !strings.EqualFold(quote.Input.Token, from.apiAddr()) {
		return "", refuse("its quote sells " + adapters.Clip(quote.Input.Amount, 80) + " of " + adapters.Clip(quote.Input.Token, 42) + ", not the stated " + amt.String() + " of " + from.apiAddr())
	}
	if !strings.EqualFold(quote.Swapper, e.from.Hex()) || (quote.Output.Recipient != "" && !strings.EqualFold(quote.Output.Recipient, e.from.Hex())) {
		return "", refuse("its quote swaps for or pays another address than the wallet")
	}
	var sw struct {
		Swap *quoteTx `json:"swap"`
	}
	if err := post("/swap", map[string]any{"quote": q.Quote}, &sw); err != nil {
		return "", err
	}
	if sw.Swap == nil {
		return "", refuse("it built no swap transaction")
	}
	value := new(big.Int)
	if from.native {
		value = amt
	}
	in, err := e.checked("Uniswap", *sw.Swap, value)
	if err != nil {
		return "", err
	}
	var about [][2]string
	wait := false
	if !from.native {
		var ap struct {
			Approval *quoteTx `json:"approval"`
		}
		if err := post("/check_approval", map[string]any{"walletAddress": e.from.Hex(), "token": from.addr.Hex(), "amount": amt.String(), "chainId": e.id}, &ap); err != nil {
			return "", err
		}
		if ap.Approval != nil {
			ain, err := e.checked("Uniswap", *ap.Approval, new(big.Int))
			if err != nil {
				return "", err
			}
			if ain.to != from.addr || len(ain.data) != 68 || string(ain.data[:4]) != string(selApprove) {
				return "", refuse("its approval is not an ERC-20 approve on " + from.addr.Hex())
			}
			spender := common.BytesToAddress(ain.data[4:36])
			if spender != in.to {
				return "", refuse("its approval names " + spender.Hex() + ", which is not the contract its swap calls")
			}
			rows, w, err := e.approveFirst(ctx, from, spender, amt, dry)
			if err != nil {
				return "", err
			}
			about, wait = append(about, rows...), w
		}
	}
	out, _ := anyBig(quote.Output.Amount)
	in.about = append([][2]string{{"route", "Uniswap CLASSIC"}, {"sell", FormatAmount(amt, from.decimals) + " " + from.symbol},
		{"buy_estimate", FormatAmount(out, to.decimals) + " " + to.symbol + fmt.Sprintf(" (slippage %d bps)", bps)}}, about...)
	in.noSim = wait
	return e.execute(ctx, in, dry)
}
