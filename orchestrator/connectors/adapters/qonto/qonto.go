// Package qonto is the Qonto adapter: Business API v2 with Authorization {login}:{secret_key}
// (bank accounts, transactions missing an invoice, one transaction, invoice upload from the
// agent's workspace), answered as compact TSV.
package qonto

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "qonto"

// provider names Qonto in errors.
const provider = "Qonto"

// Limits of the tools.
const (
	perPage       = 100 // transactions per page read
	maxPages      = 50  // pages read per bank account before giving up
	lookback      = 90 * 24 * time.Hour
	MaxUpload     = 15 << 20      // the largest invoice file sent
	workspaceRoot = "/home/agent" // where upload_invoice's files live
	defaultWait   = 60 * time.Second
	defaultPoll   = 2 * time.Second
)

func init() { adapters.Register(Adapter{}) }

// Adapter is the Qonto adapter; its zero value waits up to 60 s for an upload, polling every 2 s.
type Adapter struct {
	Wait      time.Duration                                    // how long upload_invoice waits for the attachment; 0 is 60 s
	PollEvery time.Duration                                    // how often it polls the transaction; 0 is 2 s
	Sleep     func(ctx context.Context, d time.Duration) error // nil sleeps on a timer (tests inject their own)
}

// Slug returns "qonto".
func (Adapter) Slug() string { return Slug }

func client(l adapters.Login) adapters.HTTP {
	auth := l.Credential("login") + ":" + l.Credential("secret_key")
	return adapters.HTTP{Provider: provider, Login: l, Auth: func(h http.Header) { h.Set("Authorization", auth) }}
}

// organization is /v2/organization's answer.
type organization struct {
	Organization struct {
		Slug         string    `json:"slug"`
		Name         string    `json:"name"`
		LegalName    string    `json:"legal_name"`
		BankAccounts []account `json:"bank_accounts"`
	} `json:"organization"`
}

type account struct {
	ID         string   `json:"id"`
	Slug       string   `json:"slug"`
	Name       string   `json:"name"`
	IBAN       string   `json:"iban"`
	Currency   string   `json:"currency"`
	Balance    *float64 `json:"balance"`
	Authorized *float64 `json:"authorized_balance"`
	Status     string   `json:"status"`
	Main       *bool    `json:"main"`
	UpdatedAt  string   `json:"updated_at"`
}

func org(ctx context.Context, l adapters.Login) (organization, error) {
	if l.Credential("login") == "" || l.Credential("secret_key") == "" {
		return organization{}, &adapters.Error{Kind: adapters.KindRejected, Provider: provider, Msg: "the login needs the organization's login and secret key; reconnect the login"}
	}
	var o organization
	err := client(l).JSON(ctx, adapters.Get(l.URL, "/v2/organization", nil, "the organization"), &o)
	return o, err
}

// Verify pings /v2/organization; the account hint is the organization's name.
func (Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	o, err := org(ctx, l)
	if err != nil {
		return connections.Verification{}, err
	}
	hint := o.Organization.LegalName
	if hint == "" {
		hint = o.Organization.Name
	}
	if hint == "" {
		hint = o.Organization.Slug
	}
	return connections.Verification{AccountHint: hint}, nil
}

// Call runs one Qonto tool.
func (a Adapter) Call(ctx context.Context, l adapters.Login, tool string, args map[string]any) (string, error) {
	switch tool {
	case "list_bank_accounts":
		return accounts(ctx, l)
	case "list_missing_invoices":
		return missing(ctx, l, args)
	case "get_transaction":
		return getTransaction(ctx, l, args)
	case "upload_invoice":
		return a.upload(ctx, l, args)
	}
	return "", adapters.UnknownTool(provider, tool)
}

func accounts(ctx context.Context, l adapters.Login) (string, error) {
	o, err := org(ctx, l)
	if err != nil {
		return "", err
	}
	t := adapters.NewTable("id", "name", "iban", "balance", "authorized_balance", "currency", "status", "main")
	for _, b := range o.Organization.BankAccounts {
		var main any
		if b.Main != nil {
			main = *b.Main
		}
		t.Add(b.ID, b.Name, b.IBAN, b.Balance, b.Authorized, b.Currency, b.Status, main)
	}
	return t.String(), nil
}

// transaction is one Qonto transaction.
type transaction struct {
	ID                 string   `json:"id"`
	TransactionID      string   `json:"transaction_id"`
	Amount             *float64 `json:"amount"`
	Currency           string   `json:"currency"`
	Side               string   `json:"side"`
	OperationType      string   `json:"operation_type"`
	Label              string   `json:"label"`
	Counterparty       string   `json:"clean_counterparty_name"`
	SettledAt          string   `json:"settled_at"`
	EmittedAt          string   `json:"emitted_at"`
	Status             string   `json:"status"`
	Note               string   `json:"note"`
	Reference          string   `json:"reference"`
	Category           string   `json:"category"`
	AttachmentIDs      []string `json:"attachment_ids"`
	AttachmentLost     *bool    `json:"attachment_lost"`
	AttachmentRequired *bool    `json:"attachment_required"`
	BankAccountID      string   `json:"bank_account_id"`
}

