// Package events delivers the outbox: it gives the events stores wrote their places in one stream,
// sends each to the organisation's webhooks (signed, at least once, in order per run, retried with
// backoff), keeps the webhooks' registrations (their URLs checked against private ranges, their
// secrets sealed), and wakes the live streams that read the stream.
package events

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// Defaults of the Service's knobs.
const (
	DefaultRetryBase   = 5 * time.Second    // the wait before a failed delivery's second attempt, doubling after
	MaxRetryWait       = time.Hour          // the longest wait between two attempts
	DefaultRetryWindow = 24 * time.Hour     // a delivery not made within this of its event is given up
	DefaultKeep        = 7 * 24 * time.Hour // events and deliveries are kept this long
	DefaultWorkers     = 16                 // deliveries sent at once by one replica
	AttemptTimeout     = 10 * time.Second   // one attempt's limit, connection and answer included
	pollInterval       = time.Second        // how often the deliverer looks for due retries, notices or not
	placeBatch         = 500                // events placed per transaction
	pruneEvery         = time.Hour
)

// Service delivers events and keeps webhooks. Its exported fields are set once, before Run.
type Service struct {
	Store orchestrator.WebhookStore
	Box   *sealed.Box // seals webhook secrets; nil refuses registrations
	// AllowPrivate lets webhook URLs reach this box and private, link-local and CGNAT ranges
	// (GUILDS_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
	// Resolver looks host names up, at registration and at every attempt; nil: net.DefaultResolver.
	Resolver Resolver
	// Client sends the deliveries; nil: one whose connections go only to checked addresses.
	Client      *http.Client
	RetryBase   time.Duration // 0: DefaultRetryBase
	RetryWindow time.Duration // 0: DefaultRetryWindow
	Keep        time.Duration // 0: DefaultKeep
	Workers     int           // 0: DefaultWorkers
	Now         func() time.Time
	Log         *slog.Logger

	once        sync.Once
	clientOnce  sync.Once
	http        *http.Client
	placeWake   chan struct{}
	deliverWake chan struct{}
	mu          sync.Mutex
	subs        map[chan struct{}]struct{}
	notices     bool
	placing     outage
	claiming    outage
}

// outage logs a loop's failures once until it works again (a database outage would otherwise
// log every second).
type outage struct{ down atomic.Bool }

func (o *outage) failed(log *slog.Logger, msg string, err error) {
	if o.down.CompareAndSwap(false, true) {
		log.Error(msg, "err", err.Error())
		return
	}
	log.Debug(msg, "err", err.Error())
}

func (o *outage) worked(log *slog.Logger, msg string) {
	if o.down.CompareAndSwap(true, false) {
		log.Info(msg)
	}
}

func (s *Service) init() {
	s.once.Do(func() {
		s.placeWake = make(chan struct{}, 1)
		s.deliverWake = make(chan struct{}, 1)
		s.subs = map[chan struct{}]struct{}{}
	})
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// poke wakes a loop without blocking (one pending wake is enough).
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Notify takes a notice of the events channel: "new" (a transaction wrote events: place them) or
// "placed" (some were placed, here or on another replica: deliver them and wake the streams).
func (s *Service) Notify(payload string) {
	s.init()
	if payload == "placed" {
		s.placed()
		return
	}
	poke(s.placeWake)
}

// Live records whether the change notices flow: while they do not, the placer polls every second.
func (s *Service) Live(on bool) {
	s.init()
	s.mu.Lock()
	s.notices = on
	s.mu.Unlock()
	if !on {
		poke(s.placeWake)
	}
}

// placed wakes the deliverer and every live stream.
func (s *Service) placed() {
	s.init()
	poke(s.deliverWake)
	s.mu.Lock()
	for ch := range s.subs {
		poke(ch)
	}
	s.mu.Unlock()
}

// Subscribe returns a channel that receives a wake whenever events were placed in the stream, and
// the function that ends the subscription.
func (s *Service) Subscribe() (<-chan struct{}, func()) {
	s.init()
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}

// EventsAfter returns up to limit events after stream position pos, in stream order.
func (s *Service) EventsAfter(ctx context.Context, pos int64, limit int) ([]orchestrator.Event, error) {
	return s.Store.EventsAfter(ctx, pos, limit)
}

// LastEventPos is the position of the stream's latest event.
func (s *Service) LastEventPos(ctx context.Context) (int64, error) { return s.Store.LastEventPos(ctx) }

// Run places and delivers events until ctx is done, then waits for the attempts in flight (cut
// short by ctx; their deliveries stay pending and go again).
func (s *Service) Run(ctx context.Context) {
	s.init()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.placeLoop(ctx) }()
	go func() { defer wg.Done(); s.deliverLoop(ctx) }()
	wg.Wait()
}

// placeLoop places new events when a notice says there are some, every second while notices do not
// flow, every ten seconds regardless, and prunes what is older than Keep every hour.
func (s *Service) placeLoop(ctx context.Context) {
	tk := time.NewTicker(pollInterval)
	defer tk.Stop()
	var lastPoll, lastPrune time.Time
	for {
		s.mu.Lock()
		notices := s.notices
		s.mu.Unlock()
		woken := false
		select {
		case <-ctx.Done():
			return
		case <-s.placeWake:
			woken = true
		case <-tk.C:
		}
		if now := time.Now(); woken || !notices || now.Sub(lastPoll) >= 10*pollInterval {
			lastPoll = now
			s.place(ctx)
		}
		if time.Since(lastPrune) >= pruneEvery {
			lastPrune = time.Now()
			s.prune(ctx)
		}
	}
}

// place places every event waiting, batch after batch.
func (s *Service) place(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := s.Store.PlaceEvents(ctx, placeBatch, s.now())
		if err != nil {
			if ctx.Err() == nil {
				s.placing.failed(s.log(), "placing events failed; retrying every second", err)
			}
			return
		}
		s.placing.worked(s.log(), "placing events works again")
		if n > 0 {
			s.placed()
		}
		if n < placeBatch {
			return
		}
	}
}

// PlaceNow places the events waiting and wakes the deliverer and the streams (tests and benchmarks
// drive it without Run's notices).
func (s *Service) PlaceNow(ctx context.Context) {
	s.init()
	s.place(ctx)
}

// prune deletes events and finished deliveries older than Keep.
func (s *Service) prune(ctx context.Context) {
	keep := s.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	n, err := s.Store.PruneEvents(ctx, s.now().Add(-keep))
	switch {
	case err != nil && ctx.Err() == nil:
		s.log().Error("pruning old events failed", "err", err.Error())
	case n > 0:
		s.log().Info("old events pruned", "events", n, "older_than", keep.String())
	}
}
