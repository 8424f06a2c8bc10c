package gmail_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/gmail"
	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
)

var now = time.Date(2024, 6, 4, 13, 0, 0, 0, time.UTC)

func login(g *googletest.Server, token string) adapters.Login {
	return adapters.Login{Credentials: map[string]string{"access_token": token}, Endpoints: map[string]string{"api": g.URL + "/gmail/v1"},
		Now: func() time.Time { return now }}
}

func fake(t *testing.T) *googletest.Server {
	g := googletest.New()
	t.Cleanup(g.Close)
	return g
}

// TestTools: each tool against the fake mailbox, answered as the golden text.
func TestTools(t *testing.T) {
	g := fake(t)
	l := login(g, g.Grant())
	cases := []struct {
		golden, tool string
		args         map[string]any
	}{
		{"search_all", "search_threads", map[string]any{"query": "acme"}},
		{"search_paged", "search_threads", map[string]any{"query": "ada", "limit": 1}},
		{"search_none", "search_threads", map[string]any{"query": "nothing-matches-this"}},
		{"thread", "get_thread", map[string]any{"thread_id": "18c2a1f0e0b1a001"}},
		{"message_multipart", "get_message", map[string]any{"message_id": "18c2a1f0e0b1a001"}},
		{"message_html", "get_message", map[string]any{"message_id": "18c2a1f0e0b1a003"}},
		{"labels", "list_labels", nil},
		{"drafts_none", "list_drafts", nil},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			out, err := gmail.Adapter{}.Call(context.Background(), l, tc.tool, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.Golden(t, tc.golden, out)
		})
	}
}

// TestDraftAndSend: a reply draft carries the thread's Message-ID, lists, and sends by id; a new
// message sends with its recipients; nothing shows a body's bytes twice.
func TestDraftAndSend(t *testing.T) {
	g := fake(t)
	l := login(g, g.Grant())
	a := gmail.Adapter{}
	ctx := context.Background()
	out, err := a.Call(ctx, l, "create_draft", map[string]any{"to": []any{"grace@navy.example"}, "subject": "Re: Q3 invoice",
		"body": "Paid today.\nThanks — Ada", "thread_id": "18c2a1f0e0b1a001"})
	if err != nil || !strings.Contains(out, "draft created (nothing was sent)") {
		t.Fatalf("create_draft: %q %v", out, err)
	}
	if len(g.Sent()) != 0 {
		t.Fatal("create_draft sent a message")
	}
	drafts, err := a.Call(ctx, l, "list_drafts", nil)
	if err != nil || !strings.Contains(drafts, "grace@navy.example") || !strings.Contains(drafts, "Re: Q3 invoice") {
		t.Fatalf("list_drafts: %q %v", drafts, err)
	}
	id := strings.Fields(strings.SplitN(strings.SplitN(out, "draft_id: ", 2)[1], "\n", 2)[0])[0]
	if _, err := a.Call(ctx, l, "send_message", map[string]any{"draft_id": id, "to": []any{"x@y.example"}}); err == nil {
		t.Fatal("send_message took draft_id with to")
	}
	if out, err := a.Call(ctx, l, "send_message", map[string]any{"draft_id": id}); err != nil || !strings.HasPrefix(out, "sent draft "+id) {
		t.Fatalf("send draft: %q %v", out, err)
	}
	sent := g.Sent()
	if len(sent) != 1 || !strings.Contains(sent[0], "In-Reply-To: <CAB2y=reply@mail.gmail.com>") ||
		!strings.Contains(sent[0], "References: <CAF1x=q3invoice@mail.gmail.com> <CAB2y=reply@mail.gmail.com>") || !strings.Contains(sent[0], "To: <grace@navy.example>") ||
		!strings.Contains(sent[0], "Paid today.\r\nThanks =E2=80=94 Ada") {
		t.Fatalf("sent %q", sent)
	}
	if out, err := a.Call(ctx, l, "send_message", map[string]any{"to": []any{"Bob <bob@b.example>"}, "subject": "Hé", "body": "hi"}); err != nil || !strings.Contains(out, "to: \"Bob\" <bob@b.example>") {
		t.Fatalf("send new: %q %v", out, err)
	}
	if s := g.Sent(); len(s) != 2 || !strings.Contains(s[1], "Subject: =?utf-8?q?H=C3=A9?=") {
		t.Fatalf("sent %q", s)
	}
}

