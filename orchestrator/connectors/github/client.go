package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// Client makes the App's REST calls. Set its fields once.
type Client struct {
	Config  Config
	Now     func() time.Time
	Backoff time.Duration // the wait before the one retry of a rate-limited or failing token request; 0 is 1 s

	mu     sync.Mutex
	jwt    string    // the App JWT in use, signed once and reused
	jwtEnd time.Time // when to sign a new one (a minute before it expires)
}

// appToken returns the App JWT, signing a new one when the last is within a minute of its end.
func (c *Client) appToken() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.jwt != "" && now.Before(c.jwtEnd) {
		return c.jwt, nil
	}
	tok, err := c.Config.AppJWT(now)
	if err != nil {
		return "", err
	}
	c.jwt, c.jwtEnd = tok, now.Add(8*time.Minute)
	return tok, nil
}

// Installation is one installation of the App as GitHub lists it.
type Installation = orchestrator.GitHubInstallation

// Repository is one repository an installation reaches.
type Repository = orchestrator.GitHubRepository

// Token is an installation access token and the repositories GitHub says it reaches, as they are now.
type Token struct {
	Token        string
	ExpiresAt    time.Time
	Repositories []Repository
}

// APIError is a GitHub answer other than success. Message is GitHub's own message, never a token.
type APIError struct {
	Op          string
	Status      int
	Message     string
	RateLimited bool // 429, or 403 with x-ratelimit-remaining: 0
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("GitHub answered %d to %s: %s", e.Status, e.Op, msg)
}

