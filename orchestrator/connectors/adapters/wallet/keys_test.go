package wallet

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Anvil's first dev account: a well-known test key, never funded anywhere real.
const (
	devKey  = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	devAddr = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
)

// solKey is a fixed Solana keypair for the tests: its base58 and JSON-array spellings.
func solKey(t testing.TB) (ed25519.PrivateKey, string, string) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	nums := make([]int, len(k))
	for i, b := range k {
		nums[i] = int(b)
	}
	arr, err := json.Marshal(nums)
	if err != nil {
		t.Fatal(err)
	}
	return k, Base58Encode(k), string(arr)
}

func TestParseEVMKey(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"bare hex", devKey, true},
		{"0x", "0x" + devKey, true},
		{"upper 0X and spaces", "  0X" + strings.ToUpper(devKey) + "\n", true},
		{"short", devKey[:62], false},
		{"long", devKey + "00", false},
		{"not hex", "zz" + devKey[2:], false},
		{"zero scalar", strings.Repeat("0", 64), false},
		{"above the curve order", strings.Repeat("f", 64), false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseEVMKey(tc.in)
			if tc.ok {
				if err != nil || EVMAddress(k).Hex() != devAddr {
					t.Fatalf("ParseEVMKey: %v %v", k, err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted a malformed key")
			}
			msg := err.Error()
			if !strings.Contains(msg, "credentials.evm_private_key") || !strings.Contains(msg, "64 hex digits") || (len(tc.in) > 8 && strings.Contains(msg, strings.TrimSpace(tc.in)[2:10])) {
				t.Fatalf("error %q", msg)
			}
		})
	}
}

func TestParseSolanaKey(t *testing.T) {
	k, b58s, arr := solKey(t)
	want := Base58Encode(k[32:])
	bad := append([]byte{}, k...)
	bad[40] ^= 1
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"base58", b58s, true},
		{"json array", arr, true},
		{"json array with spaces", " " + strings.ReplaceAll(arr, ",", ", ") + " ", true},
		{"public half does not match", Base58Encode(bad), false},
		{"32 bytes only", Base58Encode(k[:32]), false},
		{"not base58 (0OIl)", "0OIl" + b58s[4:], false},
		{"63 numbers", "[" + strings.Repeat("1,", 62) + "1]", false},
		{"a number over 255", "[" + strings.Repeat("1,", 63) + "256]", false},
		{"negative", "[" + strings.Repeat("1,", 63) + "-1]", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSolanaKey(tc.in)
			if tc.ok {
				if err != nil || SolanaAddress(got) != want {
					t.Fatalf("ParseSolanaKey: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted a malformed key")
			}
			msg := err.Error()
			if !strings.Contains(msg, "credentials.solana_private_key") || !strings.Contains(msg, "base58") || (len(tc.in) > 12 && strings.Contains(msg, tc.in[4:12])) {
				t.Fatalf("error %q", msg)
			}
		})
	}
}

func TestBase58(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte{}, ""},
		{[]byte{0}, "1"},
		{[]byte{0, 0, 1}, "112"},
		{[]byte("hello world"), "StV1DL6CwTryKyV"},
		{make([]byte, 32), "11111111111111111111111111111111"}, // the System Program's id
	} {
		if got := Base58Encode(tc.in); got != tc.want {
			t.Errorf("encode %x = %q, want %q", tc.in, got, tc.want)
		}
		if tc.want == "" {
			continue
		}
		if back, ok := Base58Decode(tc.want); !ok || !bytes.Equal(back, tc.in) {
			t.Errorf("decode %q = %x %v", tc.want, back, ok)
		}
	}
}

func TestAccountHint(t *testing.T) {
	k, _, _ := solKey(t)
	ek, _ := ParseEVMKey(devKey)
	sol := SolanaAddress(k)
	got := AccountHint(EVMAddress(ek), sol)
	want := fmt.Sprintf("0xf39f…2266 · %s…%s", sol[:4], sol[len(sol)-4:])
	if got != want {
		t.Fatalf("hint %q, want %q", got, want)
	}
}

// FuzzParseKeys: no input panics either parser, and an accepted key is one of the expected
// length whose error (on refusal) never repeats the input.
func FuzzParseKeys(f *testing.F) {
	_, b58s, arr := solKey(f)
	for _, s := range []string{devKey, "0x" + devKey, b58s, arr, "[", "[1,2]", "0x", "", strings.Repeat("1", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k, err := ParseEVMKey(s); err == nil {
			if k.D.BitLen() > 256 {
				t.Fatalf("accepted %q", s)
			}
		} else if len(s) >= 16 && strings.Contains(err.Error(), s) {
			t.Fatalf("the error repeats the input: %v", err)
		}
		if k, err := ParseSolanaKey(s); err == nil {
			if len(k) != ed25519.PrivateKeySize {
				t.Fatalf("accepted %q", s)
			}
		} else if len(s) >= 16 && strings.Contains(err.Error(), s) {
			t.Fatalf("the error repeats the input: %v", err)
		}
		if b, ok := Base58Decode(s); ok && Base58Encode(b) != s {
			t.Fatalf("base58 %q decodes to %x, which encodes back to %q", s, b, Base58Encode(b))
		}
	})
}
