// Package tools is the floor the tool families share (tools/<family> may import it, never each
// other): HelperTools carries a family's calls to a helper in the calling agent's sandbox, per
// PROTOCOL.md.
package tools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/shared/envelope"
)

// HelperError is a tool call the helper could not answer with an envelope (it crashed, printed
// no envelope, or the sandbox could not run it). Error() is the short message the model reads;
// Detail holds what goes to the operational log only.
type HelperError struct {
	Msg    string
	Detail string
}

// Error returns the short message.
func (e *HelperError) Error() string { return e.Msg }

// LogDetail returns the detail for the operational log; the runs service logs it redacted.
func (e *HelperError) LogDetail() string { return e.Detail }

// CallHelper runs one tool call of helper (its path in the sandbox, e.g. code.Helper) in box, per
// PROTOCOL.md: the request as base64 on argv, or, when that encoding would pass 64 KiB, the JSON
// written through the file API to <RunDir>/requests/<call_id>.json and passed with --request-file.
// It returns the decoded envelope; a failed tool is a Reply with Error set, not an error. An error
// (a *HelperError when the helper ran but gave no envelope) means the call could not be carried.
func CallHelper(ctx context.Context, box sandbox.Sandbox, helper string, req envelope.Request, env []string, timeout time.Duration) (envelope.Reply, error) {
	name := path.Base(helper)
	if err := req.Validate(); err != nil {
		return envelope.Reply{}, fmt.Errorf("%s request: %w", name, err)
	}
	encoded, err := envelope.EncodeRequest(req)
	if err != nil {
		return envelope.Reply{}, err
	}
	argv := []string{helper, encoded}
	if len(encoded) > envelope.MaxInlineRequest {
		file := path.Join(box.Places().RunDir, "requests", req.CallID+".json")
		raw, err := decodeBase64(encoded)
		if err != nil {
			return envelope.Reply{}, err
		}
		if err := box.WriteFile(ctx, file, raw, 0o600); err != nil {
			return envelope.Reply{}, fmt.Errorf("the request (%d bytes) is too large for the command line and its request file could not be written: %w", len(raw), err)
		}
		argv = []string{helper, "--request-file", file}
		// The helper deletes the file once read; one that died first (crash, kill, timeout) did not.
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = box.Remove(rctx, file)
		}()
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Argv: argv, Env: env, Timeout: timeout})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return envelope.Reply{}, &HelperError{Msg: fmt.Sprintf("%s did not answer within %s and was stopped", name, timeout), Detail: string(res.Stderr)}
		}
		return envelope.Reply{}, fmt.Errorf("run %s in the sandbox: %w", name, err)
	}
	note := limitNote(res)
	if res.ExitCode != 0 && note != "" {
		return envelope.Reply{}, &HelperError{
			Msg:    fmt.Sprintf("%s was stopped (exit status %d): %s", name, res.ExitCode, note),
			Detail: string(res.Stderr),
		}
	}
	if res.ExitCode != 0 {
		return envelope.Reply{}, &HelperError{
			Msg:    fmt.Sprintf("%s failed (exit status %d): %s", name, res.ExitCode, res.StderrLine("it printed nothing on standard error")),
			Detail: string(res.Stderr),
		}
	}
	reply, err := envelope.DecodeReply(res.Stdout)
	if err != nil {
		return envelope.Reply{}, &HelperError{
			Msg:    fmt.Sprintf("%s printed no valid envelope: %v", name, err),
			Detail: fmt.Sprintf("stdout: %.2000q\nstderr: %.4000s", res.Stdout, res.Stderr),
		}
	}
	if note != "" {
		if reply.Failed() {
			reply.Error += "\n" + note
		} else {
			reply.Text += "\n" + note
		}
	}
	return reply, nil
}

// limitNote tells the model which of the sandbox's limits the command ran into, "" for none.
func limitNote(res sandbox.ExecResult) string {
	var notes []string
	if res.OOMKilled > 0 {
		what := "a process"
		if res.OOMKilled > 1 {
			what = fmt.Sprintf("%d processes", res.OOMKilled)
		}
		notes = append(notes, fmt.Sprintf("the command ran out of the sandbox's memory limit: the kernel killed %s of it; use less memory at once (smaller inputs, fewer parallel jobs)", what))
	}
	if res.PidsRefused > 0 {
		notes = append(notes, fmt.Sprintf("the command ran into the sandbox's process limit: %d new processes or threads were refused; run fewer processes at once (fewer parallel jobs, no runaway forks)", res.PidsRefused))
	}
	return strings.Join(notes, "\n")
}

// HelperTools turns helper tool calls into registry handlers: each call opens the calling agent's
// sandbox and runs the helper there.
type HelperTools struct {
	Provider sandbox.Provider
	Helper   string        // sandbox path of the helper, e.g. code.Helper
	Timeout  time.Duration // bound on one helper process; the helper enforces the tool's own limits first
	// Env returns extra environment for a call (GUILD_AGENT_ID is always set); nil adds nothing.
	// Its error fails the call.
	Env func(ctx context.Context, call *registry.Call) ([]string, error)
}

// Handler returns the registry handler that runs tool through the helper. The envelope's meta
// becomes the call's metadata, its text the result, and its error an error (rendered
// "ERROR: <message>" by the runs service).
func (h *HelperTools) Handler(tool string) registry.Handler {
	return func(ctx context.Context, call *registry.Call) (string, error) {
		reply, err := h.Run(ctx, tool, call)
		if err != nil {
			return "", err
		}
		if reply.Failed() {
			return "", errors.New(reply.Error)
		}
		return reply.Text, nil
	}
}

// Run carries one call and records the envelope's meta on call.Meta.
func (h *HelperTools) Run(ctx context.Context, tool string, call *registry.Call) (envelope.Reply, error) {
	if h.Provider == nil {
		return envelope.Reply{}, fmt.Errorf("%s is not available: this orchestrator has no sandbox (set GUILDS_SANDBOX to bubblewrap or local)", tool)
	}
	box, err := h.Provider.Open(ctx, call.AgentID)
	if err != nil {
		return envelope.Reply{}, fmt.Errorf("open the agent's sandbox: %w", err)
	}
	env := []string{"GUILD_AGENT_ID=" + call.AgentID}
	if h.Env != nil {
		extra, err := h.Env(ctx, call)
		if err != nil {
			return envelope.Reply{}, err
		}
		env = append(env, extra...)
	}
	req := envelope.Request{Tool: tool, Args: call.Args, RunID: call.RunID, CallID: call.CallID, Seq: call.Seq}
	reply, err := CallHelper(ctx, box, h.Helper, req, env, h.Timeout)
	if err != nil {
		return envelope.Reply{}, err // a *HelperError's detail reaches the log, redacted, through the runs service
	}
	if call.Meta == nil {
		call.Meta = map[string]any{}
	}
	for k, v := range reply.Meta {
		call.Meta[k] = v
	}
	if reply.Image != nil && !reply.Failed() {
		call.Image = &registry.Image{MIMEType: reply.Image.MIMEType, Data: reply.Image.Data}
	}
	return reply, nil
}

// decodeBase64 returns the request JSON behind its encoding.
func decodeBase64(s string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("decode the encoded request: %w", err)
	}
	return raw, nil
}
