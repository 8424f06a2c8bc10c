// Package postgres stores the orchestrator's domain in PostgreSQL through pgx v5: the embedded SQL
// migrations, the stores, and the local cluster the orchestrator runs when DATABASE_URL is unset.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is every store interface of the orchestrator over a pgx pool: the root's
// (orchestrator.ScopeStore, orchestrator.RunStore) and those the packages declare, as
// cmd/orchestrator/stores.go asserts at compile time.
type Store struct {
	pool  db
	tools toolCache // connections' listed tools by version, for Resolution
}

// NewStore returns a Store over pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: db{pool}} }

// Open connects a pool to dsn and checks the server answers.
func Open(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// Calls of different runs proceed concurrently, each holding a connection briefly; pgx's
		// default (the CPU count, at least 4) queues them on small machines.
		cfg.MaxConns = int32(max(16, 4*runtime.NumCPU()))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to PostgreSQL at %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// notFound returns an ENOTFOUND error for a missing object.
func notFound(what, id string) error {
	return orchestrator.Errorf(orchestrator.ENOTFOUND, "%s %q not found", what, id)
}

// CreateOrg inserts o.
func (s *Store) CreateOrg(ctx context.Context, o orchestrator.Org) error {
	_, err := s.pool.Exec(ctx, "INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3)", o.ID, o.Name, o.CreatedAt)
	if err != nil {
		return fmt.Errorf("create org: %w", err)
	}
	return nil
}

// GetOrg reads one organisation.
func (s *Store) GetOrg(ctx context.Context, id string) (orchestrator.Org, error) {
	var o orchestrator.Org
	err := s.pool.QueryRow(ctx, "SELECT id, name, created_at FROM orgs WHERE id = $1", id).Scan(&o.ID, &o.Name, &o.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, notFound("organisation", id)
	}
	if err != nil {
		return o, fmt.Errorf("get org %s: %w", id, err)
	}
	return o, nil
}

// ListOrgs lists every organisation, oldest first.
func (s *Store) ListOrgs(ctx context.Context) ([]orchestrator.Org, error) {
	rows, err := s.pool.Query(ctx, "SELECT id, name, created_at FROM orgs ORDER BY created_at, id")
	if err != nil {
		return nil, fmt.Errorf("list orgs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Org, error) {
		var o orchestrator.Org
		return o, r.Scan(&o.ID, &o.Name, &o.CreatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list orgs: %w", err)
	}
	return nonNil(out), nil
}

// CreateGuild inserts g into its organisation; a missing organisation is ENOTFOUND.
func (s *Store) CreateGuild(ctx context.Context, g orchestrator.Guild) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO guilds (id, org_id, name, created_at)
		SELECT $1, id, $3, $4 FROM orgs WHERE id = $2`, g.ID, g.OrgID, g.Name, g.CreatedAt)
	if err != nil {
		return fmt.Errorf("create guild: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("organisation", g.OrgID)
	}
	return nil
}

// GetGuild reads one guild.
func (s *Store) GetGuild(ctx context.Context, id string) (orchestrator.Guild, error) {
	var g orchestrator.Guild
	err := s.pool.QueryRow(ctx, "SELECT id, org_id, name, created_at FROM guilds WHERE id = $1", id).
		Scan(&g.ID, &g.OrgID, &g.Name, &g.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, notFound("guild", id)
	}
	if err != nil {
		return g, fmt.Errorf("get guild %s: %w", id, err)
	}
	return g, nil
}

// ListGuilds lists an organisation's guilds, oldest first; a missing organisation is ENOTFOUND.
func (s *Store) ListGuilds(ctx context.Context, orgID string) ([]orchestrator.Guild, error) {
	if _, err := s.GetOrg(ctx, orgID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT id, org_id, name, created_at FROM guilds WHERE org_id = $1 ORDER BY created_at, id", orgID)
	if err != nil {
		return nil, fmt.Errorf("list guilds: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Guild, error) {
		var g orchestrator.Guild
		return g, r.Scan(&g.ID, &g.OrgID, &g.Name, &g.CreatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list guilds: %w", err)
	}
	return nonNil(out), nil
}

// agentColumns is the column list scanAgent reads.
const agentColumns = "id, guild_id, org_id, name, config, created_at, updated_at"

// scanAgent reads one agent row.
func scanAgent(r pgx.Row) (orchestrator.Agent, error) {
	var a orchestrator.Agent
	var cfg []byte
	if err := r.Scan(&a.ID, &a.GuildID, &a.OrgID, &a.Name, &cfg, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return a, err
	}
	if err := json.Unmarshal(cfg, &a.Config); err != nil {
		return a, fmt.Errorf("agent %s config: %w", a.ID, err)
	}
	return a, nil
}

// CreateAgent inserts a into its guild (taking the guild's organisation); a missing guild is ENOTFOUND.
func (s *Store) CreateAgent(ctx context.Context, a orchestrator.Agent) error {
	cfg, err := json.Marshal(a.Config)
	if err != nil {
		return fmt.Errorf("create agent: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO agents (id, guild_id, org_id, name, config, created_at, updated_at)
		SELECT $1, id, org_id, $3, $4, $5, $5 FROM guilds WHERE id = $2`, a.ID, a.GuildID, a.Name, cfg, a.CreatedAt)
	if err != nil {
		return fmt.Errorf("create agent: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("guild", a.GuildID)
	}
	return nil
}

// GetAgent reads one agent.
func (s *Store) GetAgent(ctx context.Context, id string) (orchestrator.Agent, error) {
	a, err := scanAgent(s.pool.QueryRow(ctx, "SELECT "+agentColumns+" FROM agents WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, notFound("agent", id)
	}
	if err != nil {
		return a, fmt.Errorf("get agent %s: %w", id, err)
	}
	return a, nil
}

// ListAgents lists a guild's agents, oldest first; a missing guild is ENOTFOUND.
func (s *Store) ListAgents(ctx context.Context, guildID string) ([]orchestrator.Agent, error) {
	if _, err := s.GetGuild(ctx, guildID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT "+agentColumns+" FROM agents WHERE guild_id = $1 ORDER BY created_at, id", guildID)
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Agent, error) { return scanAgent(r) })
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	return nonNil(out), nil
}

// UpdateAgent applies p under a row lock, so concurrent patches of different keys both land.
func (s *Store) UpdateAgent(ctx context.Context, id string, p orchestrator.AgentPatch) (orchestrator.Agent, error) {
	var out orchestrator.Agent
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := scanAgent(tx.QueryRow(ctx, "SELECT "+agentColumns+" FROM agents WHERE id = $1 FOR UPDATE", id))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("agent", id)
		}
		if err != nil {
			return err
		}
		if p.Name != nil {
			a.Name = *p.Name
		}
		a.Config = p.Config.Apply(a.Config)
		cfg, err := json.Marshal(a.Config)
		if err != nil {
			return err
		}
		a.UpdatedAt = time.Now().UTC().Truncate(time.Microsecond) // as stored: PATCH answers what GET reads back
		if _, err := tx.Exec(ctx, "UPDATE agents SET name = $2, config = $3, updated_at = $4 WHERE id = $1", id, a.Name, cfg, a.UpdatedAt); err != nil {
			return err
		}
		out = a
		return nil
	})
	if err != nil {
		if orchestrator.ErrorCode(err) != orchestrator.EINTERNAL {
			return out, err
		}
		return out, fmt.Errorf("update agent %s: %w", id, err)
	}
	return out, nil
}

