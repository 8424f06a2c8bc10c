// Package approvals holds the operator approvals that tools resolved Ask wait for: a call of such
// a tool makes a request bound to its exact arguments and waits, holding no database connection,
// until an operator approves or denies it (on any replica: decisions are announced through the
// database) or until nobody did in time; operators list the requests of their scopes and decide.
package approvals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Defaults of a Service.
const (
	DefaultWait = 5 * time.Minute // how long a call waits for a decision (GUILDS_APPROVAL_WAIT)
	DefaultBeat = 5 * time.Second // how often a waiting call reports its progress
)

// How often a waiting call reads its request itself: often while the announcements are down
// (they may be missed), rarely while they are heard (a safety net only; Service.Recheck).
const (
	pollUnheard = 250 * time.Millisecond
	pollHeard   = 5 * time.Second
)

// MaxReason bounds a denial's reason.
const MaxReason = 2000

// Listing bounds.
const (
	DefaultPage = 50
	MaxPage     = 500
)

// Notices delivers the ids of decided or expired requests announced by any replica
// (postgres.Listener on postgres.ApprovalsChannel implements it): handle for each, live(true) once
// they are heard and live(false) whenever they stop.
type Notices interface {
	Listen(ctx context.Context, handle func(string), live func(bool))
}

// Service makes, waits for and decides approval requests. Set its fields once, before use.
type Service struct {
	Store orchestrator.ApprovalStore
	Wait  time.Duration // how long a call waits for a decision; 0: DefaultWait
	Beat  time.Duration // how often a waiting call reports progress; 0: DefaultBeat
	// Recheck is how often a waiting call reads its request while the announcements are heard
	// (a safety net: an announcement ends the wait at once); 0: 5 s.
	Recheck time.Duration
	Now     func() time.Time // clock; nil: time.Now
	Log     *slog.Logger     // operational log; nil discards

	mu       sync.Mutex
	waiters  map[string]chan orchestrator.Approval // by request id: a decision, or a zero value to read the row again
	heard    bool                                  // the announcements are being heard
	stopping chan struct{}                         // closed by Stop
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

// WaitFor is how long a call waits for a decision.
func (s *Service) WaitFor() time.Duration {
	if s.Wait > 0 {
		return s.Wait
	}
	return DefaultWait
}

func (s *Service) beat() time.Duration {
	if s.Beat > 0 {
		return s.Beat
	}
	return DefaultBeat
}

// stopped is closed once Stop is called.
func (s *Service) stopped() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping == nil {
		s.stopping = make(chan struct{})
	}
	return s.stopping
}

// Stop ends every wait of this process: each request expires, saying the orchestrator stopped,
// and its call answers without running. serve calls it before finishing the calls in flight, so a
// shutdown does not wait out the operators.
func (s *Service) Stop() {
	ch := s.stopped()
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// Listen hears the announcements of decisions and expiries made on any replica, until ctx ends.
func (s *Service) Listen(ctx context.Context, n Notices) {
	n.Listen(ctx, s.wake, func(live bool) {
		s.mu.Lock()
		s.heard = live
		waiters := len(s.waiters)
		s.mu.Unlock()
		if live && waiters > 0 {
			s.wakeAll() // anything announced while they were not heard is read now
		}
	})
}

// wake tells the request's waiter, if it is in this process, to read its request again.
func (s *Service) wake(id string) { s.deliver(orchestrator.Approval{ID: id}) }

// wakeAll tells every waiter of this process to read its request again.
func (s *Service) wakeAll() {
	s.mu.Lock()
	ids := make([]string, 0, len(s.waiters))
	for id := range s.waiters {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.wake(id)
	}
}

// deliver hands a request's waiter in this process what it must know: the decision itself (a
// decision made here), or a zero status (read the row again). Never blocks.
func (s *Service) deliver(a orchestrator.Approval) {
	s.mu.Lock()
	ch := s.waiters[a.ID]
	s.mu.Unlock()
	if ch == nil {
		return
	}
	if a.Status != "" {
		select { // a decision replaces a mere wake-up waiting in the slot
		case <-ch:
		default:
		}
	}
	select {
	case ch <- a:
	default:
	}
}

// register makes the waiter's slot before its request exists, so no decision can be missed.
func (s *Service) register(id string) chan orchestrator.Approval {
	ch := make(chan orchestrator.Approval, 1)
	s.mu.Lock()
	if s.waiters == nil {
		s.waiters = map[string]chan orchestrator.Approval{}
	}
	s.waiters[id] = ch
	s.mu.Unlock()
	return ch
}

func (s *Service) unregister(id string) {
	s.mu.Lock()
	delete(s.waiters, id)
	s.mu.Unlock()
}

// Heard reports whether the announcements of decisions and expiries are being heard.
func (s *Service) Heard() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heard
}

