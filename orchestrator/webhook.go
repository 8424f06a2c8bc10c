package orchestrator

import (
	"context"
	"time"
)

// PrefixWebhook is the id prefix of webhooks.
const PrefixWebhook = "whk"

// Webhook is an organisation's registration for its events: where they go and which. Its signing
// secret is stored sealed and never shown.
type Webhook struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"org_id"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	Description string    `json:"description"`
	Enabled     bool      `json:"enabled"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its (next) attempt
	DeliveryDelivered = "delivered" // the receiver answered 2xx
	DeliveryFailed    = "failed"    // given up: no 2xx within the retry window
)

// WebhookDelivery is one event sent to one webhook, with its attempts' count and the last answer.
type WebhookDelivery struct {
	ID             int64      `json:"id"`
	WebhookID      string     `json:"webhook_id"`
	EventID        string     `json:"event_id"`
	EventType      string     `json:"event_type"`
	RunID          string     `json:"run_id,omitempty"`
	State          string     `json:"state"`
	Attempts       int        `json:"attempts"`
	CreatedAt      time.Time  `json:"created_at"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"` // pending only
	LastAttemptAt  *time.Time `json:"last_attempt_at"`
	DeliveredAt    *time.Time `json:"delivered_at"`
	ResponseStatus *int       `json:"response_status"` // the last attempt's HTTP status; null when none came back
	ResponseBody   string     `json:"response_body"`   // its first 4 KiB
	Error          string     `json:"error"`           // why the last attempt failed; "" after a success
	DurationMS     float64    `json:"duration_ms"`     // the last attempt's
	RedeliveryOf   *int64     `json:"redelivery_of"`   // the delivery an operator asked to send again
}

// WebhookChange is a webhook's registration or a change of it, as an operator sends it: nil fields
// are not sent (a registration needs url, events and secret).
type WebhookChange struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"` // event type names, or "*" for every type (the ones added later too)
	Secret      *string   `json:"secret"` // signs each delivery; stored sealed, never shown
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

// WebhookPatch changes a webhook: nil fields stay.
type WebhookPatch struct {
	URL          *string
	Events       []string // nil keeps them
	Description  *string
	Enabled      *bool
	SealedSecret []byte // nil keeps the secret
}

// DeliveryQuery pages a webhook's deliveries, newest first.
type DeliveryQuery struct {
	State string // "" every state
	After int64  // the id of the last delivery of the previous page; 0 the newest first
	Limit int
}

// ClaimedDelivery is a delivery a replica holds for one attempt: where it goes, the sealed secret
// that signs it, and the event it carries.
type ClaimedDelivery struct {
	ID           int64
	WebhookID    string
	URL          string
	SealedSecret []byte
	Attempts     int // this attempt's number
	CreatedAt    time.Time
	Event        Event
}

// DeliveryOutcome is what an attempt came to.
type DeliveryOutcome struct {
	ID         int64
	At         time.Time
	Delivered  bool
	GiveUp     bool      // not delivered, and no attempt is left
	RetryAt    time.Time // not delivered: when the next attempt may go
	Status     *int      // the receiver's HTTP status; nil when none came back
	Body       string    // the first bytes of its answer
	Error      string
	DurationMS float64
}

// WebhookStore keeps webhooks, their deliveries and the outbox's stream (postgres.Store implements it).
type WebhookStore interface {
	CreateWebhook(ctx context.Context, w Webhook, sealedSecret []byte) (Webhook, error)
	ListWebhooks(ctx context.Context, orgID string) ([]Webhook, error)
	// GetWebhook reads one webhook of the organisation; another organisation's is ENOTFOUND.
	GetWebhook(ctx context.Context, orgID, id string) (Webhook, error)
	UpdateWebhook(ctx context.Context, orgID, id string, p WebhookPatch, at time.Time) (Webhook, error)
	DeleteWebhook(ctx context.Context, orgID, id string) error
	ListDeliveries(ctx context.Context, orgID, webhookID string, q DeliveryQuery) ([]WebhookDelivery, error)
	// Redeliver queues the delivery's event again to its webhook, as a new delivery due now.
	Redeliver(ctx context.Context, orgID, webhookID string, deliveryID int64, at time.Time) (WebhookDelivery, error)
	// PlaceEvents gives committed events their stream positions and queues their deliveries.
	PlaceEvents(ctx context.Context, limit int, at time.Time) (int, error)
	// ClaimDeliveries takes up to limit due deliveries whose run has no earlier one pending to the
	// same webhook, skipping those another replica holds, and holds them until leaseUntil.
	ClaimDeliveries(ctx context.Context, at, leaseUntil time.Time, limit int) ([]ClaimedDelivery, error)
	RecordDelivery(ctx context.Context, o DeliveryOutcome) error
	EventsAfter(ctx context.Context, pos int64, limit int) ([]Event, error)
	LastEventPos(ctx context.Context) (int64, error)
	// PruneEvents deletes the events and deliveries older than before.
	PruneEvents(ctx context.Context, before time.Time) (int64, error)
}
