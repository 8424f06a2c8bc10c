package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EventsChannel is the channel events are announced on: "new" when a transaction wrote events,
// "placed" when the sequencer gave some their stream positions (and queued their deliveries).
const EventsChannel = "guilds_events"

// Notices on EventsChannel.
const (
	EventsNew    = "new"
	EventsPlaced = "placed"
)

// execer runs a statement: the pool (in a call's transaction when ctx carries one) or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// eventsSQL inserts events from the arrays in parameters $first to $first+7 (eventArgs), in their
// order: one statement however many.
func eventsSQL(first int) string {
	p := func(i int) string { return "$" + strconv.Itoa(first+i) }
	return `INSERT INTO events (id, type, org_id, guild_id, agent_id, run_id, data, created_at)
	SELECT id, type, org, NULLIF(guild, ''), NULLIF(agent, ''), NULLIF(run, ''), data::jsonb, at
	FROM unnest(` + p(0) + `::text[], ` + p(1) + `::text[], ` + p(2) + `::text[], ` + p(3) + `::text[], ` + p(4) + `::text[], ` +
		p(5) + `::text[], ` + p(6) + `::text[], ` + p(7) + `::timestamptz[]) WITH ORDINALITY AS e(id, type, org, guild, agent, run, data, at, n)
	ORDER BY n`
}

// eventArgs are eventsSQL's eight arrays.
func eventArgs(evs []orchestrator.Event) []any {
	ids, types, orgs, guilds, agents, runs, data := make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs)),
		make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs))
	ats := make([]time.Time, len(evs))
	for i, e := range evs {
		ids[i], types[i], orgs[i], guilds[i], agents[i], runs[i], data[i], ats[i] = e.ID, e.Type, e.OrgID, e.GuildID, e.AgentID, e.RunID, string(e.Data), e.CreatedAt
	}
	return []any{ids, types, orgs, guilds, agents, runs, data, ats}
}

// appendEvents writes events into the outbox through q, in the transaction q belongs to (the
// call's, when the pool is used with a call's ctx): they are stored with what they report or not at all.
func appendEvents(ctx context.Context, q execer, evs ...orchestrator.Event) error {
	if len(evs) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, eventsSQL(1), eventArgs(evs)...); err != nil {
		return fmt.Errorf("write %d events (%s…): %w", len(evs), evs[0].Type, err)
	}
	return nil
}

// PlaceEvents gives the committed events that have none their stream positions, in the order they
// were written, at most limit of them, and queues a delivery of each to every enabled webhook of
// its organisation subscribed to its type, in one transaction. Sequencers take turns on
// event_stream's row, and each reads the events after taking it, so positions grow with commits:
// an event committed later gets a later position. It returns how many it placed.
func (s *Store) PlaceEvents(ctx context.Context, limit int, now time.Time) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool.Pool, func(tx pgx.Tx) error {
		var last int64
		if err := tx.QueryRow(ctx, "SELECT last_pos FROM event_stream FOR UPDATE").Scan(&last); err != nil {
			return err
		}
		// A statement of its own, so its snapshot is taken once the turn is ours.
		var top int64
		err := tx.QueryRow(ctx, `WITH next AS (
				SELECT seq, $1::bigint + row_number() OVER (ORDER BY seq) AS pos FROM events WHERE pos IS NULL ORDER BY seq LIMIT $2),
			placed AS (
				UPDATE events e SET pos = next.pos FROM next WHERE e.seq = next.seq RETURNING e.id, e.type, e.org_id, e.run_id, e.pos),
			queued AS (
				INSERT INTO webhook_deliveries (webhook_id, event_id, pos, run_id, next_attempt_at, created_at)
				SELECT w.id, p.id, p.pos, p.run_id, $3, $3 FROM placed p JOIN webhooks w ON w.org_id = p.org_id AND w.enabled AND (p.type = ANY (w.events) OR '*' = ANY (w.events)))
			SELECT count(*), coalesce(max(pos), $1) FROM placed`, last, limit, now).Scan(&n, &top)
		if err != nil || n == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE event_stream SET last_pos = $1", top); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", EventsChannel, EventsPlaced)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("place events: %w", err)
	}
	return n, nil
}

// eventColumns is the column list scanEvent reads.
const eventColumns = "pos, id, type, org_id, coalesce(guild_id, ''), coalesce(agent_id, ''), coalesce(run_id, ''), data, created_at"

func scanEvent(r pgx.CollectableRow) (orchestrator.Event, error) {
	var e orchestrator.Event
	var data []byte
	err := r.Scan(&e.Pos, &e.ID, &e.Type, &e.OrgID, &e.GuildID, &e.AgentID, &e.RunID, &data, &e.CreatedAt)
	e.Data = data
	return e, err
}

// EventsAfter returns up to limit placed events after stream position pos, in stream order.
func (s *Store) EventsAfter(ctx context.Context, pos int64, limit int) ([]orchestrator.Event, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+eventColumns+" FROM events WHERE pos > $1 ORDER BY pos LIMIT $2", pos, limit)
	if err != nil {
		return nil, fmt.Errorf("read events after %d: %w", pos, err)
	}
	out, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("read events after %d: %w", pos, err)
	}
	return nonNil(out), nil
}

// LastEventPos is the stream position of the latest placed event (0 before the first).
func (s *Store) LastEventPos(ctx context.Context) (int64, error) {
	var pos int64
	if err := s.pool.QueryRow(ctx, "SELECT last_pos FROM event_stream").Scan(&pos); err != nil {
		return 0, fmt.Errorf("read the event stream's position: %w", err)
	}
	return pos, nil
}

// PruneEvents deletes the placed events and the deliveries made before before (their deliveries
// with them; a delivery that old is past its retries, or waits for a disabled webhook), and reports
// how many events it deleted.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	if _, err := s.pool.Exec(ctx, "DELETE FROM webhook_deliveries WHERE created_at < $1", before); err != nil {
		return 0, fmt.Errorf("prune webhook deliveries: %w", err)
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM events WHERE created_at < $1 AND pos IS NOT NULL", before)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return tag.RowsAffected(), nil
}
