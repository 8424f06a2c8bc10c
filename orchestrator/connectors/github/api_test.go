package github_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/github"
	"github.com/guildsai/guilds/orchestrator/connectors/github/githubtest"
	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// helperBins is a folder with guilds-code and guilds-git-credential: GUILDS_BIN_DIR when set,
// else both built once into a temporary folder.
var helperBins = sync.OnceValues(func() (string, error) {
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		return d, nil
	}
	dir, err := os.MkdirTemp("", "guilds-bin-")
	if err != nil {
		return "", err
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	for _, h := range []string{"guilds-code", "guilds-git-credential"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, h), ".")
		cmd.Dir = filepath.Join(root, "helpers", h)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", &exec.ExitError{Stderr: out}
		}
	}
	return dir, nil
})

// githubServe starts serve over the fake GitHub with local sandboxes.
func githubServe(t *testing.T, f *githubtest.Fake, backend string) string {
	base, _ := githubServeLog(t, f, backend)
	return base
}

// githubServeLog is githubServe that also returns serve's log.
func githubServeLog(t *testing.T, f *githubtest.Fake, backend string) (string, *wiretest.Log) {
	t.Helper()
	bins, err := helperBins()
	if err != nil {
		t.Fatalf("build the helpers: %v", err)
	}
	env := map[string]string{"GUILDS_SECRET_KEY": wiretest.SecretKey, "GUILDS_SANDBOX": backend, "GUILDS_BIN_DIR": bins}
	for k, v := range f.Env() {
		env[k] = v
	}
	s := wiretest.Serve(t, env)
	api := s.API
	f.Mu.Lock()
	f.Callback = api + "/api/mcp/oauth/callback"
	f.Mu.Unlock()
	return api, s.Log
}

// browse follows a URL the way the operator's browser does (cookies kept) up to serve's callback,
// and returns its answer: the callback's redirect into the operator app (its Location, a path of
// the app) or the last page's body.
func browse(t *testing.T, f *githubtest.Fake, jar http.CookieJar, u string) (int, string) {
	t.Helper()
	c := f.Server.Client()
	c.Jar = jar
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if last := via[len(via)-1].URL; last.Path == "/api/mcp/oauth/callback" && req.URL.Host == last.Host {
			return http.ErrUseLastResponse // the callback's redirect into the app: not followed
		}
		return nil
	}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther {
		return resp.StatusCode, resp.Header.Get("Location")
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// shell runs one shell call of a run and returns its result.
func shell(t *testing.T, api, run, command string) string {
	t.Helper()
	out := wiretest.Must(t, 200, "POST", api+"/api/runs/"+run+"/calls", map[string]any{"name": "shell", "arguments": map[string]any{"command": command}})
	return out["result"].(string)
}

// TestGitHubEndToEnd: through the HTTP API and a fake GitHub on loopback, Connect installs the
// App, the callback connects the guild's login, the selection is checked, a coding run's start
// puts scoped tokens in its sandbox, and real git clones and pushes the picked repository through
// guilds-git-credential (a helper in the agent's ~/.gitconfig does not win) but not another one;
// the token is in no remote URL and no stored result; removal disconnects and fails the next
// generation naming the login.
func TestGitHubEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	f := githubtest.New(t)
	gitHubFlow(t, f, "local")
}

// TestGitHubBubblewrap: the same in a real bubblewrap sandbox on the user-mode network, GitHub
// being a host beyond this one (a network namespace of the test's own, its certificate trusted
// through GITHUB_CA_FILE and the sandbox's http.sslCAInfo).
func TestGitHubBubblewrap(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil || os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root with bubblewrap installed")
		}
		t.Skip("needs root and bubblewrap")
	}
	f := githubtest.NewOn(t, sandboxtest.PeerListener(t, 2))
	gitHubFlow(t, f, "bubblewrap")
}

