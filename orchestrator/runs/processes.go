package runs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

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

// processRuns reports whether a process with pid runs on this host. A zombie (killed, and its
// parent has not reaped it) answers signals but runs no more.
func processRuns(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		_, serr := os.Stat("/proc/self/stat")
		return serr != nil // gone since the signal, unless this host has no /proc to ask
	}
	// The state follows the command name, which may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
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
