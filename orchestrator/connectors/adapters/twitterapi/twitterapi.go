// Package twitterapi is the TwitterAPI.io adapter: its REST API with x-api-key (search, user,
// posts, post, followers, following, mentions, replies, quotes, trends), answered as compact TSV.
package twitterapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "twitterapi"

// provider names TwitterAPI.io in errors.
const provider = "TwitterAPI.io"

// maxPages bounds the pages one call reads to fill its limit (each page spends credits).
const maxPages = 3

func init() { adapters.Register(Adapter{}) }

// Adapter is the TwitterAPI.io adapter.
type Adapter struct{}

// Slug returns "twitterapi".
func (Adapter) Slug() string { return Slug }

func client(l adapters.Login) adapters.HTTP {
	key := l.Credential("api_key")
	return adapters.HTTP{Provider: provider, Login: l, Auth: func(h http.Header) { h.Set("x-api-key", key) }}
}

// Verify checks the key's balance with /oapi/my/info.
func (Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	var out map[string]any
	if err := client(l).JSON(ctx, adapters.Get(l.URL, "/oapi/my/info", nil, "account info"), &out); err != nil {
		return connections.Verification{}, err
	}
	if err := statusError(out, "account info"); err != nil {
		return connections.Verification{}, err
	}
	if n, ok := adapters.Num(out["recharge_credits"]); ok {
		return connections.Verification{AccountHint: adapters.Number(n) + " credits"}, nil
	}
	return connections.Verification{}, nil
}

// statusError reads TwitterAPI.io's 200 answers that say {"status":"error","msg":...}.
func statusError(m map[string]any, what string) error {
	if s, _ := m["status"].(string); s != "error" {
		return nil
	}
	msg, _ := m["msg"].(string)
	if msg == "" {
		msg, _ = m["message"].(string)
	}
	msg = adapters.Clip(strings.Join(strings.Fields(msg), " "), 160)
	if strings.Contains(strings.ToLower(msg), "not found") || strings.Contains(strings.ToLower(msg), "not exist") {
		return &adapters.Error{Kind: adapters.KindNotFound, Provider: provider, Msg: "not found: " + what + ": " + msg}
	}
	return &adapters.Error{Kind: adapters.KindUpstream, Provider: provider, Msg: "refused " + what + ": " + msg}
}

// tweet is a post as TwitterAPI.io sends it.
type tweet struct {
	ID           string   `json:"id"`
	Text         string   `json:"text"`
	CreatedAt    string   `json:"createdAt"`
	Likes        *float64 `json:"likeCount"`
	Reposts      *float64 `json:"retweetCount"`
	Replies      *float64 `json:"replyCount"`
	Quotes       *float64 `json:"quoteCount"`
	Views        *float64 `json:"viewCount"`
	Conversation string   `json:"conversationId"`
	Author       struct {
		UserName string `json:"userName"`
	} `json:"author"`
}

// user is an account as TwitterAPI.io sends it.
type user struct {
	ID          string   `json:"id"`
	UserName    string   `json:"userName"`
	Name        string   `json:"name"`
	Followers   *float64 `json:"followers"`
	Following   *float64 `json:"following"`
	Statuses    *float64 `json:"statusesCount"`
	Blue        *bool    `json:"isBlueVerified"`
	CreatedAt   string   `json:"createdAt"`
	Location    string   `json:"location"`
	Description string   `json:"description"`
}

// when turns Twitter's "Tue Dec 10 07:00:30 +0000 2024" into RFC 3339 UTC.
func when(s string) string {
	if t, err := time.Parse(time.RubyDate, s); err == nil {
		return t.UTC().Format(time.RFC3339)
	}
	return s
}

// page is one page of a list answer: the items under one of keys (at the top or under data).
type page struct {
	items []json.RawMessage
	next  string
}

