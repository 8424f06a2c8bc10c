package qonto_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/qonto"
)

const (
	login  = "acme-8412"
	secret = "sk_qonto_9f8e7d6c5b4a"
)

var now = time.Date(2025, 6, 18, 9, 30, 0, 0, time.UTC)

// bank is Qonto's Business API on loopback: the organization, transactions filtered and paged as
// the real API does, single transactions, and attachment uploads processed in the background
// (the attachment shows after `delay` polls), deduplicated by X-Qonto-Idempotency-Key.
type bank struct {
	*adapterstest.Fake
	mu      sync.Mutex
	txs     []map[string]any
	delay   int            // polls of the transaction before a new attachment shows
	pending map[string]int // transaction id → polls left
	keys    map[string]string
	uploads []upload
}

type upload struct {
	Key, Type, Name string
	Size            int
}

func newBank(t testing.TB) (*bank, adapters.Login) {
	b := &bank{pending: map[string]int{}, keys: map[string]string{}, delay: 2}
	b.Fake = adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == login+":"+secret })
	b.Deny = []byte(`{"errors":[{"code":"unauthorized","detail":"Invalid authorization credentials"}]}`)
	if err := json.Unmarshal(adapterstest.Testdata(t, "transactions.json"), &b.txs); err != nil {
		t.Fatal(err)
	}
	b.JSON("GET /v2/organization", 200, adapterstest.Testdata(t, "organization.json"))
	b.Handle("GET /v2/transactions", b.list)
	b.Handle("GET /v2/transactions/*", b.one)
	b.Handle("POST /v2/transactions/*", b.attach)
	return b, adapters.Login{Credentials: map[string]string{"login": login, "secret_key": secret}, URL: b.URL, Client: b.Client(), Now: func() time.Time { return now }}
}

func (b *bank) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	page, _ := strconv.Atoi(q.Get("current_page"))
	if per <= 0 || per > 100 || page <= 0 {
		w.WriteHeader(422)
		fmt.Fprint(w, `{"errors":[{"code":"invalid_parameter","detail":"per_page and current_page"}]}`)
		return
	}
	per = 2 // small pages so the adapter must follow next_page
	from, _ := time.Parse(time.RFC3339, q.Get("settled_at_from"))
	var sel []map[string]any
	b.mu.Lock()
	for _, x := range b.txs {
		settled, _ := time.Parse(time.RFC3339, x["settled_at"].(string))
		if x["bank_account_id"] == q.Get("bank_account_id") && x["side"] == q.Get("side") && x["status"] == q.Get("status[]") && !settled.Before(from) {
			sel = append(sel, x)
		}
	}
	b.mu.Unlock()
	total := len(sel)
	pages := max(1, (total+per-1)/per)
	lo, hi := min((page-1)*per, total), min(page*per, total)
	var next any
	if page < pages {
		next = page + 1
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"transactions": sel[lo:hi], "meta": map[string]any{"current_page": page, "next_page": next, "prev_page": nil, "total_pages": pages, "total_count": total, "per_page": per}})
}

func (b *bank) find(id string) map[string]any {
	for _, x := range b.txs {
		if x["id"] == id {
			return x
		}
	}
	return nil
}

func (b *bank) one(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v2/transactions/")
	b.mu.Lock()
	defer b.mu.Unlock()
	x := b.find(id)
	if x == nil {
		w.WriteHeader(404)
		fmt.Fprint(w, `{"errors":[{"code":"not_found","detail":"Transaction not found"}]}`)
		return
	}
	if n, ok := b.pending[id]; ok {
		if n <= 1 {
			delete(b.pending, id)
			x["attachment_ids"] = append(x["attachment_ids"].([]any), "att-"+id[len(id)-4:])
		} else {
			b.pending[id] = n - 1
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"transaction": x})
}

