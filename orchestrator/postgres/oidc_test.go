package postgres_test

import (
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

// TestOIDCStateTakenOnce: a single sign-on's state is taken by exactly one of many concurrent
// callbacks (as if on several replicas); later ones see it used, an expired one is never taken and
// says so, an unknown one is ENOTFOUND, and states long expired are dropped by the next start.
func TestOIDCStateTakenOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := postgres.NewStore(pgtest.NewDB(t))
	now := time.Now().UTC().Truncate(time.Microsecond)
	hash := func(v string) []byte { h := sha256.Sum256([]byte(v)); return h[:] }
	put := func(state string, created time.Time) {
		t.Helper()
		err := s.PutOIDCState(ctx, orchestrator.OIDCState{Hash: hash(state), NonceHash: hash("nonce-" + state), Verifier: []byte("sealed"),
			ReturnTo: "/agents", RedirectURI: "https://box.example/api/sessions/oidc/callback", CreatedAt: created, ExpiresAt: created.Add(orchestrator.OIDCStateTTL)})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("live", now)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, taken, err := s.TakeOIDCState(ctx, hash("live"), now.Add(time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			if taken {
				wins.Add(1)
				if st.ReturnTo != "/agents" || string(st.Verifier) != "sealed" || string(st.NonceHash) != string(hash("nonce-live")) {
					t.Errorf("taken state %+v", st)
				}
			} else if st.UsedAt == nil {
				t.Errorf("a state not taken is not marked used: %+v", st)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d callbacks took the state, want 1", wins.Load())
	}

	put("late", now.Add(-orchestrator.OIDCStateTTL-time.Minute))
	st, taken, err := s.TakeOIDCState(ctx, hash("late"), now)
	if err != nil || taken || st.UsedAt != nil || !st.ExpiresAt.Before(now) {
		t.Fatalf("expired state: %+v taken=%v %v", st, taken, err)
	}
	if _, _, err := s.TakeOIDCState(ctx, hash("never"), now); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Fatalf("unknown state: %v", err)
	}
	put("next-day", now.Add(25*time.Hour)) // a start a day later drops both states above
	for _, gone := range []string{"live", "late"} {
		if _, _, err := s.TakeOIDCState(ctx, hash(gone), now.Add(25*time.Hour)); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
			t.Fatalf("state %s kept past a day after its expiry: %v", gone, err)
		}
	}
}