// fetch reads pages of path until limit items or no further page, from cursor.
func fetch(ctx context.Context, c adapters.HTTP, path string, q url.Values, what string, keys []string, limit int, cursor string) (page, error) {
	var all page
	for range maxPages {
		qq := url.Values{}
		for k, v := range q {
			qq[k] = v
		}
		if cursor != "" {
			qq.Set("cursor", cursor)
		}
		var raw map[string]json.RawMessage
		if err := c.JSON(ctx, adapters.Get(c.Login.URL, path, qq, what), &raw); err != nil {
			return page{}, err
		}
		var head map[string]any
		_ = json.Unmarshal(mustObject(raw), &head)
		if err := statusError(head, what); err != nil {
			return page{}, err
		}
		items, more, next := listOf(raw, keys)
		all.items = appendNew(all.items, items)
		all.next = ""
		if !more || next == "" {
			break
		}
		all.next, cursor = next, next
		if len(all.items) >= limit {
			break
		}
	}
	return all, nil
}

// appendNew appends the items whose id is not already listed (a page may repeat the last one).
func appendNew(have, items []json.RawMessage) []json.RawMessage {
	seen := map[string]bool{}
	id := func(raw json.RawMessage) string {
		var x struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(raw, &x)
		return x.ID
	}
	for _, h := range have {
		seen[id(h)] = true
	}
	for _, it := range items {
		if k := id(it); k == "" || !seen[k] {
			seen[k] = true
			have = append(have, it)
		}
	}
	return have
}

// mustObject re-encodes the top-level members that are not lists (status, msg) for statusError.
func mustObject(raw map[string]json.RawMessage) []byte {
	small := map[string]json.RawMessage{}
	for _, k := range []string{"status", "msg", "message"} {
		if v, ok := raw[k]; ok {
			small[k] = v
		}
	}
	b, _ := json.Marshal(small)
	return b
}

// listOf finds the items under one of keys, at the top level or under data, with the paging fields.
func listOf(raw map[string]json.RawMessage, keys []string) ([]json.RawMessage, bool, string) {
	var more bool
	var next string
	_ = json.Unmarshal(raw["has_next_page"], &more)
	_ = json.Unmarshal(raw["next_cursor"], &next)
	levels := []map[string]json.RawMessage{raw}
	var data map[string]json.RawMessage
	if json.Unmarshal(raw["data"], &data) == nil && data != nil {
		levels = append(levels, data)
		if !more {
			_ = json.Unmarshal(data["has_next_page"], &more)
			_ = json.Unmarshal(data["next_cursor"], &next)
		}
	}
	for _, lv := range levels {
		for _, k := range keys {
			var items []json.RawMessage
			if json.Unmarshal(lv[k], &items) == nil && items != nil {
				return items, more, next
			}
		}
	}
	return nil, more, next
}