func (b *bank) attach(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v2/transactions/"), "/attachments")
	key := r.Header.Get("X-Qonto-Idempotency-Key")
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if !ok || key == "" || err != nil {
		w.WriteHeader(400)
		fmt.Fprint(w, `{"errors":[{"code":"bad_request","detail":"multipart file and X-Qonto-Idempotency-Key required"}]}`)
		return
	}
	part, err := multipart.NewReader(r.Body, params["boundary"]).NextPart()
	if err != nil || part.FormName() != "file" {
		w.WriteHeader(400)
		return
	}
	data, _ := io.ReadAll(part)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.uploads = append(b.uploads, upload{Key: key, Type: part.Header.Get("Content-Type"), Name: part.FileName(), Size: len(data)})
	if b.find(id) == nil {
		w.WriteHeader(404)
		fmt.Fprint(w, `{"errors":[{"code":"not_found","detail":"Transaction not found"}]}`)
		return
	}
	if _, seen := b.keys[key]; !seen {
		b.keys[key] = id
		b.pending[id] = b.delay
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"attachment": map[string]any{"id": "att-" + id[len(id)-4:]}})
}

// workspace is a real FileReader over a folder standing for /home/agent.
type workspace string

func (ws workspace) ReadFile(_ context.Context, p string) ([]byte, error) {
	rel, ok := strings.CutPrefix(p, "/home/agent/")
	if !ok && filepath.IsAbs(p) {
		return nil, errors.New("outside the workspace")
	}
	if !ok {
		rel = p
	}
	return os.ReadFile(filepath.Join(string(ws), filepath.Clean("/"+rel)))
}

func TestVerify(t *testing.T) {
	_, l := newBank(t)
	v, err := qonto.Adapter{}.Verify(context.Background(), l)
	if err != nil || v.AccountHint != "ACME SAS" {
		t.Fatalf("good login: %+v, %v", v, err)
	}
	bad := l
	bad.Credentials = map[string]string{"login": login, "secret_key": "sk_wrong_000"}
	_, err = qonto.Adapter{}.Verify(context.Background(), bad)
	if !adapters.IsRejected(err) || !strings.Contains(err.Error(), "Invalid authorization credentials") {
		t.Errorf("wrong secret: %v", err)
	}
	if strings.Contains(err.Error(), "sk_wrong_000") {
		t.Errorf("the secret leaked: %v", err)
	}
}

func TestTools(t *testing.T) {
	b, l := newBank(t)
	for _, tt := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"list_bank_accounts", "list_bank_accounts", map[string]any{}},
		{"list_missing_invoices", "list_missing_invoices", map[string]any{}},
		{"list_missing_invoices_since", "list_missing_invoices", map[string]any{"since": "2025-01-01", "limit": 2.0}},
		{"list_missing_invoices_account", "list_missing_invoices", map[string]any{"bank_account_id": "018e6e6a-7b40-7a77-9a1f-1d1c3a2b5f02"}},
		{"list_missing_invoices_credit", "list_missing_invoices", map[string]any{"side": "credit"}},
		{"get_transaction", "get_transaction", map[string]any{"transaction_id": "0190a1b2-0000-7000-8000-000000000002"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := qonto.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.Golden(t, tt.name, got)
		})
	}
	pages := 0
	for _, r := range b.Requests {
		if r.URL.Path == "/v2/transactions" && r.URL.Query().Get("current_page") == "2" {
			pages++
		}
	}
	if pages == 0 {
		t.Error("list_missing_invoices never read a second page")
	}
	if b.Denied != 0 {
		t.Errorf("%d requests without {login}:{secret_key}", b.Denied)
	}
}

// fakeClock advances by each sleep, so the 60-second wait runs instantly.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return nil
}