// runColumns is the column list scanRun reads.
const runColumns = "id, agent_id, guild_id, org_id, kind, status, config, tool_call_budget, tool_calls_used, offered_tools, created_at, closed_at, exploration, state, " + triggerColumns

// triggerColumns are the trigger, activity and close columns every run read takes (scanTrigger).
const triggerColumns = "trigger_type, trigger, active_at, coalesce(close_reason, '')"

// scanRun reads one run row.
func scanRun(r pgx.Row) (orchestrator.Run, error) {
	var run orchestrator.Run
	var cfg, offered, exploration, state, trigger []byte
	if err := r.Scan(&run.ID, &run.AgentID, &run.GuildID, &run.OrgID, &run.Kind, &run.Status, &cfg,
		&run.ToolCallBudget, &run.ToolCallsUsed, &offered, &run.CreatedAt, &run.ClosedAt, &exploration, &state,
		&run.Trigger.Type, &trigger, &run.LastActiveAt, &run.CloseReason); err != nil {
		return run, err
	}
	if err := scanTrigger(run.ID, trigger, &run.Trigger); err != nil {
		return run, err
	}
	if state != nil {
		run.State = &orchestrator.RunState{}
		if err := json.Unmarshal(state, run.State); err != nil {
			return run, fmt.Errorf("run %s state: %w", run.ID, err)
		}
	}
	if exploration != nil {
		run.Exploration = &orchestrator.Exploration{}
		if err := json.Unmarshal(exploration, run.Exploration); err != nil {
			return run, fmt.Errorf("run %s exploration: %w", run.ID, err)
		}
	}
	if err := json.Unmarshal(cfg, &run.Config); err != nil {
		return run, fmt.Errorf("run %s config: %w", run.ID, err)
	}
	if err := json.Unmarshal(offered, &run.OfferedTools); err != nil {
		return run, fmt.Errorf("run %s offered_tools: %w", run.ID, err)
	}
	return run, nil
}

