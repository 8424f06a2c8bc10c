package httpapi

import (
	"html"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections/lifecycle"
)

// oauthCallbackPath is where authorization servers send the operator's browser back.
const oauthCallbackPath = orchestrator.OAuthCallbackPath

// callbackURL is PUBLIC_BASE_URL plus the callback path when it is set, else the inbound host's.
func (s *Server) callbackURL(c *fiber.Ctx) string {
	base := s.PublicBaseURL
	if base == "" {
		base = c.BaseURL()
	}
	return strings.TrimRight(base, "/") + oauthCallbackPath
}

// oauthCallback answers GET /api/mcp/oauth/callback: the operator's browser, back from the
// authorization server. It carries no bearer token (state is its only key) and answers a small
// HTML page: 200 when the login connected, 400 with the reason otherwise. It never shows a token.
// With OAuthLanding set, a completed login instead sends the browser on to the app's page for it;
// with CallbackLanding set, a failed one to the app's page saying why.
func (s *Server) oauthCallback(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	b := s.Bindings
	if b == nil {
		return page(c, fiber.StatusBadRequest, "Login failed", "This orchestrator offers no connector logins.")
	}
	conn, err := b.OAuthCallback(c.UserContext(), lifecycle.OAuthCallbackQuery{
		State: c.Query("state"), Code: c.Query("code"), Error: c.Query("error"), ErrorDescription: c.Query("error_description"),
	})
	if err != nil {
		msg := "The login could not be completed; the details are in the orchestrator log."
		if code := orchestrator.ErrorCode(err); code != orchestrator.EINTERNAL && code != "" {
			msg = orchestrator.ErrorMessage(err)
		} else {
			s.log().Error("OAuth callback failed", "err", err.Error())
		}
		return s.landOrPage(c, fiber.StatusBadRequest, "Login failed", msg)
	}
	if s.OAuthLanding != nil {
		return c.Redirect(s.OAuthLanding(conn), fiber.StatusSeeOther)
	}
	what := conn.Server
	if conn.AccountHint != "" {
		what += " (" + conn.AccountHint + ")"
	}
	if conn.Status == orchestrator.ConnPending { // Drive: the folder is picked next
		return page(c, fiber.StatusOK, "Signed in", what+" is signed in ("+conn.ID+"); pick its folder in the Tools view (GET /api/mcp/connections/"+conn.ID+"/drive/folders) to finish. You can close this tab.")
	}
	return page(c, fiber.StatusOK, "Connected", what+" is connected ("+conn.ID+"). You can close this tab.")
}

// landOrPage sends the browser to the operator app's page for a callback that connected nothing
// (CallbackLanding), else answers the callback's own small page.
func (s *Server) landOrPage(c *fiber.Ctx, status int, title, msg string) error {
	if s.CallbackLanding != nil {
		return c.Redirect(s.CallbackLanding(status >= fiber.StatusBadRequest, title, msg), fiber.StatusSeeOther)
	}
	return page(c, status, title, msg)
}

// page writes the callback's small HTML answer: escaped text only, never cached, framed or
// followed by a Referer (the callback's URL holds the code and state).
func page(c *fiber.Ctx, status int, title, msg string) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; frame-ancestors 'none'")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Status(status).SendString("<!doctype html><html><head><meta charset=\"utf-8\"><title>" + html.EscapeString(title) +
		"</title></head><body><h1>" + html.EscapeString(title) + "</h1><p>" + html.EscapeString(msg) + "</p></body></html>")
}
