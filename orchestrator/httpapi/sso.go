package httpapi

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
)

// SSOService runs OpenID Connect single sign-on (identity.SSO implements it).
type SSOService interface {
	// Begin checks returnTo, stores the sign-in's state and answers the provider's authorization URL.
	Begin(ctx context.Context, returnTo, redirectURI string) (identity.SSOStart, error)
	// Finish ends a sign-in at its callback and opens the account's session.
	Finish(ctx context.Context, cb identity.SSOCallback, client, userAgent string) (identity.SSOSignedIn, error)
}

// Single sign-on's paths under /api: the start, and the callback the provider sends the browser to
// (register PUBLIC_BASE_URL + /api/sessions/oidc/callback at the provider).
const (
	ssoStartPath    = "/sessions/oidc"
	ssoCallbackPath = "/sessions/oidc/callback"
)

// ssoCookie keeps a sign-in's state in the browser that started it, from the start to the
// callback, so a callback URL taken to another browser signs nobody in there.
const ssoCookie = "guilds_sso"

// ssoRoutes registers single sign-on: both routes are public (the browser carries no credential
// yet; the start's state and its cookie are the callback's key).
func (s *Server) ssoRoutes(api fiber.Router) {
	s.route(api, "GET", ssoStartPath, "startSSO", public(), s.startSSO)
	s.route(api, "GET", ssoCallbackPath, "finishSSO", public(), s.finishSSO)
}

// errNoSSO is the answer of the single sign-on routes on a box that has it off.
var errNoSSO = orchestrator.Errorf(orchestrator.ENOTFOUND, "single sign-on is not configured on this box: an instance admin sets GUILDS_OIDC_ISSUER, GUILDS_OIDC_CLIENT_ID and GUILDS_OIDC_CLIENT_SECRET; meanwhile sign in with POST /api/sessions")

// startSSO answers GET /api/sessions/oidc?return_to=/path: a 302 to the provider, with the
// sign-in's state kept in a cookie until the callback. return_to must be a path on this box.
func (s *Server) startSSO(c *fiber.Ctx) error {
	if s.SSO == nil {
		return errNoSSO
	}
	st, err := s.SSO.Begin(c.UserContext(), c.Query("return_to"), s.publicBase(c)+"/api"+ssoCallbackPath)
	if err != nil {
		return err
	}
	c.Cookie(&fiber.Cookie{Name: ssoCookie, Value: st.State, Path: "/api" + ssoStartPath, Expires: st.ExpiresAt, HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: c.Protocol() == "https" || !loopback(c.Hostname())})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Redirect(st.URL, fiber.StatusFound)
}

// finishSSO answers GET /api/sessions/oidc/callback, reached by the browser the provider sent
// back: on success it sets the session cookie and redirects to the sign-in's return_to; a failure
// is a small HTML page (the browser shows it as it is, with a strict CSP) that names what was wrong
// and never shows the code, a token or the verifier.
func (s *Server) finishSSO(c *fiber.Ctx) error {
	c.Locals(localAudited, true) // a sign-in, or an attempt, changes state though it is a GET
	if s.SSO == nil {
		return page(c, http.StatusNotFound, "Sign-in failed", orchestrator.ErrorMessage(errNoSSO))
	}
	binding := c.Cookies(ssoCookie)
	c.Cookie(&fiber.Cookie{Name: ssoCookie, Value: "", Path: "/api" + ssoStartPath, MaxAge: -1, HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: c.Protocol() == "https" || !loopback(c.Hostname())})
	in, err := s.SSO.Finish(c.UserContext(), identity.SSOCallback{State: c.Query("state"), Code: c.Query("code"), Issuer: c.Query("iss"), Error: c.Query("error"),
		ErrorDescription: c.Query("error_description"), Binding: binding}, c.IP(), c.Get(fiber.HeaderUserAgent))
	if err != nil {
		code := orchestrator.ErrorCode(err)
		msg := orchestrator.ErrorMessage(err)
		if ssoStatus(code) == http.StatusInternalServerError {
			s.log().Error("single sign-on callback failed", "err", err.Error())
			msg = "The sign-in could not be completed; the details are in the orchestrator log."
		}
		return page(c, ssoStatus(code), "Sign-in failed", msg)
	}
	c.Locals(localPrincipal, identity.Principal{Kind: orchestrator.CredentialSession, ID: in.SessionID, Account: &in.Account}) // the audit row's actor
	s.setSession(c, in.Cookie, in.Expires)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	return c.Redirect(in.ReturnTo, fiber.StatusFound)
}

// ssoStatus is the status of a callback's failure page: 400 for a callback that cannot go on (a
// wrong, used or expired state, the provider's error, a refused code), 401 for an ID token that does
// not verify, 403 for a browser or email that may not sign in.
func ssoStatus(code string) int {
	switch code {
	case orchestrator.EINVALID, orchestrator.EMALFORMED, orchestrator.ECONFLICT, orchestrator.ENOTFOUND:
		return http.StatusBadRequest
	}
	return statusOf(code)
}
