package github_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/connectors/github/githubtest"
)

// envOf is the App's settings as the variables of m give them.
func envOf(m map[string]string) orchestrator.GitHubAppEnv {
	return orchestrator.GitHubAppEnv{AppID: m[github.EnvAppID], Slug: m[github.EnvSlug], PrivateKey: m[github.EnvPrivateKey],
		ClientID: m[github.EnvClientID], ClientSecret: m[github.EnvClientSecret], APIURL: m[github.EnvAPIURL], WebURL: m[github.EnvWebURL], CAFile: m[github.EnvCAFile]}
}

// TestSetupState: every variable set is configured; a missing one or a key that does not parse
// is unsupported, naming what to set and never echoing a value.
func TestSetupState(t *testing.T) {
	f := githubtest.New(t)
	full := f.Env()
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range full {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	realNewlines := with(github.EnvPrivateKey, f.KeyPEM)
	for _, tc := range []struct {
		name  string
		env   map[string]string
		state string
		want  []string
	}{
		{"all set, \\n escapes", full, github.SetupConfigured, nil},
		{"all set, real newlines", realNewlines, github.SetupConfigured, nil},
		{"nothing set", map[string]string{}, github.SetupUnsupported, github.Required},
		{"no client secret", with(github.EnvClientSecret, ""), github.SetupUnsupported, []string{"GITHUB_APP_CLIENT_SECRET"}},
		{"key not PEM", with(github.EnvPrivateKey, "not-a-key-at-all"), github.SetupUnsupported, []string{"GITHUB_APP_PRIVATE_KEY does not parse"}},
		{"app id not a number", with(github.EnvAppID, "my-app"), github.SetupUnsupported, []string{"GITHUB_APP_ID must be the App's numeric id"}},
		{"bad web URL", with(github.EnvWebURL, "ftp://x"), github.SetupUnsupported, []string{"GITHUB_WEB_URL must be"}},
		{"CA file missing", with(github.EnvCAFile, "/nonexistent/ca.pem"), github.SetupUnsupported, []string{"GITHUB_CA_FILE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := github.FromEnv(envOf(tc.env))
			if c.SetupState() != tc.state {
				t.Fatalf("state %s, want %s (%s)", c.SetupState(), tc.state, c.Why())
			}
			err := c.Ready()
			if (err == nil) != (tc.state == github.SetupConfigured) {
				t.Fatalf("Ready: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(err.Error(), "setup_state: unsupported") {
					t.Fatalf("error %q does not name %q", err, w)
				}
			}
			if err != nil && (strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), f.ClientSecret)) {
				t.Fatalf("the error echoes a secret: %q", err)
			}
		})
	}
	if got := github.FromEnv(envOf(map[string]string{})); got.APIURL != "https://api.github.com" || got.WebURL != "https://github.com" || got.GitHost() != "github.com" {
		t.Fatalf("defaults %s %s %s", got.APIURL, got.WebURL, got.GitHost())
	}
	if h := github.FromEnv(envOf(full)).GitHost(); !strings.Contains(h, ":") {
		t.Fatalf("git host %q lost its port", h)
	}
}

// TestAppCalls: the fake checks the JWT on every App call; tokens are scoped by repository_ids
// with contents and pull requests write; listings read every page.
func TestAppCalls(t *testing.T) {
	f := githubtest.New(t)
	var ids []int64
	for i := int64(1); i <= 130; i++ {
		f.AddRepo(githubtest.Repo{ID: 1000 + i, Owner: "acme", Name: "r" + strings.Repeat("x", int(i%3)) + string(rune('a'+i%26)) + "-" + time.Duration(i).String()})
		ids = append(ids, 1000+i)
	}
	f.AddInstall(7, "acme", ids...)
	c := &github.Client{Config: github.FromEnv(envOf(f.Env())), Backoff: time.Millisecond}
	ctx := context.Background()
	in, err := c.GetInstallation(ctx, 7)
	if err != nil || in.Account != "acme" {
		t.Fatalf("installation %+v %v", in, err)
	}
	repos, err := c.Repositories(ctx, 7)
	if err != nil || len(repos) != 130 {
		t.Fatalf("repositories: %d %v", len(repos), err)
	}
	if r := repos[0]; r.ID == 0 || r.Owner != "acme" || !strings.HasPrefix(r.URL, f.WebURL()+"/acme/") || r.DefaultBranch != "main" {
		t.Fatalf("repository %+v", r)
	}
	tok, err := c.AccessToken(ctx, 7, []int64{1001, 1002})
	if err != nil || !strings.HasPrefix(tok.Token, "ghs_") || time.Until(tok.ExpiresAt) < 50*time.Minute || len(tok.Repositories) != 2 {
		t.Fatalf("token %+v %v", tok.Repositories, err)
	}
	req := f.LastRequest()
	if !slices.Equal(req.RepositoryIDs, []int64{1001, 1002}) || req.Permissions["contents"] != "write" || req.Permissions["pull_requests"] != "write" {
		t.Fatalf("token request %+v", req)
	}
	if f.JWTs < 3 {
		t.Fatalf("the fake verified %d JWTs", f.JWTs)
	}

	// Faults: a rate limit or 5xx is retried once; twice is an error that is not removal.
	for _, tc := range []struct {
		name    string
		faults  []int
		ok      bool
		removed bool
	}{
		{"429 then ok", []int{429}, true, false},
		{"rate-limited 403 then ok", []int{4031}, true, false},
		{"502 then ok", []int{502}, true, false},
		{"429 twice", []int{429, 429}, false, false},
		{"404 removed", []int{404}, false, true},
		{"403 suspended", []int{403}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Mu.Lock()
			f.TokenFaults = tc.faults
			f.Mu.Unlock()
			_, err := c.AccessToken(ctx, 7, []int64{1001})
			if (err == nil) != tc.ok {
				t.Fatalf("err %v", err)
			}
			var ae *github.APIError
			if err != nil && (!errors.As(err, &ae) || ae.Removed() != tc.removed) {
				t.Fatalf("err %#v removed want %v", err, tc.removed)
			}
		})
	}

	// A key of another App: GitHub's 401 names the variables to check.
	other := githubtest.New(t)
	env := f.Env()
	env[github.EnvPrivateKey] = other.KeyPEM
	bad := &github.Client{Config: github.FromEnv(envOf(env))}
	_, err = bad.AccessToken(ctx, 7, []int64{1001})
	var se *github.SetupError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "GITHUB_APP_ID") || !strings.Contains(err.Error(), "GITHUB_APP_PRIVATE_KEY") {
		t.Fatalf("another App's key: %v", err)
	}
}

// TestUserInstallations: the code exchange and the user's installations of this App only.
func TestUserInstallations(t *testing.T) {
	f := githubtest.New(t)
	f.AddInstall(7, "acme")
	f.AddInstall(8, "other")
	f.LoginAs("octo", 7, 8)
	c := &github.Client{Config: github.FromEnv(envOf(f.Env()))}
	ctx := context.Background()
	tok, err := c.ExchangeCode(ctx, f.Code("octo"), "")
	if err != nil {
		t.Fatal(err)
	}
	ins, err := c.UserInstallations(ctx, tok)
	if err != nil || len(ins) != 2 {
		t.Fatalf("installations %+v %v", ins, err)
	}
	if _, err := c.ExchangeCode(ctx, "forged", ""); err == nil {
		t.Fatal("a forged code was exchanged")
	}
}