// recheck is how often a waiting call reads its request itself.
func (s *Service) recheck() time.Duration {
	switch {
	case !s.Heard():
		return pollUnheard
	case s.Recheck > 0:
		return s.Recheck
	}
	return pollHeard
}

// Await stores a pending request for a started call (a's tool, run, seq, call, agent, redacted
// arguments and their canonical digest) and waits for its decision: until an operator decides,
// WaitFor passes (the request then expires), or Stop is called. It holds no database connection
// while it waits, and ends on the decision whichever replica took it. progress, when set, is
// called at once and then every Beat with the time waited so far. It answers the request as
// decided: approved, denied (with the operator's reason) or expired (with why); an error means the
// request could not be stored or read, and the call must not run.
func (s *Service) Await(ctx context.Context, a orchestrator.Approval, progress func(elapsed time.Duration)) (orchestrator.Approval, error) {
	wait := s.WaitFor()
	now := s.now()
	a.ID, a.Status, a.CreatedAt, a.ExpiresAt = orchestrator.NewID(orchestrator.PrefixApproval), orchestrator.ApprovalPending, now, now.Add(wait)
	a.DecidedAt, a.DecidedBy, a.Reason = nil, "", ""
	stop := s.stopped()
	select {
	case <-stop:
		return orchestrator.Approval{}, errors.New("the orchestrator is stopping and takes no new approval requests")
	default:
	}
	ch := s.register(a.ID)
	defer s.unregister(a.ID)
	if err := s.Store.CreateApproval(ctx, a); err != nil {
		return a, err
	}
	s.log().Info("approval requested", "approval_id", a.ID, "run_id", a.RunID, "seq", a.Seq, "tool", a.Tool, "agent_id", a.AgentID, "expires_at", a.ExpiresAt)
	start := time.Now()
	if progress != nil {
		progress(0)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	beat := time.NewTicker(s.beat())
	defer beat.Stop()
	for {
		pollTimer := time.NewTimer(s.recheck())
		var got orchestrator.Approval
		select {
		case got = <-ch:
		case <-pollTimer.C:
		case <-beat.C:
			pollTimer.Stop()
			if progress != nil {
				progress(time.Since(start))
			}
			continue
		case <-deadline.C:
			pollTimer.Stop()
			return s.expire(ctx, a, fmt.Sprintf("nobody approved it within %s", wait))
		case <-stop:
			pollTimer.Stop()
			return s.expire(ctx, a, "the orchestrator stopped before anyone decided")
		}
		pollTimer.Stop()
		if got.Status == "" { // a wake-up, or time to look: read the request
			cur, err := s.Store.GetApproval(ctx, a.ID, s.now())
			switch {
			case orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND:
				a.Status, a.Reason = orchestrator.ApprovalExpired, "its run was deleted (with its agent, guild or organisation) before anyone decided"
				return a, nil
			case err != nil:
				s.log().Warn("reading a waited-for approval request failed; reading it again shortly", "approval_id", a.ID, "err", err.Error())
				continue
			}
			got = cur
		}
		switch got.Status {
		case orchestrator.ApprovalApproved, orchestrator.ApprovalDenied:
			return got, nil
		case orchestrator.ApprovalExpired: // read as expired at its deadline, or expired by a close: record it so
			return s.expire(ctx, a, got.Reason)
		}
	}
}

// expire marks the request expired with the reason and answers it as it then stands: expired, or
// decided by an operator who came first.
func (s *Service) expire(ctx context.Context, a orchestrator.Approval, reason string) (orchestrator.Approval, error) {
	got, err := s.Store.ExpireApproval(ctx, a.ID, reason, s.now())
	if err != nil {
		return a, err
	}
	if got.Status == orchestrator.ApprovalExpired {
		s.log().Info("approval request expired", "approval_id", a.ID, "run_id", a.RunID, "seq", a.Seq, "tool", a.Tool, "reason", got.Reason)
	}
	return got, nil
}

// ExpireRun expires the pending requests of a run that closed; their calls answer at once.
func (s *Service) ExpireRun(ctx context.Context, runID string) error {
	if err := s.Store.ExpireRunApprovals(ctx, runID, "the run was closed before anyone decided", s.now()); err != nil {
		return err
	}
	s.wakeAll()
	return nil
}

// Get reads one request.
func (s *Service) Get(ctx context.Context, id string) (orchestrator.Approval, error) {
	if !orchestrator.ValidID(id) {
		return orchestrator.Approval{}, notFound(id)
	}
	return s.Store.GetApproval(ctx, id, s.now())
}

// notFound is the answer for an unknown request.
func notFound(id string) error {
	return orchestrator.Errorf(orchestrator.ENOTFOUND, "approval %q not found", id)
}

// List lists the requests of an organisation, guild or agent, newest first: of one status when
// status is set, before the request before when set, at most limit (0: DefaultPage).
func (s *Service) List(ctx context.Context, at orchestrator.Chain, status, before string, limit int) ([]orchestrator.Approval, error) {
	if status != "" && !slices.Contains(orchestrator.ApprovalStatuses, status) {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "status must be one of %s, got %q", strings.Join(orchestrator.ApprovalStatuses, ", "), status)
	}
	switch {
	case limit == 0:
		limit = DefaultPage
	case limit < 0 || limit > MaxPage:
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to %d, got %d", MaxPage, limit)
	}
	if before != "" && !orchestrator.ValidID(before) {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "before must be an approval id (the last id of the previous page), got %q", before)
	}
	return s.Store.ListApprovals(ctx, orchestrator.ApprovalQuery{Chain: at, Status: status, Before: before, Limit: limit}, s.now())
}

