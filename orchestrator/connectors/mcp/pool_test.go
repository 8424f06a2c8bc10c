package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestCredentialsReachEveryRequest(t *testing.T) {
	cases := []struct {
		name, header, scheme, key, wantHeader, wantValue string
	}{
		{"bearer by default (Cigale, Etherscan)", "", "", "sk-live-0123456789", "Authorization", "Bearer sk-live-0123456789"},
		{"X-API-KEY without a scheme (OpenSea)", "X-API-KEY", "", "os-key-0123456789", "X-Api-Key", "os-key-0123456789"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, withAuth(c.wantHeader, c.wantValue))
			logs := &logBuffer{}
			p := New(Config{Logger: logs.logger()})
			conn := Connection{ID: "c1", Slug: "srv", URL: f.URL, Headers: TokenHeader(c.header, c.scheme, c.key)}
			tool := echoTool(t, p, conn)
			if got := echo(t, p, conn, tool); got != "echo: hi" {
				t.Fatalf("call = %q", got)
			}
			p.Close()
			deletes := f.requests("HTTP DELETE")
			if len(deletes) != 1 {
				t.Fatalf("DELETE requests = %d, want 1", len(deletes))
			}
			for _, r := range f.requests("") {
				if r.Header.Get(c.wantHeader) != c.wantValue {
					t.Errorf("%s %s (%s) lacks the credential header", r.HTTPMethod, r.Path, r.RPC)
				}
			}
			if strings.Contains(logs.String(), c.key) {
				t.Errorf("the key appears in the log:\n%s", logs.String())
			}
		})
	}
}

func TestRejectedKeyNeverShows(t *testing.T) {
	const key = "wrong-key-9876543210"
	f := newFake(t, withAuth("Authorization", "Bearer right-key"))
	logs := &logBuffer{}
	p := newPool(t, Config{}, logs)
	conn := Connection{ID: "c1", Slug: "cigale", URL: f.URL, Headers: TokenHeader("", "", key)}
	_, err := p.ListTools(context.Background(), conn)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v, want ErrRejected", err)
	}
	if !strings.Contains(err.Error(), `"cigale"`) || strings.Contains(err.Error(), key) {
		t.Errorf("error text = %q: want the server named and no key", err)
	}
	if strings.Contains(logs.String(), key) {
		t.Errorf("the key appears in the log:\n%s", logs.String())
	}
	if n := len(f.requests("HTTP GET")); n != 0 {
		t.Errorf("a rejected key fell back to SSE (%d GETs)", n)
	}

	// A server that echoes the key into an error body: the text is scrubbed.
	f.setAuth("", "")
	f.setTamper(func(w http.ResponseWriter, r *http.Request, rpc string, id any) bool {
		http.Error(w, "upstream said no to "+r.Header.Get("Authorization"), http.StatusBadGateway)
		return true
	})
	_, err = p.ListTools(context.Background(), conn)
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("err = %v: want an error with the key redacted", err)
	}
	if strings.Contains(logs.String(), key) {
		t.Errorf("the key appears in the log:\n%s", logs.String())
	}
}

