// Package runs starts agent runs and carries their tool calls: it snapshots what a run offers,
// records each call as started (taking the run's counter) before it runs and completed after,
// runs one run's calls concurrently (shell calls, and file edits, one at a time), invokes the
// registry, and stamps every result through the pipeline.
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
	"syscall"
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
	// Observe, when set, is told each call's tool, outcome ("ok", an error kind such as
	// "arguments" or "handler", or "refused") and duration (the metrics).
	Observe func(tool, outcome string, d time.Duration)
	// Process is this orchestrator process among the replicas on the database: its started calls
	// carry its id, and KeepAlive beats for it. Zero: calls carry none, so any recovery may
	// interrupt them (one process per database).
	Process orchestrator.Process

	mu        sync.Mutex
	snapshots map[string]orchestrator.Run   // runs as last read (snapshot and status), bounded
	gates     map[string]*gate              // one per run with a call in flight or waiting
	flights   map[string]*flight            // calls in flight under a client call id, by run and id
	extras    map[string]*pipeline.Redactor // values handlers added through registry.Call.Secrets, per run
	behind    behind                        // answered calls whose completed records are not written yet
}

// gate orders one run's work: calls hold rw shared, CloseRun and NextGeneration alone; the calls
// of one lane take its mutex too. refs counts the callers holding or waiting (under Service.mu).
type gate struct {
	rw    sync.RWMutex
	lanes map[string]*sync.Mutex
	refs  int
}

// lanes are the tools whose calls of one run go one at a time, in arrival order: shell commands
// share the run's working directory, and two edits of one file must not interleave.
var lanes = map[string]string{"shell": "shell", "file_edit": "files", "file_write": "files"}

// flight is a call in flight under a client call id; a retry with that id waits for its answer.
type flight struct {
	hash string
	done chan struct{}
	res  CallResult
	err  error
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
	// CallID is the client's id for the call (the model's tool-call id, say): a retry under the same
	// id answers the stored call, or waits for it while it runs, and never runs it again. "" means none.
	CallID string
}

