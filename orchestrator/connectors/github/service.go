package github

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// Store is the persistence the App needs; postgres.Store implements it.
type Store interface {
	GetServer(ctx context.Context, slug string) (orchestrator.MCPServer, error)
	GetConnection(ctx context.Context, id string) (orchestrator.Connection, error)
	SetConnectionStatus(ctx context.Context, id, status string, now time.Time) (orchestrator.Connection, error)
	GetAgent(ctx context.Context, id string) (orchestrator.Agent, error)
	GetGuild(ctx context.Context, id string) (orchestrator.Guild, error)

	BeginGitHub(ctx context.Context, srv orchestrator.MCPServer, owner orchestrator.Chain, newID string, stateHash []byte, now, expires time.Time) (string, bool, error)
	GitHubState(ctx context.Context, stateHash []byte, now time.Time) (orchestrator.GitHubState, error)
	TakeGitHubState(ctx context.Context, stateHash []byte) (bool, error)
	SetGitHubPicker(ctx context.Context, stateHash, picker []byte) error
	DeletePendingConnection(ctx context.Context, id string) error
	CompleteGitHub(ctx context.Context, connID string, owner orchestrator.Chain, installationID int64, account string, now time.Time) (orchestrator.Connection, error)
	GitHubInstallation(ctx context.Context, connID string) (int64, string, error)
	GitHubLogins(ctx context.Context, orgID string) ([]orchestrator.Connection, error)
	SetGitHubSelection(ctx context.Context, conn orchestrator.Connection, repos []orchestrator.GitHubRepo, newID func() string, now time.Time) error
	GitHubSelection(ctx context.Context, connID string) ([]orchestrator.GitHubRepo, error)
	RenameGitHubRepo(ctx context.Context, connID string, r orchestrator.GitHubRepo) error
	GuildRepositories(ctx context.Context, guildID string) ([]orchestrator.GuildRepository, error)
	AddGuildRepository(ctx context.Context, r orchestrator.GuildRepository) error
	DeleteGuildRepository(ctx context.Context, guildID, id string) error
	ResolveGuildRepository(ctx context.Context, id, connID string, githubID int64) error
	SaveAgentTokens(ctx context.Context, agentID string, toks []orchestrator.GitHubAgentToken, now time.Time) error
	AgentTokens(ctx context.Context, agentID string) ([]orchestrator.GitHubAgentToken, error)
}

// CookieName is the short-lived cookie that finds the state when GitHub drops it after the authorize hop.
const CookieName = "guilds_github_state"

// StateTTL is how long a Connect's state is accepted.
const StateTTL = 30 * time.Minute