func TestOneSessionPerConnection(t *testing.T) {
	f := newFake(t)
	var opened []string
	var mu sync.Mutex
	p := newPool(t, Config{OnOpen: func(id string, tr Transport) {
		mu.Lock()
		opened = append(opened, id+"="+string(tr))
		mu.Unlock()
	}}, nil)
	a := Connection{ID: "a", Slug: "srv", URL: f.URL}
	tool := Tool{RemoteName: "echo", Name: "srv_echo"}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Call(context.Background(), a, tool, map[string]any{"text": "x"}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(f.requests("initialize")); n != 1 {
		t.Fatalf("40 concurrent first calls opened %d sessions, want 1", n)
	}
	b := Connection{ID: "b", Slug: "srv", URL: f.URL}
	echo(t, p, b, tool)
	if n := len(f.requests("initialize")); n != 2 {
		t.Fatalf("a second connection shares the session: %d initializes, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(opened) != "[a=streamable-http b=streamable-http]" {
		t.Errorf("OnOpen saw %v", opened)
	}
}

func TestListChanged(t *testing.T) {
	f := newFake(t)
	p := newPool(t, Config{}, nil)
	conn := Connection{ID: "c1", Slug: "srv", URL: f.URL}
	l, err := p.ListTools(context.Background(), conn)
	if err != nil || len(l.Tools) != 1 || l.Transport != StreamableHTTP {
		t.Fatalf("ListTools = %+v, %v", l, err)
	}
	if p.Changed("c1") {
		t.Fatal("changed right after a listing")
	}
	// The GET stream opens after initialise; wait for it before changing the tools. A notification
	// the server sends before it has registered the stream is lost, so the change is made again
	// (each AddTool notifies) until one arrives.
	waitFor(t, "the GET stream", func() bool { return len(f.requests("HTTP GET")) > 0 })
	addTool := func() {
		f.MCP.AddTool(mcpgo.NewTool("added"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("ok"), nil
		})
	}
	addTool()
	resend := time.NewTicker(250 * time.Millisecond)
	defer resend.Stop()
	deadline := time.After(30 * time.Second)
	for !p.Changed("c1") {
		select {
		case <-resend.C:
			addTool()
		case <-deadline:
			t.Fatal("timed out waiting for tools/list_changed")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if p.Changed("other") {
		t.Error("another connection is marked changed")
	}
	l, err = p.ListTools(context.Background(), conn)
	if err != nil || len(l.Tools) != 2 {
		t.Fatalf("relist = %+v, %v", l, err)
	}
	if p.Changed("c1") {
		t.Error("still changed after the relist")
	}
}

// sessionGone is the answer of the TypeScript SDK's example server to a request whose session it
// does not know: HTTP 400 with a JSON-RPC error body.
const sessionGone = `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`

func TestExpiredSessionReopensOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"Not Found", http.StatusNotFound, ""},
		{"Bad Request", http.StatusBadRequest, ""},
		{"Bad Request with a JSON-RPC error", http.StatusBadRequest, sessionGone},
	} {
		status := c.status
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			p := newPool(t, Config{}, nil)
			conn := Connection{ID: "c1", Slug: "srv", URL: f.URL}
			tool := echoTool(t, p, conn)
			f.expireAll(status, c.body)
			if got := echo(t, p, conn, tool); got != "echo: hi" {
				t.Fatalf("call after expiry = %q", got)
			}
			if n := len(f.requests("initialize")); n != 2 {
				t.Fatalf("initializes = %d, want 2", n)
			}

			// A server that forgets every session at once: one reopen, then the error.
			f.setTamper(func(w http.ResponseWriter, r *http.Request, rpc string, id any) bool {
				if rpc == "tools/call" {
					if c.body != "" {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(status)
						fmt.Fprint(w, c.body)
						return true
					}
					http.Error(w, "Invalid session ID", status)
					return true
				}
				return false
			})
			_, err := p.Call(context.Background(), conn, tool, map[string]any{"text": "hi"})
			if err == nil {
				t.Fatal("a call whose retry also finds no session succeeded")
			}
			if !strings.Contains(err.Error(), fmt.Sprint(status)) {
				t.Errorf("the error does not say what the server answered: %v", err)
			}
			if n := len(f.requests("initialize")); n != 3 {
				t.Errorf("initializes = %d, want 3 (one retry only)", n)
			}
			if n := len(f.requests("tools/call")); n != 4 {
				t.Errorf("tools/call requests = %d, want 4", n)
			}
		})
	}
}

// hangServer adds a tool that blocks until its request ends, reporting that on ended.
func hangTool(f *fake) chan struct{} {
	ended := make(chan struct{}, 10)
	f.MCP.AddTool(mcpgo.NewTool("hang"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		<-ctx.Done()
		ended <- struct{}{}
		return nil, ctx.Err()
	})
	return ended
}

