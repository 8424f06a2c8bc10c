package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire"
	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/postgres"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/tools/schedules"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// shutdownGrace is how long serve waits for calls in flight when asked to stop.
const shutdownGrace = 2 * time.Minute

// embeddedDB is the database the orchestrator keeps in its own local cluster.
const embeddedDB = "guilds"

// hooks let tests add tools and learn the listening address; main passes none.
type hooks struct {
	tools     func(*registry.Registry) error
	listening func(addr string)
}

const usage = `usage: orchestrator <command>

commands:
  serve            run the operator API and app on GUILDS_LISTEN (default 127.0.0.1:8080)
  migrate          apply the database migrations and exit
  accounts create  make an operator account through the running server (--help for its flags)

Configuration comes from the environment and ./.env (the environment wins): GUILDS_LISTEN,
GUILDS_ADMIN_TOKEN (required by serve), DATABASE_URL (unset: a local PostgreSQL cluster under
GUILDS_DATA_DIR, default .data/), GUILDS_LOG_LEVEL, GUILDS_SECRET_KEY (32 bytes, base64 or hex: encrypts
stored credentials; unset, serve generates one into GUILDS_DATA_DIR/secret-key and keeps it), GUILDS_MCP_IDLE (default 10m: an MCP session unused
this long is closed), GUILDS_MCP_LIST_TTL (default 10m: a run start relists an MCP login whose stored
tool list is older), GUILDS_MCP_CALL_TIMEOUT (default 90s: an MCP tool call's wait for its answer
without a progress notice), GUILDS_MCP_CALL_MAX (default 10m: the longest a call runs while its server
reports progress), GUILDS_MCP_SESSION_IDLE (default 30m: a session of the MCP front door, /mcp or
/api/runs/{id}/mcp, idle this long ends; a /mcp session closes its run), and the integrations' keys.
`

// run is the whole program; it returns the exit status.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer, h hooks) int {
	switch {
	case len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help"):
		fmt.Fprint(stdout, usage)
		return 0
	case len(args) > 1 && args[0] == "accounts":
		cfg, err := config.Load(lookup, ".env")
		if err != nil {
			fmt.Fprintf(stderr, "orchestrator: %v\n", err)
			return 1
		}
		return accounts(ctx, cfg, args[1:], stdin, stdout, stderr)
	case len(args) != 1:
		fmt.Fprintf(stderr, "orchestrator: want exactly one command\n\n%s", usage)
		return 2
	}
	cfg, err := config.Load(lookup, ".env")
	if err != nil {
		fmt.Fprintf(stderr, "orchestrator: %v\n", err)
		return 1
	}
	log := newLogger(stderr, cfg.LogLevel)
	switch args[0] {
	case "serve":
		err = serve(ctx, cfg, log, h)
	case "migrate":
		err = migrate(ctx, cfg, log, stdout)
	default:
		fmt.Fprintf(stderr, "orchestrator: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		log.Error("orchestrator stopped", "err", err.Error())
		fmt.Fprintf(stderr, "orchestrator: %v\n", err)
		return 1
	}
	return 0
}

// newLogger returns the JSON operational logger at the configured level.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// database opens the configured database, or starts the embedded cluster under the data folder
// (then returned too, nil otherwise). The returned stop closes the pool and stops the cluster if one
// was started.
func database(ctx context.Context, cfg config.Config, log *slog.Logger) (*pgxpool.Pool, *postgres.Cluster, func(), error) {
	if cfg.DatabaseURL != "" {
		pool, err := postgres.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, nil, nil, err
		}
		return pool, nil, pool.Close, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("create GUILDS_DATA_DIR: %w", err)
	}
	cluster, err := postgres.StartCluster(ctx, filepath.Join(cfg.DataDir, "postgres"), postgres.ClusterOptions{Durable: true, Logger: log})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("embedded PostgreSQL (DATABASE_URL is unset): %w", err)
	}
	stopCluster := func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.Stop(sctx); err != nil {
			log.Error("postgres: stop failed", "err", err.Error())
		}
	}
	if err := ensureDatabase(ctx, cluster.DSN("postgres"), embeddedDB); err != nil {
		stopCluster()
		return nil, nil, nil, err
	}
	pool, err := postgres.Open(ctx, cluster.DSN(embeddedDB))
	if err != nil {
		stopCluster()
		return nil, nil, nil, err
	}
	return pool, cluster, func() { pool.Close(); stopCluster() }, nil
}

