// Package pgtest gives tests a real PostgreSQL: one throwaway cluster per test binary, a template
// database migrated once, and a fresh database per test cloned from it.
//
// Use it from a package's tests:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		pool := pgtest.NewDB(t) // migrated, empty, dropped when the test ends
//		...
//	}
//
// The cluster starts on the first NewDB (initdb + pg_ctl in a temporary folder, as the postgres user
// when root, fsync off, a unix socket only) and Main stops it and removes its folder when the tests
// are done. Should the test binary die first (a panic, a timeout, SIGKILL), the cluster's watchdog
// stops the server, so no PostgreSQL is ever left running.
package pgtest

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// templateDB is the migrated database every test database is cloned from.
const templateDB = "guilds_template"

var (
	once       sync.Once
	cluster    *postgres.Cluster
	clusterDir string
	startErr   error
	admin      *pgxpool.Pool // connected to the postgres database, for CREATE/DROP DATABASE
	createMu   sync.Mutex    // CREATE DATABASE ... TEMPLATE needs the template to itself
	dbCount    atomic.Int64
)

// Main runs the package's tests and stops the cluster afterwards; call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the cluster if one was started and removes its folder. Main calls it.
func Stop() {
	if admin != nil {
		admin.Close()
	}
	if cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.Stop(ctx); err != nil {
			log.Printf("pgtest: %v", err)
		}
		cluster = nil
	}
	if clusterDir != "" {
		_ = os.RemoveAll(clusterDir)
	}
}

// start brings the cluster up and migrates the template database, once per binary.
func start() error {
	once.Do(func() { startErr = startCluster() })
	return startErr
}

func startCluster() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	clusterDir = dir
	// The postgres user must be able to pass through to the cluster folder below.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	c, err := postgres.StartCluster(ctx, dir+"/pg", postgres.ClusterOptions{})
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	cluster = c
	admin, err = postgres.Open(ctx, c.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+templateDB); err != nil {
		return fmt.Errorf("pgtest: create template: %w", err)
	}
	tpl, err := postgres.Open(ctx, c.DSN(templateDB))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer tpl.Close()
	if _, err := postgres.Migrate(ctx, tpl); err != nil {
		return fmt.Errorf("pgtest: migrate template: %w", err)
	}
	return nil
}

// NewDB returns a pool on a fresh, migrated database for this test. The pool is closed and the
// database dropped when the test ends. The test fails at once when PostgreSQL cannot start.
func NewDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, _ := NewDBWithDSN(t)
	return pool
}

// NewDBWithDSN is NewDB that also returns the database's connection string, for code under test
// that opens its own pool.
func NewDBWithDSN(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	if err := start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), dbCount.Add(1))
	createMu.Lock()
	_, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+templateDB)
	createMu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	dsn := cluster.DSN(name)
	pool, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return pool, dsn
}

// ClusterDSN returns the connection string of database on the running cluster, starting it if needed.
func ClusterDSN(t testing.TB, database string) string {
	t.Helper()
	if err := start(); err != nil {
		t.Fatal(err)
	}
	return cluster.DSN(database)
}