func TestTimeoutAndCancelSendCancelled(t *testing.T) {
	f := newFake(t)
	ended := hangTool(f)
	// 3 s: the echo at the end must answer within it on a loaded machine too.
	p := newPool(t, Config{CallTimeout: 3 * time.Second}, nil)
	conn := Connection{ID: "c1", Slug: "slow", URL: f.URL}
	hang := Tool{RemoteName: "hang", Name: "slow_hang"}

	assertCancelled := func(t *testing.T) {
		t.Helper()
		calls := f.requests("tools/call")
		last := calls[len(calls)-1]
		waitFor(t, "notifications/cancelled", func() bool {
			for _, c := range f.requests("notifications/cancelled") {
				if fmt.Sprint(c.Cancelled) == fmt.Sprint(last.ID) {
					return true
				}
			}
			return false
		})
		select {
		case <-ended:
		case <-time.After(30 * time.Second): // a hang guard
			t.Fatal("the server's handler never ended")
		}
	}

	t.Run("deadline", func(t *testing.T) {
		// The tool hangs until cancelled: only the call's deadline ends it, as the error says.
		_, err := p.Call(context.Background(), conn, hang, nil)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 3s") {
			t.Fatalf("err = %v", err)
		}
		assertCancelled(t)
	})
	t.Run("caller cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := p.Call(ctx, conn, hang, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		assertCancelled(t)
	})
	// The slot is free and the session intact.
	if got := echo(t, p, conn, Tool{RemoteName: "echo"}); got != "echo: hi" {
		t.Fatalf("call after cancellations = %q", got)
	}
	if n := len(f.requests("initialize")); n != 1 {
		t.Errorf("initializes = %d, want 1", n)
	}
}

func TestInitTimeout(t *testing.T) {
	f := newFake(t)
	f.setTamper(func(w http.ResponseWriter, r *http.Request, rpc string, id any) bool {
		<-r.Context().Done()
		return true
	})
	p := newPool(t, Config{InitTimeout: 200 * time.Millisecond}, nil)
	// The server never answers initialize: only InitTimeout ends the call, as the error says.
	_, err := p.ListTools(context.Background(), Connection{ID: "c1", Slug: "stuck", URL: f.URL})
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") || !strings.Contains(err.Error(), `"stuck"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestListTimeout(t *testing.T) {
	f := newFake(t)
	f.setTamper(func(w http.ResponseWriter, r *http.Request, rpc string, id any) bool {
		if rpc != "tools/list" {
			return false
		}
		<-r.Context().Done()
		return true
	})
	p := newPool(t, Config{ListTimeout: 200 * time.Millisecond}, nil)
	conn := Connection{ID: "c1", Slug: "slow", URL: f.URL}
	_, err := p.ListTools(context.Background(), conn)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `mcp server "slow": tools/list: timed out after 200ms`) {
		t.Fatalf("err = %v", err)
	}
	waitFor(t, "notifications/cancelled", func() bool { return len(f.requests("notifications/cancelled")) == 1 })
}

func TestForgetCloseAndMovedURL(t *testing.T) {
	f, g := newFake(t), newFake(t)
	p := New(Config{})
	conn := Connection{ID: "c1", Slug: "srv", URL: f.URL}
	tool := Tool{RemoteName: "echo"}
	echo(t, p, conn, tool)
	p.Forget("c1")
	waitFor(t, "the DELETE", func() bool { return len(f.requests("HTTP DELETE")) == 1 })
	echo(t, p, conn, tool)
	conn.URL = g.URL // an admin moved the server: the old session goes, a new one opens there
	echo(t, p, conn, tool)
	waitFor(t, "the second DELETE", func() bool { return len(f.requests("HTTP DELETE")) == 2 })
	if n := len(g.requests("initialize")); n != 1 {
		t.Errorf("initializes at the new URL = %d, want 1", n)
	}
	p.Close()
	if _, err := p.Call(context.Background(), conn, tool, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close = %v, want ErrClosed", err)
	}
}

