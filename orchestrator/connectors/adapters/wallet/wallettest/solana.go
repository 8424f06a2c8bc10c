package wallettest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	bin "github.com/gagliardetto/binary"
	solana "github.com/gagliardetto/solana-go"
)

// Solana is a Solana JSON-RPC bank on loopback that checks the key in the path and decodes
// every transaction with solana-go (an implementation independent of the wallet's), verifies
// every ed25519 signature, refuses a stale blockhash, and executes system transfers, associated
// token account creation (checking the derived address) and SPL TransferChecked.
type Solana struct {
	*httptest.Server
	mu        sync.Mutex
	Lamports  map[string]uint64
	Mints     map[string]uint8      // decimals by mint (Token program)
	Tokens    map[string]*TokenAcct // token accounts by address
	Slot      uint64
	blockhash solana.Hash
	valid     map[solana.Hash]bool
	statuses  map[string]string // signature → "" (success) or its error
	Sent      int               // transactions executed
	Rejected  []string          // why each refused transaction was refused
	// SwapProgram is a test pool program: data (amount in, amount out) as two u64, accounts
	// [user (signer), user's source, user's destination, pool's source, pool's destination].
	SwapProgram solana.PublicKey
	// PoolOwner owns the pool's token accounts.
	PoolOwner solana.PublicKey
}

// TokenAcct is an SPL token account.
type TokenAcct struct {
	Mint, Owner string
	Amount      uint64
}

// NewSolana starts the bank; key "" accepts any path.
func NewSolana(t testing.TB, key string) *Solana {
	s := &Solana{Lamports: map[string]uint64{}, Mints: map[string]uint8{}, Tokens: map[string]*TokenAcct{}, Slot: 312_000_000,
		valid: map[solana.Hash]bool{}, statuses: map[string]string{}, SwapProgram: solana.NewWallet().PublicKey(), PoolOwner: solana.NewWallet().PublicKey()}
	s.NewBlockhash()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && !strings.HasSuffix(r.URL.Path, "/"+key) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Must be authenticated!"}}`))
			return
		}
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		res, rerr := s.handle(req.Method, req.Params)
		s.mu.Unlock()
		out := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if rerr != nil {
			out["error"] = rerr
		} else {
			out["result"] = res
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.Close)
	return s
}

// Fund sets an address's lamports.
func (s *Solana) Fund(addr string, lamports uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Lamports[addr] = lamports
}

// NewMint adds a Token-program mint and gives owner an associated token account holding amount.
func (s *Solana) NewMint(t testing.TB, decimals uint8, owner string, amount uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	mint := solana.NewWallet().PublicKey()
	s.Mints[mint.String()] = decimals
	ata, _, err := solana.FindAssociatedTokenAddress(solana.MustPublicKeyFromBase58(owner), mint)
	if err != nil {
		t.Fatal(err)
	}
	s.Tokens[ata.String()] = &TokenAcct{Mint: mint.String(), Owner: owner, Amount: amount}
	return mint.String()
}

// Fill gives owner's associated token account of mint amount more, creating it when missing.
func (s *Solana) Fill(owner, mint string, amount uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ata, _, _ := solana.FindAssociatedTokenAddress(solana.MustPublicKeyFromBase58(owner), solana.MustPublicKeyFromBase58(mint))
	a := s.Tokens[ata.String()]
	if a == nil {
		a = &TokenAcct{Mint: mint, Owner: owner}
		s.Tokens[ata.String()] = a
	}
	a.Amount += amount
	return ata.String()
}

// TokenBalance is owner's associated token account balance of mint (0 when it has none).
func (s *Solana) TokenBalance(owner, mint string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ata, _, _ := solana.FindAssociatedTokenAddress(solana.MustPublicKeyFromBase58(owner), solana.MustPublicKeyFromBase58(mint))
	if a := s.Tokens[ata.String()]; a != nil {
		return a.Amount
	}
	return 0
}