// Service is the App's Connect, callback, repository and token work. Set its fields once.
type Service struct {
	Config    Config
	Client    *Client
	Store     Store
	Box       *sealed.Box // GUILDS_SECRET_KEY: seals the stored tokens
	PublicURL string      // PUBLIC_BASE_URL, without a trailing slash: the callback is PublicURL + orchestrator.OAuthCallbackPath
	Log       *slog.Logger
	Now       func() time.Time
	Sandboxes sandbox.Provider // where the tokens go
	Tokens    Tokens           // the sandboxes' tokens in memory
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Callback is the URL GitHub sends the browser back to.
func (s *Service) Callback() string { return s.PublicURL + orchestrator.OAuthCallbackPath }

// SetupState is the access views' oauth_setup_state for GitHub.
func (s *Service) SetupState() string { return s.Config.SetupState() }

// Begun is what Connect answers: the pending connection and where the operator's browser goes.
type Begun struct {
	Connection       orchestrator.Connection `json:"connection"`
	AuthorizationURL string                  `json:"authorization_url"`
	State            string                  `json:"-"` // for the cookie; never logged
}

func hashState(state string) []byte {
	h := sha256.Sum256([]byte(state))
	return h[:]
}

// Begin starts a Connect at owner: a pending connection with its state, and the install URL when
// the organisation has no connected GitHub login yet, else user authorization (to attach an
// existing installation).
func (s *Service) Begin(ctx context.Context, owner orchestrator.Chain) (Begun, error) {
	if err := s.Config.Ready(); err != nil {
		return Begun{}, err
	}
	if s.Box == nil {
		return Begun{}, orchestrator.Errorf(orchestrator.EINVALID, "%s is not set, so GitHub tokens cannot be stored encrypted; set it (openssl rand -base64 32) and restart", sealed.KeyVar)
	}
	if owner.Scope == orchestrator.ScopePlatform || owner.OrgID == "" {
		return Begun{}, orchestrator.Errorf(orchestrator.EFORBIDDEN, "platform-scope Connect is reserved; connect GitHub at an org, guild or agent")
	}
	srv, err := s.Store.GetServer(ctx, "github")
	if err != nil {
		return Begun{}, err
	}
	logins, err := s.Store.GitHubLogins(ctx, owner.OrgID)
	if err != nil {
		return Begun{}, err
	}
	existing := slices.ContainsFunc(logins, func(c orchestrator.Connection) bool { return c.Status == orchestrator.ConnConnected })
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return Begun{}, fmt.Errorf("make a state: %w", err)
	}
	state := base64.RawURLEncoding.EncodeToString(raw)
	now := s.now()
	id, created, err := s.Store.BeginGitHub(ctx, srv, owner, orchestrator.NewID(orchestrator.PrefixConnection), hashState(state), now, now.Add(StateTTL))
	if err != nil {
		return Begun{}, err
	}
	conn, err := s.Store.GetConnection(ctx, id)
	if err != nil {
		return Begun{}, err
	}
	u := s.Config.InstallURL(state)
	if existing {
		u = s.Config.AuthorizeURL(state, s.Callback())
	}
	s.log().Info("github connect begun", "connection_id", id, "scope", owner.Scope, "scope_id", owner.ID(), "created", created, "install", !existing)
	return Begun{Connection: conn, AuthorizationURL: u, State: state}, nil
}

// CallbackInput is what GitHub's redirect carried, and the cookie.
type CallbackInput = orchestrator.GitHubCallback

// CallbackResult is what the browser gets from the callback.
type CallbackResult = orchestrator.GitHubCallbackResult

// Handles reports whether a callback is the GitHub App's: its state (or, without one, the cookie's) is a GitHub state.
func (s *Service) Handles(ctx context.Context, in CallbackInput) bool {
	st := in.State
	if st == "" {
		st = in.Cookie // GitHub dropped the state after the authorize hop
	}
	if st == "" || len(st) > 512 {
		return false
	}
	_, err := s.Store.GitHubState(ctx, hashState(st), s.now())
	return err == nil
}

// refuse deletes a new pending connection and returns the error the browser sees.
func (s *Service) refuse(ctx context.Context, st orchestrator.GitHubState, err error) error {
	if st.Created && st.Status == orchestrator.ConnPending {
		if derr := s.Store.DeletePendingConnection(ctx, st.ConnectionID); derr != nil {
			s.log().Error("delete a refused GitHub connection", "connection_id", st.ConnectionID, "err", derr.Error())
		}
	}
	s.log().Warn("github callback refused", "connection_id", st.ConnectionID, "err", err.Error())
	return err
}

