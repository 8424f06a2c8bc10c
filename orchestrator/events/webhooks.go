package events

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
)

// Bounds of a webhook's fields.
const (
	MinSecret      = 16
	MaxSecret      = 512
	MaxDescription = 400
	AllEvents      = "*" // subscribes to every event type, those added later included
)

// Paging of ListDeliveries.
const (
	DefaultDeliveryPage = 50
	MaxDeliveryPage     = 500
)

// checkEvents checks a subscription: a non-empty list of known event types, or "*".
func checkEvents(evs []string) error {
	if len(evs) == 0 {
		return orchestrator.Errorf(orchestrator.EINVALID, "events must name at least one event type (%s), or \"*\" for all", strings.Join(orchestrator.EventTypeNames(), ", "))
	}
	for _, e := range evs {
		if _, ok := orchestrator.LookupEventType(e); !ok && e != AllEvents {
			return orchestrator.Errorf(orchestrator.EINVALID, "events: unknown event type %q; the types are %s, or \"*\" for all", e, strings.Join(orchestrator.EventTypeNames(), ", "))
		}
	}
	return nil
}

// checkSecret checks a signing secret's length.
func checkSecret(secret string) error {
	if n := len(secret); n < MinSecret || n > MaxSecret {
		return orchestrator.Errorf(orchestrator.EINVALID, "secret must be %d to %d bytes, got %d; generate one with: openssl rand -hex 32", MinSecret, MaxSecret, n)
	}
	return nil
}

func checkDescription(d string) error {
	if n := utf8.RuneCountInString(d); n > MaxDescription {
		return orchestrator.Errorf(orchestrator.EINVALID, "description is %d characters; at most %d", n, MaxDescription)
	}
	return nil
}

// CreateWebhook registers a webhook for the organisation's events: url, events and secret are
// required; the secret is sealed and never answered back.
func (s *Service) CreateWebhook(ctx context.Context, orgID string, ch orchestrator.WebhookChange) (orchestrator.Webhook, error) {
	switch {
	case ch.URL == nil:
		return orchestrator.Webhook{}, orchestrator.Errorf(orchestrator.EINVALID, "url is required: where the events are POSTed")
	case ch.Events == nil:
		return orchestrator.Webhook{}, orchestrator.Errorf(orchestrator.EINVALID, "events is required: the event types to send (%s), or [\"*\"]", strings.Join(orchestrator.EventTypeNames(), ", "))
	case ch.Secret == nil:
		return orchestrator.Webhook{}, orchestrator.Errorf(orchestrator.EINVALID, "secret is required: each delivery is signed with it (Guilds-Signature); generate one with: openssl rand -hex 32")
	}
	w := orchestrator.Webhook{ID: orchestrator.NewID(orchestrator.PrefixWebhook), OrgID: orgID, URL: *ch.URL, Events: slices.Compact(slices.Sorted(slices.Values(*ch.Events))),
		Enabled: true, CreatedAt: s.now()}
	if ch.Description != nil {
		w.Description = *ch.Description
	}
	if ch.Enabled != nil {
		w.Enabled = *ch.Enabled
	}
	w.UpdatedAt = w.CreatedAt
	if err := s.check(ctx, ch); err != nil {
		return w, err
	}
	if s.Box == nil {
		return w, orchestrator.Errorf(orchestrator.EINTERNAL, "webhook secrets cannot be sealed: GUILDS_SECRET_KEY is not available")
	}
	return s.Store.CreateWebhook(ctx, w, s.Box.Seal([]byte(*ch.Secret), sealAD(w.ID)))
}

// check checks the fields a change sends.
func (s *Service) check(ctx context.Context, ch orchestrator.WebhookChange) error {
	if ch.Events != nil {
		if err := checkEvents(*ch.Events); err != nil {
			return err
		}
	}
	if ch.Secret != nil {
		if err := checkSecret(*ch.Secret); err != nil {
			return err
		}
	}
	if ch.Description != nil {
		if err := checkDescription(*ch.Description); err != nil {
			return err
		}
	}
	if ch.URL != nil {
		return s.checkURL(ctx, *ch.URL)
	}
	return nil
}

// UpdateWebhook changes the fields sent of the organisation's webhook.
func (s *Service) UpdateWebhook(ctx context.Context, orgID, id string, ch orchestrator.WebhookChange) (orchestrator.Webhook, error) {
	if err := s.check(ctx, ch); err != nil {
		return orchestrator.Webhook{}, err
	}
	p := orchestrator.WebhookPatch{URL: ch.URL, Description: ch.Description, Enabled: ch.Enabled}
	if ch.Events != nil {
		p.Events = slices.Compact(slices.Sorted(slices.Values(*ch.Events)))
	}
	if ch.Secret != nil {
		if s.Box == nil {
			return orchestrator.Webhook{}, orchestrator.Errorf(orchestrator.EINTERNAL, "webhook secrets cannot be sealed: GUILDS_SECRET_KEY is not available")
		}
		p.SealedSecret = s.Box.Seal([]byte(*ch.Secret), sealAD(id))
	}
	return s.Store.UpdateWebhook(ctx, orgID, id, p, s.now())
}

// ListWebhooks lists the organisation's webhooks.
func (s *Service) ListWebhooks(ctx context.Context, orgID string) ([]orchestrator.Webhook, error) {
	return s.Store.ListWebhooks(ctx, orgID)
}

// GetWebhook reads one of the organisation's webhooks.
func (s *Service) GetWebhook(ctx context.Context, orgID, id string) (orchestrator.Webhook, error) {
	return s.Store.GetWebhook(ctx, orgID, id)
}

// DeleteWebhook deletes one of the organisation's webhooks with its deliveries.
func (s *Service) DeleteWebhook(ctx context.Context, orgID, id string) error {
	return s.Store.DeleteWebhook(ctx, orgID, id)
}

// ListDeliveries lists a page of a webhook's deliveries, newest first, by state.
func (s *Service) ListDeliveries(ctx context.Context, orgID, id string, q orchestrator.DeliveryQuery) ([]orchestrator.WebhookDelivery, error) {
	if q.State != "" && !slices.Contains([]string{orchestrator.DeliveryPending, orchestrator.DeliveryDelivered, orchestrator.DeliveryFailed}, q.State) {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "state must be pending, delivered or failed, got %q", q.State)
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultDeliveryPage
	case q.Limit < 0 || q.Limit > MaxDeliveryPage:
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to %d, got %d", MaxDeliveryPage, q.Limit)
	}
	if q.After < 0 {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "after must be a delivery id, got %d", q.After)
	}
	return s.Store.ListDeliveries(ctx, orgID, id, q)
}

// Redeliver sends a delivery's event to its webhook again, as a new delivery due now.
func (s *Service) Redeliver(ctx context.Context, orgID, id string, deliveryID int64) (orchestrator.WebhookDelivery, error) {
	d, err := s.Store.Redeliver(ctx, orgID, id, deliveryID, s.now())
	if err == nil {
		s.placed()
	}
	return d, err
}
