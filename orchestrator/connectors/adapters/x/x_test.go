package x_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/x"
)

const token = "AAAAAAAAAAAAAAAAAAAAAMLheAAAAAAA0%2BuSeid"

// fake is X API v2 on loopback under /2, answering the examples of X's developer docs.
func fake(t testing.TB) (*adapterstest.Fake, adapters.Login) {
	f := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token })
	f.Deny = []byte(`{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`)
	for route, file := range map[string]string{
		"GET /2/users/by/username/X":           "user_x.json",
		"GET /2/users/by/username/XDevelopers": "user.json",
		"GET /2/users/2244994945":              "user.json",
		"GET /2/users/by/username/nosuchuser":  "user_notfound.json",
		"GET /2/tweets/search/recent":          "search.json",
		"GET /2/users/2244994945/tweets":       "timeline.json",
		"GET /2/tweets/1228393702244134912":    "post.json",
	} {
		f.JSON(route, 200, adapterstest.Testdata(t, file))
	}
	return f, adapters.Login{Credentials: map[string]string{"bearer_token": token}, URL: f.URL + "/2", Client: f.Client()}
}

func TestVerify(t *testing.T) {
	f, l := fake(t)
	if _, err := (x.Adapter{}).Verify(context.Background(), l); err != nil {
		t.Fatalf("good token: %v", err)
	}
	if p := f.Last().URL.Path; p != "/2/users/by/username/X" {
		t.Errorf("checked %s", p)
	}
	bad := l
	bad.Credentials = map[string]string{"bearer_token": "wrong-token-000"}
	if _, err := (x.Adapter{}).Verify(context.Background(), bad); !adapters.IsRejected(err) || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("wrong token: %v", err)
	}
	f.JSON("GET /2/users/by/username/X", 503, []byte(`{"title":"Service Unavailable"}`))
	if _, err := (x.Adapter{}).Verify(context.Background(), l); !adapters.IsDown(err) {
		t.Errorf("503: %v", err)
	}
}

func TestTools(t *testing.T) {
	f, l := fake(t)
	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		path       string
		query      map[string]string
	}{
		{"search", "search", map[string]any{"query": "python -is:retweet"}, "/2/tweets/search/recent", map[string]string{"query": "python -is:retweet", "max_results": "15", "expansions": "author_id"}},
		{"search_limit", "search", map[string]any{"query": "python", "limit": 2.0}, "/2/tweets/search/recent", map[string]string{"max_results": "10"}},
		{"user", "user", map[string]any{"user": "@XDevelopers"}, "/2/users/by/username/XDevelopers", nil},
		{"user_id", "user", map[string]any{"user": "2244994945"}, "/2/users/2244994945", nil},
		{"posts", "posts", map[string]any{"user": "XDevelopers", "exclude_replies": true}, "/2/users/2244994945/tweets", map[string]string{"exclude": "replies", "max_results": "15"}},
		{"post", "post", map[string]any{"post": "1228393702244134912"}, "/2/tweets/1228393702244134912", nil},
		{"post_url", "post", map[string]any{"post": "https://x.com/XDevelopers/status/1228393702244134912"}, "/2/tweets/1228393702244134912", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := x.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.Golden(t, tt.name, got)
			f.CheckLast(t, tt.path, tt.query)
			for _, line := range strings.Split(got, "\n") {
				for _, cell := range strings.Split(line, "\t") {
					if n := len([]rune(cell)); n > 290 {
						t.Errorf("a cell of %d characters", n)
					}
				}
			}
		})
	}
	if f.Denied != 0 {
		t.Errorf("%d requests without the bearer token", f.Denied)
	}
}

func TestErrors(t *testing.T) {
	f, l := fake(t)
	f.Handle("GET /2/tweets/search/recent", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "900")
		w.WriteHeader(429)
		_, _ = w.Write([]byte(`{"title":"Too Many Requests","detail":"Too Many Requests for ` + r.Header.Get("Authorization") + `","type":"about:blank","status":429}`))
	})
	for _, tt := range []struct {
		tool string
		args map[string]any
		kind adapters.Kind
		says string
	}{
		{"user", map[string]any{"user": "nosuchuser"}, adapters.KindNotFound, "Could not find user with username: [nosuchuser]"},
		{"posts", map[string]any{"user": "nosuchuser"}, adapters.KindNotFound, "user nosuchuser"},
		{"post", map[string]any{"post": "https://example.com/nope"}, adapters.KindInvalid, "status URL"},
		{"post", map[string]any{"post": "999"}, adapters.KindNotFound, "post 999"},
		{"search", map[string]any{"query": "x"}, adapters.KindRateLimited, "retry after 900 s"},
	} {
		_, err := x.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
		if k, _ := adapters.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s %v: %v (kind %v), want kind %v saying %q", tt.tool, tt.args, err, k, tt.kind, tt.says)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("%s: the token leaked: %v", tt.tool, err)
		}
	}
}
