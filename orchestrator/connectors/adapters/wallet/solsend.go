package wallet

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// The fee of one signature, and what a new associated token account holds as rent.
const (
	lamportsPerSignature = 5000
	ataRentLamports      = 2_039_280
)

// sol is one Solana call's RPC and key.
type sol struct {
	chain Chain
	rpc   *rpc
	key   ed25519.PrivateKey
	from  pubkey
}

// openSolana opens solana's RPC with the wallet's key (decrypted for this call only).
func openSolana(l adapters.Login) (*sol, error) {
	c, _ := chainOf("solana")
	k, err := ParseSolanaKey(l.Credential(FieldSolanaKey))
	if err != nil {
		return nil, err
	}
	r, err := newRPC(l, c)
	if err != nil {
		return nil, err
	}
	var from pubkey
	copy(from[:], k[32:])
	return &sol{chain: c, rpc: r, key: k, from: from}, nil
}

// malformed is an RPC answer that cannot be read.
func (s *sol) malformed(what string) error {
	return &adapters.Error{Kind: adapters.KindMalformed, Provider: s.rpc.http.Provider, Msg: "answered " + what + " that is not the expected shape"}
}

// blockhash is the latest blockhash.
func (s *sol) blockhash(ctx context.Context) (pubkey, error) {
	var out struct {
		Value struct {
			Blockhash string `json:"blockhash"`
		} `json:"value"`
	}
	if err := s.rpc.call(ctx, "getLatestBlockhash", []any{map[string]any{"commitment": "confirmed"}}, &out); err != nil {
		return pubkey{}, err
	}
	h, ok := parseKey(out.Value.Blockhash)
	if !ok {
		return pubkey{}, s.malformed("getLatestBlockhash with a blockhash")
	}
	return h, nil
}

// lamports is an address's SOL balance.
func (s *sol) lamports(ctx context.Context, a pubkey) (uint64, error) {
	var out struct {
		Value uint64 `json:"value"`
	}
	err := s.rpc.call(ctx, "getBalance", []any{a.String(), map[string]any{"commitment": "confirmed"}}, &out)
	return out.Value, err
}

// mintInfo is a mint's token program and decimals.
func (s *sol) mintInfo(ctx context.Context, mint pubkey) (program pubkey, decimals int, err error) {
	var out struct {
		Value *struct {
			Owner string `json:"owner"`
			Data  struct {
				Parsed struct {
					Type string `json:"type"`
					Info struct {
						Decimals *int `json:"decimals"`
					} `json:"info"`
				} `json:"parsed"`
			} `json:"data"`
		} `json:"value"`
	}
	if err := s.rpc.call(ctx, "getAccountInfo", []any{mint.String(), map[string]any{"encoding": "jsonParsed", "commitment": "confirmed"}}, &out); err != nil {
		return pubkey{}, 0, err
	}
	if out.Value == nil {
		return pubkey{}, 0, adapters.Invalid(provider, "mint "+mint.String()+" does not exist on solana")
	}
	owner, ok := parseKey(out.Value.Owner)
	if !ok || (owner != tokenProgram && owner != token2022) || out.Value.Data.Parsed.Type != "mint" || out.Value.Data.Parsed.Info.Decimals == nil {
		return pubkey{}, 0, adapters.Invalid(provider, mint.String()+" is not an SPL token mint")
	}
	return owner, *out.Value.Data.Parsed.Info.Decimals, nil
}

// tokenAccountData is a token account's data as jsonParsed encoding gives it: its balance in base
// units.
type tokenAccountData struct {
	Parsed struct {
		Info struct {
			TokenAmount struct {
				Amount string `json:"amount"`
			} `json:"tokenAmount"`
		} `json:"info"`
	} `json:"parsed"`
}

// tokenAmount is a token account's balance in base units; false when the account does not exist.
func (s *sol) tokenAmount(ctx context.Context, acct pubkey) (*big.Int, bool, error) {
	var out struct {
		Value *struct {
			Data tokenAccountData `json:"data"`
		} `json:"value"`
	}
	if err := s.rpc.call(ctx, "getAccountInfo", []any{acct.String(), map[string]any{"encoding": "jsonParsed", "commitment": "confirmed"}}, &out); err != nil {
		return nil, false, err
	}
	if out.Value == nil {
		return new(big.Int), false, nil
	}
	n, ok := new(big.Int).SetString(out.Value.Data.Parsed.Info.TokenAmount.Amount, 10)
	if !ok {
		return nil, false, s.malformed("getAccountInfo with a token amount")
	}
	return n, true, nil
}