// Pending counts the requests that may still be decided, per agent, of one organisation ("" every one).
func (s *Service) Pending(ctx context.Context, orgID string) ([]orchestrator.PendingApprovals, error) {
	return s.Store.PendingApprovals(ctx, orgID, s.now())
}

// Decide approves or denies a pending request, by: the account's id, or DecidedByAdmin. A decision
// is final and taken once: a request decided meanwhile, expired, or whose call no longer waits is
// ECONFLICT naming why, an unknown one ENOTFOUND. The waiting call hears it at once when it waits
// in this process, through the database's announcement otherwise.
func (s *Service) Decide(ctx context.Context, id string, approve bool, reason, by string) (orchestrator.Approval, error) {
	if !orchestrator.ValidID(id) {
		return orchestrator.Approval{}, notFound(id)
	}
	reason = strings.TrimSpace(reason)
	if len(reason) > MaxReason {
		return orchestrator.Approval{}, orchestrator.Errorf(orchestrator.EINVALID, "reason is %d bytes; keep it to %d", len(reason), MaxReason)
	}
	d := orchestrator.ApprovalDecision{ID: id, Status: orchestrator.ApprovalDenied, Reason: reason, By: by, At: s.now()}
	if approve {
		d.Status = orchestrator.ApprovalApproved
	}
	a, err := s.Store.DecideApproval(ctx, d)
	if err != nil {
		return a, err
	}
	s.deliver(a)
	s.log().Info("approval decided", "approval_id", a.ID, "status", a.Status, "decided_by", a.DecidedBy, "run_id", a.RunID, "seq", a.Seq, "tool", a.Tool)
	return a, nil
}
