package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// RefreshBefore is how close to its expiry a token is replaced before a shell call.
const RefreshBefore = 10 * time.Minute

// TokenFile and CAFileName are the files the App writes into the sandbox's run folder (PROTOCOL.md).
const (
	TokenFile  = "git-tokens.json"
	CAFileName = "github-ca.pem"
	// HelperPath is guilds-git-credential in a bubblewrap or container sandbox.
	HelperPath = sandbox.BinDir + "/guilds-git-credential"
)

var repoName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

// Tokens holds the installation tokens each agent's sandbox has, in memory (and sealed in the store).
type Tokens struct {
	mu    sync.Mutex
	held  map[string][]held      // by agent id
	locks map[string]*sync.Mutex // one per agent: a refresh and a start do not race
}

// held is one installation token in an agent's sandbox.
type held struct {
	ConnectionID string       `json:"connection_id"`
	Account      string       `json:"account"`
	Installation int64        `json:"installation"`
	Token        string       `json:"-"`
	ExpiresAt    time.Time    `json:"expires_at"`
	Repos        []Repository `json:"repositories"`
}

func (t *Tokens) get(agentID string) ([]held, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.held[agentID]
	return slices.Clone(h), ok
}

func (t *Tokens) set(agentID string, h []held) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held == nil {
		t.held = map[string][]held{}
	}
	t.held[agentID] = h
}