// CreateRun inserts r; a missing agent is ENOTFOUND.
func (s *Store) CreateRun(ctx context.Context, r orchestrator.Run) error {
	cfg, err := json.Marshal(r.Config)
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	offered, err := encodeOffered(r.OfferedTools)
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	var state []byte
	if r.State != nil {
		if state, err = json.Marshal(r.State); err != nil {
			return fmt.Errorf("create run: %w", err)
		}
	}
	if r.Trigger.Type == "" {
		r.Trigger.Type = orchestrator.TriggerDirect
	}
	var trigger []byte
	if r.Trigger.Type != orchestrator.TriggerDirect {
		if trigger, err = json.Marshal(r.Trigger); err != nil {
			return fmt.Errorf("create run: %w", err)
		}
	}
	r.LastActiveAt = r.CreatedAt
	// The run and its run.started event (never its token), in one statement.
	_, err = s.pool.Exec(ctx, `WITH run AS (INSERT INTO runs (id, agent_id, guild_id, org_id, kind, status, config, tool_call_budget, tool_calls_used,
			offered_tools, created_at, state, token_hash, token_sealed, token_expires_at, trigger_type, trigger, active_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $11))
		`+eventsSQL(18),
		append([]any{r.ID, r.AgentID, r.GuildID, r.OrgID, r.Kind, r.Status, cfg, r.ToolCallBudget, r.ToolCallsUsed, offered, r.CreatedAt, state,
			r.TokenHash, r.TokenSealed, r.TokenExpiresAt, r.Trigger.Type, trigger}, eventArgs([]orchestrator.Event{orchestrator.RunStartedEvent(r.Summary())})...)...)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return notFound("agent", r.AgentID)
	}
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	return nil
}