// needsInvoice is the spec's filter: no attachment, one required, not marked lost.
func (x transaction) needsInvoice() bool {
	return len(x.AttachmentIDs) == 0 && x.AttachmentRequired != nil && *x.AttachmentRequired && (x.AttachmentLost == nil || !*x.AttachmentLost)
}

func (x transaction) counterparty() string {
	if x.Counterparty != "" {
		return x.Counterparty
	}
	return x.Label
}

func missing(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	side := adapters.StrOr(args, "side", "debit")
	if side != "debit" && side != "credit" {
		return "", adapters.Invalid(provider, "side is debit or credit")
	}
	since := l.Clock().Add(-lookback).UTC()
	if s := adapters.Str(args, "since"); s != "" {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return "", adapters.Invalid(provider, "since is a date, YYYY-MM-DD")
		}
		since = d
	}
	var ids []string
	if id := adapters.Str(args, "bank_account_id"); id != "" {
		ids = []string{id}
	} else {
		o, err := org(ctx, l)
		if err != nil {
			return "", err
		}
		for _, b := range o.Organization.BankAccounts {
			ids = append(ids, b.ID)
		}
	}
	var found []transaction
	for _, id := range ids {
		for page := 1; page <= maxPages; page++ {
			q := url.Values{"bank_account_id": {id}, "status[]": {"completed"}, "side": {side}, "settled_at_from": {since.Format(time.RFC3339)},
				"sort_by": {"settled_at:desc"}, "per_page": {strconv.Itoa(perPage)}, "current_page": {strconv.Itoa(page)}}
			var out struct {
				Transactions []transaction `json:"transactions"`
				Meta         struct {
					Next *float64 `json:"next_page"`
				} `json:"meta"`
			}
			if err := client(l).JSON(ctx, adapters.Get(l.URL, "/v2/transactions", q, "bank account "+id), &out); err != nil {
				return "", err
			}
			for _, x := range out.Transactions {
				if x.needsInvoice() && x.Status == "completed" && x.Side == side {
					found = append(found, x)
				}
			}
			if out.Meta.Next == nil || *out.Meta.Next <= float64(page) {
				break
			}
		}
	}
	slices.SortStableFunc(found, func(a, b transaction) int { return strings.Compare(b.SettledAt, a.SettledAt) })
	t := adapters.NewTable("id", "settled_at", "amount", "currency", "counterparty", "label", "category", "bank_account_id")
	for _, x := range found {
		t.Add(x.ID, x.SettledAt, x.Amount, x.Currency, x.counterparty(), x.Label, x.Category, x.BankAccountID)
	}
	t.Cap(adapters.Limit(args))
	if len(found) == 0 {
		t.Note(fmt.Sprintf("no completed %s transaction since %s is missing an invoice", side, since.Format(time.DateOnly)))
	}
	return t.String(), nil
}

func fetchTransaction(ctx context.Context, l adapters.Login, id string) (transaction, error) {
	var out struct {
		Transaction transaction `json:"transaction"`
	}
	err := client(l).JSON(ctx, adapters.Get(l.URL, "/v2/transactions/"+url.PathEscape(id), nil, "transaction "+id), &out)
	return out.Transaction, err
}

func getTransaction(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	id := adapters.Str(args, "transaction_id")
	if id == "" {
		return "", adapters.Invalid(provider, "transaction_id is required")
	}
	x, err := fetchTransaction(ctx, l, id)
	if err != nil {
		return "", err
	}
	bools := func(b *bool) any {
		if b == nil {
			return nil
		}
		return *b
	}
	t := adapters.NewTable("id", "status", "side", "amount", "currency", "counterparty", "label", "operation_type", "category", "settled_at", "emitted_at",
		"attachment_ids", "attachment_required", "attachment_lost", "reference", "note")
	t.Add(x.ID, x.Status, x.Side, x.Amount, x.Currency, x.counterparty(), x.Label, x.OperationType, x.Category, x.SettledAt, x.EmittedAt,
		strings.Join(x.AttachmentIDs, ","), bools(x.AttachmentRequired), bools(x.AttachmentLost), x.Reference, adapters.Clip(x.Note, 280))
	return t.String(), nil
}

// Kind returns the content type of an invoice file by its magic bytes ("" when it is none of
// PDF, JPEG or PNG).
func Kind(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("%PDF-")):
		return "application/pdf"
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}):
		return "image/png"
	}
	return ""
}