func (t *Tokens) lock(agentID string) func() {
	t.mu.Lock()
	if t.locks == nil {
		t.locks = map[string]*sync.Mutex{}
	}
	l := t.locks[agentID]
	if l == nil {
		l = &sync.Mutex{}
		t.locks[agentID] = l
	}
	t.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// need is one login's part of a generation start: its installation and the repositories it tokens.
type need struct {
	conn  orchestrator.Connection
	inst  int64
	repos []orchestrator.GitHubRepo
}

// tokenAAD binds a sealed token to its agent and login.
func tokenAAD(agentID, connID string) []byte {
	return []byte("github_agent_tokens:" + agentID + ":" + connID)
}

// chainLogins orders the GitHub logins visible to an agent nearest first: its own, its guild's,
// its organisation's.
func chainLogins(logins []orchestrator.Connection, a orchestrator.Agent) []orchestrator.Connection {
	var out []orchestrator.Connection
	for _, scope := range []string{orchestrator.ScopeAgent, orchestrator.ScopeGuild, orchestrator.ScopeOrg} {
		for _, c := range logins {
			if c.Scope != scope || (scope == orchestrator.ScopeAgent && c.AgentID != a.ID) || (scope == orchestrator.ScopeGuild && c.GuildID != a.GuildID) {
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

// plan decides which logins a coding agent's generation needs tokens from: the nearest login in
// its chain that picked repositories (a narrower login replaces a wider one's selection), and for
// each extra guild URL on the GitHub host, the first connected login whose installation reaches it.
func (s *Service) plan(ctx context.Context, a orchestrator.Agent) ([]need, []orchestrator.GuildRepository, error) {
	logins, err := s.Store.GitHubLogins(ctx, a.OrgID)
	if err != nil {
		return nil, nil, err
	}
	chain := chainLogins(logins, a)
	var needs []need
	for _, c := range chain {
		if c.Status == orchestrator.ConnPending {
			continue
		}
		sel, err := s.Store.GitHubSelection(ctx, c.ID)
		if err != nil {
			return nil, nil, err
		}
		if len(sel) == 0 {
			continue
		}
		if c.Status == orchestrator.ConnDisconnected {
			return nil, nil, orchestrator.Errorf(orchestrator.ECONFLICT, "GitHub login %s (%s) is disconnected: its installation was removed or suspended; Connect GitHub again (or delete the login) before this coding agent's next generation", c.ID, c.AccountHint)
		}
		inst, _, err := s.Store.GitHubInstallation(ctx, c.ID)
		if err != nil {
			return nil, nil, err
		}
		needs = append(needs, need{conn: c, inst: inst, repos: sel})
		break
	}
	extras, err := s.Store.GuildRepositories(ctx, a.GuildID)
	if err != nil {
		return nil, nil, err
	}
	var plain []orchestrator.GuildRepository
	listed := map[string][]Repository{}
	for _, g := range extras {
		if g.ConnectionID != "" {
			continue // mirrored from the guild's login: its selection covers it
		}
		if !s.onGitHub(g.URL) {
			plain = append(plain, g)
			continue
		}
		add := func(c orchestrator.Connection, inst int64, gr orchestrator.GitHubRepo) {
			i := slices.IndexFunc(needs, func(n need) bool { return n.conn.ID == c.ID })
			if i < 0 {
				needs = append(needs, need{conn: c, inst: inst})
				i = len(needs) - 1
			}
			if !slices.ContainsFunc(needs[i].repos, func(x orchestrator.GitHubRepo) bool { return x.GitHubID == gr.GitHubID }) {
				needs[i].repos = append(needs[i].repos, gr)
			}
		}
		found := false
		if g.ViaConnection != "" && g.GitHubID != 0 { // found at an earlier start: no listing
			if i := slices.IndexFunc(chain, func(c orchestrator.Connection) bool { return c.ID == g.ViaConnection }); i >= 0 {
				c := chain[i]
				if c.Status == orchestrator.ConnDisconnected {
					return nil, nil, orchestrator.Errorf(orchestrator.ECONFLICT, "GitHub login %s (%s), which reaches %s, is disconnected: Connect GitHub again (or remove the repository) before this coding agent's next generation", c.ID, c.AccountHint, g.URL)
				}
				inst, _, err := s.Store.GitHubInstallation(ctx, c.ID)
				if err != nil {
					return nil, nil, err
				}
				add(c, inst, orchestrator.GitHubRepo{GitHubID: g.GitHubID, Name: g.Name, FullName: fullName(g.URL), URL: g.URL, DefaultBranch: g.DefaultBranch})
				found = true
			}
		}
		for _, c := range chain {
			if c.Status != orchestrator.ConnConnected || found {
				continue
			}
			inst, _, err := s.Store.GitHubInstallation(ctx, c.ID)
			if err != nil {
				return nil, nil, err
			}
			if _, ok := listed[c.ID]; !ok {
				repos, err := s.Client.Repositories(ctx, inst)
				if err != nil {
					return nil, nil, s.startError(ctx, c, err)
				}
				listed[c.ID] = repos
			}
			for _, r := range listed[c.ID] {
				if normRepoURL(r.URL) != normRepoURL(g.URL) {
					continue
				}
				found = true
				if err := s.Store.ResolveGuildRepository(ctx, g.ID, c.ID, r.ID); err != nil {
					return nil, nil, err
				}
				add(c, inst, orchestrator.GitHubRepo{GitHubID: r.ID, Name: g.Name, FullName: r.FullName, URL: r.URL, DefaultBranch: g.DefaultBranch})
				break
			}
		}
		if !found {
			plain = append(plain, g)
		}
	}
	return needs, plain, nil
}

// fullName is owner/name of a repository URL.
func fullName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
}

// onGitHub reports whether a URL is on the App's git host.
func (s *Service) onGitHub(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && strings.EqualFold(u.Host, s.Config.GitHost())
}

// startError is a generation start's failure on a login: a removed or suspended installation
// disconnects it; every message names the login.
func (s *Service) startError(ctx context.Context, c orchestrator.Connection, err error) error {
	var ae *APIError
	var se *SetupError
	switch {
	case errors.As(err, &se):
		return orchestrator.Errorf(orchestrator.EINVALID, "GitHub tokens for login %s (%s): %s", c.ID, c.AccountHint, se.Msg)
	case errors.As(err, &ae) && ae.Removed():
		if _, derr := s.Store.SetConnectionStatus(ctx, c.ID, orchestrator.ConnDisconnected, s.now()); derr != nil {
			s.log().Error("mark GitHub login disconnected", "connection_id", c.ID, "err", derr.Error())
		}
		s.log().Warn("github installation removed or suspended: login disconnected", "connection_id", c.ID, "status", ae.Status)
		return orchestrator.Errorf(orchestrator.ECONFLICT, "GitHub login %s (%s) is now disconnected: GitHub answered %d, so its installation was removed or suspended; Connect GitHub again", c.ID, c.AccountHint, ae.Status)
	case errors.As(err, &ae) && (ae.RateLimited || ae.Status >= 500):
		return orchestrator.Errorf(orchestrator.EUPSTREAM, "GitHub could not give login %s (%s) its tokens (%v, also on retry); the login stays connected: start the generation again in a few minutes", c.ID, c.AccountHint, err)
	}
	return orchestrator.Errorf(orchestrator.EUPSTREAM, "GitHub tokens for login %s (%s): %v", c.ID, c.AccountHint, err)
}

// token requests one login's token for its repositories and records renames.
func (s *Service) token(ctx context.Context, n need) (held, error) {
	ids := make([]int64, 0, len(n.repos))
	for _, r := range n.repos {
		ids = append(ids, r.GitHubID)
	}
	tok, err := s.Client.AccessToken(ctx, n.inst, ids)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnprocessableEntity {
		reach, lerr := s.Client.Repositories(ctx, n.inst)
		if lerr == nil {
			var gone []string
			for _, r := range n.repos {
				if !slices.ContainsFunc(reach, func(x Repository) bool { return x.ID == r.GitHubID }) {
					gone = append(gone, r.FullName)
				}
			}
			if len(gone) > 0 {
				return held{}, orchestrator.Errorf(orchestrator.ECONFLICT, "GitHub login %s (%s) no longer reaches %s: add it back to the App's installation on GitHub, or pick other repositories (PUT /api/mcp/connections/%s/github/selected)",
					n.conn.ID, n.conn.AccountHint, strings.Join(gone, ", "), n.conn.ID)
			}
		}
	}
	if err != nil {
		return held{}, s.startError(ctx, n.conn, err)
	}
	h := held{ConnectionID: n.conn.ID, Account: n.conn.AccountHint, Installation: n.inst, Token: tok.Token, ExpiresAt: tok.ExpiresAt}
	for _, r := range n.repos {
		now := r
		if i := slices.IndexFunc(tok.Repositories, func(x Repository) bool { return x.ID == r.GitHubID }); i >= 0 {
			cur := tok.Repositories[i]
			if !strings.EqualFold(cur.FullName, r.FullName) || normRepoURL(cur.URL) != normRepoURL(r.URL) {
				now.FullName, now.URL = cur.FullName, cur.URL
				if err := s.Store.RenameGitHubRepo(ctx, n.conn.ID, now); err != nil {
					return held{}, err
				}
				s.log().Info("github repository renamed", "connection_id", n.conn.ID, "github_id", r.GitHubID, "full_name", cur.FullName)
			}
		}
		h.Repos = append(h.Repos, Repository{ID: now.GitHubID, Name: now.Name, FullName: now.FullName, URL: now.URL, DefaultBranch: now.DefaultBranch})
	}
	return h, nil
}

// Prepare gives a coding agent's sandbox its tokens at a generation start: one installation token
// per login its guild's repositories use, limited to those repositories, written to the token file.
// A login that was removed, a repository no longer reached, or GitHub failing (after one retry)
// fails the start with a message naming the login. It returns the repositories the run works on.
func (s *Service) Prepare(ctx context.Context, a orchestrator.Agent) ([]Repository, error) {
	if s.Config.SetupState() != SetupConfigured {
		return nil, nil
	}
	unlock := s.Tokens.lock(a.ID)
	defer unlock()
	needs, plain, err := s.plan(ctx, a)
	if err != nil {
		return nil, err
	}
	if len(needs) == 0 && len(plain) == 0 {
		if _, ok := s.Tokens.get(a.ID); ok {
			s.Tokens.set(a.ID, nil)
			return nil, s.write(ctx, a.ID, nil)
		}
		return nil, nil
	}
	hs := make([]held, len(needs))
	errs := make([]error, len(needs))
	var wg sync.WaitGroup
	for i, n := range needs { // one request per installation, side by side
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs[i], errs[i] = s.token(ctx, n)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := s.write(ctx, a.ID, hs); err != nil {
		return nil, err
	}
	var repos []Repository
	for _, h := range hs {
		repos = append(repos, h.Repos...)
	}
	for _, g := range plain {
		repos = append(repos, Repository{Name: g.Name, URL: g.URL, DefaultBranch: g.DefaultBranch})
	}
	return repos, nil
}

// errNoSandbox is a service built without its sandbox provider.
var errNoSandbox = errors.New("the GitHub App has no sandbox provider")

// write stores the tokens (sealed), keeps them in memory and writes the sandbox's token file (and
// the CA file when GITHUB_CA_FILE is set).
func (s *Service) write(ctx context.Context, agentID string, hs []held) error {
	var rows []orchestrator.GitHubAgentToken
	for _, h := range hs {
		repos, err := json.Marshal(h)
		if err != nil {
			return fmt.Errorf("encode GitHub tokens: %w", err)
		}
		rows = append(rows, orchestrator.GitHubAgentToken{AgentID: agentID, ConnectionID: h.ConnectionID,
			Sealed: s.Box.Seal([]byte(h.Token), tokenAAD(agentID, h.ConnectionID)), Repositories: repos, ExpiresAt: h.ExpiresAt})
	}
	if err := s.Store.SaveAgentTokens(ctx, agentID, rows, s.now()); err != nil {
		return err
	}
	s.Tokens.set(agentID, hs)
	if s.Sandboxes == nil {
		return errNoSandbox
	}
	box, err := s.Sandboxes.Open(ctx, agentID)
	if err != nil {
		return fmt.Errorf("open the agent's sandbox for its GitHub tokens: %w", err)
	}
	file := tokenFile{Tokens: []fileToken{}}
	for _, h := range hs {
		for _, r := range h.Repos {
			file.Tokens = append(file.Tokens, fileToken{Host: s.Config.GitHost(), Repository: r.FullName, Token: h.Token, ExpiresAt: h.ExpiresAt.UTC().Format(time.RFC3339)})
		}
	}
	data, err := json.Marshal(file)
	if err != nil {
		return fmt.Errorf("encode the token file: %w", err)
	}
	if err := box.WriteFile(ctx, path.Join(box.Places().RunDir, TokenFile), data, 0o600); err != nil {
		return fmt.Errorf("write the sandbox's GitHub token file: %w", err)
	}
	clear(data)
	if s.Config.CAFile != "" {
		pem, err := os.ReadFile(s.Config.CAFile)
		if err != nil {
			return fmt.Errorf("read %s: %w", EnvCAFile, err)
		}
		if err := box.WriteFile(ctx, path.Join(box.Places().RunDir, CAFileName), pem, 0o644); err != nil {
			return fmt.Errorf("write the GitHub CA into the sandbox: %w", err)
		}
	}
	return nil
}

// tokenFile is git-tokens.json (PROTOCOL.md).
type tokenFile struct {
	Tokens []fileToken `json:"tokens"`
}

type fileToken struct {
	Host       string `json:"host"`
	Repository string `json:"repository"`
	Token      string `json:"token"`
	ExpiresAt  string `json:"expires_at"`
}

// load returns an agent's tokens: in memory, or unsealed from the store after a restart.
func (s *Service) load(ctx context.Context, agentID string) ([]held, error) {
	if hs, ok := s.Tokens.get(agentID); ok {
		return hs, nil
	}
	rows, err := s.Store.AgentTokens(ctx, agentID)
	if err != nil {
		return nil, err
	}
	var hs []held
	for _, r := range rows {
		var h held
		if err := json.Unmarshal(r.Repositories, &h); err != nil {
			return nil, fmt.Errorf("read stored GitHub tokens: %w", err)
		}
		plain, err := s.Box.Open(r.Sealed, tokenAAD(agentID, r.ConnectionID))
		if err != nil {
			return nil, fmt.Errorf("open a stored GitHub token (was GUILDS_SECRET_KEY changed?): %w", err)
		}
		h.Token, h.ExpiresAt = string(plain), r.ExpiresAt
		hs = append(hs, h)
	}
	s.Tokens.set(agentID, hs)
	return hs, nil
}

// RunSecretValues is every token the run's sandbox holds: they join the run's redaction set.
func (s *Service) RunSecretValues(ctx context.Context, run orchestrator.Run) ([]string, error) {
	if s.Box == nil || s.Config.SetupState() != SetupConfigured {
		return nil, nil
	}
	hs, err := s.load(ctx, run.AgentID)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.Token)
	}
	return out, nil
}

// ShellEnv is what a shell call adds to the environment: git's credential helper for the GitHub
// host (after an empty credential.helper reset, so no helper the agent configures wins), with
// useHttpPath and the CA when set. A token within RefreshBefore of its expiry is replaced first.
// Every token joins the call's redaction.
func (s *Service) ShellEnv(ctx context.Context, call *registry.Call) ([]string, error) {
	if s.Box == nil || s.Config.SetupState() != SetupConfigured {
		return nil, nil
	}
	unlock := s.Tokens.lock(call.AgentID)
	defer unlock()
	hs, err := s.load(ctx, call.AgentID)
	if err != nil || len(hs) == 0 {
		return nil, err
	}
	stale := false
	for _, h := range hs {
		stale = stale || s.now().Add(RefreshBefore).After(h.ExpiresAt)
	}
	if stale {
		keep := hs[:0]
		for _, h := range hs {
			if !s.now().Add(RefreshBefore).After(h.ExpiresAt) {
				keep = append(keep, h)
				continue
			}
			conn, err := s.Store.GetConnection(ctx, h.ConnectionID)
			if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
				call.Secrets = append(call.Secrets, h.Token)
				continue // the login was deleted: its repositories go without a token
			}
			if err != nil {
				return nil, err
			}
			n := need{conn: conn, inst: h.Installation}
			for _, r := range h.Repos {
				n.repos = append(n.repos, orchestrator.GitHubRepo{GitHubID: r.ID, Name: r.Name, FullName: r.FullName, URL: r.URL, DefaultBranch: r.DefaultBranch})
			}
			nh, err := s.token(ctx, n)
			if err != nil {
				return nil, err
			}
			call.Secrets = append(call.Secrets, h.Token) // the old one may still be in the output
			keep = append(keep, nh)
		}
		hs = keep
		if err := s.write(ctx, call.AgentID, hs); err != nil {
			return nil, err
		}
	}
	for _, h := range hs {
		call.Secrets = append(call.Secrets, h.Token)
	}
	box, err := s.Sandboxes.Open(ctx, call.AgentID)
	if err != nil {
		return nil, fmt.Errorf("open the agent's sandbox: %w", err)
	}
	return s.GitEnv(box.Places()), nil
}

// GitEnv is the GIT_CONFIG_COUNT environment that makes guilds-git-credential git's only helper
// for the GitHub host: an empty credential.helper first resets every helper configured before.
func (s *Service) GitEnv(p sandbox.Places) []string {
	helper := HelperPath
	if p.Home != sandbox.Home {
		helper = "!guilds-git-credential" // a local sandbox: the helpers are first on PATH
	}
	origin := "https://" + s.Config.GitHost()
	kv := [][2]string{{"credential.helper", ""}, {"credential." + origin + ".helper", helper}, {"credential." + origin + ".useHttpPath", "true"}}
	if s.Config.CAFile != "" {
		kv = append(kv, [2]string{"http." + origin + "/.sslCAInfo", path.Join(p.RunDir, CAFileName)})
	}
	env := []string{fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(kv))}
	for i, p := range kv {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, p[1]))
	}
	return env
}