// Call runs one TwitterAPI.io tool.
func (Adapter) Call(ctx context.Context, l adapters.Login, tool string, args map[string]any) (string, error) {
	c := client(l)
	limit := adapters.Limit(args)
	cursor := adapters.Str(args, "cursor")
	switch tool {
	case "search":
		q := adapters.Str(args, "query")
		if q == "" {
			return "", adapters.Invalid(provider, "query is required")
		}
		since := l.Clock().Add(-24 * time.Hour).Unix()
		v := url.Values{"query": {q + " since_time:" + strconv.FormatInt(since, 10)}, "queryType": {"Top"}}
		return tweets(ctx, c, "/twitter/tweet/advanced_search", v, "search "+q, limit, "", false)
	case "user":
		return userTool(ctx, c, adapters.Str(args, "user"))
	case "posts":
		ref, isID := adapters.UserRef(adapters.Str(args, "user"))
		if ref == "" {
			return "", adapters.Invalid(provider, "user is required (a username or a user id)")
		}
		v := url.Values{"includeReplies": {strconv.FormatBool(adapters.Bool(args, "include_replies"))}}
		if isID {
			v.Set("userId", ref)
		} else {
			v.Set("userName", ref)
		}
		return tweets(ctx, c, "/twitter/user/last_tweets", v, "posts of user "+ref, limit, "", false)
	case "post":
		id, ok := adapters.PostID(adapters.Str(args, "post"))
		if !ok {
			return "", adapters.Invalid(provider, "post is a post id or a status URL such as https://x.com/user/status/123")
		}
		p, err := fetch(ctx, c, "/twitter/tweets", url.Values{"tweet_ids": {id}}, "post "+id, []string{"tweets"}, 1, "")
		if err != nil {
			return "", err
		}
		if len(p.items) == 0 {
			return "", &adapters.Error{Kind: adapters.KindNotFound, Provider: provider, Msg: "not found: post " + id}
		}
		return tweetTable(p.items[:1], 1, "", false)
	case "followers", "following":
		name, _ := adapters.UserRef(adapters.Str(args, "username"))
		if name == "" {
			return "", adapters.Invalid(provider, "username is required")
		}
		path, keys := "/twitter/user/followers", []string{"followers", "users"}
		if tool == "following" {
			path, keys = "/twitter/user/followings", []string{"followings", "following", "users"}
		}
		p, err := fetch(ctx, c, path, url.Values{"userName": {name}, "pageSize": {strconv.Itoa(max(20, limit))}}, tool+" of user "+name, keys, limit, cursor)
		if err != nil {
			return "", err
		}
		return userTable(p, limit)
	case "mentions":
		name, _ := adapters.UserRef(adapters.Str(args, "username"))
		if name == "" {
			return "", adapters.Invalid(provider, "username is required")
		}
		return tweets(ctx, c, "/twitter/user/mentions", url.Values{"userName": {name}}, "mentions of user "+name, limit, cursor, true)
	case "replies", "quotes":
		id, ok := adapters.PostID(adapters.Str(args, "post"))
		if !ok {
			return "", adapters.Invalid(provider, "post is a post id or a status URL such as https://x.com/user/status/123")
		}
		return tweets(ctx, c, "/twitter/tweet/"+tool, url.Values{"tweetId": {id}}, tool+" of post "+id, limit, cursor, true)
	case "trends":
		woeid, ok := adapters.Int(args, "woeid")
		if !ok || woeid <= 0 {
			woeid = 1
		}
		return trends(ctx, c, woeid, limit)
	}
	return "", adapters.UnknownTool(provider, tool)
}

// tweets lists the posts of a list endpoint; paged tools name their cursor in the trailer.
func tweets(ctx context.Context, c adapters.HTTP, path string, q url.Values, what string, limit int, cursor string, paged bool) (string, error) {
	p, err := fetch(ctx, c, path, q, what, []string{"tweets", "replies", "quotes"}, limit, cursor)
	if err != nil {
		return "", err
	}
	return tweetTable(p.items, limit, p.next, paged)
}

func tweetTable(items []json.RawMessage, limit int, next string, paged bool) (string, error) {
	t := adapters.NewTable("id", "created_at", "author", "text", "likes", "reposts", "replies", "quotes", "views", "conversation_id")
	for i, raw := range items {
		if i == limit {
			break
		}
		var x tweet
		if err := json.Unmarshal(raw, &x); err != nil {
			return "", &adapters.Error{Kind: adapters.KindMalformed, Provider: provider, Msg: "answered a post that is not the expected JSON"}
		}
		t.Add(x.ID, when(x.CreatedAt), x.Author.UserName, adapters.Clip(x.Text, adapters.PostTextClip), x.Likes, x.Reposts, x.Replies, x.Quotes, x.Views, x.Conversation)
	}
	trailer(t, len(items), limit, next, paged)
	return t.String(), nil
}

// trailer says how to get what was left out: a larger limit for rows read but not shown, the
// next page's cursor for a paged tool, or a larger limit for a tool without one.
func trailer(t *adapters.Table, n, limit int, next string, paged bool) {
	if n > limit {
		t.Note(adapters.MoreRows(n-limit, limit))
	}
	switch {
	case next != "" && paged:
		t.Note(adapters.NextPage("cursor", next))
	case next != "" && n <= limit && limit < adapters.MaxRows:
		t.Note(fmt.Sprintf("… more posts: pass limit (up to %d)", adapters.MaxRows))
	}
}

