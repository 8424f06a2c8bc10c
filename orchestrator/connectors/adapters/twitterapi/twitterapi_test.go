package twitterapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/twitterapi"
)

const key = "twapi_4e1f0c2a9b7d"

var now = time.Date(2024, 12, 10, 12, 0, 0, 0, time.UTC)

// fake is TwitterAPI.io on loopback, answering bodies of the shapes its docs publish.
func fake(t testing.TB) (*adapterstest.Fake, adapters.Login) {
	f := adapterstest.NewFake(t, func(r *http.Request) bool { return r.Header.Get("x-api-key") == key })
	f.Deny = []byte(`{"error":"Unauthorized","message":"Invalid API key"}`)
	for route, file := range map[string]string{
		"GET /oapi/my/info":                   "info.json",
		"GET /twitter/tweet/advanced_search":  "search.json",
		"GET /twitter/user/info":              "user.json",
		"GET /twitter/user/batch_info_by_ids": "users_by_id.json",
		"GET /twitter/user/last_tweets":       "last_tweets.json",
		"GET /twitter/tweets":                 "tweets.json",
		"GET /twitter/user/followers":         "followers.json",
		"GET /twitter/user/followings":        "followings.json",
		"GET /twitter/user/mentions":          "mentions.json",
		"GET /twitter/tweet/replies":          "replies.json",
		"GET /twitter/tweet/quotes":           "quotes.json",
		"GET /twitter/trends":                 "trends.json",
	} {
		f.Handle(route, paged(adapterstest.Testdata(t, file)))
	}
	return f, adapters.Login{Credentials: map[string]string{"api_key": key}, URL: f.URL, Client: f.Client(), Now: func() time.Time { return now }}
}

// paged answers body, or the empty last page when the request passes body's own next_cursor.
func paged(body []byte) http.HandlerFunc {
	var head struct {
		Next string `json:"next_cursor"`
		Data struct {
			Next string `json:"next_cursor"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &head)
	next := head.Next + head.Data.Next
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if c := r.URL.Query().Get("cursor"); c != "" && c == next {
			_, _ = w.Write([]byte(`{"tweets":[],"followers":[],"followings":[],"has_next_page":false,"next_cursor":"","status":"success","msg":""}`))
			return
		}
		_, _ = w.Write(body)
	}
}

func TestVerify(t *testing.T) {
	_, l := fake(t)
	v, err := twitterapi.Adapter{}.Verify(context.Background(), l)
	if err != nil || v.AccountHint != "1250000 credits" {
		t.Fatalf("good key: %+v %v", v, err)
	}
	bad := l
	bad.Credentials = map[string]string{"api_key": "wrong-key-000"}
	if _, err := (twitterapi.Adapter{}).Verify(context.Background(), bad); !adapters.IsRejected(err) || !strings.Contains(err.Error(), "Invalid API key") {
		t.Errorf("wrong key: %v", err)
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
		{"search", "search", map[string]any{"query": "#buildinpublic"}, "/twitter/tweet/advanced_search", map[string]string{"queryType": "Top", "query": "#buildinpublic since_time:1733745600"}},
		{"user", "user", map[string]any{"user": "@XDevelopers"}, "/twitter/user/info", map[string]string{"userName": "XDevelopers"}},
		{"user_id", "user", map[string]any{"user": "2244994945"}, "/twitter/user/batch_info_by_ids", map[string]string{"userIds": "2244994945"}},
		{"posts", "posts", map[string]any{"user": "XDevelopers", "limit": 5.0}, "/twitter/user/last_tweets", map[string]string{"userName": "XDevelopers", "includeReplies": "false"}},
		{"posts_id", "posts", map[string]any{"user": "2244994945", "include_replies": true, "limit": 30.0}, "/twitter/user/last_tweets", map[string]string{"userId": "2244994945", "includeReplies": "true", "cursor": "cursor-page-2"}},
		{"post", "post", map[string]any{"post": "https://x.com/XDevelopers/status/1866332000000000007"}, "/twitter/tweets", map[string]string{"tweet_ids": "1866332000000000007"}},
		{"followers", "followers", map[string]any{"username": "XDevelopers", "limit": 3.0}, "/twitter/user/followers", map[string]string{"userName": "XDevelopers"}},
		{"following", "following", map[string]any{"username": "XDevelopers", "cursor": "abc"}, "/twitter/user/followings", map[string]string{"cursor": "abc"}},
		{"mentions", "mentions", map[string]any{"username": "XDevelopers"}, "/twitter/user/mentions", map[string]string{"userName": "XDevelopers"}},
		{"replies", "replies", map[string]any{"post": "1866332000000000007"}, "/twitter/tweet/replies", map[string]string{"tweetId": "1866332000000000007"}},
		{"quotes", "quotes", map[string]any{"post": "twitter.com/a/status/1866332000000000007"}, "/twitter/tweet/quotes", map[string]string{"tweetId": "1866332000000000007"}},
		{"trends", "trends", map[string]any{}, "/twitter/trends", map[string]string{"woeid": "1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := twitterapi.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.Golden(t, tt.name, got)
			f.CheckLast(t, tt.path, tt.query)
		})
	}
	if f.Denied != 0 {
		t.Errorf("%d requests without x-api-key", f.Denied)
	}
}

func TestErrors(t *testing.T) {
	f, l := fake(t)
	f.JSON("GET /twitter/user/info", 200, adapterstest.Testdata(t, "user_notfound.json"))
	f.Handle("GET /twitter/trends", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(402)
		_, _ = w.Write([]byte(`{"error":"Payment Required","message":"credits exhausted for key ` + r.Header.Get("x-api-key") + `"}`))
	})
	for _, tt := range []struct {
		tool string
		args map[string]any
		kind adapters.Kind
		says string
	}{
		{"user", map[string]any{"user": "nosuch"}, adapters.KindNotFound, "user nosuch: User not found"},
		{"trends", nil, adapters.KindUpstream, "credits exhausted for key [redacted]"},
		{"replies", map[string]any{"post": "nope"}, adapters.KindInvalid, "status URL"},
		{"followers", map[string]any{}, adapters.KindInvalid, "username is required"},
	} {
		_, err := twitterapi.Adapter{}.Call(context.Background(), l, tt.tool, tt.args)
		if k, _ := adapters.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v (kind %v), want kind %v saying %q", tt.tool, err, k, tt.kind, tt.says)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("%s: the key leaked: %v", tt.tool, err)
		}
	}
}