// cloneScript clones $2 into $1, or fetches when $1 already holds a repository; it prints what it did.
const cloneScript = `if [ -d "$1/.git" ]; then git -C "$1" fetch -q --all --prune && echo fetched; else mkdir -p "$(dirname "$1")" && git clone -q -- "$2" "$1" && echo cloned; fi`

// CloneTimeout bounds one repository's clone or fetch at a run start.
const CloneTimeout = 5 * time.Minute

// Workspace clones (or fetches) each repository into the agent's repos folder through the
// credential helper, one after the other; a failure is reported and does not stop the others.
func (s *Service) Workspace(ctx context.Context, agentID string, repos []Repository) []orchestrator.RepoClone {
	if len(repos) == 0 {
		return nil
	}
	out := make([]orchestrator.RepoClone, 0, len(repos))
	box, err := s.Sandboxes.Open(ctx, agentID)
	if err != nil {
		for _, r := range repos {
			out = append(out, orchestrator.RepoClone{Name: r.Name, URL: r.URL, Done: "failed", Error: "the sandbox could not be opened: " + err.Error()})
		}
		return out
	}
	env := s.GitEnv(box.Places())
	red := s.redactor(agentID)
	for _, r := range repos {
		dir := path.Join(box.Places().Home, "repos", r.Name)
		c := orchestrator.RepoClone{Name: r.Name, URL: r.URL, Path: path.Join(sandbox.Home, "repos", r.Name)}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Argv: []string{"bash", "-c", cloneScript, "clone", dir, r.URL},
			Env: append(slices.Clone(env), "GIT_TERMINAL_PROMPT=0"), Timeout: CloneTimeout})
		switch {
		case err != nil:
			c.Done, c.Error = "failed", red(err.Error())
		case res.ExitCode != 0:
			c.Done, c.Error = "failed", red(res.StderrLine(fmt.Sprintf("git exited with status %d", res.ExitCode)))
		default:
			c.Done = strings.TrimSpace(string(res.Stdout))
		}
		if c.Done == "failed" {
			s.log().Warn("github workspace clone failed", "agent_id", agentID, "repository", r.URL, "err", c.Error)
		}
		out = append(out, c)
	}
	return out
}

// redactor masks the agent's tokens in git's messages.
func (s *Service) redactor(agentID string) func(string) string {
	hs, _ := s.Tokens.get(agentID)
	return func(msg string) string {
		for _, h := range hs {
			if h.Token != "" {
				msg = strings.ReplaceAll(msg, h.Token, "[REDACTED]")
			}
		}
		return msg
	}
}
