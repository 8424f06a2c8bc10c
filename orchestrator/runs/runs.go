// Package runs starts agent runs and carries their tool calls: it snapshots what a run offers,
// serializes each run's calls, invokes the registry, stamps every result through the pipeline and
// stores each call with the run's counter in one transaction.
package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/pipeline"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Service starts runs and carries their tool calls. Its exported fields are set once, before use.
type Service struct {
	Scopes   orchestrator.ScopeStore
	Runs     orchestrator.RunStore
	Registry *registry.Registry
	Offer    OfferPolicy             // what a run offers; DefaultOffer until bindings replace it
	Secrets  orchestrator.RunSecrets // the run's granted secret values; nil means none
	Dynamic  DynamicTools            // per-agent tools beside the registry (parameterised scripts); nil means none
	MCP      MCPCaller               // calls of offered MCP tools; nil answers them with an error
	State    StateSource             // what a run starts knowing besides its tools (pinned prices); nil means nothing
	Log      *slog.Logger            // operational log; nil discards
	Cap      int                     // result byte cap; 0 means pipeline.DefaultCap
	Now      func() time.Time        // clock; nil means time.Now

	mu        sync.Mutex
	snapshots map[string]orchestrator.Run   // runs as last stored (snapshot and counters), bounded
	locks     map[string]*runLock           // one per run with a call in flight or waiting
	extras    map[string]*pipeline.Redactor // values handlers added through registry.Call.Secrets, per run
}

// runLock serializes one run's calls; refs counts the callers holding or waiting for it.
type runLock struct {
	ch   chan struct{}
	refs int
}

// StartRequest is what starting a run takes.
type StartRequest struct {
	// ID is the run's id when the caller fixes it beforehand (the scheduler does, so a start retried
	// after a crash cannot make a second run: the id is the runs' primary key); "" means a new one.
	ID     string
	Kind   string
	Config orchestrator.ConfigPatch // overrides the agent's flags for this run
	Budget *int                     // tool_call_budget; nil means orchestrator.DefaultToolCallBudget
}

// CallRequest is one tool call as the model made it.
type CallRequest struct {
	Name      string
	Arguments json.RawMessage
}

// CallResult is what the model receives: the stamped result, its seq and the call's metadata.
type CallResult struct {
	Seq      int64           `json:"seq"`
	Result   string          `json:"result"`
	Metadata json.RawMessage `json:"metadata"`
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
	agent, err := s.Scopes.GetAgent(ctx, agentID)
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
		OfferedTools: offered, CreatedAt: s.now().Truncate(time.Microsecond),
	}
	if s.State != nil {
		run.State = s.State.RunState(ctx, agent)
	}
	if err := s.Runs.CreateRun(ctx, run); err != nil {
		return orchestrator.Run{}, err
	}
	s.log().Info("run started", "run_id", run.ID, "agent_id", agent.ID, "kind", run.Kind, "offered", len(offered), "budget", budget)
	return run, nil
}

// StateSource is what a run starts knowing besides its tools: bindings' Pinned prices quote.
// It never stops a run start: a failure is carried in the state it returns.
type StateSource interface {
	RunState(ctx context.Context, agent orchestrator.Agent) *orchestrator.RunState
}

// offer asks the policy and adds every always-offered tool, sorted by name.
func (s *Service) offer(ctx context.Context, in OfferInput) ([]orchestrator.OfferedTool, error) {
	all := s.Registry.List()
	var chosen []registry.Tool
	var mcp []orchestrator.OfferedTool
	if s.Offer != nil {
		var err error
		if chosen, mcp, err = s.decide(ctx, in, all); err != nil {
			return nil, fmt.Errorf("decide offered tools: %w", err)
		}
	}
	names := map[string]bool{}
	for _, t := range chosen {
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
		out = append(out, orchestrator.OfferedTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	out = appendMCP(out, mcp, s.log())
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

// ListCalls returns a run's stored calls in seq order.
func (s *Service) ListCalls(ctx context.Context, runID string) ([]orchestrator.ToolCall, error) {
	if !orchestrator.ValidID(runID) {
		return nil, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", runID)
	}
	return s.Runs.ListCalls(ctx, runID)
}

// CloseRun closes a run: it refuses further calls. It waits for a call in flight to finish.
func (s *Service) CloseRun(ctx context.Context, id string) (orchestrator.Run, error) {
	if !orchestrator.ValidID(id) {
		return orchestrator.Run{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", id)
	}
	unlock, err := s.lock(ctx, id)
	if err != nil {
		return orchestrator.Run{}, err
	}
	defer unlock()
	run, err := s.Runs.CloseRun(ctx, id, s.now())
	if err != nil {
		return run, err
	}
	s.mu.Lock()
	delete(s.extras, id)
	delete(s.snapshots, id)
	s.mu.Unlock()
	s.log().Info("run closed", "run_id", id, "calls", run.ToolCallsUsed)
	return run, nil
}

// maxSnapshots bounds the run cache; past it, the cache starts over.
const maxSnapshots = 4096

// loadRun returns the run as this service last stored it. The cache holds each run's snapshot and
// counters: while the run's lock is held, only this service changes them (RecordCall, CloseRun,
// NextGeneration), and it updates or drops the entry as it does. A miss, or an entry dropped after
// a failed write, reads the row. Should the row change behind the service's back (another process,
// SQL by hand), RecordCall's conditional update still refuses the call and the entry is dropped.
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

// lock takes the run's call lock, waiting behind earlier calls of the same run.
func (s *Service) lock(ctx context.Context, runID string) (func(), error) {
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*runLock{}
	}
	l := s.locks[runID]
	if l == nil {
		l = &runLock{ch: make(chan struct{}, 1)}
		s.locks[runID] = l
	}
	l.refs++
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, runID)
		}
		s.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, fmt.Errorf("wait for the run's previous call: %w", ctx.Err())
	}
}

