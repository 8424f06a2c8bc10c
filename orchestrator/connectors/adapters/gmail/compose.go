package gmail

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Draft is what create_draft and send_message compose: a plain-text message.
type Draft struct {
	To, Cc          []string
	Subject, Body   string
	InReplyTo, Refs string // the replied message's Message-ID and References, for a reply in a thread
	ThreadID        string
	Date            time.Time // Gmail fills From with the mailbox's address
}

// maxBody bounds a composed body.
const maxBody = 256 << 10

// addresses checks a list of recipients; each must parse as one address.
func addresses(field string, in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, a := range in {
		if strings.ContainsAny(a, "\r\n") {
			return nil, adapters.Invalid(provider, field+" holds a line break")
		}
		p, err := mail.ParseAddress(strings.TrimSpace(a))
		if err != nil {
			return nil, adapters.Invalid(provider, fmt.Sprintf("%s: %q is not an email address", field, adapters.Clip(a, 80)))
		}
		out = append(out, p.String())
	}
	return out, nil
}

// RFC822 renders the draft as the raw message Gmail takes (CRLF line ends, a quoted-printable
// UTF-8 body, encoded words for a non-ASCII subject).
func (d Draft) RFC822() ([]byte, error) {
	if strings.ContainsAny(d.Subject, "\r\n") {
		return nil, adapters.Invalid(provider, "subject holds a line break")
	}
	if len(d.Body) > maxBody {
		return nil, adapters.Invalid(provider, fmt.Sprintf("body is %d bytes; at most %d", len(d.Body), maxBody))
	}
	var b bytes.Buffer
	w := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	w("To", strings.Join(d.To, ", "))
	w("Cc", strings.Join(d.Cc, ", "))
	w("Subject", mime.QEncoding.Encode("utf-8", d.Subject))
	if !d.Date.IsZero() {
		w("Date", d.Date.Format(time.RFC1123Z))
	}
	w("In-Reply-To", d.InReplyTo)
	w("References", d.Refs)
	w("MIME-Version", "1.0")
	w("Content-Type", "text/plain; charset=UTF-8")
	w("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	body := strings.ReplaceAll(strings.ReplaceAll(d.Body, "\r\n", "\n"), "\n", "\r\n")
	if _, err := qp.Write([]byte(body)); err != nil {
		return nil, fmt.Errorf("encode the body: %w", err)
	}
	if err := qp.Close(); err != nil {
		return nil, fmt.Errorf("encode the body: %w", err)
	}
	return b.Bytes(), nil
}

// compose reads the draft fields of a call; a thread_id makes it a reply to that thread's last
// message (In-Reply-To and References from its headers).
func (c *client) compose(ctx context.Context, args map[string]any, requireTo bool) (Draft, error) {
	to, err := addresses("to", adapters.Strs(args, "to"))
	if err != nil {
		return Draft{}, err
	}
	cc, err := addresses("cc", adapters.Strs(args, "cc"))
	if err != nil {
		return Draft{}, err
	}
	if requireTo && len(to) == 0 {
		return Draft{}, adapters.Invalid(provider, "to needs at least one address")
	}
	d := Draft{To: to, Cc: cc, Subject: adapters.Str(args, "subject"), Body: adapters.Str(args, "body"), Date: c.l.Clock()}
	if tid := adapters.Str(args, "thread_id"); tid != "" {
		id, err := need(args, "thread_id")
		if err != nil {
			return Draft{}, err
		}
		var th thread
		q := url.Values{"format": {"metadata"}, "metadataHeaders": {"Message-ID", "References", "Subject"}}
		if err := c.get(ctx, "/threads/"+url.PathEscape(id), q, "thread "+id, &th); err != nil {
			return Draft{}, err
		}
		if n := len(th.Messages); n > 0 {
			h := th.Messages[n-1].Payload.Headers
			d.InReplyTo = header(h, "Message-ID")
			d.Refs = strings.TrimSpace(header(h, "References") + " " + d.InReplyTo)
			if d.Subject == "" {
				d.Subject = header(h, "Subject")
			}
		}
		d.ThreadID = id
	}
	return d, nil
}

// raw is the base64url form Gmail's raw field takes.
func raw(d Draft) (string, error) {
	b, err := d.RFC822()
	if err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(b), nil
}

type sent struct {
	ID       string   `json:"id"`
	ThreadID string   `json:"threadId"`
	LabelIDs []string `json:"labelIds"`
	Message  struct {
		ID       string `json:"id"`
		ThreadID string `json:"threadId"`
	} `json:"message"`
}

func (c *client) createDraft(ctx context.Context, args map[string]any) (string, error) {
	d, err := c.compose(ctx, args, true)
	if err != nil {
		return "", err
	}
	r, err := raw(d)
	if err != nil {
		return "", err
	}
	msg := map[string]any{"raw": r}
	if d.ThreadID != "" {
		msg["threadId"] = d.ThreadID
	}
	var out sent
	if err := c.post(ctx, "/drafts", map[string]any{"message": msg}, &out); err != nil {
		return "", err
	}
	return fmt.Sprintf("draft created (nothing was sent)\ndraft_id: %s\nmessage_id: %s\nthread_id: %s\nto: %s\nsubject: %s",
		out.ID, out.Message.ID, out.Message.ThreadID, strings.Join(d.To, ", "), d.Subject), nil
}

func (c *client) sendMessage(ctx context.Context, args map[string]any) (string, error) {
	var out sent
	if id := adapters.Str(args, "draft_id"); id != "" {
		if _, err := need(args, "draft_id"); err != nil {
			return "", err
		}
		for _, f := range []string{"to", "cc", "subject", "body", "thread_id"} {
			if _, ok := args[f]; ok {
				return "", adapters.Invalid(provider, "send a draft with draft_id alone; "+f+" belongs to a new message")
			}
		}
		if err := c.post(ctx, "/drafts/send", map[string]any{"id": id}, &out); err != nil {
			return "", err
		}
		return fmt.Sprintf("sent draft %s\nmessage_id: %s\nthread_id: %s", id, out.ID, out.ThreadID), nil
	}
	d, err := c.compose(ctx, args, true)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(d.Subject) == "" && strings.TrimSpace(d.Body) == "" {
		return "", adapters.Invalid(provider, "a message needs a subject or a body (or pass draft_id to send a draft)")
	}
	r, err := raw(d)
	if err != nil {
		return "", err
	}
	msg := map[string]any{"raw": r}
	if d.ThreadID != "" {
		msg["threadId"] = d.ThreadID
	}
	if err := c.post(ctx, "/messages/send", msg, &out); err != nil {
		return "", err
	}
	return fmt.Sprintf("sent\nmessage_id: %s\nthread_id: %s\nto: %s\nsubject: %s", out.ID, out.ThreadID, strings.Join(d.To, ", "), d.Subject), nil
}
