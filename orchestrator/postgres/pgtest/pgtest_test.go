package pgtest_test

import (
	"context"
	"testing"

	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestNewDBIsMigratedAndIsolated checks each test database is migrated (pg_trgm, schema_migrations)
// and that two databases do not share rows.
func TestNewDBIsMigratedAndIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.NewDB(t), pgtest.NewDB(t)
	var n int
	if err := a.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n == 0 {
		t.Fatalf("schema_migrations: n=%d err=%v", n, err)
	}
	var trgm float64
	if err := a.QueryRow(ctx, "SELECT similarity('guilds', 'guild')").Scan(&trgm); err != nil || trgm <= 0 {
		t.Fatalf("pg_trgm similarity: %v %v", trgm, err)
	}
	if _, err := a.Exec(ctx, "INSERT INTO orgs (id, name) VALUES ('org_a', 'A')"); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, "SELECT count(*) FROM orgs").Scan(&n); err != nil || n != 0 {
		t.Fatalf("database b sees %d orgs (err %v), want 0", n, err)
	}
}
