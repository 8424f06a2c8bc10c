package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/pipeline"
	"github.com/guildsai/guilds/orchestrator/registry"
)

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

// Call carries one tool call of a run: record it as started, wait for an operator's approval when
// the tool is resolved Ask, invoke, stamp, record it as completed, answer. A tool failure (bad arguments, a tool the run does not offer, a handler error or panic)
// is a stored "ERROR: ..." result, since the model must see it; a run that is closed or out of
// budget is refused with ECONFLICT and nothing is stored, and so is a name or an argument holding a
// NUL character (EINVALID naming the argument), which no command or stored text can carry. The
// call runs to its end even when ctx is cancelled (the client hung up): a retry under its CallID then gets its result.
func (s *Service) Call(ctx context.Context, runID string, req CallRequest) (CallResult, error) {
	if req.Name == "" {
		return CallResult{}, orchestrator.Errorf(orchestrator.EINVALID, "name is required: the tool to call")
	}
	if len(req.Name) > 200 {
		return CallResult{}, orchestrator.Errorf(orchestrator.EINVALID, "name is %d bytes long; a tool name is at most 64 characters", len(req.Name))
	}
	if err := orchestrator.CheckNUL("name", req.Name); err != nil {
		return CallResult{}, err
	}
	if field, ok := orchestrator.NULPath(req.Arguments); ok {
		return CallResult{}, orchestrator.NULError(argumentPath(field))
	}
	if len(req.CallID) > maxClientCallID || strings.ContainsFunc(req.CallID, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return CallResult{}, orchestrator.Errorf(orchestrator.EINVALID, "call_id must be at most %d printable ASCII characters without spaces (the model's tool-call id), got %q", maxClientCallID, truncate(req.CallID, 40))
	}
	if !orchestrator.ValidID(runID) {
		return CallResult{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "run %q not found", runID)
	}
	client := ctx // a retry stops waiting for another process's call when its caller hangs up
	ctx = context.WithoutCancel(ctx)
	b := s.beat(req.Progress)
	defer b.end()
	args := req.Arguments
	if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if req.CallID == "" {
		return s.call(ctx, runID, req, args, "", b) // no retry can name it: no digest to keep
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
		f.res, f.err = s.call(ctx, runID, req, args, hash, b)
	default:
		f.err = err
	}
	return f.res, f.err
}