// HandleCallback finishes the install or authorize hop. An installation id in the URL proves
// nothing: it is kept only when the user's token lists it.
func (s *Service) HandleCallback(ctx context.Context, in CallbackInput) (CallbackResult, error) {
	if err := s.Config.Ready(); err != nil {
		return CallbackResult{}, err
	}
	state := in.State
	if state == "" {
		state = in.Cookie
	}
	if state == "" {
		return CallbackResult{}, orchestrator.Errorf(orchestrator.EINVALID, "the GitHub callback carries no state and no login cookie; start again with Connect")
	}
	st, err := s.Store.GitHubState(ctx, hashState(state), s.now())
	if err != nil {
		return CallbackResult{}, orchestrator.Errorf(orchestrator.EINVALID, "the GitHub login state is unknown, already used or expired (a forged or replayed callback); start again with Connect")
	}
	if in.SetupAction == "request" {
		return CallbackResult{Page: "The GitHub App installation is waiting for an organisation owner's approval. Once they approve it, Connect GitHub again; the login stays pending until then."}, nil
	}
	var wanted int64
	if in.InstallationID != "" {
		n, err := strconv.ParseInt(in.InstallationID, 10, 64)
		if err != nil || n <= 0 {
			return CallbackResult{}, s.refuse(ctx, st, orchestrator.Errorf(orchestrator.EINVALID, "installation_id %q is not a number; nothing was connected", clip(in.InstallationID)))
		}
		wanted = n
	}
	if in.Code == "" {
		// The setup redirect: start user authorization with the same state.
		return CallbackResult{Redirect: s.Config.AuthorizeURL(state, s.Callback())}, nil
	}
	userToken, err := s.Client.ExchangeCode(ctx, in.Code, s.Callback())
	if err != nil {
		return CallbackResult{}, s.refuse(ctx, st, orchestrator.Errorf(orchestrator.EINVALID, "GitHub refused the login code: %v; nothing was connected", err))
	}
	list, err := s.Client.UserInstallations(ctx, userToken)
	userToken = "" // the user token is used only for that list
	if err != nil {
		return CallbackResult{}, s.refuse(ctx, st, orchestrator.Errorf(orchestrator.EUPSTREAM, "GitHub did not list the installations of the user who signed in: %v; nothing was connected", err))
	}
	switch {
	case wanted != 0:
		i := slices.IndexFunc(list, func(in Installation) bool { return in.ID == wanted })
		if i < 0 {
			return CallbackResult{}, s.refuse(ctx, st, orchestrator.Errorf(orchestrator.EFORBIDDEN, "installation %d is not one the GitHub user who signed in can reach; nothing was connected", wanted))
		}
		return s.complete(ctx, state, st, list[i])
	case len(list) == 1:
		return s.complete(ctx, state, st, list[0])
	case len(list) == 0:
		return CallbackResult{}, s.refuse(ctx, st, orchestrator.Errorf(orchestrator.EINVALID, "the GitHub user who signed in reaches no installation of the App %s; install it first (%s)", s.Config.Slug, s.Config.WebURL+"/apps/"+s.Config.Slug+"/installations/new"))
	}
	picker, err := json.Marshal(list)
	if err != nil {
		return CallbackResult{}, fmt.Errorf("encode the picker: %w", err)
	}
	if err := s.Store.SetGitHubPicker(ctx, hashState(state), picker); err != nil {
		return CallbackResult{}, err
	}
	return CallbackResult{Picker: list, Page: "Several GitHub accounts have the App installed: pick one (GET /api/mcp/oauth/github-installation?state=…, then POST {state, installation_id})."}, nil
}

// complete takes the state (once) and connects the login to the installation.
func (s *Service) complete(ctx context.Context, state string, st orchestrator.GitHubState, in Installation) (CallbackResult, error) {
	if in.Suspended {
		return CallbackResult{}, s.refuse(ctx, st, orchestrator.Errorf(orchestrator.EINVALID, "the installation on %s is suspended; unsuspend it on GitHub and Connect again", in.Account))
	}
	ok, err := s.Store.TakeGitHubState(ctx, hashState(state))
	if err != nil {
		return CallbackResult{}, err
	}
	if !ok {
		return CallbackResult{}, orchestrator.Errorf(orchestrator.EINVALID, "the GitHub login state was already used (a replayed callback); start again with Connect")
	}
	conn, err := s.Store.CompleteGitHub(ctx, st.ConnectionID, st.Owner, in.ID, in.Account, s.now())
	if err != nil {
		return CallbackResult{}, err
	}
	s.log().Info("github connected", "connection_id", conn.ID, "account", in.Account)
	return CallbackResult{Connection: &conn, Page: "GitHub is connected (" + in.Account + "). Pick its repositories on the GitHub card."}, nil
}

