// Package oidctest runs a certified OpenID Connect provider (npm oidc-provider, installed by make
// setup into tools/oidc) on loopback for the single sign-on tests, and signs in at it the way a
// browser does: a plain HTTP client with a cookie jar that follows redirects and submits the
// provider's development login and consent forms.
package oidctest

import (
	"bufio"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

//go:embed testdata/provider.mjs
var providerScript []byte

// Client is a client registered at the provider (a confidential web client, code flow).
type Client struct {
	ID           string
	Secret       string
	RedirectURIs []string
}

// Account is a person the provider signs in: its login at the development form, and its claims.
type Account struct {
	Email         string
	EmailVerified bool
	Name          string
}

// Config is what the provider knows.
type Config struct {
	Clients  []Client
	Accounts map[string]Account // by login
}

// Provider is the running provider: two issuers on their own ports, signing with one key and
// knowing the same clients and accounts. Issuers[0] keeps the email and name for its userinfo
// endpoint (as the OpenID Connect core says when an access token is issued); Issuers[1] puts them
// in the ID token too.
type Provider struct {
	Issuers []string
	cfg     Config
}

// providerDir finds tools/oidc (holding node_modules/oidc-provider) above the working folder.
func providerDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "tools", "oidc")
		if _, err := os.Stat(filepath.Join(p, "node_modules", "oidc-provider", "package.json")); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no oidc-provider under tools/oidc/node_modules: make setup installs it")
		}
		dir = parent
	}
}

// Start runs the provider until the test ends. A machine without node or the npm package skips
// the test, except under CI, where it fails.
func Start(t testing.TB, cfg Config) *Provider {
	t.Helper()
	dir, err := providerDir()
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	script := filepath.Join(t.TempDir(), "provider.mjs")
	if err := os.WriteFile(script, providerScript, 0o600); err != nil {
		t.Fatal(err)
	}
	type client struct {
		ID            string   `json:"client_id"`
		Secret        string   `json:"client_secret"`
		RedirectURIs  []string `json:"redirect_uris"`
		GrantTypes    []string `json:"grant_types"`
		ResponseTypes []string `json:"response_types"`
	}
	type account struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
		Name          string `json:"name"`
	}
	in := struct {
		Issuers  []map[string]bool  `json:"issuers"`
		Clients  []client           `json:"clients"`
		Accounts map[string]account `json:"accounts"`
	}{Issuers: []map[string]bool{{"conformIdTokenClaims": true}, {"conformIdTokenClaims": false}}, Accounts: map[string]account{}}
	for _, c := range cfg.Clients {
		in.Clients = append(in.Clients, client{ID: c.ID, Secret: c.Secret, RedirectURIs: c.RedirectURIs,
			GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}})
	}
	for login, a := range cfg.Accounts {
		in.Accounts[login] = account(a)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script, dir, string(raw))
	stdin, err := cmd.StdinPipe() // closed when the test ends: the provider exits
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the OpenID provider: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(60 * time.Second): // a hang guard: it listens within a second or two
		t.Fatalf("the OpenID provider did not start within a minute: %s", stderr.String())
	}
	var out struct {
		Issuers []string `json:"issuers"`
	}
	if err := json.Unmarshal([]byte(line), &out); err != nil || len(out.Issuers) != 2 {
		<-done
		t.Fatalf("the OpenID provider did not start (%q): %s", line, stderr.String())
	}
	return &Provider{Issuers: out.Issuers, cfg: cfg}
}

// syncBuffer keeps the provider's standard error; the process writes while the test may read.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Browser is a plain HTTP client with a cookie jar, driving the provider's pages as a browser would.
type Browser struct {
	Client *http.Client
}

// NewBrowser returns a browser with an empty cookie jar that follows no redirect by itself.
func NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{Client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// formAction and promptField find the development interaction's form and which prompt it answers.
var (
	formAction  = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)
	promptField = regexp.MustCompile(`name="prompt" value="([a-z]+)"`)
)

// SignIn goes to start and follows the redirects, signing in as login at the provider's login form
// and consenting, until the next URL is one stop accepts (the callback): it returns that URL
// without requesting it. With abort set it cancels at the login form instead (the provider then
// sends the browser back with error=access_denied).
func (b *Browser) SignIn(t testing.TB, start, login string, abort bool, stop func(*url.URL) bool) *url.URL {
	t.Helper()
	next, err := url.Parse(start)
	if err != nil {
		t.Fatal(err)
	}
	method, form := http.MethodGet, url.Values(nil)
	for range 20 {
		if stop(next) && method == http.MethodGet {
			return next
		}
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, next.String(), body)
		if err != nil {
			t.Fatal(err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := b.Client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, next.Redacted(), err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		method, form = http.MethodGet, nil
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			loc, err := next.Parse(resp.Header.Get("Location"))
			if err != nil {
				t.Fatalf("%s answered a bad Location: %v", next.Redacted(), err)
			}
			next = loc
		case resp.StatusCode == http.StatusOK && formAction.Match(page):
			action, err := next.Parse(html.UnescapeString(string(formAction.FindSubmatch(page)[1])))
			if err != nil {
				t.Fatal(err)
			}
			prompt := ""
			if m := promptField.FindSubmatch(page); m != nil {
				prompt = string(m[1])
			}
			switch {
			case prompt == "login" && abort:
				next = action.JoinPath("abort")
			case prompt == "login":
				method, form, next = http.MethodPost, url.Values{"prompt": {"login"}, "login": {login}, "password": {"any"}}, action
			case prompt == "consent":
				method, form, next = http.MethodPost, url.Values{"prompt": {"consent"}}, action
			default:
				t.Fatalf("a form for an unknown prompt at %s: %.400s", next.Redacted(), page)
			}
		default:
			t.Fatalf("%s %s answered %d: %.600s", method, next.Redacted(), resp.StatusCode, page)
		}
	}
	t.Fatalf("no callback after 20 requests, last at %s", next.Redacted())
	return nil
}

// IDToken signs login in at issuer as the client, with its own authorization code flow (PKCE),
// and returns the raw ID token the token endpoint answered: a real token of that provider, for
// that audience, with a nonce of its own.
func (p *Provider) IDToken(t testing.TB, issuer string, c Client, login string) string {
	t.Helper()
	cfg := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: c.RedirectURIs[0], Scopes: []string{"openid", "email", "profile"},
		Endpoint: oauth2.Endpoint{AuthURL: issuer + "/auth", TokenURL: issuer + "/token", AuthStyle: oauth2.AuthStyleInHeader}}
	state, nonce, verifier := random(), random(), oauth2.GenerateVerifier()
	start := cfg.AuthCodeURL(state, oauth2.SetAuthURLParam("nonce", nonce), oauth2.S256ChallengeOption(verifier))
	redirect, _ := url.Parse(cfg.RedirectURL)
	back := NewBrowser().SignIn(t, start, login, false, func(u *url.URL) bool { return u.Host == redirect.Host && u.Path == redirect.Path })
	if back.Query().Get("state") != state || back.Query().Get("code") == "" {
		t.Fatalf("the provider came back without the state or a code: %s", back.Query().Get("error"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange the code at %s: %v", issuer, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatalf("%s answered no ID token", issuer)
	}
	return raw
}

// random is 16 random bytes in hex.
func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