// ensureDatabase creates the named database when the cluster does not have it yet.
func ensureDatabase(ctx context.Context, adminDSN, name string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return fmt.Errorf("connect to the embedded cluster: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return nil
}

// migrate applies the migrations and prints what it applied.
func migrate(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	pool, _, stop, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stop()
	applied, err := postgres.Migrate(ctx, pool)
	for _, v := range applied {
		fmt.Fprintf(stdout, "applied %s\n", v)
	}
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "database is up to date")
	}
	return nil
}

// serve runs the API until ctx is done, then stops taking connections, lets calls in flight
// finish (up to shutdownGrace), closes the database and stops the embedded cluster.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, h hooks) error {
	if cfg.AdminToken == "" {
		return errors.New("GUILDS_ADMIN_TOKEN is not set: the operator API needs a bearer token; set it in the environment or .env (make run generates one)")
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on GUILDS_LISTEN=%s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	pool, cluster, stopDB, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopDB()
	applied, err := postgres.Migrate(ctx, pool)
	if err != nil {
		return err
	}
	log.Info("migrations applied", "applied", len(applied))
	keySource, err := ensureSecretKey(&cfg, log) // once the address and the database are good
	if err != nil {
		return err
	}
	where := "the database at DATABASE_URL"
	if cluster != nil {
		cluster.Supervise() // restarts the embedded server should it end; Stop (in stopDB) ends that
		where = "the embedded PostgreSQL (restarting it)"
	}
	monitor := &postgres.Monitor{Pool: pool, Log: log, Where: where}
	monCtx, stopMonitor := context.WithCancel(context.WithoutCancel(ctx))
	monDone := make(chan struct{})
	go func() { defer close(monDone); monitor.Run(monCtx) }()
	defer func() { stopMonitor(); <-monDone }()

	g, err := wire.Build(ctx, cfg, wire.Options{Pool: pool, Monitor: monitor, KeySource: keySource, Addr: ln.Addr().String(), Tools: h.tools, Log: log})
	if err != nil {
		return err
	}
	defer g.Close()
	svc := g.Runs
	if cfg.MetricsListen != "" {
		mctx, stopMetrics := context.WithCancel(ctx)
		waitMetrics, err := g.Metrics.Serve(mctx, cfg.MetricsListen, log)
		if err != nil {
			stopMetrics()
			return err
		}
		defer func() { stopMetrics(); waitMetrics() }()
	}
	host, _ := os.Hostname()
	svc.Process = orchestrator.Process{ID: orchestrator.NewID(orchestrator.PrefixProcess), Host: host, PID: os.Getpid(), StartedAt: time.Now()}
	if _, err := svc.RecoverCalls(ctx); err != nil {
		return err
	}
	// The process beats until serve returns (after the API stopped and its calls ended), then
	// removes its row; a peer takes the calls of a process that stops beating for interrupted.
	aliveCtx, stopAlive := context.WithCancel(context.WithoutCancel(ctx))
	aliveDone := make(chan struct{})
	go func() { defer close(aliveDone); svc.KeepAlive(aliveCtx) }()
	defer func() { stopAlive(); <-aliveDone }()
	// The scheduler fires due schedules until serve returns; serve waits for it before closing the database.
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		(&schedules.Scheduler{Store: g.Store, Runs: svc, Log: log}).Run(schedCtx)
	}()
	defer func() { stopSched(); <-schedDone }()
	// The outbox's delivery and the sweep of idle and missed runs, until serve returns.
	defer startEvents(ctx, pool, g, log)()
	app := g.App
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	addr := ln.Addr().String()
	log.Info("listening", "addr", "http://"+addr, "tools", len(g.Registry.List()))
	if h.listening != nil {
		h.listening(addr)
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing calls in flight", "grace", shutdownGrace.String())
	g.Approvals.Stop() // calls waiting for an operator's approval answer now, without running
	if err := app.ShutdownWithTimeout(shutdownGrace); err != nil {
		log.Error("shutdown", "err", err.Error())
	}
	_ = ln.Close() // a listener the server had not started on when the shutdown began: its Serve returns now
	<-served
	// The MCP sessions cannot outlive the process: a /mcp session's run is closed with it.
	closeCtx, stopClose := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	g.API.CloseMCPSessions(closeCtx)
	stopClose()
	// Calls answered in the last milliseconds may not have their completed records written yet.
	drainCtx, stopDrain := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	svc.Drain(drainCtx)
	stopDrain()
	log.Info("stopped")
	return nil
}