// Balance is an address's lamports.
func (s *Solana) Balance(addr string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Lamports[addr]
}

// NewBlockhash makes a fresh blockhash the latest, keeping the older ones valid.
func (s *Solana) NewBlockhash() solana.Hash {
	var h solana.Hash
	_, _ = rand.Read(h[:])
	s.blockhash = h
	s.valid[h] = true
	return h
}

// ExpireBlockhashes makes every blockhash so far stale.
func (s *Solana) ExpireBlockhashes() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.valid = map[solana.Hash]bool{}
	s.NewBlockhash()
}

// Blockhash is the latest blockhash.
func (s *Solana) Blockhash() solana.Hash {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blockhash
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func param[T any](ps []json.RawMessage, i int) T {
	var v T
	if i < len(ps) {
		_ = json.Unmarshal(ps[i], &v)
	}
	return v
}

func (s *Solana) ctx(v any) map[string]any {
	return map[string]any{"context": map[string]any{"slot": s.Slot}, "value": v}
}

func (s *Solana) handle(method string, ps []json.RawMessage) (any, *rpcErr) {
	switch method {
	case "getSlot":
		return s.Slot, nil
	case "getBalance":
		return s.ctx(s.Lamports[param[string](ps, 0)]), nil
	case "getLatestBlockhash":
		return s.ctx(map[string]any{"blockhash": s.blockhash.String(), "lastValidBlockHeight": s.Slot + 150}), nil
	case "getAccountInfo":
		a := param[string](ps, 0)
		if d, ok := s.Mints[a]; ok {
			return s.ctx(map[string]any{"owner": solana.TokenProgramID.String(), "lamports": 1461600, "executable": false,
				"data": map[string]any{"program": "spl-token", "parsed": map[string]any{"type": "mint", "info": map[string]any{"decimals": d, "isInitialized": true}}}}), nil
		}
		if t := s.Tokens[a]; t != nil {
			return s.ctx(map[string]any{"owner": solana.TokenProgramID.String(), "lamports": 2039280, "executable": false,
				"data": map[string]any{"program": "spl-token", "parsed": map[string]any{"type": "account", "info": map[string]any{
					"mint": t.Mint, "owner": t.Owner, "tokenAmount": map[string]any{"amount": fmt.Sprint(t.Amount), "decimals": s.Mints[t.Mint]}}}}}), nil
		}
		return s.ctx(nil), nil
	case "getTokenSupply":
		d, ok := s.Mints[param[string](ps, 0)]
		if !ok {
			return nil, &rpcErr{-32602, "Invalid param: not a Token mint"}
		}
		return s.ctx(map[string]any{"amount": "0", "decimals": d}), nil
	case "getTokenAccountsByOwner":
		owner, filter := param[string](ps, 0), param[map[string]string](ps, 1)
		var out []any
		for addr, t := range s.Tokens {
			if t.Owner == owner && t.Mint == filter["mint"] {
				out = append(out, map[string]any{"pubkey": addr, "account": map[string]any{"data": map[string]any{"parsed": map[string]any{"info": map[string]any{
					"tokenAmount": map[string]any{"amount": fmt.Sprint(t.Amount), "decimals": s.Mints[t.Mint]}}}}}})
			}
		}
		return s.ctx(out), nil
	case "simulateTransaction", "sendTransaction":
		tx, err := s.decode(param[string](ps, 0))
		if err != nil {
			s.Rejected = append(s.Rejected, err.Error())
			return nil, &rpcErr{-32602, "invalid transaction: " + err.Error()}
		}
		if !s.valid[tx.Message.RecentBlockhash] {
			s.Rejected = append(s.Rejected, "stale blockhash")
			if method == "simulateTransaction" {
				return s.ctx(map[string]any{"err": "BlockhashNotFound", "logs": []string{}}), nil
			}
			return nil, &rpcErr{-32002, "Transaction simulation failed: Blockhash not found"}
		}
		// Execute on a copy; keep it only for sendTransaction.
		lam, tok := clone(s.Lamports), cloneTokens(s.Tokens)
		logs, xerr := execute(tx, lam, tok, s.Mints, s.SwapProgram)
		if method == "simulateTransaction" {
			var e any
			if xerr != nil {
				e = map[string]any{"InstructionError": []any{0, xerr.Error()}}
			}
			return s.ctx(map[string]any{"err": e, "logs": logs}), nil
		}
		if xerr != nil {
			s.Rejected = append(s.Rejected, xerr.Error())
			return nil, &rpcErr{-32002, "Transaction simulation failed: " + xerr.Error()}
		}
		s.Lamports, s.Tokens = lam, tok
		s.Sent++
		sig := tx.Signatures[0].String()
		s.statuses[sig] = ""
		return sig, nil
	case "getSignatureStatuses":
		var out []any
		for _, sig := range param[[]string](ps, 0) {
			if e, ok := s.statuses[sig]; ok {
				var err any
				if e != "" {
					err = e
				}
				out = append(out, map[string]any{"slot": s.Slot, "confirmations": nil, "err": err, "confirmationStatus": "confirmed"})
			} else {
				out = append(out, nil)
			}
		}
		return s.ctx(out), nil
	}
	return nil, &rpcErr{-32601, "Method not found"}
}

// decode reads a base64 transaction with solana-go and verifies every signature.
func (s *Solana) decode(b64 string) (*solana.Transaction, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, err
	}
	tx, err := solana.TransactionFromDecoder(bin.NewBinDecoder(raw))
	if err != nil {
		return nil, err
	}
	msg, err := tx.Message.MarshalBinary()
	if err != nil {
		return nil, err
	}
	n := int(tx.Message.Header.NumRequiredSignatures)
	if len(tx.Signatures) != n {
		return nil, fmt.Errorf("%d signatures for %d signers", len(tx.Signatures), n)
	}
	for i := 0; i < n; i++ {
		if !ed25519.Verify(ed25519.PublicKey(tx.Message.AccountKeys[i][:]), msg, tx.Signatures[i][:]) {
			return nil, fmt.Errorf("signature %d (of %s) does not verify", i, tx.Message.AccountKeys[i])
		}
	}
	return tx, nil
}

