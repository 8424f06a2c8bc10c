package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// GitHubService is the box's GitHub App: its callback, the installation picker, repositories and
// a guild's repositories (connectors/github implements it).
type GitHubService interface {
	Handles(ctx context.Context, in orchestrator.GitHubCallback) bool
	HandleCallback(ctx context.Context, in orchestrator.GitHubCallback) (orchestrator.GitHubCallbackResult, error)
	// StateConnection is the pending login a GitHub Connect's state finishes; an unknown, used or
	// expired state is ENOTFOUND.
	StateConnection(ctx context.Context, state string) (string, error)
	Picker(ctx context.Context, state string) ([]orchestrator.GitHubInstallation, error)
	Pick(ctx context.Context, state string, installationID int64) (orchestrator.Connection, error)
	Repositories(ctx context.Context, connectionID string) ([]orchestrator.GitHubRepository, error)
	Select(ctx context.Context, connectionID string, picks []orchestrator.GitHubPick) ([]orchestrator.GitHubRepo, error)
	GuildRepositories(ctx context.Context, guildID string) (orchestrator.GuildRepos, error)
	AddGuildRepository(ctx context.Context, guildID string, p orchestrator.GitHubPick) (orchestrator.GuildRepository, error)
	DeleteGuildRepository(ctx context.Context, guildID, id string) error
}

// githubCookie finds the state when GitHub drops it after the authorize hop.
const githubCookie = "guilds_github_state"

// githubRoutes registers the App's routes under /api.
func (s *Server) githubRoutes(api fiber.Router) {
	conn, guild := orchestrator.ObjectConnection, orchestrator.ObjectGuild
	g := s.serving(api, s.GitHub != nil, "the GitHub App")
	// The picker finishes a Connect: write on the pending login its state names.
	g.add("GET", "/mcp/oauth/github-installation", "githubInstallations", write(conn).at(s.githubStateConnection), s.githubPicker)
	g.add("POST", "/mcp/oauth/github-installation", "githubPickInstallation", write(conn).at(s.githubStateConnection), s.githubPick)
	g.add("GET", "/mcp/connections/:id/github/repositories", "githubRepositories", read(conn).within(), s.githubRepositories)
	g.add("PUT", "/mcp/connections/:id/github/selected", "githubSelect", write(conn), s.githubSelect)
	g.add("GET", "/guilds/:id/repositories", "guildRepositories", read(guild), s.guildRepositories)
	g.add("POST", "/guilds/:id/repositories", "addGuildRepository", write(guild), s.addGuildRepository)
	g.add("DELETE", "/guilds/:id/repositories", "deleteGuildRepository", write(guild), s.deleteGuildRepository)
}

