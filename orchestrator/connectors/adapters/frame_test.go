package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
)

func TestCell(t *testing.T) {
	for _, tt := range []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"plain", "plain"},
		{"a\tb\nc\rd\\e", `a\tb\nc\rd\\e`},
		{0.1 + 0.2, "0.3"},
		{67187.3358936566, "67187.3358936566"},
		{2.4645873833743e-05, "0.000024645873833743"},
		{1317802988326.25, "1317802988326.25"},
		{21000000.0, "21000000"},
		{-4.04990008945853, "-4.04990008945853"},
		{0.0, "0"},
		{42, "42"},
		{int64(1712562430), "1712562430"},
		{true, "true"},
		{time.Date(2024, 4, 7, 15, 24, 51, 0, time.FixedZone("x", 3600)), "2024-04-07T14:24:51Z"},
	} {
		if got := adapters.Cell(tt.in); got != tt.want {
			t.Errorf("Cell(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTableCap(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rows  int
		limit int
	}{
		{"fits", 3, 15},
		{"capped", 100, 15},
		{"at_most", 40, 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tb := adapters.NewTable("id", "name\tx", "price")
			for i := range tt.rows {
				tb.Add(i, "coin\t"+string(rune('a'+i%26)), float64(i)/10)
			}
			tb.Cap(tt.limit)
			adapterstest.Golden(t, "table_"+tt.name, tb.String())
			if n := strings.Count(tb.String(), "\n"); tt.rows <= tt.limit && n != tt.rows {
				t.Errorf("%d lines after the header, want %d", n, tt.rows)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	for _, tt := range []struct {
		args map[string]any
		want int
	}{
		{nil, 15},
		{map[string]any{"limit": 5.0}, 5},
		{map[string]any{"limit": 99.0}, 30},
		{map[string]any{"limit": 0.0}, 15},
		{map[string]any{"limit": 2.5}, 15},
		{map[string]any{"limit": "7"}, 7},
	} {
		if got := adapters.Limit(tt.args); got != tt.want {
			t.Errorf("Limit(%v) = %d, want %d", tt.args, got, tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 280, "short"},
		{long, 280, strings.Repeat("é", 279) + "…"},
		{strings.Repeat("a", 280), 280, strings.Repeat("a", 280)},
		{"hello world", 7, "hello…"},
	} {
		got := adapters.Clip(tt.in, tt.n)
		if got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
		if n := len([]rune(got)); n > tt.n {
			t.Errorf("Clip kept %d characters, more than %d", n, tt.n)
		}
	}
}

func TestDownsample(t *testing.T) {
	for _, n := range []int{1, 47, 48, 49, 100, 2000} {
		ps := make([]adapters.Point, n)
		for i := range ps {
			ps[i] = adapters.Point{T: int64(i), V: float64(i)}
		}
		got := adapters.Downsample(ps, 48)
		if want := min(n, 48); len(got) != want {
			t.Fatalf("%d points → %d, want %d", n, len(got), want)
		}
		if got[0] != ps[0] || got[len(got)-1] != ps[n-1] {
			t.Errorf("%d points: first %v last %v, want %v and %v", n, got[0], got[len(got)-1], ps[0], ps[n-1])
		}
		for i := 1; i < len(got); i++ {
			if got[i].T <= got[i-1].T {
				t.Fatalf("%d points: not increasing at %d", n, i)
			}
		}
	}
}

func TestAggregate(t *testing.T) {
	for _, n := range []int{10, 48, 49, 97, 1000} {
		cs := make([]adapters.Candle, n)
		var vol float64
		for i := range cs {
			f := float64(i)
			cs[i] = adapters.Candle{Open: "t" + string(rune('0'+i%10)), Close: "c", O: f, C: f + 0.5, H: f + 2, L: f - 1, V: 1}
			vol++
		}
		got := adapters.Aggregate(cs, 48)
		if len(got) != min(n, 48) {
			t.Fatalf("%d candles → %d", n, len(got))
		}
		first, last := got[0], got[len(got)-1]
		if first.O != cs[0].O || first.Open != cs[0].Open || last.C != cs[n-1].C {
			t.Errorf("%d candles: first open %v, last close %v", n, first.O, last.C)
		}
		var sum, hi, lo float64 = 0, -1e9, 1e9
		for _, c := range got {
			sum += c.V
			hi, lo = max(hi, c.H), min(lo, c.L)
		}
		if adapters.Number(sum) != adapters.Number(vol) || hi != float64(n-1)+2 || lo != -1 {
			t.Errorf("%d candles: volume %v (want %v), high %v, low %v", n, sum, vol, hi, lo)
		}
	}
}

func TestProviderMessage(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{"error":"invalid api key"}`, "invalid api key"},
		{`{"status":{"error_code":10005,"error_message":"You need the Analyst plan"}}`, "You need the Analyst plan"},
		{`{"errors":[{"message":"Unauthorized","code":32}]}`, "Unauthorized"},
		{`{"title":"Unauthorized","detail":"Unauthorized","type":"about:blank","status":401}`, "Unauthorized"},
		{`{"error":{"code":-32602,"message":"bad owner"}}`, "bad owner"},
		{`Too Many Requests`, "Too Many Requests"},
		{`<html>oops</html>`, ""},
		{``, ""},
	} {
		if got := adapters.ProviderMessage([]byte(tt.body)); got != tt.want {
			t.Errorf("ProviderMessage(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// TestHTTPErrors maps each provider failure to its kind and one line that never shows the key,
// even when the provider echoes it back.
func TestHTTPErrors(t *testing.T) {
	const key = "sk-live-SECRET-0123456789"
	f := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("x-key") == key })
	echo := func(status int, extra http.Header) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for k, v := range extra {
				w.Header()[k] = v
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"message":"key ` + r.Header.Get("x-key") + ` said no"}`))
		}
	}
	f.Handle("GET /401", echo(401, nil))
	f.Handle("GET /403", echo(403, nil))
	f.Handle("GET /404", echo(404, nil))
	f.Handle("GET /429", echo(429, http.Header{"Retry-After": {"17"}}))
	f.Handle("GET /500", echo(500, nil))
	f.Handle("GET /418", echo(418, nil))
	f.Handle("GET /bad", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{not json`)) })
	f.Handle("GET /big", func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 11 {
			_, _ = w.Write(chunk)
		}
	})
	f.Handle("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	})
	c := adapters.HTTP{Provider: "Acme", Login: adapters.Login{Credentials: map[string]string{"api_key": key}, Client: &http.Client{Timeout: 30 * time.Second}},
		Auth: func(h http.Header) { h.Set("x-key", key) }}
	for _, tt := range []struct {
		path, what string
		kind       adapters.Kind
		code       string
		says       string
	}{
		{"/401", "", adapters.KindRejected, orchestrator.EINVALID, "reconnect the login"},
		{"/403", "", adapters.KindRejected, orchestrator.EINVALID, "reconnect the login"},
		{"/404", "coin nope", adapters.KindNotFound, orchestrator.ENOTFOUND, "not found: coin nope"},
		{"/429", "", adapters.KindRateLimited, orchestrator.EUPSTREAM, "retry after 17 s"},
		{"/500", "", adapters.KindDown, orchestrator.EUPSTREAM, "is down (HTTP 500)"},
		{"/418", "", adapters.KindUpstream, orchestrator.EUPSTREAM, "HTTP 418"},
		{"/bad", "", adapters.KindMalformed, orchestrator.EUPSTREAM, "not the expected JSON"},
		{"/big", "", adapters.KindMalformed, orchestrator.EUPSTREAM, "more than 10 MiB"},
		{"/slow", "", adapters.KindDown, orchestrator.EUPSTREAM, "looks down"},
		{"/missing-route", "", adapters.KindNotFound, orchestrator.ENOTFOUND, "not found"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			var out any
			c := c
			if tt.path == "/slow" { // a short client deadline stands in for the 30 s one; the rest keep 30 s, so a loaded machine cannot time out the 11 MiB answer
				c.Login.Client = &http.Client{Timeout: 300 * time.Millisecond}
			}
			err := c.JSON(context.Background(), adapters.Get(f.URL, tt.path, nil, tt.what), &out)
			if err == nil {
				t.Fatal("no error")
			}
			if k, _ := adapters.KindOf(err); k != tt.kind {
				t.Errorf("kind %v, want %v (%v)", k, tt.kind, err)
			}
			if code := orchestrator.ErrorCode(err); code != tt.code {
				t.Errorf("code %s, want %s", code, tt.code)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "Acme: ") || !strings.Contains(msg, tt.says) || strings.Contains(msg, "\n") {
				t.Errorf("message %q, want one Acme line saying %q", msg, tt.says)
			}
			if strings.Contains(msg, key) || strings.Contains(orchestrator.ErrorMessage(err), key) {
				t.Errorf("the key leaked: %q", msg)
			}
		})
	}
	if f.Denied != 0 {
		t.Errorf("%d requests without the credential header", f.Denied)
	}
	if !adapters.IsRejected(c.JSON(context.Background(), adapters.Get(f.URL, "/401", nil, ""), new(any))) {
		t.Error("IsRejected false for a 401")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.JSON(ctx, adapters.Get(f.URL, "/slow", nil, ""), new(any)); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled call is %v, want context.Canceled", err)
	}
}

// TestUnreachable is a provider whose port is closed: down, and the URL (which may hold a key)
// is not in the message.
func TestUnreachable(t *testing.T) {
	f := adapterstest.NewFake(t, nil)
	u := f.URL
	f.Close()
	c := adapters.HTTP{Provider: "Acme", Login: adapters.Login{Credentials: map[string]string{"api_key": "KEYINPATH123"}}}
	err := c.JSON(context.Background(), adapters.Get(u, "/v2/KEYINPATH123/x", nil, ""), new(any))
	if !adapters.IsDown(err) || strings.Contains(err.Error(), "KEYINPATH123") || strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("unreachable: %v", err)
	}
}

func TestEndpoint(t *testing.T) {
	l := adapters.Login{Endpoints: map[string]string{"pro": "https://api-pro.example/"}}
	if u, err := l.Endpoint("X", "pro"); err != nil || u != "https://api-pro.example" {
		t.Errorf("pro = %q, %v", u, err)
	}
	if _, err := l.Endpoint("X", "solana_das"); err == nil || !strings.Contains(err.Error(), "solana_das") {
		t.Errorf("missing endpoint: %v", err)
	}
}

func TestPostID(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"1228393702244134912", "1228393702244134912", true},
		{"https://x.com/XDevelopers/status/1228393702244134912", "1228393702244134912", true},
		{"https://twitter.com/XDevelopers/status/1228393702244134912?s=20", "1228393702244134912", true},
		{"mobile.twitter.com/a/status/42/photo/1", "42", true},
		{"https://www.x.com/i/web/status/77", "77", true},
		{"https://example.com/a/status/42", "", false},
		{"hello", "", false},
		{"", "", false},
	} {
		got, ok := adapters.PostID(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("PostID(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	if r, id := adapters.UserRef("@XDevelopers"); r != "XDevelopers" || id {
		t.Errorf("UserRef(@XDevelopers) = %q, %v", r, id)
	}
	if r, id := adapters.UserRef("2244994945"); r != "2244994945" || !id {
		t.Errorf("UserRef(2244994945) = %q, %v", r, id)
	}
}

func TestMessage(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&adapters.Error{Kind: adapters.KindDown, Provider: "Acme", Msg: "is down"}, "ERROR: Acme: is down"},
		{fmt.Errorf("wrap: %w", &adapters.Error{Kind: adapters.KindNotFound, Provider: "Acme", Msg: "not found: x"}), "ERROR: Acme: not found: x"},
		{errors.New("dial tcp 10.0.0.1: secret path"), "ERROR: the adapter call failed inside the orchestrator; the details are in its log"},
		{fmt.Errorf("Acme call canceled: %w", context.Canceled), "ERROR: the call was canceled"},
		{nil, "ok"},
	} {
		if got := adapters.Result("ok", tt.err); got != tt.want {
			t.Errorf("Result(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if adapters.Disconnects(&adapters.Error{Kind: adapters.KindRejected}) || !adapters.Disconnects(&adapters.Error{Kind: adapters.KindRejected, KeyInvalid: true}) {
		t.Error("Disconnects: only a 401 on the key disconnects")
	}
}