// gitHubFlow is the end-to-end flow over serve with the sandbox backend given.
func gitHubFlow(t *testing.T, f *githubtest.Fake, backend string) {
	api := f.AddRepo(githubtest.Repo{ID: 101, Owner: "acme", Name: "api"})
	secret := f.AddRepo(githubtest.Repo{ID: 102, Owner: "acme", Name: "secret", Private: true})
	f.InitGit(api)
	f.InitGit(secret)
	f.AddInstall(55, "acme", 101, 102)
	f.LoginAs("octo", 55)
	base, logs := githubServeLog(t, f, backend)
	_, agent := wiretest.ScopesAt(t, base)
	a := wiretest.Must(t, 200, "PATCH", base+"/api/agents/"+agent, map[string]any{"config": map[string]any{"coding": true}})
	guild := a["guild_id"].(string)

	// Connect at the guild: the install URL; the browser's round trip connects the login.
	out := wiretest.Must(t, 201, "POST", base+"/api/mcp/connections", map[string]any{"server": "github", "scope": "guild", "scope_id": guild})
	authURL, _ := out["authorization_url"].(string)
	if !strings.HasPrefix(authURL, f.WebURL()+"/apps/guilds-test/installations/new?state=") {
		t.Fatalf("connect: %v", out)
	}
	conn := out["connection"].(map[string]any)["id"].(string)
	jar, _ := cookiejar.New(nil)
	if st, loc := browse(t, f, jar, authURL); st != 303 || loc != "/connections/"+conn+"?login=connected" {
		t.Fatalf("the callback's answer %d %s, want the operator app's page for the login", st, loc)
	}
	c := wiretest.Must(t, 200, "GET", base+"/api/mcp/connections/"+conn, nil)
	if c["status"] != "connected" || c["account_hint"] != "acme" {
		t.Fatalf("connection %v", c)
	}

	// Repositories, a refused pick, the selection, its mirror and the access view.
	repos := wiretest.Must(t, 200, "GET", base+"/api/mcp/connections/"+conn+"/github/repositories", nil)
	if n := len(repos["repositories"].([]any)); n != 2 {
		t.Fatalf("repositories %v", repos)
	}
	if st, out := wiretest.Request(t, "PUT", base+"/api/mcp/connections/"+conn+"/github/selected", map[string]any{"repositories": []any{map[string]any{"url": f.WebURL() + "/acme/gone"}}}); st != 422 || !strings.Contains(wiretest.ErrText(out), "acme/gone") {
		t.Fatalf("unreachable pick: %d %v", st, out)
	}
	wiretest.Must(t, 200, "PUT", base+"/api/mcp/connections/"+conn+"/github/selected", map[string]any{"repositories": []any{map[string]any{"name": "api", "url": f.WebURL() + "/acme/api"}}})
	gr := wiretest.Must(t, 200, "GET", base+"/api/guilds/"+guild+"/repositories", nil)
	if n := len(gr["repositories"].([]any)); n != 1 || len(gr["github_logins"].([]any)) != 1 {
		t.Fatalf("guild repositories %v", gr)
	}
	access := wiretest.Must(t, 200, "GET", base+"/api/agents/"+agent+"/tools", nil)
	for _, s := range access["mcp_servers"].([]any) {
		if s := s.(map[string]any); s["slug"] == "github" && (s["oauth_setup_state"] != "configured" || s["github_repositories"] == nil || s["connection_status"] != "connected") {
			t.Fatalf("github access %v", s)
		}
	}

	// A coding run: its start writes the scoped token; git works on the picked repository only.
	started := wiretest.Must(t, 201, "POST", base+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	run := started["id"].(string)
	if st, _ := started["state"].(map[string]any); st == nil || len(st["repositories"].([]any)) != 1 ||
		st["repositories"].([]any)[0].(map[string]any)["done"] != "cloned" || st["repositories"].([]any)[0].(map[string]any)["path"] != "/home/agent/repos/api" {
		t.Fatalf("the start's workspace: %v", started["state"])
	}
	if req := f.LastRequest(); len(req.RepositoryIDs) != 1 || req.RepositoryIDs[0] != 101 {
		t.Fatalf("token request %+v", req)
	}
	host := strings.TrimPrefix(f.WebURL(), "https://")
	res := shell(t, base, run, `printf '[credential]\n\thelper = "!f() { echo username=evil; echo password=wrong; }; f"\n[user]\n\tname = Ada\n\temail = ada@example.com\n' > ~/.gitconfig
cd ~/repos/api && git pull -q && git commit -q --allow-empty -m "pushed by the agent" && git push -q origin main && echo PUSHED && git remote -v`)
	if !strings.Contains(res, "PUSHED") || !strings.Contains(res, "origin\thttps://"+host+"/acme/api (push)") || strings.Contains(res, "x-access-token") {
		t.Fatalf("clone and push: %s", res)
	}
	if !strings.Contains(f.GitLog(api), "pushed by the agent") {
		t.Fatalf("the push did not arrive: %s", f.GitLog(api))
	}
	// A second run's start fetches the repository already there.
	again := wiretest.Must(t, 201, "POST", base+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	if st, _ := again["state"].(map[string]any); st == nil || st["repositories"].([]any)[0].(map[string]any)["done"] != "fetched" {
		t.Fatalf("the second start's workspace: %v", again["state"])
	}
	// gh gets the working directory's repository token as GH_TOKEN (masked here), matched with the port.
	if res := shell(t, base, run, `echo "gh token: [${GH_TOKEN:-none}]"`); !strings.Contains(res, "gh token: [[REDACTED]]") {
		t.Fatalf("GH_TOKEN in the repository: %s", res)
	}
	res = shell(t, base, run, `cd ~ && git clone -q `+f.WebURL()+`/acme/secret.git repos/secret 2>&1; echo "exit $?"; cat "$GUILDS_RUN_DIR/git-tokens.json"`)
	if strings.Contains(res, "exit 0") || strings.Contains(res, "ghs_") || !strings.Contains(res, "[REDACTED]") {
		t.Fatalf("another repository, or the token unmasked: %s", res)
	}
	calls := wiretest.Must(t, 200, "GET", base+"/api/runs/"+run+"/calls", nil)
	f.Mu.Lock()
	issued := f.Tokens
	f.Mu.Unlock()
	for tok := range issued {
		for _, call := range calls["calls"].([]any) {
			if strings.Contains(call.(map[string]any)["result"].(string), tok) {
				t.Fatal("a stored result holds a token")
			}
		}
	}

	// No token, client secret or private key in serve's log.
	for tok := range issued {
		if strings.Contains(logs.String(), tok) {
			t.Fatal("serve's log holds an installation token")
		}
	}
	if l := logs.String(); strings.Contains(l, f.ClientSecret) || strings.Contains(l, "PRIVATE KEY") || !strings.Contains(l, "github connected") {
		t.Fatalf("serve's log holds a secret of the App, or misses the connection: %.2000s", l)
	}

	// Uninstalled: the next generation fails naming the login, which is disconnected.
	f.Mu.Lock()
	f.Installs[55].Removed = true
	f.Mu.Unlock()
	st, out := wiretest.Request(t, "POST", base+"/api/runs/"+run+"/generations", nil)
	if st != 409 || !strings.Contains(wiretest.ErrText(out), conn) {
		t.Fatalf("generation after removal: %d %v", st, out)
	}
	if c := wiretest.Must(t, 200, "GET", base+"/api/mcp/connections/"+conn, nil); c["status"] != "disconnected" {
		t.Fatalf("after removal %v", c)
	}
	// Deleting the login deletes the guild repositories added through it.
	wiretest.Must(t, 200, "DELETE", base+"/api/mcp/connections/"+conn, nil)
	if gr := wiretest.Must(t, 200, "GET", base+"/api/guilds/"+guild+"/repositories", nil); len(gr["repositories"].([]any)) != 0 {
		t.Fatalf("after delete %v", gr)
	}
}

// TestGitHubCallbackHops: through the API and the browser's hops, the setup redirect (no code)
// sends the browser to user authorization with the same state and a short-lived cookie, which
// finds the login when GitHub comes back without the state; a user reaching two installations gets
// the picker; an installation waiting for approval leaves the login pending; and a box without the
// App's variables answers Connect with 422 naming them.
func TestGitHubCallbackHops(t *testing.T) {
	f := githubtest.New(t)
	f.AddInstall(61, "acme")
	f.AddInstall(62, "other")
	f.LoginAs("octo", 61)
	base := githubServe(t, f, "local")
	org, agent := wiretest.ScopesAt(t, base)
	a := wiretest.Must(t, 200, "GET", base+"/api/agents/"+agent, nil)
	guild := a["guild_id"].(string)

	f.Mu.Lock()
	f.SetupRedirect, f.DropState = true, true
	f.Mu.Unlock()
	out := wiretest.Must(t, 201, "POST", base+"/api/mcp/connections", map[string]any{"server": "github", "scope": "org", "scope_id": org})
	jar, _ := cookiejar.New(nil)
	first := out["connection"].(map[string]any)["id"].(string)
	if st, loc := browse(t, f, jar, out["authorization_url"].(string)); st != 303 || loc != "/connections/"+first+"?login=connected" {
		t.Fatalf("setup redirect and cookie: %d %s", st, loc)
	}
	if c := wiretest.Must(t, 200, "GET", base+"/api/mcp/connections/"+first, nil); c["status"] != "connected" || c["account_hint"] != "acme" {
		t.Fatalf("after the setup redirect %v", c)
	}
	f.Mu.Lock()
	f.SetupRedirect, f.DropState = false, false
	f.Mu.Unlock()

	// The organisation has a login: the guild's Connect goes to user authorization; two installations: the picker.
	f.LoginAs("octo", 61, 62)
	out = wiretest.Must(t, 201, "POST", base+"/api/mcp/connections", map[string]any{"server": "github", "scope": "guild", "scope_id": guild})
	authURL := out["authorization_url"].(string)
	if !strings.HasPrefix(authURL, f.WebURL()+"/login/oauth/authorize?") {
		t.Fatalf("second connect: %v", out)
	}
	u, _ := url.Parse(authURL)
	state := u.Query().Get("state")
	if st, loc := browse(t, f, jar, authURL); st != 303 || loc != "/github/installations?state="+url.QueryEscape(state) {
		t.Fatalf("the callback's answer %d %s, want the operator app's installation picker", st, loc)
	}
	list := wiretest.Must(t, 200, "GET", base+"/api/mcp/oauth/github-installation?state="+url.QueryEscape(state), nil)
	if n := len(list["installations"].([]any)); n != 2 {
		t.Fatalf("picker %v", list)
	}
	if st, out := wiretest.Request(t, "POST", base+"/api/mcp/oauth/github-installation", map[string]any{"state": state, "installation_id": "x"}); st != 422 {
		t.Fatalf("a pick that is not a number: %d %v", st, out)
	}
	c := wiretest.Must(t, 200, "POST", base+"/api/mcp/oauth/github-installation", map[string]any{"state": state, "installation_id": 62})
	if c["status"] != "connected" || c["account_hint"] != "other" || c["scope"] != "guild" {
		t.Fatalf("picked %v", c)
	}

	// An installation an organisation owner must approve: the login stays pending.
	out = wiretest.Must(t, 201, "POST", base+"/api/mcp/connections", map[string]any{"server": "github", "scope": "agent", "scope_id": agent})
	u, _ = url.Parse(out["authorization_url"].(string))
	st, page := browse(t, f, jar, base+"/api/mcp/oauth/callback?setup_action=request&state="+url.QueryEscape(u.Query().Get("state")))
	if st != 303 || !strings.HasPrefix(page, "/connect/result?r=") {
		t.Fatalf("the callback's answer to a request %d %s, want the operator app's page saying why", st, page)
	}
	if c := wiretest.Must(t, 200, "GET", base+"/api/mcp/connections/"+out["connection"].(map[string]any)["id"].(string), nil); c["status"] != "pending" {
		t.Fatalf("after a request %v", c)
	}
	// A forged state is refused.
	if st, page := browse(t, f, jar, base+"/api/mcp/oauth/callback?code=x&state=forged"); st != 303 || !strings.HasPrefix(page, "/connect/result?r=") {
		t.Fatalf("forged state %d %s", st, page)
	}
}

// TestGitHubNotSetUp: without the App's variables, Connect is a 422 with setup_state unsupported
// naming them, the access view says unsupported, and nothing is written.
func TestGitHubNotSetUp(t *testing.T) {
	s := wiretest.ServeIn(t, "local")
	base := s.API
	_ = s
	org, _ := wiretest.ScopesAt(t, base)
	st, out := wiretest.Request(t, "POST", base+"/api/mcp/connections", map[string]any{"server": "github", "scope": "org", "scope_id": org})
	if st != 422 || !strings.Contains(wiretest.ErrText(out), "setup_state: unsupported") || !strings.Contains(wiretest.ErrText(out), "GITHUB_APP_ID, GITHUB_APP_SLUG, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_CLIENT_ID, GITHUB_APP_CLIENT_SECRET") {
		t.Fatalf("connect: %d %v", st, out)
	}
	if e := out["error"].(map[string]any); e["setup_state"] != "unsupported" || fmt.Sprint(e["missing"]) != "[GITHUB_APP_ID GITHUB_APP_SLUG GITHUB_APP_PRIVATE_KEY GITHUB_APP_CLIENT_ID GITHUB_APP_CLIENT_SECRET]" {
		t.Fatalf("the error body's setup_state and missing: %v", e)
	}
	if conns := wiretest.Must(t, 200, "GET", base+"/api/mcp/connections", nil); len(conns["connections"].([]any)) != 0 {
		t.Fatalf("wrote %v", conns)
	}
	access := wiretest.Must(t, 200, "GET", base+"/api/orgs/"+org+"/tools", nil)
	for _, s := range access["mcp_servers"].([]any) {
		if s := s.(map[string]any); s["slug"] == "github" && s["oauth_setup_state"] != "unsupported" {
			t.Fatalf("github access %v", s)
		}
	}
}

// TestGitHubStartupWarning: an App whose key does not parse, or that is only partly set, is a
// start-up warning naming what to fix (never the key); an App with nothing set is silent.
func TestGitHubStartupWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad key", map[string]string{"GITHUB_APP_ID": "1", "GITHUB_APP_SLUG": "s", "GITHUB_APP_PRIVATE_KEY": "secret-not-a-pem", "GITHUB_APP_CLIENT_ID": "c", "GITHUB_APP_CLIENT_SECRET": "x"}, "GITHUB_APP_PRIVATE_KEY does not parse"},
		{"partly set", map[string]string{"GITHUB_APP_ID": "1"}, "GITHUB_APP_SLUG, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_CLIENT_ID, GITHUB_APP_CLIENT_SECRET"},
		{"nothing set", map[string]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			app := github.New(envOf(tc.env), nil, nil, "http://127.0.0.1:1", slog.New(slog.NewTextHandler(&buf, nil)))
			got := buf.String()
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || strings.Contains(got, "secret-not-a-pem") {
				t.Fatalf("log %q, want %q", got, tc.want)
			}
			if app.SetupState() != "unsupported" || app.PublicURL != "http://127.0.0.1:1" {
				t.Fatalf("state %s, public %s", app.SetupState(), app.PublicURL)
			}
		})
	}
}