// githubCallback answers GET /api/mcp/oauth/callback when the state (or the cookie, without one) is
// a GitHub Connect's; any other callback goes on to the OAuth logins' handler.
func (s *Server) githubCallback(c *fiber.Ctx) error {
	if s.GitHub == nil {
		return c.Next()
	}
	in := orchestrator.GitHubCallback{State: c.Query("state"), Cookie: c.Cookies(githubCookie), Code: c.Query("code"),
		InstallationID: c.Query("installation_id"), SetupAction: c.Query("setup_action")}
	if !s.GitHub.Handles(c.UserContext(), in) {
		return c.Next()
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	res, err := s.GitHub.HandleCallback(c.UserContext(), in)
	if err != nil {
		c.ClearCookie(githubCookie)
		msg := "The GitHub login could not be completed; the details are in the orchestrator log."
		if code := orchestrator.ErrorCode(err); code != orchestrator.EINTERNAL && code != "" {
			msg = orchestrator.ErrorMessage(err)
		} else {
			s.log().Error("GitHub callback failed", "err", err.Error())
		}
		return s.landOrPage(c, fiber.StatusBadRequest, "GitHub login failed", msg)
	}
	if res.Redirect != "" {
		state := in.State
		if state == "" {
			state = in.Cookie
		}
		c.Cookie(&fiber.Cookie{Name: githubCookie, Value: state, Path: oauthCallbackPath, MaxAge: int((10 * time.Minute).Seconds()),
			HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: strings.HasPrefix(s.callbackURL(c), "https://")})
		return c.Redirect(res.Redirect, fiber.StatusFound)
	}
	if len(res.Picker) > 0 {
		if s.GitHubPickerLanding != nil {
			state := in.State
			if state == "" {
				state = in.Cookie
			}
			return c.Redirect(s.GitHubPickerLanding(state), fiber.StatusSeeOther)
		}
		var b strings.Builder
		b.WriteString(res.Page + " Accounts:")
		for _, in := range res.Picker {
			fmt.Fprintf(&b, " %s (installation %d);", in.Account, in.ID)
		}
		return page(c, fiber.StatusOK, "Pick a GitHub account", strings.TrimSuffix(b.String(), ";"))
	}
	if res.Connection != nil {
		c.ClearCookie(githubCookie)
		if s.OAuthLanding != nil {
			return c.Redirect(s.OAuthLanding(*res.Connection), fiber.StatusSeeOther)
		}
		return page(c, fiber.StatusOK, "Connected", res.Page+" ("+res.Connection.ID+"). You can close this tab.")
	}
	return s.landOrPage(c, fiber.StatusOK, "Waiting for approval", res.Page)
}

// githubStateConnection is the pending login a picker request's state (the query's, or the
// body's for a pick) finishes; an unknown state is a 404.
func (s *Server) githubStateConnection(c *fiber.Ctx) (string, error) {
	state := c.Query("state")
	if c.Method() == fiber.MethodPost {
		var req struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal(c.Body(), &req); err != nil {
			return "", orchestrator.Errorf(orchestrator.EINVALID, "the body must be a JSON object {state, installation_id}: %v", err)
		}
		state = req.State
	}
	return s.GitHub.StateConnection(c.UserContext(), state)
}

func (s *Server) githubPicker(c *fiber.Ctx) error {
	g := s.GitHub
	list, err := g.Picker(c.UserContext(), c.Query("state"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"installations": list})
}

func (s *Server) githubPick(c *fiber.Ctx) error {
	g := s.GitHub
	var req struct {
		State          string `json:"state"`
		InstallationID any    `json:"installation_id"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	id, ok := installationID(req.InstallationID)
	if !ok {
		return orchestrator.Errorf(orchestrator.EINVALID, "installation_id must be a number: one of the ids GET /api/mcp/oauth/github-installation?state= lists")
	}
	conn, err := g.Pick(c.UserContext(), req.State, id)
	if err != nil {
		return err
	}
	return c.JSON(conn)
}

// installationID reads a JSON number or a string of digits.
func installationID(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if x > 0 && x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil && n > 0 {
			return n, true
		}
	}
	return 0, false
}

func (s *Server) githubRepositories(c *fiber.Ctx) error {
	g := s.GitHub
	repos, err := g.Repositories(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"repositories": repos})
}

func (s *Server) githubSelect(c *fiber.Ctx) error {
	g := s.GitHub
	var req struct {
		Repositories []orchestrator.GitHubPick `json:"repositories"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Repositories == nil {
		return orchestrator.Errorf(orchestrator.EINVALID, "repositories is required: a list of {name, url, default_branch} the installation reaches ([] clears the selection)")
	}
	sel, err := g.Select(c.UserContext(), c.Params("id"), req.Repositories)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"github_repositories": sel})
}

func (s *Server) guildRepositories(c *fiber.Ctx) error {
	g := s.GitHub
	out, err := g.GuildRepositories(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(out)
}

func (s *Server) addGuildRepository(c *fiber.Ctx) error {
	g := s.GitHub
	var req orchestrator.GitHubPick
	if err := decode(c, &req); err != nil {
		return err
	}
	r, err := g.AddGuildRepository(c.UserContext(), c.Params("id"), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(r)
}

func (s *Server) deleteGuildRepository(c *fiber.Ctx) error {
	g := s.GitHub
	id := c.Query("id")
	if id == "" && len(c.Body()) > 0 {
		var req struct {
			ID string `json:"id"`
		}
		if err := decode(c, &req); err != nil {
			return err
		}
		id = req.ID
	}
	if id == "" {
		return orchestrator.Errorf(orchestrator.EINVALID, "id is required (?id= or {\"id\"}): the repository's id as GET /api/guilds/{id}/repositories lists it")
	}
	if err := g.DeleteGuildRepository(c.UserContext(), c.Params("id"), id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
