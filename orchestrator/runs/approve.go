package runs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Approver holds the operator approvals that calls of tools resolved Ask wait for
// (approvals.Service implements it).
type Approver interface {
	// Await stores the request for a started call and waits for its decision, without holding a
	// database connection; progress is called while it waits. It answers the request approved,
	// denied or expired; an error means the call must not run.
	Await(ctx context.Context, a orchestrator.Approval, progress func(elapsed time.Duration)) (orchestrator.Approval, error)
	// ExpireRun expires the pending requests of a run that closed.
	ExpireRun(ctx context.Context, runID string) error
}

// MCPArgsChecker is an MCPCaller that checks a call's arguments against the tool's listed schema
// without calling it (connections.Caller is one), so a call of an Ask tool whose arguments fail
// never makes a request.
type MCPArgsChecker interface {
	CheckMCPArgs(ctx context.Context, t orchestrator.OfferedTool, args json.RawMessage) error
}

// WaitingMessage is the progress message of a call waiting for an operator's approval.
const WaitingMessage = "waiting for an operator's approval"

// asks returns the run's offered tool named name when it is resolved Ask.
func asks(run orchestrator.Run, name string) (orchestrator.OfferedTool, bool) {
	for _, t := range run.OfferedTools {
		if t.Name == name {
			return t, t.Ask
		}
	}
	return orchestrator.OfferedTool{}, false
}

// verdict is what a call of an Ask tool learned before it could run: when held is set, the call
// does not run and answers held (an ERROR: line) with kind as its error kind.
type verdict struct {
	held, kind string
	approval   *orchestrator.Approval
}

// approve checks the call's arguments, then makes its approval request and waits for the
// decision. It runs outside the run's gate: the run's other calls, its close and its next
// generation go on meanwhile.
func (s *Service) approve(ctx context.Context, run orchestrator.Run, t orchestrator.OfferedTool, rc *registry.Call, storedArgs json.RawMessage, progress func(Progress)) verdict {
	if err := s.checkArgs(ctx, t, rc.Args); err != nil {
		var argsErr *registry.ArgsError
		if errors.As(err, &argsErr) {
			return verdict{held: "ERROR: " + err.Error(), kind: "arguments"}
		}
		return verdict{held: "ERROR: " + err.Error(), kind: "mcp"}
	}
	if s.Approvals == nil {
		return verdict{held: fmt.Sprintf("ERROR: %s needs an operator's approval for each call, and this orchestrator has no approvals service, so it did not run; use another offered tool", t.Name), kind: "approval"}
	}
	req := orchestrator.Approval{Tool: t.Name, RunID: run.ID, Seq: rc.Seq, CallID: rc.CallID, AgentID: run.AgentID, GuildID: run.GuildID, OrgID: run.OrgID,
		Arguments: storedArgs, ArgumentsSHA256: ArgumentsSHA256(rc.Args)}
	var report func(time.Duration)
	if progress != nil {
		report = func(d time.Duration) { progress(Progress{Elapsed: d, Message: WaitingMessage}) }
	}
	a, err := s.Approvals.Await(ctx, req, report)
	if err != nil {
		s.log().Error("an approval request could not be stored or read; the call did not run", "run_id", run.ID, "seq", rc.Seq, "call_id", rc.CallID, "tool", t.Name, "err", err.Error())
		return verdict{held: fmt.Sprintf("ERROR: %s needs an operator's approval, and its request could not be kept (%s), so it did not run; call it again", t.Name, orchestrator.ErrorMessage(err)), kind: "approval"}
	}
	rc.Meta["approval"] = map[string]any{"id": a.ID, "status": a.Status, "decided_by": a.DecidedBy}
	v := verdict{approval: &a}
	switch {
	case a.Status == orchestrator.ApprovalApproved && a.ArgumentsSHA256 == req.ArgumentsSHA256:
	case a.Status == orchestrator.ApprovalApproved: // an approval of other arguments never runs these
		v.held, v.kind = fmt.Sprintf("ERROR: approval %s is for other arguments than this call's, so %s did not run; call it again", a.ID, t.Name), "approval"
	case a.Status == orchestrator.ApprovalDenied:
		why := "no reason given"
		if a.Reason != "" {
			why = a.Reason
		}
		v.held, v.kind = fmt.Sprintf("ERROR: an operator denied this call of %s (approval %s), so it did not run. Their reason: %s", t.Name, a.ID, why), "denied"
	default:
		v.held, v.kind = fmt.Sprintf("ERROR: %s needs an operator's approval for each call, and %s (approval %s), so it did not run; tell the user it is waiting for approval, or try another way", t.Name, a.Reason, a.ID), "expired"
	}
	return v
}

// checkArgs checks a call's arguments as the tool would before it runs.
func (s *Service) checkArgs(ctx context.Context, t orchestrator.OfferedTool, args json.RawMessage) error {
	if t.ConnectionID != "" {
		if c, ok := s.MCP.(MCPArgsChecker); ok {
			return c.CheckMCPArgs(ctx, t, args)
		}
		return nil
	}
	return s.Registry.Check(t.Name, args)
}

// ArgumentsSHA256 is the lowercase hex SHA-256 of a call's canonical arguments: the JSON with
// object keys sorted and no insignificant space, numbers and strings as sent. An approval is bound
// to it.
func ArgumentsSHA256(args json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	b := []byte(args)
	if dec.Decode(&v) == nil {
		if c, err := marshalPlain(v); err == nil {
			b = c
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
