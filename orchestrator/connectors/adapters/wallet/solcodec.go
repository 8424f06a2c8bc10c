package wallet

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"filippo.io/edwards25519"
)

// The Solana programs the wallet builds instructions for.
var (
	systemProgram = mustKey("11111111111111111111111111111111")
	tokenProgram  = mustKey("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
	token2022     = mustKey("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")
	ataProgram    = mustKey("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
)

// pubkey is a Solana account address.
type pubkey [32]byte

func (p pubkey) String() string { return Base58Encode(p[:]) }

// mustKey decodes a base58 address known at build time.
func mustKey(s string) pubkey {
	b, ok := Base58Decode(s)
	if !ok || len(b) != 32 {
		panic("wallet: bad built-in Solana address " + s)
	}
	return pubkey(b)
}

// parseKey decodes a base58 address.
func parseKey(s string) (pubkey, bool) {
	b, ok := Base58Decode(s)
	if !ok || len(b) != 32 {
		return pubkey{}, false
	}
	return pubkey(b), true
}

// onCurve reports whether p is a point of ed25519 (a program address must not be).
func onCurve(p pubkey) bool {
	_, err := new(edwards25519.Point).SetBytes(p[:])
	return err == nil
}

// findProgramAddress derives a program address from seeds: the first bump from 255 down whose
// hash is off the curve.
func findProgramAddress(program pubkey, seeds ...[]byte) (pubkey, error) {
	for bump := 255; bump >= 0; bump-- {
		h := sha256.New()
		for _, s := range seeds {
			h.Write(s)
		}
		h.Write([]byte{byte(bump)})
		h.Write(program[:])
		h.Write([]byte("ProgramDerivedAddress"))
		var p pubkey
		copy(p[:], h.Sum(nil))
		if !onCurve(p) {
			return p, nil
		}
	}
	return pubkey{}, errors.New("no program address off the curve")
}

// associatedTokenAccount is the owner's associated token account of a mint under a token program.
func associatedTokenAccount(owner, mint, program pubkey) (pubkey, error) {
	return findProgramAddress(ataProgram, owner[:], program[:], mint[:])
}

// meta is one account of an instruction.
type meta struct {
	key              pubkey
	signer, writable bool
}

// instruction is one instruction before compilation.
type instruction struct {
	program  pubkey
	accounts []meta
	data     []byte
}

// compileLegacy compiles instructions into a legacy message paid by payer: the accounts ordered
// writable signers, read-only signers, writable others, read-only others.
func compileLegacy(payer pubkey, blockhash pubkey, ixs []instruction) []byte {
	type acct struct {
		signer, writable bool
	}
	order := []pubkey{payer}
	flags := map[pubkey]*acct{payer: {signer: true, writable: true}}
	add := func(k pubkey, signer, writable bool) {
		a, ok := flags[k]
		if !ok {
			a = &acct{}
			flags[k] = a
			order = append(order, k)
		}
		a.signer = a.signer || signer
		a.writable = a.writable || writable
	}
	for _, ix := range ixs {
		for _, m := range ix.accounts {
			add(m.key, m.signer, m.writable)
		}
		add(ix.program, false, false)
	}
	var keys []pubkey
	var nSigned, nROSigned, nROUnsigned int
	for _, class := range []acct{{true, true}, {true, false}, {false, true}, {false, false}} {
		for _, k := range order {
			if a := flags[k]; a.signer == class.signer && a.writable == class.writable {
				keys = append(keys, k)
				switch {
				case class.signer:
					nSigned++
					if !class.writable {
						nROSigned++
					}
				case !class.writable:
					nROUnsigned++
				}
			}
		}
	}
	index := map[pubkey]byte{}
	for i, k := range keys {
		index[k] = byte(i)
	}
	msg := []byte{byte(nSigned), byte(nROSigned), byte(nROUnsigned)}
	msg = appendShortVec(msg, len(keys))
	for _, k := range keys {
		msg = append(msg, k[:]...)
	}
	msg = append(msg, blockhash[:]...)
	msg = appendShortVec(msg, len(ixs))
	for _, ix := range ixs {
		msg = append(msg, index[ix.program])
		msg = appendShortVec(msg, len(ix.accounts))
		for _, m := range ix.accounts {
			msg = append(msg, index[m.key])
		}
		msg = appendShortVec(msg, len(ix.data))
		msg = append(msg, ix.data...)
	}
	return msg
}

// appendShortVec appends Solana's compact-u16 length.
func appendShortVec(b []byte, n int) []byte {
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// readShortVec reads a compact-u16 length at b[off:], returning it and the new offset.
func readShortVec(b []byte, off int) (int, int, error) {
	n, shift := 0, 0
	for i := 0; i < 3; i++ {
		if off >= len(b) {
			return 0, 0, errors.New("the transaction ends inside a length")
		}
		c := b[off]
		off++
		n |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			return n, off, nil
		}
		shift += 7
	}
	return 0, 0, errors.New("a length is longer than compact-u16 allows")
}

// solTx is a decoded transaction: its signatures and the message they sign.
type solTx struct {
	sigs      [][64]byte
	message   []byte   // the bytes signed
	version   int      // -1 legacy, else the v0 version number
	signers   []pubkey // the first header.numRequiredSignatures static keys
	keys      []pubkey // every static account key
	blockhash pubkey
	ixs       []compiledIx
}

// compiledIx is one instruction as the message holds it: indexes into the account keys (a v0
// index past the static keys points into an address table).
type compiledIx struct {
	program  int
	accounts []int
	data     []byte
}

// maxTxSize is Solana's packet limit for a serialized transaction.
const maxTxSize = 1232

// decodeTx reads a serialized legacy or v0 transaction, checking its structure fully.
func decodeTx(b []byte) (*solTx, error) {
	if len(b) > maxTxSize {
		return nil, fmt.Errorf("the transaction is %d bytes; Solana's limit is %d", len(b), maxTxSize)
	}
	n, off, err := readShortVec(b, 0)
	if err != nil {
		return nil, err
	}
	if n == 0 || off+64*n > len(b) {
		return nil, errors.New("the transaction's signature list does not fit it")
	}
	tx := &solTx{version: -1}
	for i := 0; i < n; i++ {
		var s [64]byte
		copy(s[:], b[off:off+64])
		tx.sigs = append(tx.sigs, s)
		off += 64
	}
	tx.message = b[off:]
	m := tx.message
	p := 0
	if len(m) > 0 && m[0]&0x80 != 0 {
		tx.version = int(m[0] & 0x7f)
		if tx.version != 0 {
			return nil, fmt.Errorf("message version %d is not supported (legacy and v0 are)", tx.version)
		}
		p = 1
	}
	if p+3 > len(m) {
		return nil, errors.New("the message ends inside its header")
	}
	nReq, nROS, nROU := int(m[p]), int(m[p+1]), int(m[p+2])
	p += 3
	nKeys, p, err := readShortVec(m, p)
	if err != nil {
		return nil, err
	}
	if p+32*nKeys+32 > len(m) {
		return nil, errors.New("the message's account keys do not fit it")
	}
	if nReq != n || nReq > nKeys || nROS > nReq || nROU > nKeys-nReq {
		return nil, errors.New("the message header does not match its signatures and keys")
	}
	for i := 0; i < nKeys; i++ {
		var k pubkey
		copy(k[:], m[p:p+32])
		if i < nReq {
			tx.signers = append(tx.signers, k)
		}
		tx.keys = append(tx.keys, k)
		p += 32
	}
	copy(tx.blockhash[:], m[p:p+32])
	p += 32
	nIx, p, err := readShortVec(m, p)
	if err != nil {
		return nil, err
	}
	for i := 0; i < nIx; i++ {
		if p >= len(m) {
			return nil, errors.New("the message ends inside an instruction")
		}
		ix := compiledIx{program: int(m[p])}
		if ix.program >= nKeys {
			return nil, errors.New("an instruction's program is not among the static account keys")
		}
		p++
		na, q, err := readShortVec(m, p)
		if err != nil {
			return nil, err
		}
		if p = q + na; p > len(m) {
			return nil, errors.New("an instruction's accounts do not fit the message")
		}
		for _, a := range m[q:p] {
			ix.accounts = append(ix.accounts, int(a))
		}
		nd, q, err := readShortVec(m, p)
		if err != nil {
			return nil, err
		}
		if p = q + nd; p > len(m) {
			return nil, errors.New("an instruction's data does not fit the message")
		}
		ix.data = m[q:p]
		tx.ixs = append(tx.ixs, ix)
	}
	if tx.version == 0 {
		nLookups, q, err := readShortVec(m, p)
		if err != nil {
			return nil, err
		}
		p = q
		for i := 0; i < nLookups; i++ {
			if p += 32; p > len(m) {
				return nil, errors.New("an address table lookup does not fit the message")
			}
			for j := 0; j < 2; j++ {
				nIdx, q, err := readShortVec(m, p)
				if err != nil {
					return nil, err
				}
				if p = q + nIdx; p > len(m) {
					return nil, errors.New("an address table lookup does not fit the message")
				}
			}
		}
	}
	if p != len(m) {
		return nil, errors.New("the message has bytes after its end")
	}
	return tx, nil
}

// lamportsOut sums the lamports the system program's Transfer and CreateAccount instructions
// move out of from; false when another system instruction spends from it (which it cannot sum).
func (tx *solTx) lamportsOut(from pubkey) (uint64, bool) {
	var sum uint64
	for _, ix := range tx.ixs {
		if tx.keys[ix.program] != systemProgram || len(ix.accounts) == 0 || ix.accounts[0] >= len(tx.keys) || tx.keys[ix.accounts[0]] != from {
			continue
		}
		if len(ix.data) < 12 {
			return 0, false
		}
		switch binary.LittleEndian.Uint32(ix.data) {
		case 0, 2: // CreateAccount, Transfer: lamports at 4..12
			v := binary.LittleEndian.Uint64(ix.data[4:12])
			if sum+v < sum {
				return 0, false
			}
			sum += v
		default:
			return 0, false
		}
	}
	return sum, true
}

// encode writes the transaction back with its signatures.
func (tx *solTx) encode() []byte {
	out := appendShortVec(nil, len(tx.sigs))
	for _, s := range tx.sigs {
		out = append(out, s[:]...)
	}
	return append(out, tx.message...)
}

// le64 is n as 8 little-endian bytes.
func le64(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }
