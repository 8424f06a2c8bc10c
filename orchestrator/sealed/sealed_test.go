package sealed

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func newBox(t testing.TB) *Box {
	t.Helper()
	b, err := FromString(GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpenRoundTrip(t *testing.T) {
	b := newBox(t)
	for _, pt := range [][]byte{nil, []byte(""), []byte("x"), []byte(`{"api_key":"CG-abc123"}`), bytes.Repeat([]byte{0, 255}, 5000)} {
		s := b.Seal(pt, []byte("conn_1"))
		if bytes.Contains(s, []byte("CG-abc123")) {
			t.Fatal("sealed value contains the plaintext")
		}
		got, err := b.Open(s, []byte("conn_1"))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		if !bytes.Equal(got, pt) {
			t.Fatalf("round trip: got %q want %q", got, pt)
		}
	}
}

func TestSealUsesFreshNonces(t *testing.T) {
	b := newBox(t)
	a1, a2 := b.Seal([]byte("same"), nil), b.Seal([]byte("same"), nil)
	if bytes.Equal(a1, a2) {
		t.Fatal("two seals of the same value are identical: nonce reused")
	}
}

func TestOpenRefuses(t *testing.T) {
	b := newBox(t)
	good := b.Seal([]byte("secret"), []byte("conn_1"))
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 1
	badVersion := bytes.Clone(good)
	badVersion[0] = 9
	tests := []struct {
		name   string
		box    *Box
		sealed []byte
		ad     string
		want   string
	}{
		{"other key", newBox(t), good, "conn_1", "authentication failed"},
		{"other row", b, good, "conn_2", "authentication failed"},
		{"damaged", b, flipped, "conn_1", "authentication failed"},
		{"truncated", b, good[:10], "conn_1", "shorter than any sealed value"},
		{"empty", b, nil, "conn_1", "shorter than any sealed value"},
		{"unknown version", b, badVersion, "conn_1", "unknown format version 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.box.Open(tt.sealed, []byte(tt.ad))
			if !errors.Is(err, ErrOpen) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrOpen with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatal("error echoes the value")
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	raw := bytes.Repeat([]byte{0xab}, 32)
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"hex", hex.EncodeToString(raw), true},
		{"base64", GenerateKey(), true},
		{"base64 raw url", "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s", true},
		{"padded with spaces", "  " + GenerateKey() + "\n", true},
		{"empty", "", false},
		{"too short", "c2hvcnQ=", false},
		{"not base64 or hex", strings.Repeat("!", 44), false},
		{"hex of 31 bytes", hex.EncodeToString(raw[:31]), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKey(tt.in)
			if tt.ok != (err == nil) {
				t.Fatalf("ParseKey(%q) err=%v, want ok=%v", tt.in, err, tt.ok)
			}
			if err == nil && len(k) != KeySize {
				t.Fatalf("key of %d bytes", len(k))
			}
			if err != nil && (!strings.Contains(err.Error(), "openssl rand -base64 32") || (len(tt.in) > 8 && strings.Contains(err.Error(), tt.in))) {
				t.Fatalf("error should say how to make a key and never echo it: %v", err)
			}
		})
	}
}

func TestNewRefusesWrongSize(t *testing.T) {
	if _, err := New(make([]byte, 16)); err == nil || !strings.Contains(err.Error(), "must be 32 bytes") {
		t.Fatalf("16-byte key: %v", err)
	}
}

// FuzzOpen: Open never panics on any input and only ever opens what Seal wrote.
func FuzzOpen(f *testing.F) {
	b := newBox(f)
	f.Add(b.Seal([]byte("hello"), []byte("ad")), []byte("ad"))
	f.Add([]byte{1, 2, 3}, []byte(""))
	f.Add([]byte{}, []byte("x"))
	f.Fuzz(func(t *testing.T, sealed, ad []byte) {
		out, err := b.Open(sealed, ad)
		if err == nil && !bytes.Equal(out, []byte("hello")) {
			t.Fatalf("opened a value Seal never wrote: %q", out)
		}
	})
}