// TestRefused: bad arguments, an unknown message and a refused token each answer one line.
func TestRefused(t *testing.T) {
	g := fake(t)
	l := login(g, g.Grant())
	a := gmail.Adapter{}
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_message", map[string]any{"message_id": "nope"}, "Gmail: not found: message nope (HTTP 404): Requested entity was not found."},
		{"get_message", map[string]any{"message_id": "../profile"}, "Gmail: message_id is not a Gmail id"},
		{"create_draft", map[string]any{"to": []any{"not an address"}, "subject": "s", "body": "b"}, `Gmail: to: "not an address" is not an email address`},
		{"create_draft", map[string]any{"to": []any{"a@b.example"}, "subject": "x\r\nBcc: evil@x.example", "body": "b"}, "Gmail: subject holds a line break"},
		{"send_message", map[string]any{}, "Gmail: to needs at least one address"},
		{"nope", nil, `Gmail: no tool "nope"`},
	}
	for _, tc := range cases {
		_, err := a.Call(context.Background(), l, tc.tool, tc.args)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s %v: %v, want %s", tc.tool, tc.args, err, tc.want)
		}
	}
	_, err := a.Call(context.Background(), login(g, "ya29.stale"), "list_labels", nil)
	if !adapters.Disconnects(err) || strings.Contains(err.Error(), "ya29.stale") {
		t.Fatalf("a refused token without a renewal: %v", err)
	}
	if v, err := (gmail.Adapter{}).Verify(context.Background(), l); err != nil || v.AccountHint != googletest.Email {
		t.Fatalf("Verify: %v %v", v, err)
	}
}

// bearer renews into a fresh token of the fake once the first is refused.
type bearer struct {
	mu       sync.Mutex
	g        *googletest.Server
	cur      string
	rejected int
	fresh    []string
	fail     error
}

func (b *bearer) Header(context.Context) (http.Header, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return http.Header{"Authorization": {"Bearer " + b.cur}}, nil
}

func (b *bearer) Rejected(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rejected++
	if b.fail != nil {
		return b.fail
	}
	b.cur = b.g.Grant()
	b.fresh = append(b.fresh, b.cur)
	return nil
}

func (b *bearer) Renewed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.fresh...)
}

// TestBearerRenewal: a 401 renews the token through the login's bearer once and the call
// succeeds; a renewal that fails is one line naming it, and a 401 after a renewal disconnects.
func TestBearerRenewal(t *testing.T) {
	g := fake(t)
	b := &bearer{g: g, cur: "ya29.expired"}
	l := login(g, "")
	l.Bearer = b
	out, err := gmail.Adapter{}.Call(context.Background(), l, "get_message", map[string]any{"message_id": "18c2a1f0e0b1a002"})
	if err != nil || b.rejected != 1 || !strings.Contains(out, "Thanks, Grace") {
		t.Fatalf("after a renewal: %q %v (%d renewals)", out, err, b.rejected)
	}
	b.cur, b.fail = "ya29.expired", errors.New("the gmail login c1 is disconnected; connect it again")
	_, err = gmail.Adapter{}.Call(context.Background(), l, "list_labels", nil)
	if err == nil || !strings.Contains(err.Error(), "could not be renewed: the gmail login c1 is disconnected") || !adapters.IsRejected(err) {
		t.Fatalf("a failed renewal: %v", err)
	}
}

// TestBody: the MIME walk keeps text/plain, falls back to HTML text, names attachments, and
// survives bad data.
func TestBody(t *testing.T) {
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		name, payload, text string
		html                bool
		atts                int
	}{
		{"plain padded", `{"mimeType":"text/plain","body":{"data":"` + enc("héllo?>") + `"}}`, "héllo?>", false, 0},
		{"plain unpadded", `{"mimeType":"text/plain","body":{"data":"` + raw("a~b") + `"}}`, "a~b", false, 0},
		{"html only", `{"mimeType":"text/html","body":{"data":"` + enc("<p>a&amp;b</p><script>x</script>") + `"}}`, "a&b", true, 0},
		{"attachment", `{"mimeType":"multipart/mixed","parts":[{"mimeType":"text/plain","body":{"data":"` + enc("x") + `"}},{"mimeType":"image/png","filename":"a.png","body":{"attachmentId":"A","size":9}}]}`, "x", false, 1},
		{"bad data", `{"mimeType":"text/plain","body":{"data":"%%%"}}`, "", false, 0},
		{"invalid utf8", `{"mimeType":"text/plain","body":{"data":"` + enc("a\xffb") + `"}}`, "a\uFFFDb", false, 0},
	}
	for _, tc := range cases {
		var p gmail.Part
		if err := json.Unmarshal([]byte(tc.payload), &p); err != nil {
			t.Fatal(err)
		}
		text, html, atts := gmail.Body(p)
		if text != tc.text || html != tc.html || len(atts) != tc.atts {
			t.Errorf("%s: %q html=%v %d attachments", tc.name, text, html, len(atts))
		}
	}
}

// BenchmarkGetMessage: get_message (decoded and rendered) through the login's bearer against a
// plain GET of the same message from the fake, in the same run.
func BenchmarkGetMessage(b *testing.B) {
	g := googletest.New()
	b.Cleanup(g.Close)
	tok := g.Grant()
	l := adapters.Login{Endpoints: map[string]string{"api": g.URL + "/gmail/v1"}, Bearer: &bearer{g: g, cur: tok}}
	raw := g.URL + "/gmail/v1/users/me/messages/18c2a1f0e0b1a001?format=full"
	adapterstest.Compare(b, "get_message", raw, http.Header{"Authorization": {"Bearer " + tok}}, func() error {
		out, err := gmail.Adapter{}.Call(context.Background(), l, "get_message", map[string]any{"message_id": "18c2a1f0e0b1a001"})
		if err == nil && !strings.Contains(out, "invoice-Q3.pdf") {
			err = errors.New("the message lost its attachment line")
		}
		return err
	})
}