// redactor builds the run's redaction set: its granted secrets and what handlers added so far.
func (s *Service) redactor(ctx context.Context, run orchestrator.Run) (*pipeline.Redactor, error) {
	var vals []string
	if s.Secrets != nil {
		v, err := s.Secrets.RunSecretValues(ctx, run)
		if err != nil {
			return nil, fmt.Errorf("load the run's secrets for redaction: %w", err)
		}
		vals = v
	}
	s.mu.Lock()
	extra := s.extras[run.ID]
	s.mu.Unlock()
	if extra == nil {
		return pipeline.NewRedactor(vals), nil
	}
	return extra.With(vals...), nil
}

// addSecrets remembers values a handler added for the rest of the run (in memory only: a secret
// value is never written to the database; after a restart the granted secrets still apply).
func (s *Service) addSecrets(runID string, vals []string) {
	if len(vals) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extras == nil {
		s.extras = map[string]*pipeline.Redactor{}
	}
	s.extras[runID] = s.extras[runID].With(vals...)
}

// Call carries one tool call of a run: check, invoke, stamp, store, answer. A tool failure (bad
// arguments, a tool the run does not offer, a handler error or panic) is a stored "ERROR: ..." result,
// since the model must see it; a run that is closed or out of budget is refused with ECONFLICT and
// nothing is stored.
func (s *Service) Call(ctx context.Context, runID string, req CallRequest) (CallResult, error) {
	if req.Name == "" {
		return CallResult{}, orchestrator.Errorf(orchestrator.EINVALID, "name is required: the tool to call")
	}
	if len(req.Name) > 200 {
		return CallResult{}, orchestrator.Errorf(orchestrator.EINVALID, "name is %d bytes long; a tool name is at most 64 characters", len(req.Name))
	}
	if !orchestrator.ValidID(runID) {
		return CallResult{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", runID)
	}
	unlock, err := s.lock(ctx, runID)
	if err != nil {
		return CallResult{}, err
	}
	defer unlock()
	run, err := s.loadRun(ctx, runID)
	if err != nil {
		return CallResult{}, err
	}
	if run.Status != orchestrator.RunOpen {
		return CallResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is closed and takes no more tool calls; start a new run", run.ID)
	}
	if run.Remaining() == 0 {
		return CallResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "run %s has used all %d tool calls of its tool_call_budget; start a new run", run.ID, run.ToolCallBudget)
	}
	red, err := s.redactor(ctx, run)
	if err != nil {
		return CallResult{}, err // before the handler runs: never stamp without the redaction set
	}
	seq := int64(run.ToolCallsUsed + 1)
	callID := orchestrator.NewID(orchestrator.PrefixCall)
	started := s.now()
	args := req.Arguments
	if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	rc := &registry.Call{RunID: run.ID, AgentID: run.AgentID, GuildID: run.GuildID, OrgID: run.OrgID,
		CallID: callID, Seq: seq, Args: args, Meta: map[string]any{}}
	raw, filter, errKind := s.invoke(ctx, run, req.Name, rc, red)
	if len(rc.Secrets) > 0 {
		s.addSecrets(run.ID, rc.Secrets)
		red = red.With(rc.Secrets...)
	}
	result := pipeline.Stamp(raw, pipeline.Options{Filter: filter, Redactor: red, Cap: s.Cap, Remaining: run.ToolCallBudget - int(seq)})
	raw = ""
	if errKind != "" {
		rc.Meta["error"] = errKind
	}
	finished := s.now()
	call := orchestrator.ToolCall{
		RunID: run.ID, Seq: seq, CallID: callID, Name: req.Name,
		Arguments: redactJSON(red, args), Result: result, Metadata: redactJSON(red, marshalMeta(rc.Meta)),
		IsError: errKind != "", StartedAt: started, FinishedAt: finished,
		DurationMS: float64(finished.Sub(started).Microseconds()) / 1000,
	}
	if err := s.Runs.RecordCall(ctx, call); err != nil {
		s.forget(run.ID)
		return CallResult{}, err
	}
	run.ToolCallsUsed = int(seq)
	s.remember(run)
	s.log().Info("tool call", "run_id", run.ID, "seq", seq, "call_id", callID, "tool", red.Redact(req.Name),
		"ms", call.DurationMS, "error", errKind, "result_bytes", len(result))
	return CallResult{Seq: seq, Result: result, Metadata: call.Metadata}, nil
}

