package qonto_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// The login the loopback Qonto accepts.
const (
	qontoLogin  = "acme-e2e-8412"
	qontoSecret = "sk_qonto_e2e_31f9a0"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// adapterServe serves the orchestrator as wired on a fresh database with a secret key, in the
// sandbox backend given.
func adapterServe(t testing.TB, backend string) (*wiretest.Served, string) {
	t.Helper()
	s := wiretest.ServeIn(t, backend)
	return s, s.API
}

// qontoFake is Qonto's Business API on loopback: the organization, one transaction, and an
// upload that attaches at once, keeping what it received.
type qontoFake struct {
	*adapterstest.Fake
	mu       sync.Mutex
	attached []string
	files    [][]byte
}

func newQontoFake(t *testing.T) *qontoFake {
	q := &qontoFake{}
	q.Fake = adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == qontoLogin+":"+qontoSecret })
	q.JSON("GET /v2/organization", 200, []byte(`{"organization":{"slug":"acme-e2e-8412","legal_name":"ACME SAS","bank_accounts":[
		{"id":"acc-1","name":"Main `+qontoLogin+` `+qontoSecret+`","iban":"FR7616958000013234567890180","currency":"EUR","balance":48213.57,"status":"active"}]}}`))
	q.Handle("GET /v2/transactions/tx-0001", func(w http.ResponseWriter, _ *http.Request) {
		q.mu.Lock()
		defer q.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"transaction": map[string]any{"id": "tx-0001", "transaction_id": "tx-0001",
			"attachment_ids": append([]string{}, q.attached...), "status": "completed", "side": "debit", "amount": 12.5, "currency": "EUR"}})
	})
	q.Handle("POST /v2/transactions/tx-0001/attachments", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			w.WriteHeader(400)
			return
		}
		file, _, err := r.FormFile("file")
		if err != nil {
			w.WriteHeader(400)
			return
		}
		data, _ := io.ReadAll(file)
		q.mu.Lock()
		defer q.mu.Unlock()
		q.files = append(q.files, data)
		q.attached = append(q.attached, fmt.Sprintf("att-%d", len(q.attached)+1))
		_ = json.NewEncoder(w).Encode(map[string]any{"attachment": map[string]any{"id": q.attached[len(q.attached)-1]}})
	})
	return q
}

// TestQontoUploadFromBubblewrapWorkspace: upload_invoice reads a real PDF the agent wrote in its
// bubblewrap workspace (by a path relative to the run's working directory), attaches it, and
// refuses a .pdf that is really a shell script and a path outside /home/agent.
func TestQontoUploadFromBubblewrapWorkspace(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil || os.Geteuid() != 0 || os.Getenv("GUILDS_BIN_DIR") == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root with bubblewrap installed and GUILDS_BIN_DIR set")
		}
		t.Skip("needs root, bubblewrap and GUILDS_BIN_DIR")
	}
	_, api := adapterServe(t, "bubblewrap")
	q := newQontoFake(t)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/qonto", map[string]any{"url": q.URL})
	org, agent := wiretest.ScopesAt(t, api)
	conn := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "qonto", "scope": "org", "scope_id": org,
		"credentials": map[string]any{"login": qontoLogin, "secret_key": qontoSecret}})
	if conn["verified_at"] == nil {
		t.Fatalf("connection %v", conn)
	}
	wiretest.Must(t, 200, "PATCH", api+"/api/agents/"+agent, map[string]any{"config": map[string]any{"coding": true}})
	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	if !slices.Contains(wiretest.OfferedNames(run), "qonto_upload_invoice") {
		t.Fatalf("offered %v", wiretest.OfferedNames(run))
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		return wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": args})["result"].(string)
	}
	pdf := "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
	sh := "#!/bin/sh\necho pwned " + qontoSecret + "\n"
	out := call("shell", map[string]any{"command": "mkdir -p invoices && cd invoices && printf '%s' '" + pdf + "' > june.pdf && printf '%s' '" + sh + "' > fake.pdf && pwd"})
	if !strings.Contains(out, "/home/agent/invoices") {
		t.Fatalf("shell: %q", out)
	}

	// Both the login and the secret key join the run's redaction (the fake echoes them in an account name).
	if got := call("qonto_list_bank_accounts", map[string]any{}); !strings.Contains(got, "Main [REDACTED] [REDACTED]") || strings.Contains(got, qontoSecret) {
		t.Fatalf("bank accounts: %q", got)
	}
	got := call("qonto_upload_invoice", map[string]any{"transaction_id": "tx-0001", "file_path": "june.pdf"})
	if !strings.Contains(got, "tx-0001\tjune.pdf\tapplication/pdf\tatt-1\ttrue") {
		t.Fatalf("upload: %q", got)
	}
	q.mu.Lock()
	if len(q.files) != 1 || string(q.files[0]) != pdf {
		t.Fatalf("the fake received %q", q.files)
	}
	q.mu.Unlock()
	for _, bad := range []struct{ path, says string }{
		{"fake.pdf", "not a PDF, JPEG or PNG"},
		{"/etc/passwd", "under /home/agent"},
		{"../../../etc/passwd", "outside"},
	} {
		got := call("qonto_upload_invoice", map[string]any{"transaction_id": "tx-0001", "file_path": bad.path})
		if !strings.HasPrefix(got, "ERROR: Qonto") || !strings.Contains(got, bad.says) || strings.Contains(got, qontoSecret) {
			t.Errorf("%s: %q", bad.path, got)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.files) != 1 {
		t.Fatalf("a refused file reached Qonto: %d uploads", len(q.files))
	}
}

