// Package gmail is the Gmail adapter: the Gmail REST API on the manifest's api endpoint with the
// login's Google access token (renewed by the orchestrator), answered as compact text: headers,
// snippets and decoded text/plain bodies clipped, attachments named with their size.
package gmail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "gmail"

// provider names Gmail in errors.
const provider = "Gmail"

// Body clips: a message read alone, and each message of a thread.
const (
	messageClip = 8000
	threadClip  = 3000
	fanOut      = 8 // metadata requests in flight for one list
)

func init() { adapters.Register(Adapter{}) }

// Adapter is the Gmail adapter.
type Adapter struct{}

// Slug returns "gmail".
func (Adapter) Slug() string { return Slug }

// client is one call's view of the Gmail API.
type client struct {
	l    adapters.Login
	base string
}

func newClient(l adapters.Login) (*client, error) {
	base := strings.TrimRight(strings.TrimSpace(l.Endpoints["api"]), "/")
	if base == "" {
		base = strings.TrimRight(l.URL, "/")
	}
	if base == "" {
		return nil, adapters.Invalid(provider, `the catalog row has no "api" endpoint; an instance admin sets it under Connector catalog`)
	}
	return &client{l: l, base: base + "/users/me"}, nil
}

// authorization returns the header of the next request: the login's renewed bearer, or the
// access token a Connect check holds.
func (c *client) authorization(ctx context.Context) (string, error) {
	if c.l.Bearer == nil {
		return "Bearer " + c.l.Credential("access_token"), nil
	}
	h, err := c.l.Bearer.Header(ctx)
	if err != nil {
		return "", &adapters.Error{Kind: adapters.KindRejected, Provider: provider, Msg: "the Google login's token could not be renewed: " + err.Error()}
	}
	return h.Get("Authorization"), nil
}

// do sends one request with the bearer; a 401 renews the token once and sends it again.
func (c *client) do(ctx context.Context, r adapters.Request) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		auth, err := c.authorization(ctx)
		if err != nil {
			return nil, err
		}
		h := adapters.HTTP{Provider: provider, Login: c.l, Auth: func(h http.Header) { h.Set("Authorization", auth) }}
		body, err := h.Do(ctx, r)
		if attempt == 0 && c.l.Bearer != nil && adapters.StatusOf(err) == http.StatusUnauthorized {
			if rerr := c.l.Bearer.Rejected(ctx); rerr != nil {
				return nil, &adapters.Error{Kind: adapters.KindRejected, Provider: provider, Msg: "refused the login's token and it could not be renewed: " + rerr.Error()}
			}
			continue
		}
		return body, err
	}
}

// get decodes a GET of the mailbox path into out.
func (c *client) get(ctx context.Context, path string, q url.Values, what string, out any) error {
	body, err := c.do(ctx, adapters.Get(c.base, path, q, what))
	if err != nil {
		return err
	}
	return decode(body, out)
}

// post sends a JSON body to the mailbox path and decodes the answer into out.
func (c *client) post(ctx context.Context, path string, in, out any) error {
	j, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode the %s request: %w", path, err)
	}
	body, err := c.do(ctx, adapters.Request{Method: http.MethodPost, URL: c.base + path, Body: j, Type: "application/json"})
	if err != nil {
		return err
	}
	return decode(body, out)
}

func decode(body []byte, out any) error {
	if err := json.Unmarshal(body, out); err != nil {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: provider, Msg: "answered a body that is not the expected JSON"}
	}
	return nil
}

// Verify pings /users/me/profile and names the mailbox's address.
func (Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	c, err := newClient(l)
	if err != nil {
		return connections.Verification{}, err
	}
	var p struct {
		Email string `json:"emailAddress"`
	}
	if err := c.get(ctx, "/profile", nil, "the mailbox profile", &p); err != nil {
		return connections.Verification{}, err
	}
	if p.Email == "" {
		return connections.Verification{}, &adapters.Error{Kind: adapters.KindMalformed, Provider: provider, Msg: "the profile names no emailAddress"}
	}
	return connections.Verification{AccountHint: adapters.Clip(p.Email, 200)}, nil
}

// Call runs one Gmail tool; tokens renewed during the call are scrubbed from its answer.
func (Adapter) Call(ctx context.Context, l adapters.Login, tool string, args map[string]any) (string, error) {
	c, err := newClient(l)
	if err != nil {
		return "", err
	}
	out, err := c.call(ctx, tool, args)
	if l.Bearer != nil {
		for _, t := range l.Bearer.Renewed() {
			if len(t) >= 4 {
				out = strings.ReplaceAll(out, t, "[redacted]")
			}
		}
	}
	return out, err
}

