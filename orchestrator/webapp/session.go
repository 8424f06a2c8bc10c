package webapp

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
)

// Names of the CSRF token's field and header, and of a form's once token.
const (
	csrfField  = "csrf_token"
	csrfHeader = "X-CSRF-Token"
	onceField  = "once"
)

// signInCookie holds the sign-in form's own token (SameSite=Strict): a sign-in posted from another
// site carries no such cookie and is refused, so no page can sign a browser into someone else's
// account.
const signInCookie = "guilds_signin"

// session is the signed-in account behind a browser request, as GET /api/sessions/current
// answers it: the same principal the API's guard decides with.
type session struct {
	identity.Principal
}

// currentSession is GET /api/sessions/current's answer.
type currentSession struct {
	Credential    string                    `json:"credential"`
	InstanceAdmin bool                      `json:"instance_admin"`
	Account       *orchestrator.Account     `json:"account"`
	Memberships   []orchestrator.Membership `json:"memberships"`
	CSRF          string                    `json:"csrf_token"`
}

// session reads the request's session; without one (or with an expired one) the error is the
// API's 401.
func (a *App) session(v *view) (*session, error) {
	var cur currentSession
	if err := v.get("/api/sessions/current", &cur); err != nil {
		return nil, err
	}
	if cur.Credential != orchestrator.CredentialSession || cur.Account == nil {
		return nil, &apiError{Status: http.StatusUnauthorized, Code: orchestrator.EUNAUTHORIZED, Message: "sign in"}
	}
	return &session{Principal: identity.Principal{Kind: cur.Credential, Account: cur.Account, Admin: cur.InstanceAdmin,
		Members: cur.Memberships, CSRF: cur.CSRF}}, nil
}

// can reports whether the session holds at least role at the chain's scope: the rule the API's
// guard applies to the routes the control would call, so that a control it would refuse is not
// shown. The API still decides every request.
func (s *session) can(ch orchestrator.Chain, role string) bool {
	return s != nil && s.May(identity.Target{Chain: ch}, identity.Need{Role: role}) == nil
}

// canWithin is can with a role anywhere under the scope counting (an organisation's shared
// objects read by its guilds' members).
func (s *session) canWithin(ch orchestrator.Chain, role string) bool {
	return s != nil && s.May(identity.Target{Chain: ch}, identity.Need{Role: role, Within: true}) == nil
}

// signInData is the sign-in page's.
type signInData struct {
	Email, Next, Token string
	SSO                bool
}

// signInPage shows the sign-in form (and the single sign-on button when it is on).
func (a *App) signInPage(c *fiber.Ctx) error {
	secure(c)
	next := c.Query("next")
	if !localPath(next) {
		next = "/"
	}
	return a.showSignIn(c, http.StatusOK, signInData{Next: next}, "")
}

// showSignIn renders the sign-in form with a new form token.
func (a *App) showSignIn(c *fiber.Ctx, status int, d signInData, msg string) error {
	d.SSO = a.ssoOn(c)
	d.Token = c.Cookies(signInCookie) // one token per browser: two tabs (or a favicon's redirect) keep each other's forms good
	if len(d.Token) != 32 {
		d.Token = randomToken()
	}
	c.Cookie(&fiber.Cookie{Name: signInCookie, Value: d.Token, Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode,
		Secure: c.Protocol() == "https", Expires: a.now().Add(time.Hour)})
	return a.render(c, status, "signin", pageData{Title: "Sign in", Error: msg, D: d})
}

// ssoOn asks whether single sign-on is on: its start route answers 404 when it is off, and 422
// for a return_to that is not a path when it is on (it starts nothing then). The question carries
// no cookie: it is nobody's request.
func (a *App) ssoOn(c *fiber.Ctx) bool {
	err := a.do(c, request{method: fiber.MethodGet, path: "/api/sessions/oidc?return_to=probe", anonymous: true}, nil)
	return err != nil && statusOf(err) != http.StatusNotFound
}

// signIn signs in with the API's POST /api/sessions and goes on to the page asked for.
func (a *App) signIn(c *fiber.Ctx) error {
	secure(c)
	d := signInData{Email: c.FormValue("email"), Next: c.FormValue("next")}
	if !localPath(d.Next) {
		d.Next = "/"
	}
	got, want := c.FormValue("form_token"), c.Cookies(signInCookie)
	if got == "" || want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return a.showSignIn(c, http.StatusForbidden, d, "This sign-in form has expired or came from another site; sign in again.")
	}
	err := a.do(c, request{method: fiber.MethodPost, path: "/api/sessions", body: map[string]string{"email": d.Email, "password": c.FormValue("password")}}, nil)
	if err != nil {
		status := statusOf(err)
		if status >= 500 {
			a.log().Error("sign-in failed", "err", err.Error())
		}
		return a.showSignIn(c, status, d, messageOf(err))
	}
	c.ClearCookie(signInCookie)
	return c.Redirect(d.Next, http.StatusSeeOther)
}

// signOut ends the session (DELETE /api/sessions/current, or every session of the account with
// everywhere=1) and goes to sign-in.
func (a *App) signOut(v *view) error {
	path := "/api/sessions/current"
	if v.c.FormValue("everywhere") == "1" {
		path = "/api/sessions"
	}
	if err := v.send(fiber.MethodDelete, path, nil, nil); err != nil {
		return err
	}
	return v.seeOther("/signin")
}

// acceptData is the invitation page's.
type acceptData struct {
	Token, Name string
	Errors      map[string]string
}

// acceptPage shows the form that accepts an invitation: a name and a password for a new account.
func (a *App) acceptPage(c *fiber.Ctx) error {
	secure(c)
	return a.render(c, http.StatusOK, "accept", pageData{Title: "Accept the invitation", D: acceptData{Token: c.Query("token")}})
}

// accept accepts an invitation (POST /api/invitations/accept), which signs the new account in.
func (a *App) accept(c *fiber.Ctx) error {
	secure(c)
	d := acceptData{Token: c.FormValue("token"), Name: c.FormValue("name")}
	err := a.do(c, request{method: fiber.MethodPost, path: "/api/invitations/accept",
		body: map[string]string{"token": d.Token, "name": d.Name, "password": c.FormValue("password")}}, nil)
	if err != nil {
		f := newForm(c, "name", "password", "token")
		f.fail(err)
		return a.render(c, statusOf(err), "accept", pageData{Title: "Accept the invitation", Error: f.Error, D: acceptData{Token: d.Token, Name: d.Name, Errors: f.Errors}})
	}
	return c.Redirect("/", http.StatusSeeOther)
}

// randomToken is 16 random bytes in hex.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// signInURL is the sign-in page that comes back to path.
func signInURL(path string) string { return "/signin?next=" + url.QueryEscape(path) }