// GetRun reads one run.
func (s *Store) GetRun(ctx context.Context, id string) (orchestrator.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, "SELECT "+runColumns+" FROM runs WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFound("run", id)
	}
	if err != nil {
		return r, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// CloseRun marks the run closed at the given time for the reason, and reports run.closed in the
// same transaction (once: a closed run keeps its first closed_at and reason, and reports nothing).
func (s *Store) CloseRun(ctx context.Context, id string, at time.Time, reason string) (orchestrator.Run, error) {
	var r orchestrator.Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status string
		if err := tx.QueryRow(ctx, "SELECT status FROM runs WHERE id = $1 FOR UPDATE", id).Scan(&status); err != nil {
			return err
		}
		var err error
		r, err = scanRun(tx.QueryRow(ctx, `UPDATE runs SET status = 'closed', closed_at = COALESCE(closed_at, $2), close_reason = COALESCE(close_reason, $3)
			WHERE id = $1 RETURNING `+runColumns, id, at, reason))
		if err != nil || status != orchestrator.RunOpen {
			return err
		}
		return appendEvents(ctx, tx, orchestrator.RunClosedEvent(r.Summary()))
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFound("run", id)
	}
	if err != nil {
		return r, fmt.Errorf("close run %s: %w", id, err)
	}
	return r, nil
}

// startCallSQL advances the run's counter and inserts the started call in one statement, hence one
// transaction: the insert reads the updated row, so when the run is closed or spent neither happens,
// and a duplicate client call id fails the insert and with it the counter's move.
const startCallSQL = `WITH bump AS (
	UPDATE runs SET tool_calls_used = tool_calls_used + 1, active_at = GREATEST(active_at, $7)
	WHERE id = $1 AND status = 'open' AND tool_calls_used < tool_call_budget
	RETURNING id, tool_calls_used)
INSERT INTO tool_calls (run_id, seq, call_id, client_call_id, request_hash, status, name, arguments, result, metadata, is_error, started_at, process_id)
SELECT id, tool_calls_used, $2, $3, $4, 'started', $5, $6, '', '{}', false, $7, $8 FROM bump
RETURNING seq`

// StartCall records c as started and takes the run's next seq.
func (s *Store) StartCall(ctx context.Context, c orchestrator.ToolCall) (int64, error) {
	var client *string
	if c.ClientCallID != "" {
		client = &c.ClientCallID
	}
	var seq int64
	var process *string
	if c.Process != "" {
		process = &c.Process
	}
	err := s.pool.QueryRow(ctx, startCallSQL, c.RunID, c.CallID, client, c.RequestHash, c.Name, []byte(c.Arguments), c.StartedAt, process).Scan(&seq)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "tool_calls_client_call_id":
		return 0, orchestrator.ErrDuplicateCall
	case errors.Is(err, pgx.ErrNoRows):
		return 0, orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is closed or has spent its tool_call_budget; nothing was stored", c.RunID)
	case err != nil:
		return 0, fmt.Errorf("record call of run %s as started: %w", c.RunID, err)
	}
	return seq, nil
}

// completeSQL stores the result of started call ($1, $2), completed or cancelled ($9). "Still started" is written finished_at
// IS NULL (only a started call has none), so the planner always finds the row by its key:
// tool_calls_started, which status = 'started' would match, holds an entry for every call
// completed since the last vacuum.
const completeSQL = `UPDATE tool_calls SET status = $9, result = $3, metadata = $4, is_error = $5, finished_at = $6,
		duration_ms = $7, arguments = COALESCE($8, arguments)
	WHERE run_id = $1 AND seq = $2 AND finished_at IS NULL`

// completeArgs are completeSQL's arguments for c.
func completeArgs(c orchestrator.ToolCall) []any {
	meta := []byte(c.Metadata)
	if len(meta) == 0 {
		meta = []byte("{}")
	}
	status := c.Status
	if status != orchestrator.CallCancelled {
		status = orchestrator.CallCompleted
	}
	return []any{c.RunID, c.Seq, c.Result, meta, c.IsError, c.FinishedAt, c.DurationMS, nilIfEmpty(c.Arguments), status}
}

