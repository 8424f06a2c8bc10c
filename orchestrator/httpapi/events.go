package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
)

// EventStream is what the live stream reads (events.Service implements it).
type EventStream interface {
	EventsAfter(ctx context.Context, pos int64, limit int) ([]orchestrator.Event, error)
	LastEventPos(ctx context.Context) (int64, error)
	// Subscribe wakes the channel whenever events were placed; the function ends it.
	Subscribe() (<-chan struct{}, func())
}

// WebhookService keeps organisations' webhooks and their deliveries (events.Service implements it).
type WebhookService interface {
	CreateWebhook(ctx context.Context, orgID string, ch orchestrator.WebhookChange) (orchestrator.Webhook, error)
	ListWebhooks(ctx context.Context, orgID string) ([]orchestrator.Webhook, error)
	GetWebhook(ctx context.Context, orgID, id string) (orchestrator.Webhook, error)
	UpdateWebhook(ctx context.Context, orgID, id string, ch orchestrator.WebhookChange) (orchestrator.Webhook, error)
	DeleteWebhook(ctx context.Context, orgID, id string) error
	ListDeliveries(ctx context.Context, orgID, id string, q orchestrator.DeliveryQuery) ([]orchestrator.WebhookDelivery, error)
	Redeliver(ctx context.Context, orgID, id string, deliveryID int64) (orchestrator.WebhookDelivery, error)
}

// eventRoutes registers the live stream and the webhooks' routes.
func (s *Server) eventRoutes(api fiber.Router) {
	s.serving(api, s.Events != nil, "the event stream").add(fiber.MethodGet, "/events", "streamEvents", instanceView(), s.streamEvents)
	wh, org := s.serving(api, s.Webhooks != nil, "the webhooks service"), write(orchestrator.ObjectOrg)
	wh.add(fiber.MethodPost, "/orgs/:id/webhooks", "createWebhook", org, s.createWebhook)
	wh.add(fiber.MethodGet, "/orgs/:id/webhooks", "listWebhooks", org, s.listWebhooks)
	wh.add(fiber.MethodGet, "/orgs/:id/webhooks/:webhook_id", "getWebhook", org, s.getWebhook)
	wh.add(fiber.MethodPatch, "/orgs/:id/webhooks/:webhook_id", "updateWebhook", org, s.updateWebhook)
	wh.add(fiber.MethodDelete, "/orgs/:id/webhooks/:webhook_id", "deleteWebhook", org, s.deleteWebhook)
	wh.add(fiber.MethodGet, "/orgs/:id/webhooks/:webhook_id/deliveries", "listWebhookDeliveries", org, s.listDeliveries)
	wh.add(fiber.MethodPost, "/orgs/:id/webhooks/:webhook_id/deliveries/:delivery_id/redeliver", "redeliverWebhookDelivery", org, s.redeliver)
}

// Live stream pacing: a comment keeps idle connections (and proxies) open and finds clients gone.
const (
	streamHeartbeat = 15 * time.Second
	streamBatch     = 200
)

// streamEvents serves GET /api/events as server-sent events: every event placed after the
// Last-Event-ID header (or ?after=; neither: from now) that the principal may see, each as
// "id: <position>", "event: <type>", "data: <the event's JSON>". ?types= narrows it to some types.
// It ends when the client goes or the server shuts down.
func (s *Server) streamEvents(c *fiber.Ctx) error {
	types, err := eventTypes(c.Query("types"))
	if err != nil {
		return err
	}
	from := c.Get("Last-Event-ID")
	if from == "" {
		from = c.Query("after")
	}
	var after int64
	if from != "" {
		if after, err = strconv.ParseInt(from, 10, 64); err != nil || after < 0 {
			return orchestrator.Errorf(orchestrator.EINVALID, "Last-Event-ID (or after) must be the id of an event of this stream (a whole number), got %q", clipID(from))
		}
	} else if after, err = s.Events.LastEventPos(c.UserContext()); err != nil {
		return err
	}
	p := principalOf(c)
	// The writer runs after the handler returns: it holds nothing of c but the server's shutdown.
	done := c.Context().Done()
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.UserContext()))
	stream, log := s.Events, s.log()
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer cancel()
		go func() {
			select {
			case <-done:
				cancel()
			case <-ctx.Done():
			}
		}()
		wake, stop := stream.Subscribe()
		defer stop()
		tick := time.NewTicker(streamHeartbeat)
		defer tick.Stop()
		if _, err := w.WriteString("retry: 2000\n: stream open\n\n"); err != nil || w.Flush() != nil {
			return
		}
		for ctx.Err() == nil {
			evs, err := stream.EventsAfter(ctx, after, streamBatch)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("event stream read failed; the client reconnects with Last-Event-ID", "err", err.Error())
				}
				return
			}
			for _, ev := range evs {
				after = ev.Pos
				if (types != nil && !types[ev.Type]) || !maysee(p, ev) {
					continue
				}
				b, _ := json.Marshal(ev)
				_, _ = w.WriteString("id: " + strconv.FormatInt(ev.Pos, 10) + "\nevent: " + ev.Type + "\ndata: ")
				_, _ = w.Write(b)
				_, _ = w.WriteString("\n\n")
			}
			if err := w.Flush(); err != nil {
				return // the client went away
			}
			if len(evs) == streamBatch {
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-tick.C:
				if _, err := w.WriteString(": keep-alive\n\n"); err != nil || w.Flush() != nil {
					return
				}
			}
		}
	})
	return nil
}