// solanaSend answers send on solana: SOL by a system transfer, an SPL token by TransferChecked
// between the associated token accounts, creating the recipient's when it does not exist.
func solanaSend(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	s, err := openSolana(l)
	if err != nil {
		return "", err
	}
	defer clear(s.key)
	to, ok := parseKey(adapters.Str(args, "to"))
	if !ok {
		return "", adapters.Invalid(provider, "to is not a Solana address (base58 of 32 bytes)")
	}
	t := adapters.NewTable("field", "value")
	t.Add("chain", "solana")
	t.Add("from", s.from.String())
	t.Add("to", to.String())
	var ixs []instruction
	need := uint64(lamportsPerSignature)
	if m := adapters.Str(args, "token"); m == "" {
		amt, err := ParseAmount(adapters.Str(args, "amount"), 9, false)
		if err != nil {
			return "", adapters.Invalid(provider, err.Error())
		}
		if !amt.IsUint64() {
			return "", adapters.Invalid(provider, "the amount is more SOL than exists")
		}
		data := append([]byte{2, 0, 0, 0}, le64(amt.Uint64())...)
		ixs = append(ixs, instruction{program: systemProgram, accounts: []meta{{s.from, true, true}, {to, false, true}}, data: data})
		need += amt.Uint64()
		t.Add("amount", FormatAmount(amt, 9)+" SOL")
	} else {
		mint, ok := parseKey(m)
		if !ok {
			return "", adapters.Invalid(provider, "token is not a Solana mint address (base58 of 32 bytes)")
		}
		program, decimals, err := s.mintInfo(ctx, mint)
		if err != nil {
			return "", err
		}
		amt, err := ParseAmount(adapters.Str(args, "amount"), decimals, false)
		if err != nil {
			return "", adapters.Invalid(provider, err.Error())
		}
		if !amt.IsUint64() {
			return "", adapters.Invalid(provider, "the amount is more than a token account can hold")
		}
		src, err := associatedTokenAccount(s.from, mint, program)
		if err != nil {
			return "", fmt.Errorf("derive the wallet's token account: %w", err)
		}
		dst, err := associatedTokenAccount(to, mint, program)
		if err != nil {
			return "", fmt.Errorf("derive the recipient's token account: %w", err)
		}
		have, _, err := s.tokenAmount(ctx, src)
		if err != nil {
			return "", err
		}
		if have.Cmp(amt) < 0 {
			return "", adapters.Invalid(provider, fmt.Sprintf("the wallet holds %s of %s, less than %s; nothing was signed", FormatAmount(have, decimals), mint, FormatAmount(amt, decimals)))
		}
		_, exists, err := s.tokenAmount(ctx, dst)
		if err != nil {
			return "", err
		}
		if !exists {
			ixs = append(ixs, instruction{program: ataProgram, data: []byte{1}, accounts: []meta{
				{s.from, true, true}, {dst, false, true}, {to, false, false}, {mint, false, false}, {systemProgram, false, false}, {program, false, false}}})
			need += ataRentLamports
			t.Add("creates", "the recipient's token account "+dst.String())
		}
		data := append(append([]byte{12}, le64(amt.Uint64())...), byte(decimals))
		ixs = append(ixs, instruction{program: program, data: data, accounts: []meta{{src, false, true}, {mint, false, false}, {dst, false, true}, {s.from, true, false}}})
		t.Add("token", mint.String())
		t.Add("amount", FormatAmount(amt, decimals))
	}
	bal, err := s.lamports(ctx, s.from)
	if err != nil {
		return "", err
	}
	if bal < need {
		return "", adapters.Invalid(provider, fmt.Sprintf("the wallet holds %s SOL, less than the %s SOL this needs with fees; nothing was signed",
			FormatAmount(new(big.Int).SetUint64(bal), 9), FormatAmount(new(big.Int).SetUint64(need), 9)))
	}
	bh, err := s.blockhash(ctx)
	if err != nil {
		return "", err
	}
	msg := compileLegacy(s.from, bh, ixs)
	tx := &solTx{sigs: [][64]byte{{}}, message: msg, version: -1}
	copy(tx.sigs[0][:], ed25519.Sign(s.key, msg))
	t.Add("fee_lamports", lamportsPerSignature)
	return s.simulateAndSend(ctx, t, tx, dryRun(args))
}

// submit answers submit: a prebuilt transaction signed in the wallet's slot, simulated, sent.
func submit(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(adapters.Str(args, "transaction")))
	if err != nil {
		return "", adapters.Invalid(provider, "transaction is not base64 (standard alphabet, padded)")
	}
	tx, err := decodeTx(raw)
	if err != nil {
		return "", adapters.Invalid(provider, "transaction is not a Solana transaction: "+err.Error())
	}
	s, err := openSolana(l)
	if err != nil {
		return "", err
	}
	defer clear(s.key)
	slot := -1
	for i, k := range tx.signers {
		if k == s.from {
			slot = i
		}
	}
	if slot < 0 {
		return "", adapters.Invalid(provider, "the transaction does not name the wallet "+s.from.String()+" as a signer; nothing was signed")
	}
	for i, sig := range tx.sigs {
		if i != slot && sig == ([64]byte{}) {
			return "", adapters.Invalid(provider, fmt.Sprintf("the transaction needs the signature of %s too, which it does not carry; nothing was sent", tx.signers[i]))
		}
	}
	copy(tx.sigs[slot][:], ed25519.Sign(s.key, tx.message))
	t := adapters.NewTable("field", "value")
	t.Add("chain", "solana")
	t.Add("signer", s.from.String())
	if tx.version < 0 {
		t.Add("version", "legacy")
	} else {
		t.Add("version", "v0")
	}
	t.Add("signatures", len(tx.sigs))
	t.Add("fee_lamports", lamportsPerSignature*len(tx.sigs))
	return s.simulateAndSend(ctx, t, tx, dryRun(args))
}