// Removed reports whether the answer means the installation was removed or suspended: a 404, or a
// 403 that is not rate limiting.
func (e *APIError) Removed() bool {
	return e.Status == http.StatusNotFound || (e.Status == http.StatusForbidden && !e.RateLimited)
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// do sends one request and decodes a 2xx JSON answer into out; anything else is an *APIError.
func (c *Client) do(ctx context.Context, op, method, rawURL, auth string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "guilds-orchestrator")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := c.Config.HTTP().Do(req)
	if err != nil {
		return fmt.Errorf("%s: GitHub at %s did not answer: %w", op, req.URL.Host, scrub(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s: read GitHub's answer: %w", op, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var m struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &m)
		return &APIError{Op: op, Status: resp.StatusCode, Message: clip(m.Message),
			RateLimited: resp.StatusCode == http.StatusTooManyRequests || (resp.StatusCode == http.StatusForbidden && resp.Header.Get("X-Ratelimit-Remaining") == "0")}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s: GitHub's answer is not the expected JSON: %v", op, err)
		}
	}
	return nil
}

// scrub drops the URL's query from a transport error (a code or state must not reach a log).
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// ExchangeCode trades the callback's code for a user token (web flow). The token is only for
// listing the installations the user reaches; the caller discards it.
func (c *Client) ExchangeCode(ctx context.Context, code, redirectURI string) (string, error) {
	form := url.Values{"client_id": {c.Config.ClientID}, "client_secret": {c.Config.ClientSecret}, "code": {code}}
	if redirectURI != "" {
		form.Set("redirect_uri", redirectURI)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Config.WebURL+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("exchange the code: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Config.HTTP().Do(req)
	if err != nil {
		return "", fmt.Errorf("exchange the code: GitHub did not answer: %w", scrub(err))
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		return "", &APIError{Op: "the code exchange", Status: resp.StatusCode, Message: "not a token answer"}
	}
	if out.AccessToken == "" {
		return "", &APIError{Op: "the code exchange", Status: http.StatusBadRequest, Message: clip(strings.TrimSpace(out.Error + ": " + out.Description))}
	}
	return out.AccessToken, nil
}

// wireInstallation is an installation in GitHub's JSON.
type wireInstallation struct {
	ID      int64  `json:"id"`
	AppID   int64  `json:"app_id"`
	AppSlug string `json:"app_slug"`
	Account struct {
		Login string `json:"login"`
	} `json:"account"`
	SuspendedAt *string `json:"suspended_at"`
}

func (w wireInstallation) plain() Installation {
	return Installation{ID: w.ID, AppID: w.AppID, AppSlug: w.AppSlug, Account: w.Account.Login, Suspended: w.SuspendedAt != nil}
}

// maxPages bounds a paged listing (100 a page).
const maxPages = 50

// UserInstallations lists this App's installations the user's token reaches (every page).
func (c *Client) UserInstallations(ctx context.Context, userToken string) ([]Installation, error) {
	appID, _ := strconv.ParseInt(c.Config.AppID, 10, 64)
	var out []Installation
	for page := 1; page <= maxPages; page++ {
		var body struct {
			Total         int                `json:"total_count"`
			Installations []wireInstallation `json:"installations"`
		}
		if err := c.do(ctx, "the user's installations", http.MethodGet, fmt.Sprintf("%s/user/installations?per_page=100&page=%d", c.Config.APIURL, page), userToken, nil, &body); err != nil {
			return nil, err
		}
		for _, w := range body.Installations {
			if (w.AppID == 0 || w.AppID == appID) && (w.AppSlug == "" || strings.EqualFold(w.AppSlug, c.Config.Slug)) {
				out = append(out, w.plain())
			}
		}
		if len(body.Installations) < 100 {
			break
		}
	}
	return out, nil
}

// appCall makes a call authenticated as the App; GitHub's 401 becomes a setup error naming the variables.
func (c *Client) appCall(ctx context.Context, op, method, path string, body, out any) error {
	tok, err := c.appToken()
	if err != nil {
		return err
	}
	err = c.do(ctx, op, method, c.Config.APIURL+path, tok, body, out)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		c.mu.Lock()
		c.jwt = "" // sign afresh next time
		c.mu.Unlock()
		return &SetupError{Msg: fmt.Sprintf("GitHub refused the App's token (401: %s): check that %s is the App's id and %s its private key", ae.Message, EnvAppID, EnvPrivateKey)}
	}
	return err
}

// SetupError is the box's App configuration refused by GitHub.
type SetupError struct{ Msg string }

func (e *SetupError) Error() string { return e.Msg }

// GetInstallation reads one installation as the App.
func (c *Client) GetInstallation(ctx context.Context, id int64) (Installation, error) {
	var w wireInstallation
	if err := c.appCall(ctx, "the installation", http.MethodGet, fmt.Sprintf("/app/installations/%d", id), nil, &w); err != nil {
		return Installation{}, err
	}
	return w.plain(), nil
}

// wireRepo is a repository in GitHub's JSON.
type wireRepo struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	FullName string `json:"full_name"`
	Owner    struct {
		Login string `json:"login"`
	} `json:"owner"`
	Private       bool   `json:"private"`
	DefaultBranch string `json:"default_branch"`
	HTMLURL       string `json:"html_url"`
}

func (c *Client) plainRepo(w wireRepo) Repository {
	u := w.HTMLURL
	if u == "" || !strings.HasPrefix(strings.ToLower(u), strings.ToLower(c.Config.WebURL)+"/") {
		u = c.Config.WebURL + "/" + w.FullName
	}
	return Repository{ID: w.ID, Name: w.Name, FullName: w.FullName, Owner: w.Owner.Login, Private: w.Private, DefaultBranch: w.DefaultBranch, URL: u}
}

// Permissions are what a run's token may do (metadata read comes with any token).
var Permissions = map[string]string{"contents": "write", "pull_requests": "write"}

// AccessToken requests an installation token limited to repoIDs (none: every repository the
// installation reaches, with metadata read only). A rate-limited or failing (5xx) request is
// retried once after the backoff.
func (c *Client) AccessToken(ctx context.Context, installationID int64, repoIDs []int64) (Token, error) {
	body := map[string]any{"permissions": map[string]string{"metadata": "read"}}
	if len(repoIDs) > 0 {
		body = map[string]any{"repository_ids": repoIDs, "permissions": Permissions}
	}
	var out struct {
		Token        string     `json:"token"`
		ExpiresAt    time.Time  `json:"expires_at"`
		Repositories []wireRepo `json:"repositories"`
	}
	path := fmt.Sprintf("/app/installations/%d/access_tokens", installationID)
	err := c.appCall(ctx, "the installation token request", http.MethodPost, path, body, &out)
	var ae *APIError
	if errors.As(err, &ae) && (ae.RateLimited || ae.Status >= 500) {
		wait := c.Backoff
		if wait == 0 {
			wait = time.Second
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return Token{}, ctx.Err()
		}
		err = c.appCall(ctx, "the installation token request", http.MethodPost, path, body, &out)
	}
	if err != nil {
		return Token{}, err
	}
	if out.Token == "" {
		return Token{}, fmt.Errorf("GitHub's token answer carries no token")
	}
	t := Token{Token: out.Token, ExpiresAt: out.ExpiresAt}
	for _, r := range out.Repositories {
		t.Repositories = append(t.Repositories, c.plainRepo(r))
	}
	return t, nil
}

// Repositories lists every repository the installation reaches (every page), through a
// metadata-only token that is then dropped.
func (c *Client) Repositories(ctx context.Context, installationID int64) ([]Repository, error) {
	tok, err := c.AccessToken(ctx, installationID, nil)
	if err != nil {
		return nil, err
	}
	var out []Repository
	for page := 1; page <= maxPages; page++ {
		var body struct {
			Total        int        `json:"total_count"`
			Repositories []wireRepo `json:"repositories"`
		}
		if err := c.do(ctx, "the installation's repositories", http.MethodGet, fmt.Sprintf("%s/installation/repositories?per_page=100&page=%d", c.Config.APIURL, page), tok.Token, nil, &body); err != nil {
			return nil, err
		}
		for _, r := range body.Repositories {
			out = append(out, c.plainRepo(r))
		}
		if len(body.Repositories) < 100 {
			break
		}
	}
	return out, nil
}

// InstallURL is where an operator installs the App, carrying state.
func (c Config) InstallURL(state string) string {
	return c.WebURL + "/apps/" + url.PathEscape(c.Slug) + "/installations/new?state=" + url.QueryEscape(state)
}

// AuthorizeURL is user authorization of the App, carrying state and the callback.
func (c Config) AuthorizeURL(state, redirectURI string) string {
	q := url.Values{"client_id": {c.ClientID}, "state": {state}}
	if redirectURI != "" {
		q.Set("redirect_uri", redirectURI)
	}
	return c.WebURL + "/login/oauth/authorize?" + q.Encode()
}