func TestIdleSessionCloses(t *testing.T) {
	f := newFake(t)
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	p := newPool(t, Config{Now: clock}, nil)
	conn := Connection{ID: "c1", Slug: "srv", URL: f.URL}
	tool := Tool{RemoteName: "echo"}
	echo(t, p, conn, tool)
	now.Add(int64(9 * time.Minute))
	if n := p.CloseIdle(); n != 0 {
		t.Fatalf("closed %d sessions after 9 minutes", n)
	}
	echo(t, p, conn, tool)
	now.Add(int64(10 * time.Minute))
	if n := p.CloseIdle(); n != 1 {
		t.Fatalf("closed %d sessions after 10 idle minutes, want 1", n)
	}
	waitFor(t, "the DELETE", func() bool { return len(f.requests("HTTP DELETE")) == 1 })
	echo(t, p, conn, tool)
	if n := len(f.requests("initialize")); n != 2 {
		t.Errorf("initializes = %d, want 2", n)
	}
}

func TestServerDiesMidCall(t *testing.T) {
	f := newFake(t)
	f.MCP.AddTool(mcpgo.NewTool("die"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		f.srv.CloseClientConnections()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	p := newPool(t, Config{}, nil)
	conn := Connection{ID: "c1", Slug: "srv", URL: f.URL}
	if _, err := p.Call(context.Background(), conn, Tool{RemoteName: "die"}, nil); err == nil || !strings.Contains(err.Error(), `"srv"`) {
		t.Fatalf("err = %v", err)
	}
	echo(t, p, conn, Tool{RemoteName: "echo"})
	if n := len(f.requests("initialize")); n != 2 {
		t.Errorf("initializes = %d, want 2 (a fresh session after the fault)", n)
	}
}

func TestSSEFallback(t *testing.T) {
	mcpSrv := server.NewMCPServer("legacy", "1", server.WithToolCapabilities(true))
	mcpSrv.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("sse: " + req.GetString("text", "")), nil
	})
	f := newFake(t, withAuth("Authorization", "Bearer k-0123456789"))
	sse := server.NewSSEServer(mcpSrv, server.WithSSEEndpoint("/mcp"), server.WithMessageEndpoint("/message"))
	server.WithBaseURL(f.srv.URL)(sse)
	f.handler = sse

	var opened atomic.Value
	p := newPool(t, Config{OnOpen: func(_ string, tr Transport) { opened.Store(tr) }}, nil)
	conn := Connection{ID: "c1", Slug: "legacy", URL: f.URL, Headers: TokenHeader("", "", "k-0123456789")}
	l, err := p.ListTools(context.Background(), conn)
	if err != nil || l.Transport != SSE || len(l.Tools) != 1 {
		t.Fatalf("ListTools = %+v, %v", l, err)
	}
	if opened.Load() != SSE {
		t.Errorf("OnOpen saw %v", opened.Load())
	}
	out, err := p.Call(context.Background(), conn, l.Tools[0], map[string]any{"text": "hi"})
	if err != nil || out != "sse: hi" {
		t.Fatalf("call = %q, %v", out, err)
	}

	// Told SSE worked last time, a new pool goes there first.
	posts := len(f.requests("HTTP POST"))
	p2 := newPool(t, Config{}, nil)
	conn.Transport = SSE
	if _, err := p2.Call(context.Background(), conn, l.Tools[0], map[string]any{"text": "again"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.requests("HTTP POST")[posts:] {
		if r.Path == "/mcp" {
			t.Errorf("a POST went to the streamable endpoint although SSE came first")
		}
	}
}

func TestArgumentsCheckedBeforeTheServer(t *testing.T) {
	f := newFake(t)
	p := newPool(t, Config{}, nil)
	conn := Connection{ID: "c1", Slug: "srv", URL: f.URL}
	tool := echoTool(t, p, conn)
	_, err := p.Call(context.Background(), conn, tool, map[string]any{"text": 12})
	if err == nil || !strings.Contains(err.Error(), "argument text") {
		t.Fatalf("err = %v, want one naming the argument", err)
	}
	_, err = p.Call(context.Background(), conn, tool, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "text: required") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.requests("tools/call")); n != 0 {
		t.Errorf("invalid calls reached the server %d times", n)
	}
	// An optional empty string is dropped, a required one is sent.
	tool.InputSchema = []byte(`{"type":"object","properties":{"text":{"type":"string"},"note":{"type":"string","minLength":1}},"required":["text"]}`)
	if _, err := p.Call(context.Background(), conn, tool, map[string]any{"text": "", "note": ""}); err != nil {
		t.Fatal(err)
	}
}

func TestRedirectToAnotherHostRefused(t *testing.T) {
	other := newFake(t)
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	f := newFake(t)
	f.setTamper(func(w http.ResponseWriter, r *http.Request, rpc string, id any) bool {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
		return true
	})
	p := newPool(t, Config{}, nil)
	conn := Connection{ID: "c1", Slug: "srv", URL: f.URL, Headers: TokenHeader("", "", "secret-0123456789")}
	_, err := p.ListTools(context.Background(), conn)
	if !errors.Is(err, ErrRedirectRefused) || strings.Contains(err.Error(), "secret-0123456789") {
		t.Fatalf("err = %v, want ErrRedirectRefused", err)
	}
	if n := len(other.requests("")); n != 0 {
		t.Fatalf("the other host received %d requests", n)
	}
	// Without credentials the redirect is followed.
	conn = Connection{ID: "c2", Slug: "srv", URL: f.URL}
	if _, err := p.ListTools(context.Background(), conn); err != nil {
		t.Fatalf("a redirect without credentials: %v", err)
	}
}

func TestTLSError(t *testing.T) {
	f := newFake(t)
	ts := httptest.NewTLSServer(f)
	defer ts.Close()
	p := newPool(t, Config{}, nil)
	url := ts.URL + "/mcp"
	_, err := p.ListTools(context.Background(), Connection{ID: "c1", Slug: "tls", URL: url, Headers: TokenHeader("", "", "k-0123456789")})
	if err == nil || !strings.Contains(err.Error(), `"tls"`) || !strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "k-0123456789") {
		t.Fatalf("err = %v", err)
	}
}

