package runs

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// How long a run may stay without a call, and a schedule-fired run without its first call, before
// a sweep closes it (GUILDS_RUN_IDLE and GUILDS_RUN_PICKUP when unset).
const (
	DefaultIdle   = 24 * time.Hour
	DefaultPickup = time.Hour
)

// sweepBatch is how many runs one sweep transaction closes at most.
const sweepBatch = 200

// MessageReader reads a message of a guild's group chat (postgres.Store implements it).
type MessageReader interface {
	GroupMessage(ctx context.Context, guildID string, id int64) (orchestrator.ChatMessage, error)
}

// trigger is what starts the run req asks for: the scheduler's firing, the group message it
// names (of the agent's guild), or neither.
func (s *Service) trigger(ctx context.Context, agent orchestrator.Agent, req StartRequest) (orchestrator.RunTrigger, error) {
	switch {
	case req.Schedule != nil:
		return orchestrator.RunTrigger{Type: orchestrator.TriggerSchedule, Schedule: req.Schedule}, nil
	case req.GroupMessageID == 0:
		return orchestrator.RunTrigger{Type: orchestrator.TriggerDirect}, nil
	case req.Kind != orchestrator.KindGroup && req.Kind != orchestrator.KindGroupChat:
		return orchestrator.RunTrigger{}, orchestrator.Errorf(orchestrator.EINVALID, "group_message_id starts a run of kind group or group_chat, not %s; send one of those kinds, or leave group_message_id out", req.Kind)
	case s.Messages == nil:
		return orchestrator.RunTrigger{}, orchestrator.Errorf(orchestrator.EINTERNAL, "group messages cannot be read on this server")
	}
	m, err := s.Messages.GroupMessage(ctx, agent.GuildID, req.GroupMessageID)
	if err != nil {
		return orchestrator.RunTrigger{}, err
	}
	return orchestrator.RunTrigger{Type: orchestrator.TriggerGroupChat, Message: &m}, nil
}

// Paging of ListRuns: the default and the largest page.
const (
	DefaultRunPage = 50
	MaxRunPage     = 500
)

// ListRuns returns a page of an agent's or a guild's runs, newest first, filtered by state (open,
// closed), kind and trigger; a missing agent or guild is ENOTFOUND.
func (s *Service) ListRuns(ctx context.Context, q orchestrator.RunQuery) ([]orchestrator.RunSummary, error) {
	for _, f := range []struct {
		name, value string
		valid       []string
	}{
		{"state", q.Status, []string{orchestrator.RunOpen, orchestrator.RunClosed}},
		{"kind", q.Kind, orchestrator.RunKinds},
		{"trigger", q.Trigger, orchestrator.RunTriggers},
	} {
		if f.value != "" && !slices.Contains(f.valid, f.value) {
			return nil, orchestrator.Errorf(orchestrator.EINVALID, "%s must be one of %s, got %q", f.name, strings.Join(f.valid, ", "), f.value)
		}
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultRunPage
	case q.Limit < 0 || q.Limit > MaxRunPage:
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to %d, got %d", MaxRunPage, q.Limit)
	}
	var err error
	if q.AgentID != "" {
		_, err = s.Scopes.GetAgent(ctx, q.AgentID)
	} else {
		_, err = s.Scopes.GetGuild(ctx, q.GuildID)
	}
	if err != nil {
		return nil, err
	}
	return s.Runs.ListRuns(ctx, q)
}

func (s *Service) idle() time.Duration {
	if s.Idle > 0 {
		return s.Idle
	}
	return DefaultIdle
}

func (s *Service) pickup() time.Duration {
	if s.Pickup > 0 {
		return s.Pickup
	}
	return DefaultPickup
}

// Sweep closes the runs that have had no call for Idle (reason idle) and the schedule-fired runs
// nobody called within Pickup (reason missed), each with its run.closed event (and its calls waiting
// for an operator's approval answered, their requests expired), and returns how many it closed.
// Any replica may sweep at any time: the store never closes a run twice.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	now := s.now().Truncate(time.Microsecond)
	total := 0
	for {
		closed, err := s.Runs.CloseStaleRuns(ctx, now, now.Add(-s.idle()), now.Add(-s.pickup()), sweepBatch)
		total += len(closed)
		for _, r := range closed {
			s.forget(r.ID)
			s.mu.Lock()
			delete(s.extras, r.ID)
			s.mu.Unlock()
			s.log().Info("run closed", "run_id", r.ID, "calls", r.ToolCallsUsed, "reason", r.CloseReason)
			s.expireWaits(ctx, r.ID)
		}
		if err != nil || len(closed) < sweepBatch {
			return total, err
		}
	}
}

// SweepInterval is how often KeepSweeping sweeps: a sixtieth of the shorter of Idle and Pickup,
// between a second and a minute, so a run ends within a few percent of its time.
func (s *Service) SweepInterval() time.Duration {
	return min(max(min(s.idle(), s.pickup())/60, time.Second), time.Minute)
}

// KeepSweeping sweeps every SweepInterval until ctx is done.
func (s *Service) KeepSweeping(ctx context.Context) {
	tk := time.NewTicker(s.SweepInterval())
	defer tk.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log().Error("closing idle and missed runs failed", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}