// argumentPath names a field of the arguments, as NULPath gave it, from the request's root.
func argumentPath(field string) string {
	switch {
	case field == "":
		return "arguments"
	case strings.HasPrefix(field, "["):
		return "arguments" + field
	}
	return "arguments." + field
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
func (s *Service) call(ctx context.Context, runID string, req CallRequest, args json.RawMessage, hash string, b *beat) (CallResult, error) {
	release := s.shared(runID, req.Name)
	defer func() { release() }()
	run, err := s.loadRun(ctx, runID)
	if err != nil {
		return CallResult{}, err
	}
	if run.Status != orchestrator.RunOpen {
		return CallResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is closed and takes no more tool calls; start a new run", run.ID)
	}
	if req.OfferedOnly && !run.Offers(req.Name) {
		return CallResult{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "tool %q is not offered on this run; nothing was stored; call one of: %s", truncate(req.Name, 80), offeredNames(run))
	}
	if closed(req.Cancel) {
		return CallResult{}, orchestrator.Errorf(orchestrator.ECONFLICT, "the call of %s was cancelled before it ran; nothing ran and nothing was stored", truncate(req.Name, 80))
	}
	red, err := s.redactor(ctx, run)
	if err != nil {
		return CallResult{}, err // before the handler runs: never stamp without the redaction set
	}
	b.redactWith(red)
	var secretArgs []string
	transactional := false
	if t, ok := s.Registry.Get(req.Name); ok {
		secretArgs, transactional = t.SecretArgs, t.Transactional
	}
	callID := orchestrator.NewID(orchestrator.PrefixCall)
	started := s.now()
	// The name is stored like every field, redacted: a model may call a secret by "name".
	storedName := red.Redact(req.Name)
	metricName := metricTool(run, req.Name)
	storedArgs := boundArgs(redactJSON(red, maskSecretArgs(args, secretArgs)))
	seq, err := s.startCall(ctx, orchestrator.ToolCall{RunID: run.ID, CallID: callID, ClientCallID: req.CallID,
		Name: storedName, Arguments: storedArgs, RequestHash: hash, StartedAt: started, Process: s.Process.ID})
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
		s.observe(metricName, "refused", 0)
		return CallResult{}, s.refusal(ctx, run)
	case err != nil:
		return CallResult{}, err // nothing ran
	}
	rc := &registry.Call{RunID: run.ID, AgentID: run.AgentID, GuildID: run.GuildID, OrgID: run.OrgID,
		CallID: callID, Seq: seq, Args: args, Meta: map[string]any{}, Progress: b.reporter()}
	var v verdict
	if t, ok := asks(run, req.Name); ok {
		// Waiting for an operator takes minutes: out of the run's gate, so its other calls, its
		// close and its next generation go on meanwhile; the run is read again after.
		release()
		v = s.approve(ctx, run, t, rc, storedArgs, b.waiting())
		b.waited()
		release = s.shared(runID, req.Name)
		s.forget(runID) // closed or changed meanwhile, perhaps on another replica: read it again
		now, err := s.loadRun(ctx, runID)
		switch {
		case err == nil && now.Status == orchestrator.RunOpen:
			run = now // a generation may have changed the offer meanwhile
		case v.held != "":
		case err != nil:
			v.held, v.kind = fmt.Sprintf("ERROR: %s was approved, but run %s could not be read again after the wait (%s), so it did not run; call it again", req.Name, run.ID, orchestrator.ErrorMessage(err)), "store"
		default:
			v.held, v.kind = fmt.Sprintf("ERROR: run %s was closed while this call of %s waited for its approval, so it did not run", run.ID, req.Name), "closed"
		}
	}
	var errKind string
	var image *registry.Image
	status := orchestrator.CallCompleted
	// finish runs the tool (unless it waited for an approval and did not get it) and makes its
	// completed record.
	finish := func(ctx context.Context) orchestrator.ToolCall {
		raw, kind := v.held, v.kind
		var filter func(string) string
		if v.held == "" {
			raw, filter, kind = s.invoke(ctx, run, req.Name, rc, red)
		}
		errKind = kind
		if errors.Is(context.Cause(ctx), errCancelled) {
			status, errKind, filter = orchestrator.CallCancelled, "cancelled", nil
			raw = fmt.Sprintf("ERROR: %s was cancelled by its client after %.1f s and stopped (its processes killed, a remote call cancelled at its server); call it again if it is still needed",
				req.Name, s.now().Sub(started).Seconds())
		}
		if errKind == "" && rc.Image != nil {
			img, note, err := pipeline.CapJPEG(rc.Image.Data, s.Cap)
			if err != nil {
				note = "[" + err.Error() + "; it is left out]"
			} else {
				image = &registry.Image{MIMEType: rc.Image.MIMEType, Data: img}
			}
			if note != "" {
				raw += "\n" + note
			}
		}
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
			RunID: run.ID, Seq: seq, CallID: callID, ClientCallID: req.CallID, Status: status, Name: storedName,
			Arguments: storedArgs, Result: result, Metadata: redactJSON(red, marshalMeta(rc.Meta)),
			IsError: errKind != "", StartedAt: started, FinishedAt: &finished,
			DurationMS: float64(finished.Sub(started).Microseconds()) / 1000,
		}
	}
	var call orchestrator.ToolCall
	_, isMCP := offeredMCP(run, req.Name)
	_, isDynamic := s.offeredDynamic(run, req.Name)
	if transactional && run.Offers(req.Name) && !isMCP && !isDynamic {
		err := s.Runs.CompleteWith(ctx, func(tctx context.Context) (orchestrator.ToolCall, bool) {
			call = finish(tctx)
			return call, errKind == ""
		})
		if err != nil {
			// Neither the tool's writes nor its completion were stored: the call is recorded as
			// failed, so a retry under its call_id answers that, and nothing half-written stays.
			s.log().Error("a call's writes could not be stored; recorded as failed", "run_id", run.ID, "seq", seq, "call_id", callID, "tool", req.Name, "err", err.Error())
			finished := s.now()
			errKind = "store"
			call = orchestrator.ToolCall{RunID: run.ID, Seq: seq, CallID: callID, ClientCallID: req.CallID, Status: orchestrator.CallCompleted, Name: storedName,
				Result:   pipeline.Stamp("ERROR: "+req.Name+" could not store what it wrote (a database fault), so nothing of it was kept; call it again", pipeline.Options{Redactor: red, Cap: s.Cap, Remaining: run.ToolCallBudget - int(seq)}),
				Metadata: json.RawMessage(`{"error":"store"}`), IsError: true, StartedAt: started, FinishedAt: &finished,
				DurationMS: float64(finished.Sub(started).Microseconds()) / 1000}
			if err := s.complete(ctx, call); err != nil {
				return CallResult{}, err
			}
		}
	} else {
		// Answered before its completed record is written: the next call's start carries the
		// record, or it is written on its own within Linger. The started record, written before
		// the tool ran, is what keeps every effect recorded.
		tctx, release := cancellable(ctx, req.Cancel)
		call = finish(tctx)
		release()
		s.answer(call)
	}
	b.end() // no progress once the result is known
	result, finished := call.Result, *call.FinishedAt
	s.log().Info("tool call", "run_id", run.ID, "seq", seq, "call_id", callID, "tool", red.Redact(req.Name),
		"ms", call.DurationMS, "error", errKind, "result_bytes", len(result))
	outcome := errKind
	if outcome == "" {
		outcome = "ok"
	}
	s.observe(metricName, outcome, finished.Sub(started))
	return CallResult{Seq: seq, CallID: callID, Status: call.Status, Result: result, Metadata: call.Metadata, Image: image}, nil
}

// offeredNames lists the run's offered tools for a message.
func offeredNames(run orchestrator.Run) string {
	names := make([]string, len(run.OfferedTools))
	for i, t := range run.OfferedTools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// startCall records c as started, and carries the record of a call answered meanwhile.
func (s *Service) startCall(ctx context.Context, c orchestrator.ToolCall) (int64, error) {
	taken := s.takeBehind(1)
	var done *orchestrator.ToolCall
	if len(taken) == 1 {
		done = &taken[0].call
	}
	seq, stored, err := s.Runs.StartCallAfter(ctx, c, done)
	if stored {
		s.wrote(taken, nil)
	} else {
		s.requeue(taken)
	}
	return seq, err
}

// NotOfferedLabel is the one metric label of every call whose name the run does not offer, so that
// metric labels carry only offered tool names (never an unbounded set, never a secret sent as a name).
const NotOfferedLabel = "_not_offered"

// metricTool is the tool label a call is counted under: its name when the run offers it, else
// NotOfferedLabel.
func metricTool(run orchestrator.Run, name string) string {
	if run.Offers(name) {
		return name
	}
	return NotOfferedLabel
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
		return fmt.Sprintf("ERROR: tool %q is not offered on this run; call one of: %s", name, offeredNames(run)), nil, "not_offered"
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
