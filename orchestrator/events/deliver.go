package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Headers of a delivery.
const (
	SignatureHeader = "Guilds-Signature" // t=<unix seconds>,v1=<hex HMAC-SHA256 with the secret over "<t>.<body>">
	EventIDHeader   = "Guilds-Event-Id"
	EventTypeHeader = "Guilds-Event-Type"
	DeliveryHeader  = "Guilds-Delivery" // the delivery's id, as GET …/deliveries lists it
)

// maxAnswer is how much of a receiver's answer a delivery keeps.
const maxAnswer = 4 << 10

// Signature is the Guilds-Signature header of body sent at t with secret: Stripe's scheme, so a
// receiver recomputes the HMAC over "<t>.<body>" and compares (and refuses an old t to stop replays).
func Signature(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// sealAD binds a webhook's sealed secret to its row.
func sealAD(webhookID string) []byte { return []byte("webhook:" + webhookID) }

// deliverLoop claims due deliveries while it has free workers, sends each on a goroutine of its
// own, and waits for a completion, a notice or the poll.
func (s *Service) deliverLoop(ctx context.Context) {
	workers := s.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	tk := time.NewTicker(pollInterval)
	defer tk.Stop()
	finished := make(chan struct{}, workers)
	inflight := 0
	defer func() {
		for ; inflight > 0; inflight-- {
			<-finished
		}
	}()
	for {
		if inflight < workers && ctx.Err() == nil {
			now := s.now()
			batch, err := s.Store.ClaimDeliveries(ctx, now, now.Add(2*AttemptTimeout+30*time.Second), workers-inflight)
			switch {
			case err != nil && ctx.Err() == nil:
				s.claiming.failed(s.log(), "claiming webhook deliveries failed; retrying every second", err)
			case err == nil:
				s.claiming.worked(s.log(), "claiming webhook deliveries works again")
			}
			for _, d := range batch {
				inflight++
				go func() {
					defer func() { finished <- struct{}{} }()
					s.attempt(ctx, d)
				}()
			}
			if len(batch) > 0 {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-finished:
			inflight--
		case <-s.deliverWake:
		case <-tk.C:
		}
	}
}

// attempt sends one delivery and records what came of it.
func (s *Service) attempt(ctx context.Context, d orchestrator.ClaimedDelivery) {
	o := s.send(ctx, d)
	if ctx.Err() != nil && !o.Delivered {
		return // stopping: the lease runs out and the delivery goes again, from here or a peer
	}
	if err := s.Store.RecordDelivery(context.WithoutCancel(ctx), o); err != nil {
		s.log().Error("recording a webhook delivery failed; it will be sent again", "delivery", d.ID, "err", err.Error())
		return
	}
	switch {
	case o.Delivered:
		poke(s.deliverWake) // its run's next delivery may go now
	case o.GiveUp:
		s.log().Warn("webhook delivery given up", "delivery", d.ID, "webhook_id", d.WebhookID, "event_id", d.Event.ID, "attempts", d.Attempts, "err", o.Error)
		poke(s.deliverWake)
	default:
		s.log().Info("webhook delivery failed; retrying", "delivery", d.ID, "webhook_id", d.WebhookID, "attempt", d.Attempts, "retry_at", o.RetryAt, "err", o.Error)
	}
}

// send makes one attempt: the event as the body, signed with the webhook's secret at now.
func (s *Service) send(ctx context.Context, d orchestrator.ClaimedDelivery) orchestrator.DeliveryOutcome {
	start := s.now()
	o := orchestrator.DeliveryOutcome{ID: d.ID}
	fail := func(err error) orchestrator.DeliveryOutcome {
		o.At, o.Error = s.now(), err.Error()
		o.DurationMS = float64(o.At.Sub(start).Microseconds()) / 1000
		s.retry(&o, d)
		return o
	}
	if s.Box == nil {
		return fail(errors.New("GUILDS_SECRET_KEY is not available on this replica: the webhook's secret cannot be opened"))
	}
	secret, err := s.Box.Open(d.SealedSecret, sealAD(d.WebhookID))
	if err != nil {
		return fail(fmt.Errorf("open the webhook's secret: %w", err))
	}
	body, err := json.Marshal(d.Event)
	if err != nil {
		return fail(fmt.Errorf("encode event %s: %w", d.Event.ID, err))
	}
	actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return fail(fmt.Errorf("build the request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "guilds-webhooks/1")
	req.Header.Set(EventIDHeader, d.Event.ID)
	req.Header.Set(EventTypeHeader, d.Event.Type)
	req.Header.Set(DeliveryHeader, strconv.FormatInt(d.ID, 10))
	req.Header.Set(SignatureHeader, Signature(secret, time.Now(), body))
	resp, err := s.client().Do(req)
	if err != nil {
		return fail(err)
	}
	answer, rerr := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // lets the connection be reused
	resp.Body.Close()
	o.At = s.now()
	o.DurationMS = float64(o.At.Sub(start).Microseconds()) / 1000
	o.Status, o.Body = &resp.StatusCode, string(bytes.ToValidUTF8(answer, []byte("\uFFFD")))
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		o.Error = fmt.Sprintf("the receiver answered %d; a delivery needs a 2xx", resp.StatusCode)
		s.retry(&o, d)
	case rerr != nil:
		o.Delivered = true // the status is the answer; a body cut short does not undo it
	default:
		o.Delivered = true
	}
	return o
}

// retry sets when a failed attempt's delivery goes again, or gives it up once that would be past
// RetryWindow after the delivery was queued: the wait starts at RetryBase and doubles, to at most MaxRetryWait,
// with up to a tenth more at random so that receivers coming back are not hit all at once.
func (s *Service) retry(o *orchestrator.DeliveryOutcome, d orchestrator.ClaimedDelivery) {
	base, window := s.RetryBase, s.RetryWindow
	if base <= 0 {
		base = DefaultRetryBase
	}
	if window <= 0 {
		window = DefaultRetryWindow
	}
	wait := base
	for i := 1; i < d.Attempts && wait < MaxRetryWait; i++ {
		wait *= 2
	}
	wait = min(wait, MaxRetryWait)
	wait += time.Duration(rand.Int64N(int64(wait)/10 + 1))
	o.RetryAt = o.At.Add(wait)
	if o.RetryAt.After(d.CreatedAt.Add(window)) {
		o.GiveUp = true
	}
}