func userTool(ctx context.Context, c adapters.HTTP, s string) (string, error) {
	ref, isID := adapters.UserRef(s)
	if ref == "" {
		return "", adapters.Invalid(provider, "user is required (a username or a user id)")
	}
	var raw map[string]json.RawMessage
	path, q := "/twitter/user/info", url.Values{"userName": {ref}}
	if isID {
		path, q = "/twitter/user/batch_info_by_ids", url.Values{"userIds": {ref}}
	}
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, path, q, "user "+ref), &raw); err != nil {
		return "", err
	}
	var head map[string]any
	_ = json.Unmarshal(mustObject(raw), &head)
	if err := statusError(head, "user "+ref); err != nil {
		return "", err
	}
	var u user
	if isID {
		var us []user
		_ = json.Unmarshal(raw["users"], &us)
		if len(us) > 0 {
			u = us[0]
		}
	} else {
		_ = json.Unmarshal(raw["data"], &u)
	}
	if u.ID == "" && u.UserName == "" {
		return "", &adapters.Error{Kind: adapters.KindNotFound, Provider: provider, Msg: "not found: user " + ref}
	}
	t := adapters.NewTable("id", "username", "name", "followers", "following", "posts", "blue_verified", "created_at", "location", "bio")
	addUser(t, u)
	return t.String(), nil
}

func addUser(t *adapters.Table, u user) {
	var blue any
	if u.Blue != nil {
		blue = *u.Blue
	}
	t.Add(u.ID, u.UserName, u.Name, u.Followers, u.Following, u.Statuses, blue, when(u.CreatedAt), u.Location, adapters.Clip(u.Description, adapters.PostTextClip))
}

func userTable(p page, limit int) (string, error) {
	t := adapters.NewTable("id", "username", "name", "followers", "following", "posts", "blue_verified", "created_at", "location", "bio")
	for i, raw := range p.items {
		if i == limit {
			break
		}
		var u user
		if err := json.Unmarshal(raw, &u); err != nil {
			return "", &adapters.Error{Kind: adapters.KindMalformed, Provider: provider, Msg: "answered a user that is not the expected JSON"}
		}
		addUser(t, u)
	}
	trailer(t, len(p.items), limit, p.next, true)
	return t.String(), nil
}

func trends(ctx context.Context, c adapters.HTTP, woeid, limit int) (string, error) {
	var out struct {
		Status string `json:"status"`
		Msg    string `json:"msg"`
		Trends []struct {
			Name   string   `json:"name"`
			Rank   *float64 `json:"rank"`
			Meta   string   `json:"meta_description"`
			Target struct {
				Query string `json:"query"`
			} `json:"target"`
			Trend *struct {
				Name   string   `json:"name"`
				Rank   *float64 `json:"rank"`
				Meta   string   `json:"meta_description"`
				Target struct {
					Query string `json:"query"`
				} `json:"target"`
			} `json:"trend"`
		} `json:"trends"`
	}
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/twitter/trends", url.Values{"woeid": {strconv.Itoa(woeid)}}, fmt.Sprintf("trends of WOEID %d", woeid)), &out); err != nil {
		return "", err
	}
	if out.Status == "error" {
		return "", statusError(map[string]any{"status": out.Status, "msg": out.Msg}, fmt.Sprintf("trends of WOEID %d", woeid))
	}
	t := adapters.NewTable("rank", "name", "query", "meta")
	for i, x := range out.Trends {
		name, rank, meta, q := x.Name, x.Rank, x.Meta, x.Target.Query
		if x.Trend != nil {
			name, rank, meta, q = x.Trend.Name, x.Trend.Rank, x.Trend.Meta, x.Trend.Target.Query
		}
		var r any = i + 1
		if rank != nil {
			r = *rank
		}
		t.Add(r, name, q, meta)
	}
	t.Cap(limit)
	return t.String(), nil
}