// TestQontoUploadNeverBlocksOrGrows (issue 29): upload_invoice's host-side read of the agent's
// files is bounded and never blocks. A 64 GiB sparse file is refused by its size, a FIFO at once,
// a run whose working-directory file is a 64 GiB sparse file or a FIFO reads relative paths from
// the home, and a file swapped between a small PDF and a sparse one while it is read is either
// read whole or refused. 200 parallel calls on a FIFO all answer, leave no thread of the process
// in open(), and the run then closes at once.
func TestQontoUploadNeverBlocksOrGrows(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil || os.Geteuid() != 0 || os.Getenv("GUILDS_BIN_DIR") == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root with bubblewrap installed and GUILDS_BIN_DIR set")
		}
		t.Skip("needs root, bubblewrap and GUILDS_BIN_DIR")
	}
	_, api := adapterServe(t, "bubblewrap")
	q := newQontoFake(t)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/qonto", map[string]any{"url": q.URL})
	org, agent := wiretest.ScopesAt(t, api)
	wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "qonto", "scope": "org", "scope_id": org,
		"credentials": map[string]any{"login": qontoLogin, "secret_key": qontoSecret}})
	wiretest.Must(t, 200, "PATCH", api+"/api/agents/"+agent, map[string]any{"config": map[string]any{"coding": true}})
	start := func() string {
		return wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct", "tool_call_budget": 1000})["id"].(string)
	}
	runID, other := start(), start()
	call := func(run, name string, args map[string]any) string {
		t.Helper()
		return wiretest.Must(t, 200, "POST", api+"/api/runs/"+run+"/calls", map[string]any{"name": name, "arguments": args})["result"].(string)
	}
	upload := func(run, p string) string {
		return call(run, "qonto_upload_invoice", map[string]any{"transaction_id": "tx-0001", "file_path": p})
	}
	out := call(runID, "shell", map[string]any{"command": "printf '%%PDF-1.4\\n%%%%EOF\\n' > ok.pdf && truncate -s 64G big.pdf && mkfifo inv.pdf && cp ok.pdf swap.pdf && " +
		"mkdir -p .runs/" + other + " && truncate -s 64G .runs/" + other + "/cwd && echo ready"})
	if !strings.Contains(out, "ready") {
		t.Fatalf("shell: %q", out)
	}
	hang := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); fn() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not answer within a minute", what)
		}
	}
	hang("the sparse and FIFO uploads", func() {
		if got := upload(runID, "big.pdf"); !strings.Contains(got, "is 68719476736 bytes; at most 16 MiB") {
			t.Errorf("sparse 64 GiB: %q", got)
		}
		if got := upload(runID, "inv.pdf"); !strings.Contains(got, "is a fifo, not a regular file") {
			t.Errorf("FIFO: %q", got)
		}
		// The other run's working-directory file is 64 GiB: its relative paths start at the home.
		if got := upload(other, "ok.pdf"); !strings.Contains(got, "tx-0001\tok.pdf\tapplication/pdf") {
			t.Errorf("with a sparse cwd file: %q", got)
		}
	})
	call(runID, "shell", map[string]any{"command": "rm .runs/" + other + "/cwd && mkfifo .runs/" + other + "/cwd"})
	hang("an upload with a FIFO for cwd", func() {
		if got := upload(other, "ok.pdf"); !strings.Contains(got, "tx-0001\tok.pdf\tapplication/pdf") {
			t.Errorf("with a FIFO cwd file: %q", got)
		}
	})

	// Swapped between a small PDF and a 64 GiB sparse file while it is read.
	bg := call(runID, "shell", map[string]any{"background": true, "command": "printf '%%PDF-1.4 x' > swap.pdf; while :; do printf '%%PDF-1.4 x' > s.tmp && mv -f s.tmp swap.pdf && truncate -s 64G b.tmp && mv -f b.tmp swap.pdf; done"})
	if !strings.Contains(bg, "b1") {
		t.Fatalf("background: %q", bg)
	}
	read, refused := 0, 0
	hang("uploads of a swapped file", func() {
		for range 30 {
			switch got := upload(runID, "swap.pdf"); {
			case strings.Contains(got, "tx-0001\tswap.pdf\tapplication/pdf"):
				read++
			case strings.Contains(got, "at most 16 MiB"):
				refused++
			default:
				t.Errorf("swapped file: %q", got)
			}
		}
	})
	call(runID, "shell_status", map[string]any{"id": "b1", "stop": true})
	t.Logf("swapped file: %d read, %d refused by size", read, refused)

	// 200 parallel calls on a FIFO.
	before, _ := sandboxtest.Threads(t)
	var wg sync.WaitGroup
	answers := make(chan string, 200)
	hang("200 parallel uploads of a FIFO", func() {
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, out := wiretest.Request(t, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": "qonto_upload_invoice",
					"arguments": map[string]any{"transaction_id": "tx-0001", "file_path": "inv.pdf"}})
				r, _ := out["result"].(string)
				answers <- r
			}()
		}
		wg.Wait()
	})
	close(answers)
	for a := range answers {
		if !strings.Contains(a, "is a fifo, not a regular file") {
			t.Fatalf("a parallel FIFO upload answered %q", a)
		}
	}
	after, inOpen := sandboxtest.SettledThreads(t, before, 100)
	t.Logf("threads before the burst %d, after %d, in open() %d", before, after, inOpen)
	if inOpen > 0 || after-before >= 100 {
		t.Fatalf("threads before %d, after %d, %d in open(): the FIFO pins threads", before, after, inOpen)
	}
	hang("closing the run", func() {
		if r := wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/close", nil); r["status"] != "closed" {
			t.Errorf("close: %v", r)
		}
	})
}

