// Package runs starts agent runs and carries their tool calls: it snapshots what a run offers,
// records each call as started (taking the run's counter) before it runs and completed after,
// runs one run's calls concurrently (shell calls, and file edits, one at a time), invokes the
// registry, and stamps every result through the pipeline.
package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
	"github.com/guildsai/guilds/orchestrator/pipeline"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Service starts runs and carries their tool calls. Its exported fields are set once, before use.
type Service struct {
	Scopes   orchestrator.ScopeStore
	Runs     Store
	Registry *registry.Registry
	Offer    OfferPolicy             // what a run offers; DefaultOffer until bindings replace it
	Secrets  orchestrator.RunSecrets // the run's granted secret values; nil means none
	Dynamic  DynamicTools            // per-agent tools beside the registry (parameterised scripts); nil means none
	MCP      MCPCaller               // calls of offered MCP tools; nil answers them with an error
	State    StateSource             // what a run starts knowing besides its tools (pinned prices); nil means nothing
	Tokens   RunTokens               // mints each run's own token at its start; nil means runs have none
	// Approvals holds the requests calls of tools resolved Ask wait for; nil answers such a call
	// with an error (it never runs without an approval).
	Approvals Approver
	Log       *slog.Logger     // operational log; nil discards
	Cap       int              // result byte cap; 0 means pipeline.DefaultCap
	Now       func() time.Time // clock; nil means time.Now
	// Observe, when set, is told each call's tool (NotOfferedLabel for a name the run does not
	// offer), outcome ("ok", an error kind such as "arguments" or "handler", or "refused") and
	// duration (the metrics).
	Observe func(tool, outcome string, d time.Duration)
	// Process is this orchestrator process among the replicas on the database: its started calls
	// carry its id, and KeepAlive beats for it. Zero: calls carry none, so any recovery may
	// interrupt them (one process per database).
	Process orchestrator.Process
	// Messages reads the group message a run is started for (group_message_id); nil refuses it.
	Messages MessageReader
	// Idle closes a run with no call for this long (GUILDS_RUN_IDLE); 0 means DefaultIdle.
	Idle time.Duration
	// Pickup closes a schedule-fired run nobody called within it as missed (GUILDS_RUN_PICKUP); 0
	// means DefaultPickup.
	Pickup time.Duration

	mu        sync.Mutex
	snapshots map[string]orchestrator.Run   // runs as last read (snapshot and status), bounded
	gates     map[string]*gate              // one per run with a call in flight or waiting
	flights   map[string]*flight            // calls in flight under a client call id, by run and id
	extras    map[string]*pipeline.Redactor // values handlers added through registry.Call.Secrets, per run
	behind    behind                        // answered calls whose completed records are not written yet
}

// StartRequest is what starting a run takes.
type StartRequest struct {
	// ID is the run's id when the caller fixes it beforehand (the scheduler does, so a start retried
	// after a crash cannot make a second run: the id is the runs' primary key); "" means a new one.
	ID     string
	Kind   string
	Config orchestrator.ConfigPatch // overrides the agent's flags for this run
	Budget *int                     // tool_call_budget; nil means orchestrator.DefaultToolCallBudget
	// Schedule is the firing that starts the run (the scheduler's); nil otherwise.
	Schedule *orchestrator.ScheduleTrigger
	// GroupMessageID names the message of the agent's guild's group chat the run answers (kinds
	// group and group_chat); 0 none.
	GroupMessageID int64
}

// CallRequest is one tool call as the model made it.
type CallRequest struct {
	Name      string
	Arguments json.RawMessage
	// CallID is the client's id for the call (the model's tool-call id, say): a retry under the same
	// id answers the stored call, or waits for it while it runs, and never runs it again. "" means none.
	CallID string
	// Progress, when set, is told how a call that runs past ProgressAfter is going, every
	// ProgressEvery until it ends, and never after Call returns: the time since it started and
	// the tool's latest line (the shell's latest output line), redacted. The MCP endpoint sets it
	// for a call that carries a progressToken; whatever holds a call up (an approval) reports
	// through it too.
	Progress func(Progress)
	// Cancel, when set, stops the call once it is closed, as the tool's timeout would (the shell's
	// process group is killed, a remote MCP call gets its own notifications/cancelled), and the
	// call is recorded as cancelled; closed before the call starts, nothing runs or is stored. A
	// transactional native tool (database writes only) runs to its end. The MCP endpoint closes it
	// on notifications/cancelled.
	Cancel <-chan struct{}
	// OfferedOnly refuses a tool the run does not offer with ENOTFOUND, storing nothing (MCP's
	// unknown tool, a protocol error), where the REST call stores an ERROR: result.
	OfferedOnly bool
}

// Progress is how a call in flight is going.
type Progress struct {
	Elapsed time.Duration
	Message string // the tool's latest line, redacted; "" when it has none
}

// How often a long call reports its progress: first once it has run ProgressAfter, then every
// ProgressEvery.
const (
	ProgressAfter = time.Second
	ProgressEvery = time.Second
)

