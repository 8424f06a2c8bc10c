package wallettest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Solana is a Solana JSON-RPC on loopback that checks the key in the path: getSlot, and
// getBalance of the lamports it is given.
type Solana struct {
	*httptest.Server
	mu       sync.Mutex
	Lamports map[string]uint64 // balance by base58 address
	Slot     uint64
}

// NewSolana starts the fake; key "" accepts any path.
func NewSolana(t testing.TB, key string) *Solana {
	s := &Solana{Lamports: map[string]uint64{}, Slot: 312_000_000}
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
		out := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		s.mu.Lock()
		switch req.Method {
		case "getSlot":
			out["result"] = s.Slot
		case "getBalance":
			var addr string
			if len(req.Params) > 0 {
				_ = json.Unmarshal(req.Params[0], &addr)
			}
			out["result"] = map[string]any{"context": map[string]any{"slot": s.Slot}, "value": s.Lamports[addr]}
		default:
			out["error"] = map[string]any{"code": -32601, "message": "Method not found"}
		}
		s.mu.Unlock()
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
