package wallet

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	solana "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
)

// jupiterFake is Jupiter's swap API on loopback (/quote, /swap in their published shapes): its
// v0 swap transaction creates the output account and swaps 1:3 through the bank's pool program;
// tamper may change the quote or the instructions.
type jupiterFake struct {
	*adapterstest.Fake
	tamperQuote func(map[string]any)
	extra       func(user solana.PublicKey) []solana.Instruction
	payer       *solana.PublicKey
}

func newJupiterFake(t *testing.T, bank *wallettest.Solana) *jupiterFake {
	j := &jupiterFake{Fake: adapterstest.NewFake(t, func(*http.Request) bool { return true })}
	j.Handle("GET /swap/v1/quote", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		in, _ := strconv.ParseUint(q.Get("amount"), 10, 64)
		bps, _ := strconv.Atoi(q.Get("slippageBps"))
		quote := map[string]any{"inputMint": q.Get("inputMint"), "inAmount": q.Get("amount"), "outputMint": q.Get("outputMint"),
			"outAmount": strconv.FormatUint(in*3, 10), "otherAmountThreshold": strconv.FormatUint(in*3*uint64(10000-bps)/10000, 10),
			"swapMode": "ExactIn", "slippageBps": bps, "priceImpactPct": "0", "contextSlot": 312000000, "timeTaken": 0.01,
			"routePlan": []any{map[string]any{"swapInfo": map[string]any{"ammKey": bank.PoolOwner.String(), "label": "TestPool", "inputMint": q.Get("inputMint"),
				"outputMint": q.Get("outputMint"), "inAmount": q.Get("amount"), "outAmount": strconv.FormatUint(in*3, 10), "feeAmount": "0", "feeMint": q.Get("inputMint")}, "percent": 100}}}
		if j.tamperQuote != nil {
			j.tamperQuote(quote)
		}
		_ = jsonEncode(w, quote)
	})
	j.Handle("POST /swap/v1/swap", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Quote struct {
				InputMint, OutputMint, InAmount, OutAmount string
			} `json:"quoteResponse"`
			User string `json:"userPublicKey"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(400)
			return
		}
		user := solana.MustPublicKeyFromBase58(req.User)
		in, _ := strconv.ParseUint(req.Quote.InAmount, 10, 64)
		out, _ := strconv.ParseUint(req.Quote.OutAmount, 10, 64)
		inMint, outMint := solana.MustPublicKeyFromBase58(req.Quote.InputMint), solana.MustPublicKeyFromBase58(req.Quote.OutputMint)
		us, _, _ := solana.FindAssociatedTokenAddress(user, inMint)
		ud, _, _ := solana.FindAssociatedTokenAddress(user, outMint)
		ps, _, _ := solana.FindAssociatedTokenAddress(bank.PoolOwner, inMint)
		pd, _, _ := solana.FindAssociatedTokenAddress(bank.PoolOwner, outMint)
		data := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, in), out)
		ixs := []solana.Instruction{
			solana.NewInstruction(solana.SPLAssociatedTokenAccountProgramID, solana.AccountMetaSlice{
				solana.Meta(user).WRITE().SIGNER(), solana.Meta(ud).WRITE(), solana.Meta(user), solana.Meta(outMint), solana.Meta(solana.SystemProgramID), solana.Meta(solana.TokenProgramID)}, []byte{1}),
			solana.NewInstruction(bank.SwapProgram, solana.AccountMetaSlice{solana.Meta(user).SIGNER(), solana.Meta(us).WRITE(), solana.Meta(ud).WRITE(), solana.Meta(ps).WRITE(), solana.Meta(pd).WRITE()}, data),
		}
		if j.extra != nil {
			ixs = append(ixs, j.extra(user)...)
		}
		payer := user
		if j.payer != nil {
			payer = *j.payer
		}
		tx, err := solana.NewTransaction(ixs, bank.Blockhash(), solana.TransactionPayer(payer))
		if err != nil {
			w.WriteHeader(500)
			return
		}
		tx.Message.SetAddressTableLookups([]solana.MessageAddressTableLookup{})
		raw, _ := tx.MarshalBinary()
		_ = jsonEncode(w, map[string]any{"swapTransaction": base64.StdEncoding.EncodeToString(raw), "lastValidBlockHeight": 312000150, "prioritizationFeeLamports": 0})
	})
	return j
}

func TestSwapJupiter(t *testing.T) {
	bank, l, k := solLogin(t, 1_000_000_000)
	me := SolanaAddress(k)
	mintA := bank.NewMint(t, 6, me, 50_000_000)
	mintB := bank.NewMint(t, 9, bank.PoolOwner.String(), 1_000_000_000_000)
	bank.Fill(bank.PoolOwner.String(), mintA, 0)
	j := newJupiterFake(t, bank)
	l.Endpoints[EndpointJupiter] = j.URL + "/swap/v1"
	args := map[string]any{"chain": "solana", "from_token": mintA, "to_token": mintB, "amount": "2.5"}

	dry := map[string]any{"dry_run": true}
	for k, v := range args {
		dry[k] = v
	}
	out, err := call(t, l, "swap", dry)
	if err != nil || !strings.HasPrefix(field(out, "status"), "dry_run") || bank.Sent != 0 {
		t.Fatalf("dry run %q %v", out, err)
	}
	j.CheckLast(t, "/swap/v1/swap", nil)
	out, err = call(t, l, "swap", args)
	if err != nil || field(out, "status") != "success (confirmed)" || field(out, "buy_estimate") != "0.0075 "+mintB {
		t.Fatalf("swap %q %v", out, err)
	}
	if bank.TokenBalance(me, mintA) != 47_500_000 || bank.TokenBalance(me, mintB) != 7_500_000 {
		t.Fatalf("balances %d %d", bank.TokenBalance(me, mintA), bank.TokenBalance(me, mintB))
	}

	other := solana.NewWallet().PublicKey()
	sent := bank.Sent
	for _, tc := range []struct {
		name  string
		setup func()
		says  string
	}{
		{"another amount", func() { j.tamperQuote = func(q map[string]any) { q["inAmount"] = "9999" } }, "not the stated 2500000"},
		{"another payer", func() { j.payer = &other }, "not the wallet"},
		{"unstated SOL", func() {
			j.extra = func(user solana.PublicKey) []solana.Instruction {
				return []solana.Instruction{system.NewTransferInstruction(100_000_000, user, other).Build()}
			}
		}, "moves 0.1 SOL out of the wallet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			defer func() { j.tamperQuote, j.payer, j.extra = nil, nil, nil }()
			if _, err := call(t, l, "swap", args); err == nil || !strings.Contains(adapters.Message(err), tc.says) {
				t.Fatalf("%v, want %q", err, tc.says)
			}
		})
	}
	if bank.Sent != sent {
		t.Fatal("a refused swap executed")
	}
}
