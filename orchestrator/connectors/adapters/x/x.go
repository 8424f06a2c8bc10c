// Package x is the X adapter: X API v2 with the operator's bearer token (recent search, user,
// posts, post), answered as compact TSV with post text clipped at 280 characters.
package x

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "x"

// provider names X in errors.
const provider = "X"

// Fields asked of every post and user.
const (
	tweetFields = "created_at,public_metrics,author_id,conversation_id,lang"
	userFields  = "username,name,created_at,description,public_metrics,verified,location"
)

func init() { adapters.Register(Adapter{}) }

// Adapter is the X adapter.
type Adapter struct{}

// Slug returns "x".
func (Adapter) Slug() string { return Slug }

func client(l adapters.Login) adapters.HTTP {
	tok := l.Credential("bearer_token")
	return adapters.HTTP{Provider: provider, Login: l, Auth: func(h http.Header) { h.Set("Authorization", "Bearer "+tok) }}
}

// Verify looks up the user X with the bearer token.
func (Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	var out envelope[user]
	if err := client(l).JSON(ctx, adapters.Get(l.URL, "/users/by/username/X", nil, "user X"), &out); err != nil {
		return connections.Verification{}, err
	}
	if out.Data == nil {
		return connections.Verification{}, &adapters.Error{Kind: adapters.KindMalformed, Provider: provider, Msg: "answered the lookup of user X without the user"}
	}
	return connections.Verification{}, nil
}

// envelope is X's answer: data, includes, meta and partial errors.
type envelope[T any] struct {
	Data     *T `json:"data"`
	Includes struct {
		Users []user `json:"users"`
	} `json:"includes"`
	Meta struct {
		Count int    `json:"result_count"`
		Next  string `json:"next_token"`
	} `json:"meta"`
	Errors []struct {
		Detail string `json:"detail"`
		Title  string `json:"title"`
		Type   string `json:"type"`
	} `json:"errors"`
}

// notFound turns X's 200 answer with errors and no data into one line.
func (e envelope[T]) notFound(what string) error {
	if len(e.Errors) > 0 {
		msg := e.Errors[0].Detail
		if msg == "" {
			msg = e.Errors[0].Title
		}
		return &adapters.Error{Kind: adapters.KindNotFound, Provider: provider, Msg: "not found: " + what + ": " + adapters.Clip(msg, 160)}
	}
	return &adapters.Error{Kind: adapters.KindNotFound, Provider: provider, Msg: "not found: " + what}
}

type metrics struct {
	Followers   *float64 `json:"followers_count"`
	Following   *float64 `json:"following_count"`
	Tweets      *float64 `json:"tweet_count"`
	Listed      *float64 `json:"listed_count"`
	Likes       *float64 `json:"like_count"`
	Reposts     *float64 `json:"retweet_count"`
	Replies     *float64 `json:"reply_count"`
	Quotes      *float64 `json:"quote_count"`
	Impressions *float64 `json:"impression_count"`
	Bookmarks   *float64 `json:"bookmark_count"`
}

type user struct {
	ID, Name, Username, Description, Location string
	Created                                   string  `json:"created_at"`
	Verified                                  *bool   `json:"verified"`
	Metrics                                   metrics `json:"public_metrics"`
}

type post struct {
	ID, Text     string
	Author       string  `json:"author_id"`
	Created      string  `json:"created_at"`
	Conversation string  `json:"conversation_id"`
	Lang         string  `json:"lang"`
	Metrics      metrics `json:"public_metrics"`
}

// Call runs one X tool.
func (Adapter) Call(ctx context.Context, l adapters.Login, tool string, args map[string]any) (string, error) {
	c := client(l)
	switch tool {
	case "search":
		return search(ctx, c, args)
	case "user":
		return userTool(ctx, c, args)
	case "posts":
		return posts(ctx, c, args)
	case "post":
		return postTool(ctx, c, args)
	}
	return "", adapters.UnknownTool(provider, tool)
}

// postTable renders posts with their authors' usernames.
func postTable(ps []post, users []user) *adapters.Table {
	names := map[string]string{}
	for _, u := range users {
		names[u.ID] = u.Username
	}
	t := adapters.NewTable("id", "created_at", "author", "text", "likes", "reposts", "replies", "quotes", "impressions", "conversation_id")
	for _, p := range ps {
		t.Add(p.ID, p.Created, names[p.Author], adapters.Clip(p.Text, adapters.PostTextClip), p.Metrics.Likes, p.Metrics.Reposts, p.Metrics.Replies, p.Metrics.Quotes, p.Metrics.Impressions, p.Conversation)
	}
	return t
}