func (c *client) call(ctx context.Context, tool string, args map[string]any) (string, error) {
	switch tool {
	case "search_threads":
		return c.searchThreads(ctx, args)
	case "get_thread":
		return c.getThread(ctx, args)
	case "get_message":
		return c.getMessage(ctx, args)
	case "list_labels":
		return c.listLabels(ctx)
	case "list_drafts":
		return c.listDrafts(ctx, args)
	case "create_draft":
		return c.createDraft(ctx, args)
	case "send_message":
		return c.sendMessage(ctx, args)
	}
	return "", adapters.UnknownTool(provider, tool)
}

// Message is a Gmail Message, the fields read.
type Message struct {
	ID           string   `json:"id"`
	ThreadID     string   `json:"threadId"`
	LabelIDs     []string `json:"labelIds"`
	Snippet      string   `json:"snippet"`
	InternalDate string   `json:"internalDate"`
	Payload      Part     `json:"payload"`
}

// date is the message's time as Gmail received it (internalDate, ms), else its Date header.
func (m Message) date() string {
	if ms, err := strconv.ParseInt(m.InternalDate, 10, 64); err == nil && ms > 0 {
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04Z")
	}
	return header(m.Payload.Headers, "Date")
}

type thread struct {
	ID       string    `json:"id"`
	Snippet  string    `json:"snippet"`
	Messages []Message `json:"messages"`
}

// need returns a required Gmail id argument.
func need(args map[string]any, name string) (string, error) {
	s, err := adapters.Need(provider, args, name)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(s, "/?#%") || len(s) > 200 {
		return "", adapters.Invalid(provider, name+" is not a Gmail id")
	}
	return s, nil
}

// metadata asks for the headers a list row shows.
var metadata = url.Values{"format": {"metadata"}, "metadataHeaders": {"From", "To", "Cc", "Subject", "Date"}}

// each runs fn for every index, at most fanOut at a time, and returns the first error.
func each(n int, fn func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, fanOut)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *client) searchThreads(ctx context.Context, args map[string]any) (string, error) {
	query := adapters.Str(args, "query")
	if query == "" {
		return "", adapters.Invalid(provider, "query is required")
	}
	limit := adapters.Limit(args)
	q := url.Values{"q": {query}, "maxResults": {strconv.Itoa(limit)}}
	if pt := adapters.Str(args, "page_token"); pt != "" {
		q.Set("pageToken", pt)
	}
	var list struct {
		Threads []struct {
			ID      string `json:"id"`
			Snippet string `json:"snippet"`
		} `json:"threads"`
		Next     string `json:"nextPageToken"`
		Estimate int    `json:"resultSizeEstimate"`
	}
	if err := c.get(ctx, "/threads", q, "threads", &list); err != nil {
		return "", err
	}
	if len(list.Threads) == 0 {
		return "no threads match " + strconv.Quote(query), nil
	}
	threads := make([]thread, len(list.Threads))
	err := each(len(list.Threads), func(i int) error {
		return c.get(ctx, "/threads/"+url.PathEscape(list.Threads[i].ID), metadata, "thread "+list.Threads[i].ID, &threads[i])
	})
	if err != nil {
		return "", firstError(err)
	}
	t := adapters.NewTable("thread_id", "date", "from", "subject", "messages", "snippet")
	for i, th := range threads {
		var first, last Message
		if len(th.Messages) > 0 {
			first, last = th.Messages[0], th.Messages[len(th.Messages)-1]
		}
		t.Add(list.Threads[i].ID, last.date(), header(first.Payload.Headers, "From"), header(first.Payload.Headers, "Subject"),
			len(th.Messages), adapters.Clip(oneLine(html.UnescapeString(list.Threads[i].Snippet)), 160))
	}
	if list.Next != "" {
		t.Note(adapters.NextPage("page_token", list.Next))
	}
	return t.String(), nil
}

// firstError returns the first of joined errors, so a list answers one line.
func firstError(err error) error {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		for _, e := range j.Unwrap() {
			if e != nil {
				return e
			}
		}
	}
	return err
}