func TestUpload(t *testing.T) {
	dir := t.TempDir()
	pdf := []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
	png := []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'}
	files := map[string][]byte{"invoices/notion.pdf": pdf, "receipt.png": png, "evil.pdf": []byte("#!/bin/sh\nrm -rf /\n"), "big.pdf": append([]byte("%PDF-"), make([]byte, qonto.MaxUpload)...)}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const tx1, tx6 = "0190a1b2-0000-7000-8000-000000000001", "0190a1b2-0000-7000-8000-000000000006"
	for _, tt := range []struct {
		name     string
		args     map[string]any
		delay    int
		kind     adapters.Kind
		says     string
		attached string
	}{
		{"pdf", map[string]any{"transaction_id": tx1, "file_path": "/home/agent/invoices/notion.pdf"}, 2, -1, "", "true"},
		{"png_relative", map[string]any{"transaction_id": tx6, "file_path": "receipt.png"}, 1, -1, "", "true"},
		{"never_attached", map[string]any{"transaction_id": tx1, "file_path": "invoices/notion.pdf"}, 1000, -1, "", "false"},
		{"shell_script", map[string]any{"transaction_id": tx1, "file_path": "evil.pdf"}, 1, adapters.KindInvalid, "not a PDF, JPEG or PNG", ""},
		{"outside", map[string]any{"transaction_id": tx1, "file_path": "/etc/passwd"}, 1, adapters.KindInvalid, "under /home/agent", ""},
		{"missing_file", map[string]any{"transaction_id": tx1, "file_path": "nope.pdf"}, 1, adapters.KindInvalid, "could not read nope.pdf", ""},
		{"too_big", map[string]any{"transaction_id": tx1, "file_path": "big.pdf"}, 1, adapters.KindInvalid, "up to 15 MiB", ""},
		{"unknown_tx", map[string]any{"transaction_id": "0190a1b2-0000-7000-8000-999999999999", "file_path": "receipt.png"}, 1, adapters.KindNotFound, "transaction 0190a1b2-0000-7000-8000-999999999999", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, l := newBank(t)
			b.delay = tt.delay
			clk := &fakeClock{t: now}
			l.Now, l.Files = clk.now, workspace(dir)
			a := qonto.Adapter{PollEvery: 2 * time.Second, Sleep: clk.sleep}
			got, err := a.Call(context.Background(), l, "upload_invoice", tt.args)
			if tt.kind >= 0 {
				if k, _ := adapters.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("%v (kind %v), want kind %v saying %q", err, k, tt.kind, tt.says)
				}
				if len(b.uploads) != 0 && tt.kind == adapters.KindInvalid {
					t.Errorf("a refused file was uploaded: %+v", b.uploads)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.Golden(t, "upload_"+tt.name, got)
			if !strings.Contains(strings.Split(got, "\n")[1], "\t"+tt.attached+"\t") {
				t.Errorf("attached is not %s:\n%s", tt.attached, got)
			}
			if tt.attached == "false" && clk.now().Sub(now) < 60*time.Second {
				t.Errorf("gave up after %v, want 60 s", clk.now().Sub(now))
			}
			if len(b.uploads) != 1 || b.uploads[0].Key == "" {
				t.Fatalf("uploads %+v", b.uploads)
			}
			// A retried upload of the same file sends the same idempotency key: Qonto attaches once.
			if _, err := a.Call(context.Background(), l, "upload_invoice", tt.args); err != nil {
				t.Fatal(err)
			}
			if len(b.uploads) != 2 || b.uploads[1].Key != b.uploads[0].Key || len(b.keys) != 1 {
				t.Errorf("retry: uploads %+v, keys %v", b.uploads, b.keys)
			}
		})
	}
}

func TestKind(t *testing.T) {
	for _, tt := range []struct {
		in   []byte
		want string
	}{
		{[]byte("%PDF-1.7"), "application/pdf"},
		{[]byte{0xFF, 0xD8, 0xFF, 0xE0}, "image/jpeg"},
		{[]byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}, "image/png"},
		{[]byte("#!/bin/sh"), ""},
		{[]byte("PDF"), ""},
		{nil, ""},
	} {
		if got := qonto.Kind(tt.in); got != tt.want {
			t.Errorf("Kind(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
