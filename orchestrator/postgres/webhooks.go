package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/jackc/pgx/v5"
)

var _ orchestrator.WebhookStore = (*Store)(nil)

// webhookColumns is the column list scanWebhook reads (never the secret).
const webhookColumns = "id, org_id, url, events, description, enabled, created_at, updated_at"

func scanWebhook(r pgx.Row) (orchestrator.Webhook, error) {
	var w orchestrator.Webhook
	err := r.Scan(&w.ID, &w.OrgID, &w.URL, &w.Events, &w.Description, &w.Enabled, &w.CreatedAt, &w.UpdatedAt)
	return w, err
}

// CreateWebhook stores an organisation's webhook with its sealed secret; a missing organisation is
// ENOTFOUND.
func (s *Store) CreateWebhook(ctx context.Context, w orchestrator.Webhook, sealedSecret []byte) (orchestrator.Webhook, error) {
	out, err := scanWebhook(s.pool.QueryRow(ctx, `INSERT INTO webhooks (id, org_id, url, events, description, enabled, secret_sealed, created_at, updated_at)
		SELECT $1, id, $3, $4, $5, $6, $7, $8, $8 FROM orgs WHERE id = $2 RETURNING `+webhookColumns,
		w.ID, w.OrgID, w.URL, w.Events, w.Description, w.Enabled, sealedSecret, w.CreatedAt))
	if errors.Is(err, pgx.ErrNoRows) {
		return out, notFound("organisation", w.OrgID)
	}
	if err != nil {
		return out, fmt.Errorf("create webhook: %w", err)
	}
	return out, nil
}

// ListWebhooks lists an organisation's webhooks, oldest first.
func (s *Store) ListWebhooks(ctx context.Context, orgID string) ([]orchestrator.Webhook, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE org_id = $1 ORDER BY created_at, id", orgID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.Webhook, error) { return scanWebhook(r) })
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return nonNil(out), nil
}

// GetWebhook reads one webhook of the organisation.
func (s *Store) GetWebhook(ctx context.Context, orgID, id string) (orchestrator.Webhook, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE id = $1 AND org_id = $2", id, orgID))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, notFound("webhook", id)
	}
	if err != nil {
		return w, fmt.Errorf("get webhook %s: %w", id, err)
	}
	return w, nil
}

// UpdateWebhook applies p to the organisation's webhook.
func (s *Store) UpdateWebhook(ctx context.Context, orgID, id string, p orchestrator.WebhookPatch, at time.Time) (orchestrator.Webhook, error) {
	w, err := scanWebhook(s.pool.QueryRow(ctx, `UPDATE webhooks SET url = coalesce($3, url), events = coalesce($4, events),
		description = coalesce($5, description), enabled = coalesce($6, enabled), secret_sealed = coalesce($7, secret_sealed), updated_at = $8
		WHERE id = $1 AND org_id = $2 RETURNING `+webhookColumns, id, orgID, p.URL, p.Events, p.Description, p.Enabled, p.SealedSecret, at))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, notFound("webhook", id)
	}
	if err != nil {
		return w, fmt.Errorf("update webhook %s: %w", id, err)
	}
	return w, nil
}

// DeleteWebhook deletes the organisation's webhook with its deliveries.
func (s *Store) DeleteWebhook(ctx context.Context, orgID, id string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM webhooks WHERE id = $1 AND org_id = $2", id, orgID)
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("webhook", id)
	}
	return nil
}

// deliveryColumns is the column list scanDelivery reads, over webhook_deliveries d joined with events e.
const deliveryColumns = `d.id, d.webhook_id, d.event_id, e.type, coalesce(d.run_id, e.run_id, ''), d.state, d.attempts, d.created_at,
	CASE WHEN d.state = 'pending' THEN d.next_attempt_at END, d.last_attempt_at, d.delivered_at, d.response_status, d.response_body,
	d.error, d.duration_ms, d.redelivery_of`

func scanDelivery(r pgx.Row) (orchestrator.WebhookDelivery, error) {
	var d orchestrator.WebhookDelivery
	err := r.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.EventType, &d.RunID, &d.State, &d.Attempts, &d.CreatedAt, &d.NextAttemptAt,
		&d.LastAttemptAt, &d.DeliveredAt, &d.ResponseStatus, &d.ResponseBody, &d.Error, &d.DurationMS, &d.RedeliveryOf)
	return d, err
}