// ed25519Sign signs a message with the wallet's Solana key.
func ed25519Sign(s *sol, msg []byte) []byte { return ed25519.Sign(s.key, msg) }

// simulateAndSend simulates the signed transaction (a failure is an ERROR with its logs and
// nothing sent), then unless a dry run sends it and waits up to ReceiptWait for confirmation.
func (s *sol) simulateAndSend(ctx context.Context, t *adapters.Table, tx *solTx, dry bool) (string, error) {
	enc := base64.StdEncoding.EncodeToString(tx.encode())
	var sim struct {
		Value struct {
			Err  any      `json:"err"`
			Logs []string `json:"logs"`
		} `json:"value"`
	}
	if err := s.rpc.call(ctx, "simulateTransaction", []any{enc, map[string]any{"encoding": "base64", "sigVerify": true, "commitment": "confirmed"}}, &sim); err != nil {
		return "", solRefusal(err)
	}
	if sim.Value.Err == "BlockhashNotFound" {
		return "", adapters.Invalid(provider, "solana refused the transaction: its blockhash is stale (Blockhash not found); build it again with a fresh blockhash. Nothing was sent")
	}
	if sim.Value.Err != nil {
		why := adapters.Cell(sim.Value.Err)
		if n := len(sim.Value.Logs); n > 0 {
			why += "; last log: " + sim.Value.Logs[n-1]
		}
		return "", adapters.Invalid(provider, "the simulation on solana failed, so nothing was sent: "+adapters.Clip(why, 300))
	}
	sig := Base58Encode(tx.sigs[0][:])
	if dry {
		t.Add("status", "dry_run: simulated, nothing sent")
		return t.String(), nil
	}
	var got string
	if err := s.rpc.call(ctx, "sendTransaction", []any{enc, map[string]any{"encoding": "base64", "preflightCommitment": "confirmed"}}, &got); err != nil {
		if isNode(err) {
			return "", solRefusal(err)
		}
		return "", &adapters.Error{Kind: adapters.KindDown, Provider: s.rpc.http.Provider,
			Msg: "did not confirm the broadcast, so the transaction " + sig + " may or may not be sent; look it up at " + s.chain.txURL(sig) + " before sending again"}
	}
	t.Add("signature", sig)
	t.Add("explorer", s.chain.txURL(sig))
	t.Add("status", s.confirm(ctx, sig))
	return t.String(), nil
}

// isNode reports whether err is a node's JSON-RPC refusal.
func isNode(err error) bool {
	for e := err; e != nil; {
		if _, ok := e.(*nodeError); ok {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// solRefusal names a node's refusal, a stale blockhash in words the model can act on.
func solRefusal(err error) error {
	ne, ok := err.(*nodeError)
	if !ok {
		return err
	}
	msg := ne.rpc.Message
	if strings.Contains(strings.ToLower(msg), "blockhash not found") {
		return adapters.Invalid(provider, "solana refused the transaction: its blockhash is stale (Blockhash not found); build it again with a fresh blockhash. Nothing was sent")
	}
	return &adapters.Error{Kind: adapters.KindUpstream, Provider: ne.provider, Msg: "refused the transaction, so nothing was sent: " + adapters.Clip(msg, 300)}
}

// confirm polls getSignatureStatuses until the signature is confirmed, failed, or ReceiptWait passes.
func (s *sol) confirm(ctx context.Context, sig string) string {
	ctx, cancel := context.WithTimeout(ctx, ReceiptWait)
	defer cancel()
	for {
		var out struct {
			Value []*struct {
				Err    any    `json:"err"`
				Status string `json:"confirmationStatus"`
			} `json:"value"`
		}
		if err := s.rpc.call(ctx, "getSignatureStatuses", []any{[]string{sig}}, &out); err == nil && len(out.Value) == 1 && out.Value[0] != nil {
			v := out.Value[0]
			if v.Err != nil {
				return "failed: " + adapters.Clip(adapters.Cell(v.Err), 200)
			}
			if v.Status == "confirmed" || v.Status == "finalized" {
				return "success (" + v.Status + ")"
			}
		}
		select {
		case <-ctx.Done():
			return "pending: not confirmed within " + ReceiptWait.String() + "; look the signature up later"
		case <-time.After(receiptPoll):
		}
	}
}
