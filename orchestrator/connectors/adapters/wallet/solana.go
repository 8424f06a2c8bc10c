package wallet

import (
	"context"
	"math/big"
	"strings"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// solanaAddress reads a base58 Solana address argument (32 bytes).
func solanaAddress(arg, s string) (string, error) {
	s = strings.TrimSpace(s)
	if b, ok := Base58Decode(s); !ok || len(b) != 32 {
		return "", adapters.Invalid(provider, arg+" is not a Solana address (base58 of 32 bytes)")
	}
	return s, nil
}

// solanaBalance answers get_balance on solana: SOL, or an SPL token's total over the owner's
// token accounts of that mint (exact, from the base-unit amounts).
func solanaBalance(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	c, _ := chainOf("solana")
	owner := adapters.Str(args, "address")
	if owner == "" {
		k, err := ParseSolanaKey(l.Credential(FieldSolanaKey))
		if err != nil {
			return "", err
		}
		owner = SolanaAddress(k)
		clear(k)
	} else if _, err := solanaAddress("address", owner); err != nil {
		return "", err
	}
	r, err := newRPC(l, c)
	if err != nil {
		return "", err
	}
	t := adapters.NewTable("chain", "address", "asset", "symbol", "balance", "decimals", "base_units")
	mint := adapters.Str(args, "token")
	if mint == "" {
		var out struct {
			Value uint64 `json:"value"`
		}
		if err := r.call(ctx, "getBalance", []any{owner, map[string]any{"commitment": "confirmed"}}, &out); err != nil {
			return "", err
		}
		n := new(big.Int).SetUint64(out.Value)
		t.Add("solana", owner, "native", "SOL", FormatAmount(n, 9), 9, n.String())
		return t.String(), nil
	}
	if _, err := solanaAddress("token", mint); err != nil {
		return "", err
	}
	var supply struct {
		Value struct {
			Decimals int `json:"decimals"`
		} `json:"value"`
	}
	if err := r.call(ctx, "getTokenSupply", []any{mint}, &supply); err != nil {
		return "", err
	}
	var accts struct {
		Value []struct {
			Account struct {
				Data tokenAccountData `json:"data"`
			} `json:"account"`
		} `json:"value"`
	}
	if err := r.call(ctx, "getTokenAccountsByOwner", []any{owner, map[string]any{"mint": mint}, map[string]any{"encoding": "jsonParsed", "commitment": "confirmed"}}, &accts); err != nil {
		return "", err
	}
	total := new(big.Int)
	for _, a := range accts.Value {
		n, ok := new(big.Int).SetString(a.Account.Data.Parsed.Info.TokenAmount.Amount, 10)
		if !ok {
			return "", &adapters.Error{Kind: adapters.KindMalformed, Provider: r.http.Provider, Msg: "answered a token account whose amount is not an integer"}
		}
		total.Add(total, n)
	}
	d := supply.Value.Decimals
	t.Add("solana", owner, mint, "", FormatAmount(total, d), d, total.String())
	return t.String(), nil
}