// ListDeliveries lists a page of the organisation's webhook's deliveries, newest first; a webhook
// of another organisation is ENOTFOUND.
func (s *Store) ListDeliveries(ctx context.Context, orgID, webhookID string, q orchestrator.DeliveryQuery) ([]orchestrator.WebhookDelivery, error) {
	if _, err := s.GetWebhook(ctx, orgID, webhookID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT "+deliveryColumns+` FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
		WHERE d.webhook_id = $1 AND ($2 = '' OR d.state = $2) AND ($3 = 0 OR d.id < $3) ORDER BY d.id DESC LIMIT $4`,
		webhookID, q.State, q.After, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", webhookID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.WebhookDelivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", webhookID, err)
	}
	return nonNil(out), nil
}

// Redeliver queues the delivery's event again to its webhook as a new delivery, due at once and
// in no run's order (an operator's resend of an old event must not wait behind newer ones).
func (s *Store) Redeliver(ctx context.Context, orgID, webhookID string, deliveryID int64, at time.Time) (orchestrator.WebhookDelivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `WITH d AS (
			INSERT INTO webhook_deliveries (webhook_id, event_id, pos, run_id, next_attempt_at, created_at, redelivery_of)
			SELECT o.webhook_id, o.event_id, o.pos, NULL, $4, $4, o.id FROM webhook_deliveries o JOIN webhooks w ON w.id = o.webhook_id
			WHERE o.id = $3 AND o.webhook_id = $2 AND w.org_id = $1 RETURNING *)
		SELECT `+deliveryColumns+" FROM d JOIN events e ON e.id = d.event_id", orgID, webhookID, deliveryID, at))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, orchestrator.Errorf(orchestrator.ENOTFOUND, "delivery %d of webhook %q not found", deliveryID, webhookID)
	}
	if err != nil {
		return d, fmt.Errorf("redeliver %d: %w", deliveryID, err)
	}
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", EventsChannel, EventsPlaced); err != nil {
		return d, fmt.Errorf("announce redelivery %d: %w", d.ID, err)
	}
	return d, nil
}

// ClaimDeliveries takes up to limit pending deliveries of enabled webhooks that are due and not
// held (or whose holder's lease ran out), each the first pending one of its run to its webhook, skipping rows another
// replica is claiming (FOR UPDATE SKIP LOCKED), and holds them until leaseUntil, counting the attempt.
func (s *Store) ClaimDeliveries(ctx context.Context, at, leaseUntil time.Time, limit int) ([]orchestrator.ClaimedDelivery, error) {
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT d.id FROM webhook_deliveries d JOIN webhooks h ON h.id = d.webhook_id AND h.enabled
			WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until < $1)
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.webhook_id = d.webhook_id AND p.run_id = d.run_id
				AND p.state = 'pending' AND p.pos < d.pos)
			ORDER BY d.next_attempt_at, d.pos LIMIT $3 FOR UPDATE OF d SKIP LOCKED)
		UPDATE webhook_deliveries d SET lease_until = $2, attempts = d.attempts + 1
		FROM due, webhooks w, events e WHERE d.id = due.id AND w.id = d.webhook_id AND e.id = d.event_id
		RETURNING d.id, d.webhook_id, w.url, w.secret_sealed, d.attempts, d.created_at,
			e.pos, e.id, e.type, e.org_id, coalesce(e.guild_id, ''), coalesce(e.agent_id, ''), coalesce(e.run_id, ''), e.data, e.created_at`,
		at, leaseUntil, limit)
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orchestrator.ClaimedDelivery, error) {
		var c orchestrator.ClaimedDelivery
		var data []byte
		e := &c.Event
		err := r.Scan(&c.ID, &c.WebhookID, &c.URL, &c.SealedSecret, &c.Attempts, &c.CreatedAt,
			&e.Pos, &e.ID, &e.Type, &e.OrgID, &e.GuildID, &e.AgentID, &e.RunID, &data, &e.CreatedAt)
		e.Data = data
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return out, nil
}

// RecordDelivery stores an attempt's outcome and lets the delivery go: delivered, failed for good,
// or pending again from o.RetryAt.
func (s *Store) RecordDelivery(ctx context.Context, o orchestrator.DeliveryOutcome) error {
	state := orchestrator.DeliveryPending
	switch {
	case o.Delivered:
		state = orchestrator.DeliveryDelivered
	case o.GiveUp:
		state = orchestrator.DeliveryFailed
	}
	var deliveredAt *time.Time
	if o.Delivered {
		deliveredAt = &o.At
	}
	_, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET state = $2, lease_until = NULL, last_attempt_at = $3, delivered_at = $4,
		next_attempt_at = CASE WHEN $2 = 'pending' THEN $5 ELSE next_attempt_at END, response_status = $6, response_body = $7, error = $8, duration_ms = $9
		WHERE id = $1`, o.ID, state, o.At, deliveredAt, o.RetryAt, o.Status, o.Body, o.Error, o.DurationMS)
	if err != nil {
		return fmt.Errorf("record delivery %d: %w", o.ID, err)
	}
	return nil
}
