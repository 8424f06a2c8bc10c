package runs

import "sync"

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