func clone(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cloneTokens(m map[string]*TokenAcct) map[string]*TokenAcct {
	out := make(map[string]*TokenAcct, len(m))
	for k, v := range m {
		c := *v
		out[k] = &c
	}
	return out
}

// execute runs the instructions the bank knows, charging 5000 lamports per signature.
func execute(tx *solana.Transaction, lam map[string]uint64, tok map[string]*TokenAcct, mints map[string]uint8, swapProgram solana.PublicKey) ([]string, error) {
	keys := tx.Message.AccountKeys
	n := int(tx.Message.Header.NumRequiredSignatures)
	payer := keys[0].String()
	fee := uint64(5000 * n)
	if lam[payer] < fee {
		return nil, errors.New("insufficient funds for fee")
	}
	lam[payer] -= fee
	signer := func(i uint16) bool { return int(i) < n }
	var logs []string
	for _, ix := range tx.Message.Instructions {
		if int(ix.ProgramIDIndex) >= len(keys) {
			return logs, errors.New("program index out of range")
		}
		prog := keys[ix.ProgramIDIndex]
		acct := func(i int) (string, uint16, error) {
			if i >= len(ix.Accounts) || int(ix.Accounts[i]) >= len(keys) {
				return "", 0, errors.New("missing account")
			}
			return keys[ix.Accounts[i]].String(), ix.Accounts[i], nil
		}
		logs = append(logs, "Program "+prog.String()+" invoke [1]")
		switch {
		case prog.Equals(solana.SystemProgramID):
			if len(ix.Data) != 12 || binary.LittleEndian.Uint32(ix.Data) != 2 {
				return logs, errors.New("unsupported system instruction")
			}
			from, fi, err1 := acct(0)
			to, _, err2 := acct(1)
			if err := errors.Join(err1, err2); err != nil {
				return logs, err
			}
			if !signer(fi) {
				return logs, errors.New("the transfer's source did not sign")
			}
			v := binary.LittleEndian.Uint64(ix.Data[4:])
			if lam[from] < v {
				return logs, errors.New("custom program error: 0x1 (insufficient lamports)")
			}
			lam[from] -= v
			lam[to] += v
		case prog.Equals(solana.SPLAssociatedTokenAccountProgramID):
			payerA, pi, e1 := acct(0)
			ata, _, e2 := acct(1)
			owner, _, e3 := acct(2)
			mint, _, e4 := acct(3)
			if err := errors.Join(e1, e2, e3, e4); err != nil {
				return logs, err
			}
			want, _, err := solana.FindAssociatedTokenAddress(solana.MustPublicKeyFromBase58(owner), solana.MustPublicKeyFromBase58(mint))
			if err != nil || want.String() != ata {
				return logs, errors.New("Provided seeds do not result in a valid address")
			}
			if !signer(pi) {
				return logs, errors.New("the payer did not sign")
			}
			if _, ok := mints[mint]; !ok {
				return logs, errors.New("not a mint")
			}
			if tok[ata] == nil {
				if lam[payerA] < 2039280 {
					return logs, errors.New("insufficient lamports for rent")
				}
				lam[payerA] -= 2039280
				tok[ata] = &TokenAcct{Mint: mint, Owner: owner}
			}
		case prog.Equals(solana.TokenProgramID):
			if len(ix.Data) != 10 || ix.Data[0] != 12 {
				return logs, errors.New("unsupported token instruction")
			}
			src, _, e1 := acct(0)
			mint, _, e2 := acct(1)
			dst, _, e3 := acct(2)
			owner, oi, e4 := acct(3)
			if err := errors.Join(e1, e2, e3, e4); err != nil {
				return logs, err
			}
			v, d := binary.LittleEndian.Uint64(ix.Data[1:9]), ix.Data[9]
			s, t := tok[src], tok[dst]
			switch {
			case s == nil || t == nil:
				return logs, errors.New("invalid account data for instruction")
			case s.Mint != mint || t.Mint != mint || mints[mint] != d:
				return logs, errors.New("custom program error: 0x3 (mint mismatch)")
			case s.Owner != owner || !signer(oi):
				return logs, errors.New("custom program error: 0x4 (owner does not match)")
			case s.Amount < v:
				return logs, errors.New("custom program error: 0x1 (insufficient funds)")
			}
			s.Amount -= v
			t.Amount += v
		case prog.Equals(swapProgram):
			if len(ix.Data) != 16 {
				return logs, errors.New("swap: bad instruction data")
			}
			user, ui, e1 := acct(0)
			us, _, e2 := acct(1)
			ud, _, e3 := acct(2)
			ps, _, e4 := acct(3)
			pd, _, e5 := acct(4)
			if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
				return logs, err
			}
			in, out := binary.LittleEndian.Uint64(ix.Data[:8]), binary.LittleEndian.Uint64(ix.Data[8:])
			a, b, c, d := tok[us], tok[ud], tok[ps], tok[pd]
			switch {
			case !signer(ui):
				return logs, errors.New("swap: the user did not sign")
			case a == nil || b == nil || c == nil || d == nil:
				return logs, errors.New("swap: a token account does not exist")
			case a.Owner != user || b.Owner != user || a.Mint != c.Mint || b.Mint != d.Mint:
				return logs, errors.New("swap: accounts do not match")
			case a.Amount < in || d.Amount < out:
				return logs, errors.New("swap: insufficient funds")
			}
			a.Amount -= in
			c.Amount += in
			d.Amount -= out
			b.Amount += out
		default:
			return logs, fmt.Errorf("unsupported program %s", prog)
		}
		logs = append(logs, "Program "+prog.String()+" success")
	}
	return logs, nil
}