func TestMalformedAndUnknownCodes(t *testing.T) {
	f := newFake(t)
	p := newPool(t, Config{}, nil)
	conn := Connection{ID: "c1", Slug: "odd", URL: f.URL}
	tool := Tool{RemoteName: "echo"}
	echo(t, p, conn, tool)
	cases := []struct {
		name, body, want string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":`, "decode"},
		{"unknown error code", `{"jsonrpc":"2.0","id":%v,"error":{"code":12345,"message":"weird"}}`, "JSON-RPC error 12345 (a code this client does not know): weird"},
		{"neither result nor error", `{"jsonrpc":"2.0","id":%v}`, "neither a result nor an error"},
		{"result not an object", `{"jsonrpc":"2.0","id":%v,"result":[1]}`, "malformed tools/call result"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.setTamper(func(w http.ResponseWriter, r *http.Request, rpc string, id any) bool {
				if rpc != "tools/call" {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				body := c.body
				if strings.Contains(body, "%v") {
					body = fmt.Sprintf(body, id)
				}
				fmt.Fprint(w, body)
				return true
			})
			_, err := p.Call(context.Background(), conn, tool, map[string]any{"text": "x"})
			if err == nil || !strings.Contains(err.Error(), `mcp server "odd"`) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	f.setTamper(nil)
	echo(t, p, conn, tool)
}
