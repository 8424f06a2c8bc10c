package wallet

import (
	"context"
	"strconv"
	"sync"

	"github.com/guildsai/guilds/orchestrator"
)

// Nonces hands out an address's nonces on a chain one at a time, across every replica that
// shares the store (cmd wires postgres.WalletNonces, a row lock; the default is this process's own lock).
type Nonces interface {
	// Use holds the (chain, address) lock while fn runs. fn gets what the store knows (nil when
	// nothing) and returns what to store (nil leaves it); it is stored even when fn also returns
	// an error, so a broadcast transaction's nonce is never handed out again.
	Use(ctx context.Context, chainID uint64, address string, fn func(stored *orchestrator.NonceState) (*orchestrator.NonceState, error)) error
}

var (
	noncesMu sync.RWMutex
	nonces   Nonces = &memNonces{}
)

// UseNonces sets the nonce store of every later send (cmd sets PostgreSQL's at start).
func UseNonces(n Nonces) {
	noncesMu.Lock()
	defer noncesMu.Unlock()
	nonces = n
}

// currentNonces is the nonce store in effect.
func currentNonces() Nonces {
	noncesMu.RLock()
	defer noncesMu.RUnlock()
	return nonces
}

// memNonces is a Nonces of this process only.
type memNonces struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	next  map[string]orchestrator.NonceState
}

// Use holds the process's lock of (chain, address) while fn runs.
func (m *memNonces) Use(ctx context.Context, chainID uint64, address string, fn func(*orchestrator.NonceState) (*orchestrator.NonceState, error)) error {
	key := strconv.FormatUint(chainID, 10) + "/" + address
	m.mu.Lock()
	if m.locks == nil {
		m.locks, m.next = map[string]*sync.Mutex{}, map[string]orchestrator.NonceState{}
	}
	l := m.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		m.locks[key] = l
	}
	m.mu.Unlock()
	l.Lock()
	defer l.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	var stored *orchestrator.NonceState
	if n, ok := m.next[key]; ok {
		stored = &n
	}
	m.mu.Unlock()
	next, err := fn(stored)
	if next != nil {
		m.mu.Lock()
		m.next[key] = *next
		m.mu.Unlock()
	}
	return err
}
