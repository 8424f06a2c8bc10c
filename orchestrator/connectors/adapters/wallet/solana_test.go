package wallet

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	bin "github.com/gagliardetto/binary"
	solana "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
)

// solLogin is a Wallet login whose solana endpoint is a bank holding the wallet's lamports.
func solLogin(t *testing.T, lamports uint64) (*wallettest.Solana, adapters.Login, ed25519.PrivateKey) {
	bank := wallettest.NewSolana(t, alchemyKey)
	k, _, _ := solKey(t)
	bank.Fund(SolanaAddress(k), lamports)
	return bank, login(t, bank.URL, "http://127.0.0.1:1", goodCreds(t)), k
}

// TestSolanaCodec: the wallet's message compiler and ATA derivation agree with solana-go's.
func TestSolanaCodec(t *testing.T) {
	k, _, _ := solKey(t)
	var from pubkey
	copy(from[:], k[32:])
	for i := range 20 {
		owner := solana.NewWallet().PublicKey()
		mint := solana.NewWallet().PublicKey()
		want, _, err := solana.FindAssociatedTokenAddress(owner, mint)
		got, err2 := associatedTokenAccount(pubkey(owner), pubkey(mint), tokenProgram)
		if err != nil || err2 != nil || got.String() != want.String() {
			t.Fatalf("ATA %d: %s, solana-go %s (%v %v)", i, got, want, err, err2)
		}
	}
	to, mint, dst := pubkey(solana.NewWallet().PublicKey()), pubkey(solana.NewWallet().PublicKey()), pubkey(solana.NewWallet().PublicKey())
	var bh pubkey
	bh[0] = 9
	msg := compileLegacy(from, bh, []instruction{
		{program: systemProgram, accounts: []meta{{from, true, true}, {to, false, true}}, data: append([]byte{2, 0, 0, 0}, le64(7)...)},
		{program: tokenProgram, accounts: []meta{{dst, false, true}, {mint, false, false}, {to, false, true}, {from, true, false}}, data: []byte{12, 1, 0, 0, 0, 0, 0, 0, 0, 6}},
	})
	tx := &solTx{sigs: [][64]byte{{}}, message: msg}
	copy(tx.sigs[0][:], ed25519.Sign(k, msg))
	raw := tx.encode()
	parsed, err := solana.TransactionFromDecoder(bin.NewBinDecoder(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := parsed.Message.Header
	if h.NumRequiredSignatures != 1 || h.NumReadonlySignedAccounts != 0 || h.NumReadonlyUnsignedAccounts != 3 || len(parsed.Message.AccountKeys) != 6 {
		t.Fatalf("header %+v keys %v", h, parsed.Message.AccountKeys)
	}
	if w, _ := parsed.Message.IsWritable(solana.PublicKey(mint)); w {
		t.Fatal("the mint is writable")
	}
	back, err := parsed.MarshalBinary()
	if err != nil || !bytes.Equal(back, raw) {
		t.Fatalf("solana-go re-encodes differently: %v", err)
	}
	ours, err := decodeTx(raw)
	if err != nil || ours.signers[0] != from || !bytes.Equal(ours.encode(), raw) {
		t.Fatalf("decodeTx: %v", err)
	}
}

func TestSolanaSendSOL(t *testing.T) {
	bank, l, k := solLogin(t, 3_000_000_000)
	to := solana.NewWallet().PublicKey().String()
	out, err := call(t, l, "send", map[string]any{"chain": "solana", "to": to, "amount": "1.000000001"})
	if err != nil || field(out, "status") != "success (confirmed)" || !strings.HasPrefix(field(out, "explorer"), "https://solscan.io/tx/") {
		t.Fatalf("send %q %v", out, err)
	}
	if bank.Balance(to) != 1_000_000_001 || bank.Balance(SolanaAddress(k)) != 3_000_000_000-1_000_000_001-5000 {
		t.Fatalf("balances %d %d", bank.Balance(to), bank.Balance(SolanaAddress(k)))
	}
	dry, err := call(t, l, "send", map[string]any{"chain": "solana", "to": to, "amount": "0.5", "dry_run": true})
	if err != nil || !strings.HasPrefix(field(dry, "status"), "dry_run") || bank.Balance(to) != 1_000_000_001 {
		t.Fatalf("dry run %q %v", dry, err)
	}
	for _, tc := range []struct{ amount, says string }{
		{"5", "less than the 5.000005 SOL"},
		{"0.0000000001", "10 decimal places; this asset has 9"},
		{"-1", "negative"},
	} {
		if _, err := call(t, l, "send", map[string]any{"chain": "solana", "to": to, "amount": tc.amount}); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v", tc.amount, err)
		}
	}
	if _, err := call(t, l, "send", map[string]any{"chain": "solana", "to": "0xabc", "amount": "1"}); err == nil || !strings.Contains(err.Error(), "not a Solana address") {
		t.Fatalf("bad address: %v", err)
	}
	if bank.Sent != 1 {
		t.Fatalf("%d transactions executed, want 1", bank.Sent)
	}
	bal, err := call(t, l, "get_balance", map[string]any{"chain": "solana", "address": to})
	if err != nil || !strings.Contains(bal, "\tnative\tSOL\t1.000000001\t9\t1000000001") {
		t.Fatalf("get_balance %q %v", bal, err)
	}
}

func TestSolanaSendSPL(t *testing.T) {
	bank, l, k := solLogin(t, 1_000_000_000)
	me := SolanaAddress(k)
	mint := bank.NewMint(t, 6, me, 10_000_000)
	to := solana.NewWallet().PublicKey().String()
	out, err := call(t, l, "send", map[string]any{"chain": "solana", "to": to, "amount": "1.5", "token": mint})
	if err != nil || field(out, "status") != "success (confirmed)" || !strings.Contains(field(out, "creates"), "the recipient's token account") {
		t.Fatalf("send %q %v", out, err)
	}
	if bank.TokenBalance(to, mint) != 1_500_000 || bank.TokenBalance(me, mint) != 8_500_000 {
		t.Fatalf("token balances %d %d", bank.TokenBalance(to, mint), bank.TokenBalance(me, mint))
	}
	// The account exists now: a second send does not create it again.
	out, err = call(t, l, "send", map[string]any{"chain": "solana", "to": to, "amount": "0.000001", "token": mint})
	if err != nil || field(out, "creates") != "" || bank.TokenBalance(to, mint) != 1_500_001 {
		t.Fatalf("second send %q %v", out, err)
	}
	if _, err := call(t, l, "send", map[string]any{"chain": "solana", "to": to, "amount": "9", "token": mint}); err == nil || !strings.Contains(err.Error(), "less than 9") {
		t.Fatalf("too much: %v", err)
	}
	bal, err := call(t, l, "get_balance", map[string]any{"chain": "solana", "token": mint})
	if err != nil || !strings.Contains(bal, "\t8.499999\t6\t8499999") {
		t.Fatalf("get_balance %q %v", bal, err)
	}
}

// transfer is a solana-go transaction moving lamports from one key to another, paid by payer.
func transfer(t *testing.T, bh solana.Hash, payer, from solana.PublicKey, to solana.PublicKey, lamports uint64, v0 bool) *solana.Transaction {
	tx, err := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(lamports, from, to).Build()}, bh, solana.TransactionPayer(payer))
	if err != nil {
		t.Fatal(err)
	}
	if v0 {
		tx.Message.SetAddressTableLookups([]solana.MessageAddressTableLookup{})
	}
	return tx
}

