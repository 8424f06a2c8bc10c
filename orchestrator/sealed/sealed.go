// Package sealed encrypts small secrets at rest (connection credentials, stored secret values) with
// AES-256-GCM under the box's GUILDS_SECRET_KEY.
//
// A sealed value is one version byte (1), a 12-byte random nonce, then the GCM ciphertext and tag.
// Callers bind each value to where it is stored with additional data (for example the connection
// id), so a sealed value copied onto another row does not open there.
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeyVar is the variable that holds the key.
const KeyVar = "GUILDS_SECRET_KEY"

// KeySize is the key length in bytes (AES-256).
const KeySize = 32

// version is the first byte of every sealed value this package writes.
const version = 1

// nonceSize is GCM's standard nonce length.
const nonceSize = 12

// ErrOpen is wrapped by Open when a value does not open: a wrong key, wrong additional data, a
// damaged or truncated value, or one not written by Seal.
var ErrOpen = errors.New("sealed value does not open")

// Box seals and opens values under one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%s must be %d bytes, got %d", KeyVar, KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	return &Box{aead: aead}, nil
}

// ParseKey decodes a key written as 64 hex digits or as base64 (standard or URL alphabet, with or
// without padding) of 32 bytes. The error says how to make one and never echoes the value.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%s is empty; generate one with: openssl rand -base64 32", KeyVar)
	}
	if len(s) == 2*KeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%s must be %d bytes written as 64 hex digits or base64 (%d characters given); generate one with: openssl rand -base64 32", KeyVar, KeySize, len(s))
}

// FromString is ParseKey then New.
func FromString(s string) (*Box, error) {
	key, err := ParseKey(s)
	if err != nil {
		return nil, err
	}
	return New(key)
}

// GenerateKey returns a fresh random key in base64, the form ParseKey reads (for tests and setup).
func GenerateKey() string {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the runtime guarantees this never happens
	}
	return base64.StdEncoding.EncodeToString(b)
}

// Seal encrypts plaintext bound to ad (which is authenticated, not stored) under a fresh nonce.
func (b *Box) Seal(plaintext, ad []byte) []byte {
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(plaintext)+b.aead.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the runtime guarantees this never happens
	}
	return b.aead.Seal(out, out[1:1+nonceSize], plaintext, ad)
}

// Open decrypts a value Seal wrote with the same ad. Any failure wraps ErrOpen and says which
// check failed, never the value.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	if len(sealed) < 1+nonceSize+b.aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes is shorter than any sealed value", ErrOpen, len(sealed))
	}
	if sealed[0] != version {
		return nil, fmt.Errorf("%w: unknown format version %d", ErrOpen, sealed[0])
	}
	out, err := b.aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], ad)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed (another key, another row, or a damaged value)", ErrOpen)
	}
	return out, nil
}
