package wallet

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// The token form's fields of a Wallet login.
const (
	FieldEVMKey     = "evm_private_key"
	FieldSolanaKey  = "solana_private_key"
	FieldAlchemyKey = "alchemy_api_key"
	FieldOpenSeaKey = "opensea_api_key"
	FieldUniswapKey = "uniswap_api_key"
)

// keyError is the 422 of a malformed key: it names the field and the expected form, never the value.
func keyError(field, form string) error {
	return &adapters.Error{Kind: adapters.KindInvalid, Provider: provider, Msg: "credentials." + field + " is not " + form + "; paste the key again (its value is not shown here)"}
}

// ParseEVMKey reads an EVM private key: 64 hex digits, with or without 0x, a valid secp256k1 scalar.
func ParseEVMKey(s string) (*ecdsa.PrivateKey, error) {
	const form = "an EVM private key (64 hex digits, with or without 0x)"
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if len(s) != 64 {
		return nil, keyError(FieldEVMKey, form)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, keyError(FieldEVMKey, form)
	}
	defer clear(b)
	k, err := crypto.ToECDSA(b)
	if err != nil {
		return nil, keyError(FieldEVMKey, form+" on the secp256k1 curve")
	}
	return k, nil
}

// EVMAddress is the address of an EVM key.
func EVMAddress(k *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(k.PublicKey) }

// ParseSolanaKey reads a Solana keypair: the base58 of its 64 bytes (what wallets export) or the
// JSON array of its 64 bytes (what solana-keygen writes); the public half must match the seed.
func ParseSolanaKey(s string) (ed25519.PrivateKey, error) {
	const form = "a Solana private key (the base58 of the 64-byte keypair, or its JSON array of 64 numbers)"
	s = strings.TrimSpace(s)
	var raw []byte
	if strings.HasPrefix(s, "[") {
		var nums []int
		if err := json.Unmarshal([]byte(s), &nums); err != nil || len(nums) != ed25519.PrivateKeySize {
			return nil, keyError(FieldSolanaKey, form)
		}
		raw = make([]byte, len(nums))
		for i, n := range nums {
			if n < 0 || n > 255 {
				clear(raw)
				return nil, keyError(FieldSolanaKey, form)
			}
			raw[i] = byte(n)
		}
	} else {
		var ok bool
		if raw, ok = Base58Decode(s); !ok || len(raw) != ed25519.PrivateKeySize {
			clear(raw)
			return nil, keyError(FieldSolanaKey, form)
		}
	}
	k := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
	match := string(k[32:]) == string(raw[32:])
	clear(raw)
	if !match {
		return nil, keyError(FieldSolanaKey, form+" whose public half matches its seed")
	}
	return k, nil
}

// SolanaAddress is the base58 public key of a Solana keypair.
func SolanaAddress(k ed25519.PrivateKey) string { return Base58Encode(k[32:]) }

// b58 is Bitcoin's base58 alphabet, which Solana uses.
const b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// Base58Encode encodes b in base58, each leading zero byte as a leading '1'.
func Base58Encode(b []byte) string {
	n := new(big.Int).SetBytes(b)
	var out []byte
	mod, radix := new(big.Int), big.NewInt(58)
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		out = append(out, b58[mod.Int64()])
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// Base58Decode decodes a base58 string; false on a character outside the alphabet or an empty one.
func Base58Decode(s string) ([]byte, bool) {
	if s == "" || len(s) > 256 {
		return nil, false
	}
	n, radix := new(big.Int), big.NewInt(58)
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(b58, s[i])
		if d < 0 {
			return nil, false
		}
		n.Mul(n, radix).Add(n, big.NewInt(int64(d)))
	}
	return append(make([]byte, zeros), n.Bytes()...), true
}

// shortHint is an address truncated for account_hint: its first 6 and last 4 characters.
func shortHint(s string, head int) string {
	if len(s) <= head+4+1 {
		return s
	}
	return s[:head] + "…" + s[len(s)-4:]
}

// AccountHint is the two addresses truncated, "0x12ab…9f0e · 7xKX…AsU".
func AccountHint(evm common.Address, sol string) string {
	return shortHint(strings.ToLower(evm.Hex()), 6) + " · " + shortHint(sol, 4)
}