// CallResult is what the model receives: the stamped result, its seq and the call's metadata.
type CallResult struct {
	Seq      int64           `json:"seq"`
	CallID   string          `json:"call_id"`
	Status   string          `json:"status"` // completed, or interrupted for a retry of a call the orchestrator's stop cut short
	Result   string          `json:"result"`
	Metadata json.RawMessage `json:"metadata"`
	Replayed bool            `json:"replayed"` // the answer of an earlier request under the same call_id; nothing ran
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

// The beat of a process taking calls, and how long a silent one is taken for gone.
const (
	ProcessBeat  = 10 * time.Second
	ProcessStale = 45 * time.Second
)

// RecoverCalls marks the calls a stopped orchestrator process left started as interrupted, with a
// result saying so: those of no process, or of one that has not beaten for ProcessStale. A live
// replica's running calls are left alone. serve runs it once before it takes calls, then KeepAlive
// at every beat (a replica that crashed and never came back is cleaned up by its peers).
func (s *Service) RecoverCalls(ctx context.Context) (int64, error) {
	now := s.now()
	if s.Process.ID != "" {
		if err := s.endDeadNeighbours(ctx); err != nil {
			return 0, err
		}
		if err := s.Runs.BeatProcess(ctx, s.Process, now); err != nil {
			return 0, err
		}
	}
	n, err := s.Runs.InterruptCalls(ctx, now, InterruptedResult, now.Add(-ProcessStale))
	if err != nil {
		return 0, err
	}
	if n > 0 {
		s.log().Warn("calls left started by a stopped orchestrator process marked interrupted", "calls", n)
	}
	return n, nil
}

// endDeadNeighbours ends the rows of this host's processes that are no longer running (a
// restart after a crash finds its predecessor so), so their calls are interrupted at once rather
// than after ProcessStale. A process of this host is gone when its pid is not running or is this
// process's own (a container's orchestrator is often pid 1 each time).
func (s *Service) endDeadNeighbours(ctx context.Context) error {
	procs, err := s.Runs.HostProcesses(ctx, s.Process.Host)
	if err != nil {
		return err
	}
	for _, p := range procs {
		if p.ID == s.Process.ID || (p.PID != s.Process.PID && processRuns(p.PID)) {
			continue
		}
		if err := s.Runs.EndProcess(ctx, p.ID); err != nil {
			return err
		}
		s.log().Info("a stopped orchestrator process of this host found; its calls are interrupted", "process", p.ID, "pid", p.PID)
	}
	return nil
}

// processRuns reports whether a process with pid runs on this host.
func processRuns(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// KeepAlive beats for s.Process every ProcessBeat and interrupts the calls of processes gone
// meanwhile, until ctx ends; then it removes the process's row (a clean stop). A failed beat is
// logged and tried again at the next.
func (s *Service) KeepAlive(ctx context.Context) {
	if s.Process.ID == "" {
		return
	}
	t := time.NewTicker(ProcessBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := s.Runs.EndProcess(ectx, s.Process.ID); err != nil {
				s.log().Warn("orchestrator process row not removed at stop", "err", err.Error())
			}
			cancel()
			return
		case <-t.C:
			if _, err := s.RecoverCalls(ctx); err != nil && ctx.Err() == nil {
				s.log().Warn("orchestrator process beat failed", "err", err.Error())
			}
		}
	}
}

// InterruptedResult is the stored result of a call the orchestrator's stop cut short.
const InterruptedResult = "ERROR: the orchestrator stopped while this call ran (or before its result was stored), so its result was lost; it may have had some or all of its effect (a command may have run, a file or note may have been written): check before doing it again"

// CloseRun closes a run: it refuses further calls. It waits for the calls in flight to finish.
func (s *Service) CloseRun(ctx context.Context, id string) (orchestrator.Run, error) {
	if !orchestrator.ValidID(id) {
		return orchestrator.Run{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", id)
	}
	unlock := s.exclusive(id)
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

// gateOf returns the run's gate, counted as used until the returned release.
func (s *Service) gateOf(runID string) (*gate, func()) {
	s.mu.Lock()
	if s.gates == nil {
		s.gates = map[string]*gate{}
	}
	g := s.gates[runID]
	if g == nil {
		g = &gate{lanes: map[string]*sync.Mutex{}}
		s.gates[runID] = g
	}
	g.refs++
	s.mu.Unlock()
	return g, func() {
		s.mu.Lock()
		if g.refs--; g.refs == 0 {
			delete(s.gates, runID)
		}
		s.mu.Unlock()
	}
}

// shared enters the run's gate beside its other calls, and the tool's lane alone; it waits for a
// close or generation change in progress.
func (s *Service) shared(runID, tool string) func() {
	g, release := s.gateOf(runID)
	g.rw.RLock()
	var lane *sync.Mutex
	if name := lanes[tool]; name != "" {
		s.mu.Lock()
		if lane = g.lanes[name]; lane == nil {
			lane = &sync.Mutex{}
			g.lanes[name] = lane
		}
		s.mu.Unlock()
		lane.Lock()
	}
	return func() {
		if lane != nil {
			lane.Unlock()
		}
		g.rw.RUnlock()
		release()
	}
}

// exclusive takes the run's gate alone, once its calls in flight have finished.
func (s *Service) exclusive(runID string) func() {
	g, release := s.gateOf(runID)
	g.rw.Lock()
	return func() { g.rw.Unlock(); release() }
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

// maxClientCallID bounds a client's call id.
const maxClientCallID = 200

// Call carries one tool call of a run: record it as started, invoke, stamp, record it as completed,
// answer. A tool failure (bad arguments, a tool the run does not offer, a handler error or panic)
// is a stored "ERROR: ..." result, since the model must see it; a run that is closed or out of
// budget is refused with ECONFLICT and nothing is stored. The call runs to its end even when ctx is
// cancelled (the client hung up): a retry under its CallID then gets its result.
func (s *Service) Call(ctx context.Context, runID string, req CallRequest) (CallResult, error) {
	if req.Name == "" {
		return CallResult{}, orchestrator.Errorf(orchestrator.EINVALID, "name is required: the tool to call")
	}
	if len(req.Name) > 200 {
		return CallResult{}, orchestrator.Errorf(orchestrator.EINVALID, "name is %d bytes long; a tool name is at most 64 characters", len(req.Name))
	}
	if len(req.CallID) > maxClientCallID || strings.ContainsFunc(req.CallID, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return CallResult{}, orchestrator.Errorf(orchestrator.EINVALID, "call_id must be at most %d printable ASCII characters without spaces (the model's tool-call id), got %q", maxClientCallID, truncate(req.CallID, 40))
	}
	if !orchestrator.ValidID(runID) {
		return CallResult{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", runID)
	}
	client := ctx // a retry stops waiting for another process's call when its caller hangs up
	ctx = context.WithoutCancel(ctx)
	args := req.Arguments
	if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if req.CallID == "" {
		return s.call(ctx, runID, req, args, "") // no retry can name it: no digest to keep
	}
	hash := requestHash(req.Name, args)
	key := runID + "\x00" + req.CallID
	s.mu.Lock()
	if f := s.flights[key]; f != nil {
		s.mu.Unlock()
		if f.hash != hash {
			return CallResult{}, differentCall(req.CallID)
		}
		<-f.done
		res := f.res
		res.Replayed = f.err == nil
		return res, f.err
	}
	if s.flights == nil {
		s.flights = map[string]*flight{}
	}
	f := &flight{hash: hash, done: make(chan struct{})}
	s.flights[key] = f
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.flights, key)
		s.mu.Unlock()
		close(f.done)
	}()
	if err := s.settle(client, runID); err != nil {
		return CallResult{}, err
	}
	stored, err := s.Runs.GetClientCall(ctx, runID, req.CallID)
	switch orchestrator.ErrorCode(err) {
	case "":
		f.res, f.err = s.awaitStored(client, stored, hash)
	case orchestrator.ENOTFOUND:
		f.res, f.err = s.call(ctx, runID, req, args, hash)
	default:
		f.err = err
	}
	return f.res, f.err
}

// differentCall is the answer to a request reusing a client call id for another call.
func differentCall(id string) error {
	return orchestrator.Errorf(orchestrator.ECONFLICT, "call_id %q is already used on this run by a different call (another tool or other arguments); a retry must repeat the same call, a new call needs a new call_id", truncate(id, 60))
}

// replay answers a retry from the stored call.
func replay(c orchestrator.ToolCall, hash string) (CallResult, error) {
	if c.RequestHash != hash {
		return CallResult{}, differentCall(c.ClientCallID)
	}
	if c.Status == orchestrator.CallStarted {
		return CallResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "call_id %q (seq %d) is still recorded as running, by another orchestrator process or one whose database write failed; retry in a while", truncate(c.ClientCallID, 60), c.Seq)
	}
	return CallResult{Seq: c.Seq, CallID: c.CallID, Status: c.Status, Result: c.Result, Metadata: c.Metadata, Replayed: true}, nil
}

// retryWait bounds how long a retry waits for the call another process runs under its call id.
const retryWait = 10 * time.Minute

// awaitStored answers a retry from the stored call; while another process still runs it, the
// retry reads its row again (every 50 ms, growing to a second) until it ends, the caller hangs up
// or retryWait passes. A process that died with it gets its call interrupted by a live one's
// KeepAlive, which ends the wait too.
func (s *Service) awaitStored(client context.Context, stored orchestrator.ToolCall, hash string) (CallResult, error) {
	deadline := s.now().Add(retryWait)
	pause := 50 * time.Millisecond
	for stored.RequestHash == hash && stored.Status == orchestrator.CallStarted && s.now().Before(deadline) {
		select {
		case <-client.Done():
			return CallResult{}, fmt.Errorf("the retry of call_id %q gave up waiting for its call: %w", truncate(stored.ClientCallID, 60), client.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
		next, err := s.Runs.GetClientCall(context.WithoutCancel(client), stored.RunID, stored.ClientCallID)
		if err != nil {
			return CallResult{}, err
		}
		stored = next
	}
	return replay(stored, hash)
}

// truncate cuts s to at most n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// call runs one new call under the run's gate.
func (s *Service) call(ctx context.Context, runID string, req CallRequest, args json.RawMessage, hash string) (CallResult, error) {
	defer s.shared(runID, req.Name)()
	run, err := s.loadRun(ctx, runID)
	if err != nil {
		return CallResult{}, err
	}
	if run.Status != orchestrator.RunOpen {
		return CallResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is closed and takes no more tool calls; start a new run", run.ID)
	}
	red, err := s.redactor(ctx, run)
	if err != nil {
		return CallResult{}, err // before the handler runs: never stamp without the redaction set
	}
	var secretArgs []string
	transactional := false
	if t, ok := s.Registry.Get(req.Name); ok {
		secretArgs, transactional = t.SecretArgs, t.Transactional
	}
	callID := orchestrator.NewID(orchestrator.PrefixCall)
	started := s.now()
	storedArgs := boundArgs(redactJSON(red, maskSecretArgs(args, secretArgs)))
	seq, err := s.startCall(ctx, orchestrator.ToolCall{RunID: run.ID, CallID: callID, ClientCallID: req.CallID,
		Name: req.Name, Arguments: storedArgs, RequestHash: hash, StartedAt: started, Process: s.Process.ID})
	switch {
	case errors.Is(err, orchestrator.ErrDuplicateCall): // recorded meanwhile by another process
		_ = s.settle(ctx, run.ID)
		stored, gerr := s.Runs.GetClientCall(ctx, run.ID, req.CallID)
		if gerr != nil {
			return CallResult{}, gerr
		}
		return s.awaitStored(ctx, stored, hash)
	case orchestrator.ErrorCode(err) == orchestrator.ECONFLICT:
		s.forget(run.ID)
		s.observe(req.Name, "refused", 0)
		return CallResult{}, s.refusal(ctx, run)
	case err != nil:
		return CallResult{}, err // nothing ran
	}
	rc := &registry.Call{RunID: run.ID, AgentID: run.AgentID, GuildID: run.GuildID, OrgID: run.OrgID,
		CallID: callID, Seq: seq, Args: args, Meta: map[string]any{}}
	var errKind string
	// finish runs the tool and makes its completed record.
	finish := func(ctx context.Context) orchestrator.ToolCall {
		raw, filter, kind := s.invoke(ctx, run, req.Name, rc, red)
		errKind = kind
		storedArgs = nil // kept as StartCall stored them, unless the handler added secrets
		if len(rc.Secrets) > 0 {
			s.addSecrets(run.ID, rc.Secrets)
			red = red.With(rc.Secrets...)
			storedArgs = boundArgs(redactJSON(red, maskSecretArgs(args, secretArgs)))
		}
		result := pipeline.Stamp(raw, pipeline.Options{Filter: filter, Redactor: red, Cap: s.Cap, Remaining: run.ToolCallBudget - int(seq)})
		if errKind != "" {
			rc.Meta["error"] = errKind
		}
		finished := s.now()
		return orchestrator.ToolCall{
			RunID: run.ID, Seq: seq, CallID: callID, ClientCallID: req.CallID, Status: orchestrator.CallCompleted, Name: req.Name,
			Arguments: storedArgs, Result: result, Metadata: redactJSON(red, marshalMeta(rc.Meta)),
			IsError: errKind != "", StartedAt: started, FinishedAt: &finished,
			DurationMS: float64(finished.Sub(started).Microseconds()) / 1000,
		}
	}
	var call orchestrator.ToolCall
	txs, canTx := s.Runs.(CallTxStore)
	_, isMCP := offeredMCP(run, req.Name)
	_, isDynamic := s.offeredDynamic(run, req.Name)
	if transactional && canTx && run.Offers(req.Name) && !isMCP && !isDynamic {
		err := txs.CompleteWith(ctx, func(tctx context.Context) (orchestrator.ToolCall, bool) {
			call = finish(tctx)
			return call, errKind == ""
		})
		if err != nil {
			// Neither the tool's writes nor its completion were stored: the call is recorded as
			// failed, so a retry under its call_id answers that, and nothing half-written stays.
			s.log().Error("a call's writes could not be stored; recorded as failed", "run_id", run.ID, "seq", seq, "call_id", callID, "tool", req.Name, "err", err.Error())
			finished := s.now()
			errKind = "store"
			call = orchestrator.ToolCall{RunID: run.ID, Seq: seq, CallID: callID, ClientCallID: req.CallID, Status: orchestrator.CallCompleted, Name: req.Name,
				Result:   pipeline.Stamp("ERROR: "+req.Name+" could not store what it wrote (a database fault), so nothing of it was kept; call it again", pipeline.Options{Redactor: red, Cap: s.Cap, Remaining: run.ToolCallBudget - int(seq)}),
				Metadata: json.RawMessage(`{"error":"store"}`), IsError: true, StartedAt: started, FinishedAt: &finished,
				DurationMS: float64(finished.Sub(started).Microseconds()) / 1000}
			if err := s.complete(ctx, call); err != nil {
				return CallResult{}, err
			}
		}
	} else if s.behindStore() != nil {
		// Answered before its completed record is written: the next call's start carries the
		// record, or it is written on its own within Linger. The started record, written before
		// the tool ran, is what keeps every effect recorded.
		call = finish(ctx)
		s.answer(call)
	} else {
		call = finish(ctx)
		if err := s.complete(ctx, call); err != nil {
			return CallResult{}, err
		}
	}
	result, finished := call.Result, *call.FinishedAt
	s.log().Info("tool call", "run_id", run.ID, "seq", seq, "call_id", callID, "tool", red.Redact(req.Name),
		"ms", call.DurationMS, "error", errKind, "result_bytes", len(result))
	outcome := errKind
	if outcome == "" {
		outcome = "ok"
	}
	s.observe(req.Name, outcome, finished.Sub(started))
	return CallResult{Seq: seq, CallID: callID, Status: call.Status, Result: result, Metadata: call.Metadata}, nil
}

// startCall records c as started, and carries the records of calls answered meanwhile when the
// store can (BehindStore).
func (s *Service) startCall(ctx context.Context, c orchestrator.ToolCall) (int64, error) {
	bs := s.behindStore()
	if bs == nil {
		return s.Runs.StartCall(ctx, c)
	}
	taken := s.takeBehind(1)
	var done *orchestrator.ToolCall
	if len(taken) == 1 {
		done = &taken[0].call
	}
	seq, stored, err := bs.StartCallAfter(ctx, c, done)
	if stored {
		s.wrote(taken, nil)
	} else {
		s.requeue(taken)
	}
	return seq, err
}

// observe tells Observe about a call, when it is set.
func (s *Service) observe(tool, outcome string, d time.Duration) {
	if s.Observe != nil {
		s.Observe(tool, outcome, d)
	}
}

// CallTxStore is a RunStore that runs a native tool's writes and its call's completion in one
// transaction (postgres.Store does): work gets the ctx the tool's store calls must carry, and says
// whether its writes stay (false: the tool failed, they are rolled back; the completion stays).
type CallTxStore interface {
	CompleteWith(ctx context.Context, work func(ctx context.Context) (orchestrator.ToolCall, bool)) error
}

// completeWait bounds how long a finished call's result waits for the database to take it (an
// outage the supervisor ends in seconds); past it the call stays started, and is marked
// interrupted at the next start.
const completeWait = 30 * time.Second

// complete records the call as completed, retrying while the database is unreachable.
func (s *Service) complete(ctx context.Context, call orchestrator.ToolCall) error {
	deadline, wait := time.Now().Add(completeWait), 100*time.Millisecond
	for {
		err := s.Runs.CompleteCall(ctx, call)
		if err == nil || orchestrator.ErrorCode(err) != orchestrator.EINTERNAL || time.Now().After(deadline) {
			if err != nil {
				s.log().Error("a call's result could not be stored", "run_id", call.RunID, "seq", call.Seq, "call_id", call.CallID, "err", err.Error())
			}
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// refusal says why StartCall refused a call: the run closed or its budget spent.
func (s *Service) refusal(ctx context.Context, cached orchestrator.Run) error {
	run, err := s.Runs.GetRun(ctx, cached.ID)
	if err != nil {
		return err
	}
	if run.Status != orchestrator.RunOpen {
		return orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is closed and takes no more tool calls; nothing was stored; start a new run", run.ID)
	}
	return orchestrator.Errorf(orchestrator.ECONFLICT, "run %s has used all %d tool calls of its tool_call_budget; nothing was stored; start a new run", run.ID, run.ToolCallBudget)
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
		s.log().Log(ctx, failureLevel(err), "tool handler failed", attrs...)
		return "ERROR: " + err.Error(), nil, "handler"
	}
}

// failureLevel is the log level of a failed call: INFO for the model's mistake (arguments or a
// request the tool refused: EINVALID, ENOTFOUND, EFORBIDDEN, ECONFLICT), where the operator did
// nothing wrong; WARN for anything else.
func failureLevel(err error) slog.Level {
	var argsErr *registry.ArgsError
	if errors.As(err, &argsErr) {
		return slog.LevelInfo
	}
	switch orchestrator.ErrorCode(err) {
	case orchestrator.EINVALID, orchestrator.ENOTFOUND, orchestrator.EFORBIDDEN, orchestrator.ECONFLICT:
		return slog.LevelInfo
	}
	return slog.LevelWarn
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