// capped keeps limit rows, noting what was left out: the rows cut here, or X's further pages.
func capped(t *adapters.Table, n, limit int, next string) {
	if n > limit {
		t.Cap(limit)
		return
	}
	if next == "" {
		return
	}
	if limit < adapters.MaxRows {
		t.Note(fmt.Sprintf("… more posts: pass limit (up to %d)", adapters.MaxRows))
	} else {
		t.Note(fmt.Sprintf("… more posts: %d is the most one call shows; narrow the query", adapters.MaxRows))
	}
}

func search(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	q := adapters.Str(args, "query")
	if q == "" {
		return "", adapters.Invalid(provider, "query is required")
	}
	limit := adapters.Limit(args)
	v := url.Values{"query": {q}, "max_results": {strconv.Itoa(max(limit, 10))}, "tweet.fields": {tweetFields}, "expansions": {"author_id"}, "user.fields": {"username"}}
	var out envelope[[]post]
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/tweets/search/recent", v, "recent search"), &out); err != nil {
		return "", err
	}
	var ps []post
	if out.Data != nil {
		ps = *out.Data
	}
	t := postTable(ps, out.Includes.Users)
	capped(t, len(ps), limit, out.Meta.Next)
	return t.String(), nil
}

// lookup resolves a username or id to the user.
func lookup(ctx context.Context, c adapters.HTTP, ref string) (user, error) {
	ref, isID := adapters.UserRef(ref)
	if ref == "" {
		return user{}, adapters.Invalid(provider, "user is required (a username or a user id)")
	}
	path := "/users/by/username/" + url.PathEscape(ref)
	if isID {
		path = "/users/" + ref
	}
	var out envelope[user]
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, path, url.Values{"user.fields": {userFields}}, "user "+ref), &out); err != nil {
		return user{}, err
	}
	if out.Data == nil {
		return user{}, out.notFound("user " + ref)
	}
	return *out.Data, nil
}

func userTool(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	u, err := lookup(ctx, c, adapters.Str(args, "user"))
	if err != nil {
		return "", err
	}
	t := adapters.NewTable("id", "username", "name", "followers", "following", "posts", "listed", "verified", "created_at", "location", "bio")
	var verified any
	if u.Verified != nil {
		verified = *u.Verified
	}
	m := u.Metrics
	t.Add(u.ID, u.Username, u.Name, m.Followers, m.Following, m.Tweets, m.Listed, verified, u.Created, u.Location, adapters.Clip(u.Description, adapters.PostTextClip))
	return t.String(), nil
}

func posts(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	ref, isID := adapters.UserRef(adapters.Str(args, "user"))
	if ref == "" {
		return "", adapters.Invalid(provider, "user is required (a username or a user id)")
	}
	id := ref
	if !isID {
		u, err := lookup(ctx, c, ref)
		if err != nil {
			return "", err
		}
		id = u.ID
	}
	limit := adapters.Limit(args)
	v := url.Values{"max_results": {strconv.Itoa(max(limit, 5))}, "tweet.fields": {tweetFields}, "expansions": {"author_id"}, "user.fields": {"username"}}
	if adapters.Bool(args, "exclude_replies") {
		v.Set("exclude", "replies")
	}
	var out envelope[[]post]
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/users/"+id+"/tweets", v, "posts of user "+ref), &out); err != nil {
		return "", err
	}
	if out.Data == nil && len(out.Errors) > 0 {
		return "", out.notFound("posts of user " + ref)
	}
	var ps []post
	if out.Data != nil {
		ps = *out.Data
	}
	t := postTable(ps, out.Includes.Users)
	capped(t, len(ps), limit, out.Meta.Next)
	return t.String(), nil
}

func postTool(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	id, ok := adapters.PostID(adapters.Str(args, "post"))
	if !ok {
		return "", adapters.Invalid(provider, "post is a post id or a status URL such as https://x.com/user/status/123")
	}
	v := url.Values{"tweet.fields": {tweetFields}, "expansions": {"author_id"}, "user.fields": {"username"}}
	var out envelope[post]
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/tweets/"+id, v, "post "+id), &out); err != nil {
		return "", err
	}
	if out.Data == nil {
		return "", out.notFound("post " + id)
	}
	return postTable([]post{*out.Data}, out.Includes.Users).String(), nil
}