// eventTypes parses ?types= (comma-separated event types); nil means every type.
func eventTypes(q string) (map[string]bool, error) {
	if q == "" {
		return nil, nil
	}
	out := map[string]bool{}
	for _, t := range strings.Split(q, ",") {
		t = strings.TrimSpace(t)
		if _, ok := orchestrator.LookupEventType(t); !ok {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "types: unknown event type %q; the types are %s", clipID(t), strings.Join(orchestrator.EventTypeNames(), ", "))
		}
		out[t] = true
	}
	return out, nil
}

// maysee decides whether the principal sees an event: the event type's least role where it
// happened (the organisation's members see its events, a guild's members their guild's), an agent
// key its agent's events, a run token its run's.
func maysee(p identity.Principal, ev orchestrator.Event) bool {
	role := orchestrator.RoleViewer
	if t, ok := orchestrator.LookupEventType(ev.Type); ok {
		role = t.Role
	}
	t := identity.Target{Chain: ev.Chain()}
	need := identity.Need{Role: role, Runtime: identity.RuntimeAgent}
	if p.Kind == orchestrator.CredentialRunToken {
		t.RunID, need.Runtime = ev.RunID, identity.RuntimeRun
	}
	return p.May(t, need) == nil
}

// webhookIDs checks the organisation and webhook ids of the path.
func webhookIDs(c *fiber.Ctx) (org, id string, err error) {
	if err := requireID("organisation", c.Params("id")); err != nil {
		return "", "", err
	}
	if err := requireID("webhook", c.Params("webhook_id")); err != nil {
		return "", "", err
	}
	return c.Params("id"), c.Params("webhook_id"), nil
}

func (s *Server) createWebhook(c *fiber.Ctx) error {
	ws := s.Webhooks
	if err := requireID("organisation", c.Params("id")); err != nil {
		return err
	}
	var b orchestrator.WebhookChange
	if err := decode(c, &b); err != nil {
		return err
	}
	w, err := ws.CreateWebhook(c.UserContext(), c.Params("id"), b)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(w)
}

func (s *Server) listWebhooks(c *fiber.Ctx) error {
	ws := s.Webhooks
	if err := requireID("organisation", c.Params("id")); err != nil {
		return err
	}
	list, err := ws.ListWebhooks(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"webhooks": list})
}

func (s *Server) getWebhook(c *fiber.Ctx) error {
	ws := s.Webhooks
	org, id, err := webhookIDs(c)
	if err != nil {
		return err
	}
	w, err := ws.GetWebhook(c.UserContext(), org, id)
	if err != nil {
		return err
	}
	return c.JSON(w)
}

func (s *Server) updateWebhook(c *fiber.Ctx) error {
	ws := s.Webhooks
	org, id, err := webhookIDs(c)
	if err != nil {
		return err
	}
	var b orchestrator.WebhookChange
	if err := decode(c, &b); err != nil {
		return err
	}
	w, err := ws.UpdateWebhook(c.UserContext(), org, id, b)
	if err != nil {
		return err
	}
	return c.JSON(w)
}

func (s *Server) deleteWebhook(c *fiber.Ctx) error {
	ws := s.Webhooks
	org, id, err := webhookIDs(c)
	if err != nil {
		return err
	}
	if err := ws.DeleteWebhook(c.UserContext(), org, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"deleted": id})
}

// listDeliveries answers a page of the webhook's deliveries, newest first: limit (default 50, at
// most 500) deliveries before the delivery after, by state; next_after is the next page's after,
// null on the last.
func (s *Server) listDeliveries(c *fiber.Ctx) error {
	ws := s.Webhooks
	org, id, err := webhookIDs(c)
	if err != nil {
		return err
	}
	limit, err := intQuery(c, "limit")
	if err != nil {
		return err
	}
	if c.Query("limit") != "" && limit < 1 {
		return orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to 500, got %d", limit)
	}
	after, err := intQuery(c, "after")
	if err != nil {
		return err
	}
	q := orchestrator.DeliveryQuery{State: c.Query("state"), After: after, Limit: int(limit)}
	list, err := ws.ListDeliveries(c.UserContext(), org, id, q)
	if err != nil {
		return err
	}
	body := fiber.Map{"deliveries": list, "next_after": nil}
	if n := len(list); n > 0 && (n == int(limit) || (limit == 0 && n == 50)) {
		body["next_after"] = list[n-1].ID
	}
	return c.JSON(body)
}

// redeliver sends a delivery's event to its webhook again: a new delivery, due now, with the same
// event id (a receiver that kept the first drops it).
func (s *Server) redeliver(c *fiber.Ctx) error {
	ws := s.Webhooks
	org, id, err := webhookIDs(c)
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(c.Params("delivery_id"), 10, 64)
	if err != nil || n < 1 {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "delivery %q of webhook %q not found (delivery ids are whole numbers)", clipID(c.Params("delivery_id")), id)
	}
	d, err := ws.Redeliver(c.UserContext(), org, id, n)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(d)
}