// CompleteCall stores the result of started call (c.RunID, c.Seq), and its arguments again when
// c has them (redacted with what the handler added).
func (s *Store) CompleteCall(ctx context.Context, c orchestrator.ToolCall) error {
	tag, err := s.pool.Exec(ctx, completeSQL, completeArgs(c)...)
	if err != nil {
		return fmt.Errorf("record call %d of run %s as completed: %w", c.Seq, c.RunID, err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Errorf(orchestrator.ECONFLICT, "call %d of run %s is no longer recorded as started (marked interrupted?); its result was not stored", c.Seq, c.RunID)
	}
	return nil
}

// startAfterSQL is startCallSQL that also stores one earlier call's completion ($9..$16, as
// completeSQL takes them), in one statement.
var startAfterSQL = "WITH done AS (" + shiftParams(completeSQL, 8) + " RETURNING 1),\n" + strings.TrimPrefix(startCallSQL, "WITH ")

// shiftParams renumbers the parameters $1..$9 of sql by n.
func shiftParams(sql string, n int) string {
	var pairs []string
	for i := 9; i >= 1; i-- { // $9 before $1, so $1 does not match the start of $10
		pairs = append(pairs, fmt.Sprintf("$%d", i), fmt.Sprintf("$%d", i+n))
	}
	return strings.NewReplacer(pairs...).Replace(sql)
}

// StartCallAfter is StartCall that also stores done, an earlier call's completion, in the same
// statement (one round trip for both). stored says whether done was written: it is not when the
// statement failed (a duplicate call id aborts it too), and then the caller stores it itself.
func (s *Store) StartCallAfter(ctx context.Context, c orchestrator.ToolCall, done *orchestrator.ToolCall) (int64, bool, error) {
	if done == nil {
		seq, err := s.StartCall(ctx, c)
		return seq, true, err
	}
	var client, process *string
	if c.ClientCallID != "" {
		client = &c.ClientCallID
	}
	if c.Process != "" {
		process = &c.Process
	}
	var seq int64
	args := append([]any{c.RunID, c.CallID, client, c.RequestHash, c.Name, []byte(c.Arguments), c.StartedAt, process}, completeArgs(*done)...)
	err := s.pool.QueryRow(ctx, startAfterSQL, args...).Scan(&seq)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "tool_calls_client_call_id":
		return 0, false, orchestrator.ErrDuplicateCall
	case errors.Is(err, pgx.ErrNoRows): // the completion ran: a data-modifying WITH always does
		return 0, true, orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is closed or has spent its tool_call_budget; nothing was stored", c.RunID)
	case err != nil:
		return 0, false, fmt.Errorf("record call of run %s as started: %w", c.RunID, err)
	}
	return seq, true, nil
}

// CompleteCalls stores the results of started calls in one round trip (all or none), and says
// how many were still started (the others were marked interrupted meanwhile, or deleted with their run).
func (s *Store) CompleteCalls(ctx context.Context, done []orchestrator.ToolCall) (int64, error) {
	if len(done) == 0 {
		return 0, nil
	}
	b := &pgx.Batch{}
	for _, c := range done {
		b.Queue(completeSQL, completeArgs(c)...)
	}
	br := s.pool.SendBatch(ctx, b)
	var n int64
	for range done {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return 0, fmt.Errorf("record %d calls as completed: %w", len(done), err)
		}
		n += tag.RowsAffected()
	}
	if err := br.Close(); err != nil {
		return 0, fmt.Errorf("record %d calls as completed: %w", len(done), err)
	}
	return n, nil
}

// nilIfEmpty is b, or NULL when it is empty.
func nilIfEmpty(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// InterruptCalls marks interrupted, at the given time and with result, every started call whose
// process is gone: none recorded, no row, or no beat since staleBefore.
func (s *Store) InterruptCalls(ctx context.Context, at time.Time, result string, staleBefore time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE tool_calls c SET status = 'interrupted', result = $2, is_error = true,
		metadata = jsonb_build_object('error', 'interrupted'), finished_at = $1,
		duration_ms = GREATEST(0, EXTRACT(EPOCH FROM ($1 - started_at)) * 1000)
		WHERE status = 'started' AND NOT EXISTS (
			SELECT 1 FROM orchestrator_processes p WHERE p.id = c.process_id AND p.seen_at >= $3)`, at, result, staleBefore)
	if err != nil {
		return 0, fmt.Errorf("mark interrupted calls: %w", err)
	}
	return tag.RowsAffected(), nil
}

// BeatProcess records that process p runs, seen at: its first beat registers it, and a beat
// after its row was removed registers it again.
func (s *Store) BeatProcess(ctx context.Context, p orchestrator.Process, at time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO orchestrator_processes (id, host, pid, started_at, seen_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET seen_at = EXCLUDED.seen_at`, p.ID, p.Host, p.PID, p.StartedAt, at)
	if err != nil {
		return fmt.Errorf("beat orchestrator process %s: %w", p.ID, err)
	}
	return nil
}

