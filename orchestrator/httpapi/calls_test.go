package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestCallPaging: GET /api/runs/{id}/calls answers 50 calls by default with next_after, the next
// page after that seq, at most 500, and refuses a limit or after out of range.
func TestCallPaging(t *testing.T) {
	e := newEnv(t, nil)
	run := e.run(e.agent(nil), map[string]any{"kind": "direct", "tool_call_budget": 120})
	for i := range 120 {
		e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": fmt.Sprint(i)}})
	}
	seqs := func(out map[string]any) (first, last, n int) {
		calls := out["calls"].([]any)
		if len(calls) == 0 {
			return 0, 0, 0
		}
		return int(calls[0].(map[string]any)["seq"].(float64)), int(calls[len(calls)-1].(map[string]any)["seq"].(float64)), len(calls)
	}
	for _, c := range []struct {
		query          string
		first, last, n int
		nextAfter      any
	}{
		{"", 1, 50, 50, float64(50)},
		{"?after=50", 51, 100, 50, float64(100)},
		{"?after=100", 101, 120, 20, nil},
		{"?limit=500", 1, 120, 120, nil},
		{"?limit=7&after=3", 4, 10, 7, float64(10)},
		{"?after=120", 0, 0, 0, nil},
	} {
		out := e.must(200, "GET", "/api/runs/"+run+"/calls"+c.query, nil)
		first, last, n := seqs(out)
		if first != c.first || last != c.last || n != c.n || out["next_after"] != c.nextAfter {
			t.Errorf("%q: seqs %d..%d (%d), next_after %v; want %d..%d (%d), %v", c.query, first, last, n, out["next_after"], c.first, c.last, c.n, c.nextAfter)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=501", "?limit=-3", "?after=-1", "?limit=ten"} {
		if st, out := e.do("GET", "/api/runs/"+run+"/calls"+q, nil); st != 422 || errCode(out) != "EINVALID" {
			t.Errorf("%s: %d %v, want 422 EINVALID", q, st, out)
		}
	}
}

// TestLargeCallArguments: a call's stored arguments keep at most 64 KiB, the long value's head with
// its size and hash; a body past 8 MiB is a 413 naming the limit.
func TestLargeCallArguments(t *testing.T) {
	e := newEnv(t, nil)
	run := e.run(e.agent(nil), map[string]any{"kind": "direct"})
	big := strings.Repeat("x", 5<<20)
	e.must(200, "POST", "/api/runs/"+run+"/calls", map[string]any{"name": "echo", "arguments": map[string]any{"text": big}})
	calls := e.must(200, "GET", "/api/runs/"+run+"/calls", nil)["calls"].([]any)
	args, _ := json.Marshal(calls[0].(map[string]any)["arguments"])
	if len(args) > 64<<10 || !strings.Contains(string(args), fmt.Sprintf("of %d bytes elided, sha256 ", len(big))) || !strings.HasPrefix(string(args), `{"text":"xxxx`) {
		t.Fatalf("stored arguments (%d bytes): %.300s", len(args), args)
	}
	// The body is announced, not sent: the server answers from Content-Length before reading it (a
	// client still writing when the answer comes would see its write reset).
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.serve(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/runs/%s/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", run, token, 9<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("9 MiB body: %v", err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	st := resp.StatusCode
	if st != 413 || errCode(out) != "ETOOLARGE" || !strings.Contains(errMessage(out), "8 MiB") {
		t.Fatalf("9 MiB body: %d %v", st, out)
	}
}
