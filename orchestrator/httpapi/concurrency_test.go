package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// serve starts the app on a real loopback listener and returns its base URL.
func (e *env) serve() string {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	go func() { _ = e.app.Listener(ln) }()
	e.t.Cleanup(func() { _ = e.app.Shutdown() })
	return "http://" + ln.Addr().String()
}

// post sends one authorized JSON POST over the network.
func post(client *http.Client, url string, body any) (int, map[string]any, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	err = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, err
}

// TestConcurrentCallsOneRun fires calls at one run from many clients at once: they run side by side,
// every call gets a distinct seq (the handler sees each of 1..n once), each trailer counts down from
// its own seq, and the stored rows match, contiguous. A second run's calls go on at the same time.
func TestConcurrentCallsOneRun(t *testing.T) {
	e := newEnv(t, nil)
	base := e.serve()
	agent := e.agent(nil)
	runA := e.run(agent, map[string]any{"kind": "direct", "tool_call_budget": 200})
	runB := e.run(agent, map[string]any{"kind": "direct", "tool_call_budget": 200})
	const workers, each = 8, 15
	client := &http.Client{}
	var wg sync.WaitGroup
	seqs := make(chan int, 2*workers*each)
	errs := make(chan error, 2*workers*each)
	for w := range workers {
		for _, run := range []string{runA, runB} {
			wg.Go(func() {
				for i := range each {
					st, out, err := post(client, base+"/api/runs/"+run+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": fmt.Sprintf("w%d-%d", w, i)}})
					if err != nil || st != 200 {
						errs <- fmt.Errorf("status %d %v %v", st, out, err)
						return
					}
					seq := int(out["seq"].(float64))
					if !strings.HasSuffix(out["result"].(string), fmt.Sprintf("remaining_tool_calls: %d", 200-seq)) {
						errs <- fmt.Errorf("seq %d with result %q", seq, out["result"])
					}
					if run == runA {
						seqs <- seq
					}
				}
			})
		}
	}
	wg.Wait()
	close(seqs)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("seq %d given twice", s)
		}
		seen[s] = true
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct seqs, want %d", len(seen), workers*each)
	}
	// Per run, the handler saw each seq of 1..n once (in whatever order the calls ran).
	e.order.mu.Lock()
	defer e.order.mu.Unlock()
	for _, run := range []string{runA, runB} {
		got := e.order.seqs[run]
		if len(got) != workers*each {
			t.Fatalf("run %s: handler ran %d times", run, len(got))
		}
		once := map[int64]bool{}
		for _, s := range got {
			if s < 1 || s > workers*each || once[s] {
				t.Fatalf("run %s: handler saw seq %d out of range or twice", run, s)
			}
			once[s] = true
		}
	}
	for _, run := range []string{runA, runB} {
		calls := e.must(200, "GET", "/api/runs/"+run+"/calls?limit=500", nil)["calls"].([]any)
		if len(calls) != workers*each {
			t.Fatalf("run %s stored %d calls", run, len(calls))
		}
		for i, c := range calls {
			if c.(map[string]any)["seq"] != float64(i+1) {
				t.Fatalf("stored seq %v at %d", c.(map[string]any)["seq"], i)
			}
		}
	}
}