// StateConnection is the pending login a Connect's state finishes (the API decides who may
// finish it); an unknown, used or expired state is ENOTFOUND.
func (s *Service) StateConnection(ctx context.Context, state string) (string, error) {
	if state == "" || len(state) > 512 {
		return "", errUnknownState
	}
	st, err := s.Store.GitHubState(ctx, hashState(state), s.now())
	if err != nil {
		if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
			return "", errUnknownState
		}
		return "", fmt.Errorf("look up the GitHub login state: %w", err)
	}
	return st.ConnectionID, nil
}

// errUnknownState answers a picker request whose state is unknown, used or expired.
var errUnknownState = orchestrator.Errorf(orchestrator.ENOTFOUND, "the GitHub login state is unknown, used or expired; start again with Connect")

// Picker lists the installations a callback left to choose from.
func (s *Service) Picker(ctx context.Context, state string) ([]Installation, error) {
	_, list, err := s.picker(ctx, state)
	return list, err
}

func (s *Service) picker(ctx context.Context, state string) (orchestrator.GitHubState, []Installation, error) {
	st, err := s.Store.GitHubState(ctx, hashState(state), s.now())
	if err != nil {
		return st, nil, orchestrator.Errorf(orchestrator.ENOTFOUND, "the GitHub login state is unknown, used or expired; start again with Connect")
	}
	if len(st.Picker) == 0 {
		return st, nil, orchestrator.Errorf(orchestrator.ECONFLICT, "this GitHub login has no installations to pick from (yet): finish the GitHub sign-in first")
	}
	var list []Installation
	if err := json.Unmarshal(st.Picker, &list); err != nil {
		return st, nil, fmt.Errorf("read the picker: %w", err)
	}
	return st, list, nil
}

// Pick completes a login with one of the picker's installations.
func (s *Service) Pick(ctx context.Context, state string, installationID int64) (orchestrator.Connection, error) {
	st, list, err := s.picker(ctx, state)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	i := slices.IndexFunc(list, func(in Installation) bool { return in.ID == installationID })
	if i < 0 {
		ids := make([]string, len(list))
		for j, in := range list {
			ids[j] = fmt.Sprintf("%d (%s)", in.ID, in.Account)
		}
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "installation %d is not one the signed-in user reaches; pick one of %s", installationID, strings.Join(ids, ", "))
	}
	res, err := s.complete(ctx, state, st, list[i])
	if err != nil {
		return orchestrator.Connection{}, err
	}
	return *res.Connection, nil
}

// login reads a connected GitHub login and its installation.
func (s *Service) login(ctx context.Context, connID string) (orchestrator.Connection, int64, error) {
	if err := s.Config.Ready(); err != nil {
		return orchestrator.Connection{}, 0, err
	}
	if !orchestrator.ValidID(connID) {
		return orchestrator.Connection{}, 0, orchestrator.Errorf(orchestrator.ENOTFOUND, "connection %q not found", connID)
	}
	conn, err := s.Store.GetConnection(ctx, connID)
	if err != nil {
		return conn, 0, err
	}
	if conn.Server != "github" {
		return conn, 0, orchestrator.Errorf(orchestrator.EINVALID, "connection %s is a %s login, not GitHub", conn.ID, conn.Server)
	}
	if conn.Status != orchestrator.ConnConnected {
		return conn, 0, orchestrator.Errorf(orchestrator.ECONFLICT, "GitHub login %s is %s: Connect GitHub again first", conn.ID, conn.Status)
	}
	id, _, err := s.Store.GitHubInstallation(ctx, conn.ID)
	return conn, id, err
}

