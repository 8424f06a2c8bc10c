package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
)

// TestServeEventsAndRunEnds: serve delivers events to a webhook on loopback (allowed by
// GUILDS_WEBHOOK_ALLOW_PRIVATE) signed with its secret and streams them on GET /api/events; a
// run without a call for GUILDS_RUN_IDLE is closed as idle by serve's own sweep and reported; and
// stopping serve ends an open stream at once instead of waiting out the shutdown grace.
func TestServeEventsAndRunEnds(t *testing.T) {
	_, dsn := pgtest.NewDBWithDSN(t)
	const secret = "whsec_serve_0123456789abcdef"
	var mu sync.Mutex
	var got []string // "type run_id" of each verified delivery
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, sig, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Guilds-Signature"), "t="), ",v1=")
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ts + "." + string(body)))
		if !hmac.Equal([]byte(sig), []byte(hex.EncodeToString(m.Sum(nil)))) {
			w.WriteHeader(400)
			return
		}
		var ev struct {
			Type string
			Data struct {
				Run struct{ ID string } `json:"run"`
			}
		}
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		got = append(got, ev.Type+" "+ev.Data.Run.ID)
		mu.Unlock()
	}))
	defer rcv.Close()
	s := startServe(t, map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken,
		"GUILDS_WEBHOOK_ALLOW_PRIVATE": "true", "GUILDS_RUN_IDLE": "2s"}, nil)
	base := "http://" + s.addr
	_, org := request(t, "POST", base+"/api/orgs", map[string]any{"name": "o"})
	_, g := request(t, "POST", base+"/api/orgs/"+org["id"].(string)+"/guilds", map[string]any{"name": "g"})
	_, a := request(t, "POST", base+"/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": "a"})
	if st, out := request(t, "POST", base+"/api/orgs/"+org["id"].(string)+"/webhooks", map[string]any{"url": rcv.URL, "events": []string{"run.started", "run.closed"}, "secret": secret}); st != 201 {
		t.Fatalf("webhook: %d %v", st, out)
	}
	req, _ := http.NewRequest("GET", base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "event: ") {
				lines <- strings.TrimPrefix(l, "event: ")
			}
		}
	}()

	_, run := request(t, "POST", base+"/api/agents/"+a["id"].(string)+"/runs", map[string]any{"kind": "direct"})
	id := run["id"].(string)
	want := []string{"run.started " + id, "run.closed " + id}
	deadline := time.Now().Add(60 * time.Second) // the idle close comes 2 s after the start, give or take the sweep's second
	for {
		mu.Lock()
		done := strings.Join(got, ",") == strings.Join(want, ",")
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %v, want %v\n%s", got, want, s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, r := request(t, "GET", base+"/api/runs/"+id, nil); st != 200 || r["close_reason"] != "idle" {
		t.Fatalf("run after GUILDS_RUN_IDLE: %d %v", st, r)
	}
	for _, typ := range []string{"run.started", "run.closed"} {
		select {
		case l := <-lines:
			if l != typ {
				t.Fatalf("stream gave %s, want %s", l, typ)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s on the stream", typ)
		}
	}

	stopped := time.Now()
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, s.stderr)
	}
	if d := time.Since(stopped); d > 30*time.Second { // the grace is two minutes: a stream holding it would show
		t.Fatalf("serve took %v to stop with a stream open", d)
	}
	if _, ok := <-lines; ok {
		t.Fatal("the stream went on after serve stopped")
	}
}