// HostProcesses lists the processes registered from host.
func (s *Store) HostProcesses(ctx context.Context, host string) ([]orchestrator.Process, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, host, pid, started_at FROM orchestrator_processes WHERE host = $1`, host)
	if err != nil {
		return nil, fmt.Errorf("list the orchestrator processes of %s: %w", host, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Process, error) {
		var p orchestrator.Process
		return p, r.Scan(&p.ID, &p.Host, &p.PID, &p.StartedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list the orchestrator processes of %s: %w", host, err)
	}
	return out, nil
}

// EndProcess removes process id at its clean stop, with the rows of processes gone for a day.
func (s *Store) EndProcess(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM orchestrator_processes WHERE id = $1 OR seen_at < now() - interval '1 day'`, id); err != nil {
		return fmt.Errorf("end orchestrator process %s: %w", id, err)
	}
	return nil
}

// callColumns is the column list scanCall reads.
const callColumns = "run_id, seq, call_id, client_call_id, status, request_hash, name, arguments, result, metadata, is_error, started_at, finished_at, duration_ms"

// scanCall reads one tool_calls row.
func scanCall(r pgx.Row) (orchestrator.ToolCall, error) {
	var c orchestrator.ToolCall
	var args, meta []byte
	var client *string
	var dur *float64
	err := r.Scan(&c.RunID, &c.Seq, &c.CallID, &client, &c.Status, &c.RequestHash, &c.Name, &args, &c.Result, &meta, &c.IsError, &c.StartedAt, &c.FinishedAt, &dur)
	c.Arguments, c.Metadata = args, meta
	if client != nil {
		c.ClientCallID = *client
	}
	if dur != nil {
		c.DurationMS = *dur
	}
	return c, err
}

// GetClientCall returns the run's call recorded under the client's call id.
func (s *Store) GetClientCall(ctx context.Context, runID, clientCallID string) (orchestrator.ToolCall, error) {
	c, err := scanCall(s.pool.QueryRow(ctx, "SELECT "+callColumns+" FROM tool_calls WHERE run_id = $1 AND client_call_id = $2", runID, clientCallID))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFound("call", clientCallID)
	}
	if err != nil {
		return c, fmt.Errorf("get call %s of run %s: %w", clientCallID, runID, err)
	}
	return c, nil
}

// ListCalls lists a run's calls in seq order, those after page.After, at most page.Limit of them
// (0: all); a missing run is ENOTFOUND.
func (s *Store) ListCalls(ctx context.Context, runID string, page orchestrator.CallPage) ([]orchestrator.ToolCall, error) {
	if _, err := s.GetRun(ctx, runID); err != nil {
		return nil, err
	}
	limit := any(nil) // LIMIT NULL is no limit
	if page.Limit > 0 {
		limit = page.Limit
	}
	rows, err := s.pool.Query(ctx, "SELECT "+callColumns+" FROM tool_calls WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", runID, page.After, limit)
	if err != nil {
		return nil, fmt.Errorf("list calls: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.ToolCall, error) { return scanCall(r) })
	if err != nil {
		return nil, fmt.Errorf("list calls: %w", err)
	}
	return nonNil(out), nil
}

// nonNilMap turns a nil map into an empty one, so JSON shows {} rather than null.
func nonNilMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// nonNil turns a nil slice into an empty one, so JSON shows [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