// upstream turns a GitHub failure on a login into the API's error, marking a removed or
// suspended installation's login disconnected.
func (s *Service) upstream(ctx context.Context, conn orchestrator.Connection, err error) error {
	var ae *APIError
	var se *SetupError
	switch {
	case errors.As(err, &se):
		return orchestrator.Errorf(orchestrator.EINVALID, "%s", se.Msg)
	case errors.As(err, &ae) && ae.Removed():
		if _, derr := s.Store.SetConnectionStatus(ctx, conn.ID, orchestrator.ConnDisconnected, s.now()); derr != nil {
			s.log().Error("mark GitHub login disconnected", "connection_id", conn.ID, "err", derr.Error())
		}
		s.log().Warn("github installation removed or suspended: login disconnected", "connection_id", conn.ID, "status", ae.Status)
		return orchestrator.Errorf(orchestrator.ECONFLICT, "GitHub login %s (%s) is disconnected: its installation was removed or suspended on GitHub (%v); Connect GitHub again", conn.ID, conn.AccountHint, err)
	case errors.As(err, &ae) && ae.RateLimited:
		return orchestrator.Errorf(orchestrator.EUPSTREAM, "GitHub is rate-limiting the App (%v); the login stays connected, try again in a few minutes", err)
	}
	return orchestrator.Errorf(orchestrator.EUPSTREAM, "GitHub did not answer as expected for login %s: %v", conn.ID, err)
}

// Repositories lists what a login's installation reaches.
func (s *Service) Repositories(ctx context.Context, connID string) ([]Repository, error) {
	conn, inst, err := s.login(ctx, connID)
	if err != nil {
		return nil, err
	}
	repos, err := s.Client.Repositories(ctx, inst)
	if err != nil {
		return nil, s.upstream(ctx, conn, err)
	}
	if repos == nil {
		repos = []Repository{}
	}
	return repos, nil
}

// Pick is one repository of a selection as the operator sends it.
type Pick = orchestrator.GitHubPick

// normRepoURL is a repository URL compared loosely: lower case, no .git, no trailing slash.
func normRepoURL(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
	return u
}

// Select stores a login's selection after checking each repository is reachable (422 naming the
// ones that are not), each with GitHub's id; a guild-owned login mirrors it into the guild.
func (s *Service) Select(ctx context.Context, connID string, picks []Pick) ([]orchestrator.GitHubRepo, error) {
	if len(picks) > 100 {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "a login picks at most 100 repositories, got %d", len(picks))
	}
	conn, inst, err := s.login(ctx, connID)
	if err != nil {
		return nil, err
	}
	reach, err := s.Client.Repositories(ctx, inst)
	if err != nil {
		return nil, s.upstream(ctx, conn, err)
	}
	var out []orchestrator.GitHubRepo
	var missing []string
	seen := map[int64]bool{}
	for _, p := range picks {
		want := normRepoURL(p.URL)
		i := slices.IndexFunc(reach, func(r Repository) bool {
			return (want != "" && normRepoURL(r.URL) == want) || (want == "" && strings.EqualFold(r.FullName, p.Name))
		})
		if i < 0 {
			what := p.URL
			if what == "" {
				what = p.Name
			}
			missing = append(missing, what)
			continue
		}
		r := reach[i]
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		branch := p.DefaultBranch
		if branch == "" {
			branch = r.DefaultBranch
		}
		out = append(out, orchestrator.GitHubRepo{GitHubID: r.ID, Name: r.Name, FullName: r.FullName, URL: r.URL, DefaultBranch: branch})
	}
	if len(missing) > 0 {
		return nil, orchestrator.Errorf(orchestrator.EINVALID, "the installation on %s cannot reach %s; GET /api/mcp/connections/%s/github/repositories lists what it reaches (or add them to the App's installation on GitHub); nothing was stored",
			conn.AccountHint, strings.Join(missing, ", "), conn.ID)
	}
	if err := s.Store.SetGitHubSelection(ctx, conn, out, func() string { return orchestrator.NewID("grp") }, s.now()); err != nil {
		return nil, err
	}
	s.log().Info("github selection stored", "connection_id", conn.ID, "repositories", len(out))
	if out == nil {
		out = []orchestrator.GitHubRepo{}
	}
	return out, nil
}