func (c *client) getThread(ctx context.Context, args map[string]any) (string, error) {
	id, err := need(args, "thread_id")
	if err != nil {
		return "", err
	}
	var th thread
	if err := c.get(ctx, "/threads/"+url.PathEscape(id), url.Values{"format": {"full"}}, "thread "+id, &th); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "thread %s: %d messages, oldest first\n", id, len(th.Messages))
	for i, m := range th.Messages {
		fmt.Fprintf(&b, "\n--- message %d of %d\n", i+1, len(th.Messages))
		b.WriteString(render(m, threadClip))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func (c *client) getMessage(ctx context.Context, args map[string]any) (string, error) {
	id, err := need(args, "message_id")
	if err != nil {
		return "", err
	}
	var m Message
	if err := c.get(ctx, "/messages/"+url.PathEscape(id), url.Values{"format": {"full"}}, "message "+id, &m); err != nil {
		return "", err
	}
	return strings.TrimRight(render(m, messageClip), "\n"), nil
}

// render is one message as text: its ids, headers, labels, attachments and decoded body.
func render(m Message, clip int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "id: %s\nthread_id: %s\ndate: %s\n", m.ID, m.ThreadID, m.date())
	for _, h := range []string{"From", "To", "Cc", "Subject"} {
		if v := header(m.Payload.Headers, h); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", strings.ToLower(h), v)
		}
	}
	if len(m.LabelIDs) > 0 {
		fmt.Fprintf(&b, "labels: %s\n", strings.Join(m.LabelIDs, ", "))
	}
	text, fromHTML, atts := Body(m.Payload)
	for _, a := range atts {
		fmt.Fprintf(&b, "attachment: %s (%s, %d bytes)\n", a.Name, a.Type, a.Size)
	}
	switch {
	case text == "":
		fmt.Fprintf(&b, "snippet: %s\n", oneLine(html.UnescapeString(m.Snippet)))
	case fromHTML:
		fmt.Fprintf(&b, "body (from HTML):\n%s\n", clipText(text, clip))
	default:
		fmt.Fprintf(&b, "body:\n%s\n", clipText(text, clip))
	}
	return b.String()
}

func (c *client) listLabels(ctx context.Context) (string, error) {
	var list struct {
		Labels []struct {
			ID string `json:"id"`
		} `json:"labels"`
	}
	if err := c.get(ctx, "/labels", nil, "labels", &list); err != nil {
		return "", err
	}
	type label struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Type     string `json:"type"`
		Total    int    `json:"messagesTotal"`
		Unread   int    `json:"messagesUnread"`
		Threads  int    `json:"threadsTotal"`
		TUnread  int    `json:"threadsUnread"`
		Visibile string `json:"labelListVisibility"`
	}
	labels := make([]label, len(list.Labels))
	if err := each(len(list.Labels), func(i int) error {
		return c.get(ctx, "/labels/"+url.PathEscape(list.Labels[i].ID), nil, "label "+list.Labels[i].ID, &labels[i])
	}); err != nil {
		return "", firstError(err)
	}
	t := adapters.NewTable("id", "name", "type", "messages", "unread", "threads")
	for _, l := range labels {
		t.Add(l.ID, l.Name, l.Type, l.Total, l.Unread, l.Threads)
	}
	return t.String(), nil
}

func (c *client) listDrafts(ctx context.Context, args map[string]any) (string, error) {
	var list struct {
		Drafts []struct {
			ID string `json:"id"`
		} `json:"drafts"`
		Next string `json:"nextPageToken"`
	}
	if err := c.get(ctx, "/drafts", url.Values{"maxResults": {strconv.Itoa(adapters.Limit(args))}}, "drafts", &list); err != nil {
		return "", err
	}
	if len(list.Drafts) == 0 {
		return "no drafts", nil
	}
	type draft struct {
		ID      string  `json:"id"`
		Message Message `json:"message"`
	}
	drafts := make([]draft, len(list.Drafts))
	if err := each(len(list.Drafts), func(i int) error {
		return c.get(ctx, "/drafts/"+url.PathEscape(list.Drafts[i].ID), url.Values{"format": {"metadata"}}, "draft "+list.Drafts[i].ID, &drafts[i])
	}); err != nil {
		return "", firstError(err)
	}
	t := adapters.NewTable("draft_id", "thread_id", "to", "subject", "snippet")
	for _, d := range drafts {
		h := d.Message.Payload.Headers
		t.Add(d.ID, d.Message.ThreadID, header(h, "To"), header(h, "Subject"), adapters.Clip(oneLine(html.UnescapeString(d.Message.Snippet)), 160))
	}
	if list.Next != "" {
		t.Note("… more drafts: raise limit (up to 30)")
	}
	return t.String(), nil
}