// TestURLChangeSendsNothingToTheNewHost (issue 29): after PATCH of Qonto's url to another host,
// the organisation's login is disconnected with the reason, and a call, a test call and a refresh
// send nothing there (a loopback Qonto that records every request); a new Connect verifies the
// login against the new host and it works there.
func TestURLChangeSendsNothingToTheNewHost(t *testing.T) {
	_, api := adapterServe(t, "local")
	verified, moved := newQontoFake(t), newQontoFake(t)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/qonto", map[string]any{"url": verified.URL})
	org, agent := wiretest.ScopesAt(t, api)
	creds := map[string]any{"server": "qonto", "scope": "org", "scope_id": org, "credentials": map[string]any{"login": qontoLogin, "secret_key": qontoSecret}}
	conn := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", creds)
	id := conn["id"].(string)
	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	call := func() string {
		return wiretest.Must(t, 200, "POST", api+"/api/runs/"+run+"/calls", map[string]any{"name": "qonto_list_bank_accounts", "arguments": map[string]any{}})["result"].(string)
	}
	if got := call(); !strings.Contains(got, "FR7616958000013234567890180") {
		t.Fatalf("before the change: %q", got)
	}

	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/qonto", map[string]any{"url": moved.URL})
	c := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil)
	if c["status"] != "disconnected" || !strings.Contains(fmt.Sprint(c["disconnect_reason"]), "connect the login again") {
		t.Fatalf("after the change the login reads %v", c)
	}
	if got := call(); !strings.HasPrefix(got, "ERROR:") || !strings.Contains(got, "disconnected: an instance admin changed the server's URL") {
		t.Fatalf("a call after the change: %q", got)
	}
	for path, body := range map[string]any{"/refresh": nil, "/call": map[string]any{"name": "qonto_list_bank_accounts", "arguments": map[string]any{}}} {
		if st, out := wiretest.Request(t, "POST", api+"/api/mcp/connections/"+id+path, body); st != 409 {
			t.Errorf("%s of the disconnected login: %d %v", path, st, out)
		}
	}
	if n := moved.Count(); n != 0 {
		t.Fatalf("the new host received %d requests carrying the login unverified", n)
	}

	again := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", creds)
	if again["id"] != id || again["status"] != "connected" || again["disconnect_reason"] != nil {
		t.Fatalf("connected again: %v", again)
	}
	run = wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	if got := call(); !strings.Contains(got, "FR7616958000013234567890180") || moved.Count() == 0 {
		t.Fatalf("after connecting again: %q (%d requests at the new host)", got, moved.Count())
	}
}