// CallResult is what the model receives: the stamped result, its seq and the call's metadata.
type CallResult struct {
	Seq      int64           `json:"seq"`
	CallID   string          `json:"call_id"`
	Status   string          `json:"status"` // completed, or interrupted for a retry of a call the orchestrator's stop cut short
	Result   string          `json:"result"`
	Metadata json.RawMessage `json:"metadata"`
	Replayed bool            `json:"replayed"` // the answer of an earlier request under the same call_id; nothing ran
	// Image is the picture the call produced besides its text (browser_screenshot's JPEG), within
	// the result cap; nil for other calls and for a replay. Only MCP answers it.
	Image *registry.Image `json:"-"`
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// StartRun snapshots the agent's config (with the request's overrides) and the tools the run
// offers, with their shaped schemas, and stores the run.
func (s *Service) StartRun(ctx context.Context, agentID string, req StartRequest) (orchestrator.Run, error) {
	if !slices.Contains(orchestrator.RunKinds, req.Kind) {
		return orchestrator.Run{}, orchestrator.Errorf(orchestrator.EINVALID, "kind must be one of %s, got %q", strings.Join(orchestrator.RunKinds, ", "), req.Kind)
	}
	budget := orchestrator.DefaultToolCallBudget
	if req.Budget != nil {
		budget = *req.Budget
		if budget < 1 || budget > orchestrator.MaxToolCallBudget {
			return orchestrator.Run{}, orchestrator.Errorf(orchestrator.EINVALID, "tool_call_budget must be 1 to %d, got %d", orchestrator.MaxToolCallBudget, budget)
		}
	}
	id := req.ID
	if id == "" {
		id = orchestrator.NewID(orchestrator.PrefixRun)
	} else if !orchestrator.ValidID(id) || !strings.HasPrefix(id, orchestrator.PrefixRun+"_") {
		return orchestrator.Run{}, orchestrator.Errorf(orchestrator.EINVALID, "run id %q must be a %s_ id", id, orchestrator.PrefixRun)
	}
	if req.Config.MaxScripts != nil {
		return orchestrator.Run{}, orchestrator.Errorf(orchestrator.EINVALID, "config.max_scripts is the agent's setting, not a run's; change it with PATCH /api/agents/{id}")
	}
	if req.Config.MaxSchedules != nil {
		return orchestrator.Run{}, orchestrator.Errorf(orchestrator.EINVALID, "config.max_schedules is the agent's setting, not a run's; change it with PATCH /api/agents/{id}")
	}
	agent, err := s.Scopes.GetAgent(ctx, agentID)
	if err != nil {
		return orchestrator.Run{}, err
	}
	trigger, err := s.trigger(ctx, agent, req)
	if err != nil {
		return orchestrator.Run{}, err
	}
	cfg := req.Config.Apply(agent.Config)
	offered, err := s.offer(ctx, OfferInput{RunID: id, Agent: agent, Kind: req.Kind, Config: cfg})
	if err != nil {
		return orchestrator.Run{}, err
	}
	run := orchestrator.Run{
		ID: id, AgentID: agent.ID, GuildID: agent.GuildID, OrgID: agent.OrgID,
		Kind: req.Kind, Status: orchestrator.RunOpen, Config: cfg, ToolCallBudget: budget,
		OfferedTools: offered, CreatedAt: s.now().Truncate(time.Microsecond), Trigger: trigger,
	}
	run.LastActiveAt = run.CreatedAt
	if s.State != nil {
		run.State = s.State.RunState(ctx, agent)
	}
	if s.Tokens != nil {
		t, err := s.Tokens.MintRunToken(run.ID)
		if err != nil {
			return orchestrator.Run{}, fmt.Errorf("mint the run's token: %w", err)
		}
		run.Token, run.TokenHash, run.TokenSealed, run.TokenExpiresAt = t.Value, t.Hash, t.Sealed, &t.ExpiresAt
	}
	if err := s.Runs.CreateRun(ctx, run); err != nil {
		return orchestrator.Run{}, err
	}
	if run.Token != "" {
		s.addSecrets(run.ID, []string{run.Token}) // the run's redaction masks its own token from its first call
	}
	run.TokenHash, run.TokenSealed, run.TokenExpiresAt = nil, nil, nil
	s.log().Info("run started", "run_id", run.ID, "agent_id", agent.ID, "kind", run.Kind, "trigger", trigger.Type, "offered", len(offered), "budget", budget)
	return run, nil
}

// RunTokens mints a run's own token (identity.Service implements it).
type RunTokens interface {
	MintRunToken(runID string) (identity.RunToken, error)
}

// StateSource is what a run starts knowing besides its tools: bindings' Pinned prices quote.
// It never stops a run start: a failure is carried in the state it returns.
type StateSource interface {
	RunState(ctx context.Context, agent orchestrator.Agent) *orchestrator.RunState
}

// offer asks the policy and adds every always-offered tool, sorted by name.
func (s *Service) offer(ctx context.Context, in OfferInput) ([]orchestrator.OfferedTool, error) {
	all := s.Registry.List()
	var dec Offer
	if s.Offer != nil {
		var err error
		if dec, err = s.decide(ctx, in, all); err != nil {
			return nil, fmt.Errorf("decide offered tools: %w", err)
		}
	}
	names := map[string]bool{}
	for _, t := range dec.Native {
		names[t.Name] = true
	}
	out := []orchestrator.OfferedTool{}
	for _, t := range all {
		if !names[t.Name] && t.Family != orchestrator.FamilyAlways {
			continue
		}
		schema, ok := s.Registry.OfferedSchema(t.Name)
		if !ok {
			continue // unregistered meanwhile
		}
		out = append(out, orchestrator.OfferedTool{Name: t.Name, Description: t.Description, InputSchema: schema, Ask: names[t.Name] && dec.Ask[t.Name]})
	}
	out = appendMCP(out, dec.MCP, s.log())
	if s.Dynamic != nil {
		dyn, err := s.Dynamic.Offer(ctx, in, out)
		if err != nil {
			return nil, fmt.Errorf("offer the agent's own tools: %w", err)
		}
		out = appendDynamic(out, dyn, s.log())
	}
	return out, nil
}

// GetRun returns a run.
func (s *Service) GetRun(ctx context.Context, id string) (orchestrator.Run, error) {
	if !orchestrator.ValidID(id) {
		return orchestrator.Run{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", id)
	}
	return s.Runs.GetRun(ctx, id)
}

// Paging of ListCalls: the default and the largest page.
const (
	DefaultCallPage = 50
	MaxCallPage     = 500
)

// ListCalls returns a page of a run's stored calls in seq order: those after seq page.After, at
// most page.Limit (0 means DefaultCallPage; more than MaxCallPage is refused).
func (s *Service) ListCalls(ctx context.Context, runID string, page orchestrator.CallPage) ([]orchestrator.ToolCall, error) {
	if !orchestrator.ValidID(runID) {
		return nil, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", runID)
	}
	switch {
	case page.Limit == 0:
		page.Limit = DefaultCallPage
	case page.Limit < 0 || page.Limit > MaxCallPage:
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to %d, got %d", MaxCallPage, page.Limit)
	}
	if page.After < 0 {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "after must be a seq (0 or more), got %d", page.After)
	}
	if err := s.settle(ctx, runID); err != nil {
		return nil, err
	}
	return s.Runs.ListCalls(ctx, runID, page)
}

// CloseRun closes a run for the reason (orchestrator.CloseOperator or CloseRuntime): it refuses
// further calls. It waits for the calls in flight to finish, except those waiting for an
// operator's approval: their requests expire, and they answer without running.
func (s *Service) CloseRun(ctx context.Context, id, reason string) (orchestrator.Run, error) {
	if !orchestrator.ValidID(id) {
		return orchestrator.Run{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", id)
	}
	unlock := s.exclusive(id)
	defer unlock()
	run, err := s.Runs.CloseRun(ctx, id, s.now(), reason)
	if err != nil {
		return run, err
	}
	s.expireWaits(ctx, id)
	s.mu.Lock()
	delete(s.extras, id)
	delete(s.snapshots, id)
	s.mu.Unlock()
	s.log().Info("run closed", "run_id", id, "calls", run.ToolCallsUsed, "reason", run.CloseReason)
	return run, nil
}

// expireWaits expires the approval requests of a run that closed: its calls waiting for an
// operator's approval answer now, without running.
func (s *Service) expireWaits(ctx context.Context, runID string) {
	if s.Approvals == nil {
		return
	}
	if err := s.Approvals.ExpireRun(ctx, runID); err != nil {
		s.log().Warn("a closed run's approval requests were not expired; they expire in their own time", "run_id", runID, "err", err.Error())
	}
}

// RunChanged drops what this service cached of the run: another replica opened its next
// generation or closed it (the database's notices on postgres.RunsChannel).
func (s *Service) RunChanged(id string) { s.forget(id) }

// maxSnapshots bounds the run cache; past it, the cache starts over.
const maxSnapshots = 4096

// loadRun returns the run as this service last read it. The cache holds each run's snapshot and
// status (its counter is the database's: StartCall takes it): only CloseRun and NextGeneration
// change them, alone on the run's gate, and they drop the entry. A miss reads the row. Should the
// row change behind the service's back (another process, SQL by hand), StartCall's conditional
// update still refuses a call of a closed or spent run and the entry is dropped.
func (s *Service) loadRun(ctx context.Context, id string) (orchestrator.Run, error) {
	s.mu.Lock()
	run, ok := s.snapshots[id]
	s.mu.Unlock()
	if ok {
		return run, nil
	}
	run, err := s.Runs.GetRun(ctx, id)
	if err != nil {
		return run, err
	}
	s.remember(run)
	return run, nil
}

// remember caches run.
func (s *Service) remember(run orchestrator.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snapshots == nil || len(s.snapshots) >= maxSnapshots {
		s.snapshots = map[string]orchestrator.Run{}
	}
	s.snapshots[run.ID] = run
}

// forget drops a run from the cache, so the next call reads its row.
func (s *Service) forget(id string) {
	s.mu.Lock()
	delete(s.snapshots, id)
	s.mu.Unlock()
}