// workspacePath checks a file_path is relative or under /home/agent, before the sandbox file
// API applies the workspace rules (links, size).
func workspacePath(p string) (string, error) {
	if p == "" {
		return "", adapters.Invalid(provider, "file_path is required")
	}
	if path.IsAbs(p) {
		c := path.Clean(p)
		if c != workspaceRoot && !strings.HasPrefix(c, workspaceRoot+"/") {
			return "", adapters.Invalid(provider, "file_path must be under /home/agent")
		}
	}
	return p, nil
}

func (a Adapter) upload(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	id := adapters.Str(args, "transaction_id")
	if id == "" {
		return "", adapters.Invalid(provider, "transaction_id is required")
	}
	p, err := workspacePath(adapters.Str(args, "file_path"))
	if err != nil {
		return "", err
	}
	if l.Files == nil {
		return "", adapters.Invalid(provider, "upload_invoice needs the run's workspace, and this call has none")
	}
	data, err := l.Files.ReadFile(ctx, p)
	if err != nil {
		return "", &adapters.Error{Kind: adapters.KindInvalid, Provider: provider, Msg: "could not read " + p + " from the workspace: " + adapters.Clip(err.Error(), 160)}
	}
	if len(data) > MaxUpload {
		return "", adapters.Invalid(provider, fmt.Sprintf("%s is %d bytes; Qonto takes invoices up to %d MiB", p, len(data), MaxUpload>>20))
	}
	ctype := Kind(data)
	if ctype == "" {
		return "", adapters.Invalid(provider, p+" is not a PDF, JPEG or PNG (checked by its content, not its name)")
	}
	before, err := fetchTransaction(ctx, l, id)
	if err != nil {
		return "", err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, path.Base(p)))
	h.Set("Content-Type", ctype)
	fw, err := mw.CreatePart(h)
	if err != nil {
		return "", fmt.Errorf("build the upload: %w", err)
	}
	if _, err := fw.Write(data); err != nil {
		return "", fmt.Errorf("build the upload: %w", err)
	}
	if err := mw.Close(); err != nil {
		return "", fmt.Errorf("build the upload: %w", err)
	}
	sum := sha256.Sum256(append([]byte(id+"\x00"), data...))
	idem := hex.EncodeToString(sum[:16])
	req := adapters.Request{Method: http.MethodPost, URL: strings.TrimRight(l.URL, "/") + "/v2/transactions/" + url.PathEscape(id) + "/attachments",
		Body: body.Bytes(), Type: mw.FormDataContentType(), Header: http.Header{"X-Qonto-Idempotency-Key": {idem}}, What: "transaction " + id}
	var out struct {
		Attachment struct {
			ID string `json:"id"`
		} `json:"attachment"`
	}
	raw, err := client(l).Do(ctx, req)
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := client(l).Decode(raw, &out); err != nil {
			return "", err
		}
	}
	newID := out.Attachment.ID
	t := adapters.NewTable("transaction_id", "file", "type", "attachment_id", "attached", "waited_s")
	start := l.Clock()
	wait, every := a.Wait, a.PollEvery
	if wait <= 0 {
		wait = defaultWait
	}
	if every <= 0 {
		every = defaultPoll
	}
	for {
		x, err := fetchTransaction(ctx, l, id)
		if err != nil {
			return "", err
		}
		if attached(x.AttachmentIDs, before.AttachmentIDs, newID) {
			if newID == "" {
				newID = added(x.AttachmentIDs, before.AttachmentIDs)
			}
			t.Add(id, path.Base(p), ctype, newID, true, int64(l.Clock().Sub(start).Seconds()))
			return t.String(), nil
		}
		if l.Clock().Sub(start) >= wait {
			t.Add(id, path.Base(p), ctype, newID, false, int64(l.Clock().Sub(start).Seconds()))
			t.Note(fmt.Sprintf("Qonto accepted the file but has not attached it after %d s; check with get_transaction later (a retried upload sends the same idempotency key and cannot attach twice)", int(wait.Seconds())))
			return t.String(), nil
		}
		if err := a.sleep(ctx, every); err != nil {
			return "", fmt.Errorf("wait for the Qonto attachment: %w", err)
		}
	}
}

func (a Adapter) sleep(ctx context.Context, d time.Duration) error {
	if a.Sleep != nil {
		return a.Sleep(ctx, d)
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// attached reports whether the new attachment is on the transaction: its id when Qonto named
// it, otherwise any id that was not there before.
func attached(now, before []string, id string) bool {
	if id != "" {
		return slices.Contains(now, id)
	}
	return added(now, before) != ""
}

func added(now, before []string) string {
	for _, x := range now {
		if !slices.Contains(before, x) {
			return x
		}
	}
	return ""
}