// Selection returns a login's selection (nil when it has none).
func (s *Service) Selection(ctx context.Context, connID string) ([]orchestrator.GitHubRepo, error) {
	return s.Store.GitHubSelection(ctx, connID)
}

// GuildRepos is GET /api/guilds/:id/repositories.
type GuildRepos = orchestrator.GuildRepos

// GuildRepositories lists a guild's repositories and the GitHub logins visible at it.
func (s *Service) GuildRepositories(ctx context.Context, guildID string) (GuildRepos, error) {
	g, err := s.Store.GetGuild(ctx, guildID)
	if err != nil {
		return GuildRepos{}, err
	}
	repos, err := s.Store.GuildRepositories(ctx, g.ID)
	if err != nil {
		return GuildRepos{}, err
	}
	logins, err := s.Store.GitHubLogins(ctx, g.OrgID)
	if err != nil {
		return GuildRepos{}, err
	}
	out := GuildRepos{Repositories: repos, Logins: []orchestrator.Connection{}}
	for _, c := range logins {
		if c.Scope == orchestrator.ScopeOrg || (c.Scope == orchestrator.ScopeGuild && c.GuildID == g.ID) {
			out.Logins = append(out.Logins, c)
		}
	}
	return out, nil
}

// AddGuildRepository adds an extra git URL (https) to a guild.
func (s *Service) AddGuildRepository(ctx context.Context, guildID string, p Pick) (orchestrator.GuildRepository, error) {
	g, err := s.Store.GetGuild(ctx, guildID)
	if err != nil {
		return orchestrator.GuildRepository{}, err
	}
	name, u, err := CheckExtra(p)
	if err != nil {
		return orchestrator.GuildRepository{}, err
	}
	r := orchestrator.GuildRepository{ID: orchestrator.NewID("grp"), GuildID: g.ID, Name: name, URL: u, DefaultBranch: strings.TrimSpace(p.DefaultBranch), CreatedAt: s.now()}
	if err := s.Store.AddGuildRepository(ctx, r); err != nil {
		return orchestrator.GuildRepository{}, err
	}
	return r, nil
}

// DeleteGuildRepository removes an extra git URL of a guild.
func (s *Service) DeleteGuildRepository(ctx context.Context, guildID, id string) error {
	return s.Store.DeleteGuildRepository(ctx, guildID, id)
}

// BeginLogin is Begin as bindings' Connect asks it: the pending connection and the URL.
func (s *Service) BeginLogin(ctx context.Context, owner orchestrator.Chain) (orchestrator.Connection, string, error) {
	b, err := s.Begin(ctx, owner)
	return b.Connection, b.AuthorizationURL, err
}

// CheckExtra checks an extra guild URL as the operator sent it: an https URL with a host and no
// credentials, and its folder name (the URL's last part unless given) of letters, digits, '.',
// '-' or '_', never "." or "..".
func CheckExtra(p Pick) (name, rawURL string, err error) {
	u := strings.TrimSpace(p.URL)
	parsed, perr := url.Parse(u)
	if perr != nil || parsed.Scheme != "https" || parsed.Host == "" || parsed.User != nil || strings.ContainsAny(u, " \t\r\n@?#") || len(u) > 500 {
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "url must be an https git URL without credentials, such as https://github.com/owner/name, got %q", clip(u))
	}
	name = strings.TrimSpace(p.Name)
	if name == "" {
		trimmed := strings.TrimSuffix(strings.TrimSuffix(parsed.Path, "/"), ".git")
		name = trimmed[strings.LastIndexByte(trimmed, '/')+1:]
	}
	if !repoName.MatchString(name) || name == "." || name == ".." {
		return "", "", orchestrator.Errorf(orchestrator.EINVALID, "name %q must be 1 to 100 letters, digits, '.', '-' or '_' (the folder under /home/agent/repos)", clip(name))
	}
	return name, u, nil
}