// invoke runs the tool when the run offers it and returns the raw result (or the ERROR: text), the
// tool's filter for a successful result, and a short error kind ("" on success).
func (s *Service) invoke(ctx context.Context, run orchestrator.Run, name string, rc *registry.Call, red *pipeline.Redactor) (string, func(string) string, string) {
	if !run.Offers(name) {
		names := make([]string, len(run.OfferedTools))
		for i, t := range run.OfferedTools {
			names[i] = t.Name
		}
		return fmt.Sprintf("ERROR: tool %q is not offered on this run; call one of: %s", name, strings.Join(names, ", ")), nil, "not_offered"
	}
	if t, ok := offeredMCP(run, name); ok {
		return s.invokeMCP(ctx, run, t, rc, red)
	}
	if t, ok := s.offeredDynamic(run, name); ok {
		return s.invokeDynamic(ctx, run, t, rc, red)
	}
	tool, ok := s.Registry.Get(name)
	if !ok {
		return fmt.Sprintf("ERROR: tool %q is no longer available on this orchestrator; use another offered tool", name), nil, "unavailable"
	}
	raw, err := s.Registry.Invoke(ctx, name, rc)
	var argsErr *registry.ArgsError
	var panicErr *registry.PanicError
	switch {
	case err == nil:
		return raw, tool.Filter, ""
	case errors.As(err, &argsErr):
		return "ERROR: " + err.Error(), nil, "arguments"
	case errors.As(err, &panicErr):
		// The detail (value and stack) goes to the operational log only, redacted like everything else.
		s.log().Error("tool handler panicked", "run_id", run.ID, "seq", rc.Seq, "call_id", rc.CallID, "tool", name,
			"panic", red.With(rc.Secrets...).Redact(fmt.Sprint(panicErr.Value)), "stack", red.With(rc.Secrets...).Redact(string(panicErr.Stack)))
		return fmt.Sprintf("ERROR: %s failed with an internal error; the operator can find the details in the orchestrator log under call %s", name, rc.CallID), nil, "panic"
	default:
		attrs := []any{"run_id", run.ID, "seq", rc.Seq, "call_id", rc.CallID, "tool", name, "err", red.With(rc.Secrets...).Redact(err.Error())}
		var detailed interface{ LogDetail() string } // detail for the operator only (a helper's standard error, say)
		if errors.As(err, &detailed) {
			attrs = append(attrs, "detail", red.With(rc.Secrets...).Redact(detailed.LogDetail()))
		}
		s.log().Warn("tool handler failed", attrs...)
		return "ERROR: " + err.Error(), nil, "handler"
	}
}

// marshalMeta encodes the handler's metadata; a value that does not encode is named instead.
func marshalMeta(m map[string]any) json.RawMessage {
	b, err := json.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"metadata_error": "metadata did not encode as JSON: " + err.Error()})
	}
	return b
}

// redactJSON redacts JSON text; should redaction ever break the JSON, the redacted text is kept as a
// JSON string, so the column still holds JSON and never the secret.
func redactJSON(red *pipeline.Redactor, doc json.RawMessage) json.RawMessage {
	out := red.Redact(string(doc))
	// PostgreSQL's jsonb refuses the NUL escape; such a document is kept as a string too.
	if json.Valid([]byte(out)) && !strings.Contains(out, `\u0000`) {
		return json.RawMessage(out)
	}
	b, _ := json.Marshal(out)
	return b
}
