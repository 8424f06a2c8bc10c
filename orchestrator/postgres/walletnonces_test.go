package postgres_test

import (
	"context"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/wallet/wallettest"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// replicas hands each Use to the next of several stores, as separate orchestrators would.
type replicas struct {
	stores []wallet.Nonces
	i      atomic.Int64
}

func (r *replicas) Use(ctx context.Context, id uint64, addr string, fn func(*orchestrator.NonceState) (*orchestrator.NonceState, error)) error {
	return r.stores[int(r.i.Add(1))%len(r.stores)].Use(ctx, id, addr, fn)
}

// TestRowLock: 40 concurrent uses over two pools of one database see each other's writes one at
// a time (no two read the same state), and a use that stores nothing leaves the row as it was.
func TestRowLock(t *testing.T) {
	_, dsn := pgtest.NewDBWithDSN(t)
	var stores []wallet.Nonces
	for range 2 {
		p, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		stores = append(stores, &postgres.WalletNonces{Pool: p})
	}
	r := &replicas{stores: stores}
	const addr = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
	var mu sync.Mutex
	var seen []uint64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.Use(context.Background(), 1, addr, func(s *orchestrator.NonceState) (*orchestrator.NonceState, error) {
				n := uint64(0)
				if s != nil {
					n = s.Next
				}
				mu.Lock()
				seen = append(seen, n)
				mu.Unlock()
				return &orchestrator.NonceState{Next: n + 1, Hash: "0x" + strconv.FormatUint(n, 16)}, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	slices.Sort(seen)
	for i, v := range seen {
		if v != uint64(i) {
			t.Fatalf("states seen %v: two uses read the same one", seen)
		}
	}
	_ = r.Use(context.Background(), 1, addr, func(s *orchestrator.NonceState) (*orchestrator.NonceState, error) {
		if s == nil || s.Next != 40 || s.Hash != "0x27" {
			t.Errorf("stored %+v", s)
		}
		return nil, nil
	})
	// Another chain id of the same address is a row of its own.
	_ = r.Use(context.Background(), 8453, addr, func(s *orchestrator.NonceState) (*orchestrator.NonceState, error) {
		if s != nil {
			t.Errorf("base shares ethereum's nonce: %+v", s)
		}
		return nil, nil
	})
}

// TestConcurrentSendsAcrossReplicas: 20 sends at once on a real anvil, through two replicas'
// row locks, land with 20 consecutive nonces.
func TestConcurrentSendsAcrossReplicas(t *testing.T) {
	const key = "alch-pg-key-71aa"
	node := wallettest.Anvil(t, 1, key)
	_, dsn := pgtest.NewDBWithDSN(t)
	var stores []wallet.Nonces
	for range 2 {
		p, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		stores = append(stores, &postgres.WalletNonces{Pool: p})
	}
	wallet.UseNonces(&replicas{stores: stores})
	l := adapters.NewLogin(orchestrator.MCPServer{Slug: wallet.Slug, Endpoints: map[string]string{"ethereum": node.Proxy + "/eth"}},
		map[string]string{wallet.FieldEVMKey: wallettest.DevKey, wallet.FieldAlchemyKey: key}, nil, nil)
	start := node.Nonce(t, wallettest.DevAddr)
	before := node.Balance(t, wallettest.Dev2Addr)
	const n = 20
	var wg sync.WaitGroup
	nonces := make([]uint64, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := wallet.Adapter{}.Call(context.Background(), l, "send", map[string]any{"chain": "ethereum", "to": wallettest.Dev2Addr, "amount": "0.01"})
			if err != nil || !strings.Contains(out, "status\tsuccess") {
				t.Errorf("send %d: %q %v", i, out, err)
				return
			}
			for _, line := range strings.Split(out, "\n") {
				if v, ok := strings.CutPrefix(line, "nonce\t"); ok {
					nonces[i], _ = strconv.ParseUint(v, 10, 64)
				}
			}
		}()
	}
	wg.Wait()
	slices.Sort(nonces)
	for i, v := range nonces {
		if v != start+uint64(i) {
			t.Fatalf("nonces %v, want %d.. consecutive", nonces, start)
		}
	}
	got := new(big.Int).Sub(node.Balance(t, wallettest.Dev2Addr), before)
	if want, _ := wallet.ParseAmount("0.2", 18, false); got.Cmp(want) != 0 {
		t.Fatalf("the recipient got %s wei, want %s", got, want)
	}
}

// TestSendsDoNotStarveThePool: 20 uses of one (chain, address), one holding its turn and 19
// waiting theirs, hold at most one connection of a two-connection pool, so the orchestrator's other
// queries still run while they wait.
func TestSendsDoNotStarveThePool(t *testing.T) {
	_, dsn := pgtest.NewDBWithDSN(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 2
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	n := &postgres.WalletNonces{Pool: p}
	const addr = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
	// One use holds its turn, and its transaction's connection, until the checks below are done;
	// 19 more wait their turn behind it.
	hold, entered := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = n.Use(context.Background(), 1, addr, func(*orchestrator.NonceState) (*orchestrator.NonceState, error) {
			close(entered)
			<-hold // a broadcast that takes its time
			return nil, nil
		})
	})
	<-entered
	for range 19 {
		wg.Go(func() {
			_ = n.Use(context.Background(), 1, addr, func(*orchestrator.NonceState) (*orchestrator.NonceState, error) { return nil, nil })
		})
	}
	time.Sleep(50 * time.Millisecond) // they reach their wait (sooner or later: this only strengthens the check)
	// The other queries run while the turn is held: uses that held a connection while waiting would
	// leave them none until the holder ends, which it does only after them (a minute: a hang guard).
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var one int
		err := p.QueryRow(ctx, "SELECT 1").Scan(&one)
		cancel()
		if err != nil {
			t.Fatalf("another query waited behind the sends: %v", err)
		}
	}
	// A use whose context ends while it waits its turn gives up with the context's error.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := n.Use(ctx, 1, addr, func(*orchestrator.NonceState) (*orchestrator.NonceState, error) { return nil, nil }); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("waiting past the deadline: %v", err)
	}
	close(hold)
	wg.Wait()
}
