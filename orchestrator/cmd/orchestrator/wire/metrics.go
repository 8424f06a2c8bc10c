package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are what GET /metrics serves in the Prometheus text format: calls by tool and outcome,
// call latency, API errors by code, the sandboxes running and the database pool, besides the Go
// runtime's and the process's own.
type Metrics struct {
	reg     *prometheus.Registry
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

// newMetrics registers every collector; boxes' running count is read when scraped.
func newMetrics(pool *pgxpool.Pool, boxes sandbox.Provider) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guilds_tool_calls_total",
			Help: "Tool calls by tool and outcome (ok, an error kind such as arguments or handler, or refused)."}, []string{"tool", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "guilds_tool_call_duration_seconds",
			Help:    "How long tool calls took, by tool.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 120, 300}}, []string{"tool"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guilds_api_errors_total",
			Help: "API error answers by code (EINVALID, ENOTFOUND, EUNAVAILABLE, ...)."}, []string{"code"}),
	}
	m.reg.MustRegister(m.calls, m.latency, m.errors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if r, ok := boxes.(interface{ Running() int }); ok {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "guilds_sandboxes_running",
			Help: "Agents' sandboxes running now."}, func() float64 { return float64(r.Running()) }))
	}
	pg := func(name, help string, f func(*pgxpool.Stat) float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(pool.Stat()) }))
	}
	pg("guilds_db_pool_connections_acquired", "Database connections in use.", func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) })
	pg("guilds_db_pool_connections_idle", "Database connections idle.", func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) })
	pg("guilds_db_pool_connections_max", "The database pool's size.", func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) })
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guilds_db_pool_acquire_waits_total",
		Help: "Connection acquisitions that had to wait for a free connection."}, func() float64 { return float64(pool.Stat().EmptyAcquireCount()) }))
	return m
}

// observeCall counts one call and its duration.
func (m *Metrics) observeCall(tool, outcome string, d time.Duration) {
	m.calls.WithLabelValues(tool, outcome).Inc()
	if outcome != "refused" {
		m.latency.WithLabelValues(tool).Observe(d.Seconds())
	}
}

// observeError counts one error answer.
func (m *Metrics) observeError(code string) { m.errors.WithLabelValues(code).Inc() }

// handler serves the registry's metrics.
func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: nil})
}

// Serve serves GET /metrics, without the token, on addr (GUILDS_METRICS_LISTEN) until ctx is done;
// the returned func waits for it to stop.
func (m *Metrics) Serve(ctx context.Context, addr string, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on GUILDS_METRICS_LISTEN=%s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err.Error())
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	return func() { <-done }, nil
}