func b64(t *testing.T, tx *solana.Transaction) string {
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

func TestSubmit(t *testing.T) {
	bank, l, k := solLogin(t, 2_000_000_000)
	me := solana.PublicKeyFromBytes(k[32:])
	to := solana.NewWallet().PublicKey()
	for i, v0 := range []bool{false, true} {
		tx := transfer(t, bank.Blockhash(), me, me, to, 100_000, v0)
		out, err := call(t, l, "submit", map[string]any{"transaction": b64(t, tx)})
		if err != nil || field(out, "status") != "success (confirmed)" {
			t.Fatalf("v0=%v: %q %v", v0, out, err)
		}
		if want := map[bool]string{false: "legacy", true: "v0"}[v0]; field(out, "version") != want {
			t.Fatalf("version %q, want %s", field(out, "version"), want)
		}
		if bank.Balance(to.String()) != uint64(100_000*(i+1)) {
			t.Fatalf("the recipient holds %d", bank.Balance(to.String()))
		}
	}

	// Another signer that already signed: the wallet fills its own slot only.
	other := solana.NewWallet()
	bank.Fund(other.PublicKey().String(), 1_000_000)
	tx := transfer(t, bank.Blockhash(), me, other.PublicKey(), to, 50_000, true)
	if _, err := tx.PartialSign(func(k solana.PublicKey) *solana.PrivateKey {
		if k.Equals(other.PublicKey()) {
			return &other.PrivateKey
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := call(t, l, "submit", map[string]any{"transaction": b64(t, tx)}); err != nil || field(out, "signatures") != "2" {
		t.Fatalf("co-signed: %q %v", out, err)
	}

	sent := bank.Sent
	for _, tc := range []struct {
		name, tx, says string
	}{
		{"not the wallet's", b64(t, transfer(t, bank.Blockhash(), other.PublicKey(), other.PublicKey(), to, 1, false)), "does not name the wallet"},
		{"another signature missing", b64(t, transfer(t, bank.Blockhash(), me, other.PublicKey(), to, 1, false)), "needs the signature of " + other.PublicKey().String()},
		{"not base64", "%%%", "not base64"},
		{"truncated", b64(t, transfer(t, bank.Blockhash(), me, me, to, 1, false))[:60], "not a Solana transaction"},
	} {
		if _, err := call(t, l, "submit", map[string]any{"transaction": tc.tx}); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.says)
		}
	}
	stale := transfer(t, bank.Blockhash(), me, me, to, 1, false)
	bank.ExpireBlockhashes()
	if _, err := call(t, l, "submit", map[string]any{"transaction": b64(t, stale)}); err == nil || !strings.Contains(err.Error(), "blockhash is stale") {
		t.Fatalf("stale: %v", err)
	}
	if bank.Sent != sent {
		t.Fatalf("a refused transaction executed")
	}
}

// FuzzDecodeTx: no input panics the decoder, and what it accepts encodes back byte for byte.
func FuzzDecodeTx(f *testing.F) {
	k, _, _ := solKey(f)
	me := solana.PublicKeyFromBytes(k[32:])
	for _, v0 := range []bool{false, true} {
		tx, _ := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(1, me, me).Build()}, solana.Hash{1}, solana.TransactionPayer(me))
		if v0 {
			tx.Message.SetAddressTableLookups([]solana.MessageAddressTableLookup{{AccountKey: me, WritableIndexes: []uint8{1}, ReadonlyIndexes: []uint8{2}}})
		}
		raw, _ := tx.MarshalBinary()
		f.Add(raw)
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := decodeTx(b)
		if err != nil {
			return
		}
		if !bytes.Equal(tx.encode(), b) {
			t.Fatalf("%x re-encodes as %x", b, tx.encode())
		}
	})
}
