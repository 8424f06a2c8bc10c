package webapp

import (
	"net/http"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// accountRoutes registers the signed-in account's page: its roles, its API tokens, signing out
// everywhere.
func (a *App) accountRoutes(r fiber.Router) {
	r.Get("/account", a.page(a.account))
	r.Post("/account/tokens", a.action(a.createToken))
	r.Post("/account/tokens/:id/revoke", a.action(a.revokeToken))
}

// accountData is the account page's.
type accountData struct {
	Roles    []roleRow
	Tokens   []orchestrator.APIToken
	NewToken string // a token just made, shown once
	Form     *form
	Roles4   []string
}

// roleRow is one of the account's roles, with the place it is held at.
type roleRow struct {
	Role, Kind, Name, Href string
}

func (a *App) account(v *view) error { return a.showAccount(v, http.StatusOK, nil, "") }

func (a *App) showAccount(v *view, status int, f *form, notice string) error {
	var toks struct {
		Tokens []orchestrator.APIToken `json:"tokens"`
	}
	if err := v.get("/api/tokens", &toks); err != nil {
		return err
	}
	var orgs struct {
		Orgs []orchestrator.Org `json:"orgs"`
	}
	if err := v.get("/api/orgs", &orgs); err != nil {
		return err
	}
	names := map[string]string{}
	for _, o := range orgs.Orgs {
		names[o.ID] = o.Name
	}
	var roles []roleRow
	for _, m := range v.me.Members {
		r := roleRow{Role: m.Role, Kind: scopeName(m.Scope), Name: m.ScopeID}
		switch m.Scope {
		case orchestrator.ScopeOrg:
			r.Href = "/orgs/" + m.ScopeID
			if n, ok := names[m.ScopeID]; ok {
				r.Name = n
			}
		case orchestrator.ScopeGuild:
			r.Href = "/guilds/" + m.ScopeID
			var g orchestrator.Guild
			if v.get(apiPath("guilds", m.ScopeID), &g) == nil {
				r.Name = g.Name + " (" + names[g.OrgID] + ")"
			}
		}
		roles = append(roles, r)
	}
	if f == nil {
		f = &form{Values: map[string]string{}}
	}
	d := accountData{Roles: roles, Tokens: toks.Tokens, Form: f, Roles4: orchestrator.Roles}
	if id := v.c.Query("token"); id != "" {
		d.NewToken = a.flash.take(v.me.AccountID(), id)
	}
	pd := pageData{Title: "Your account", Heading: v.me.Account.Name, Me: v.me, Inst: v.inst, Nav: "Account", D: d, Notice: notice}
	if v.c.Query("revoked") != "" {
		pd.Notice = "The token is revoked: it no longer works."
	}
	return a.render(v.c, status, "account", pd)
}

// createToken mints an API token (POST /api/tokens) and shows its value once.
func (a *App) createToken(v *view) error {
	f := newForm(v.c, "name", "role", "expires")
	body := map[string]any{"name": f.Values["name"]}
	if r := f.Values["role"]; r != "" {
		body["role"] = r
	}
	if e := f.Values["expires"]; e != "" {
		t, err := time.Parse("2006-01-02", e)
		if err != nil {
			f.Errors["expires"] = "expires must be a date such as 2027-01-31, got " + e
			return a.showAccount(v, http.StatusUnprocessableEntity, f, "")
		}
		body["expires_at"] = t.Add(24*time.Hour - time.Second).UTC()
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := v.send(fiber.MethodPost, "/api/tokens", body, &tok); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showAccount(v, status, f, "") })
	}
	return v.seeOther("/account?token=" + a.flash.put(v.me.AccountID(), tok.Token))
}

// revokeToken revokes one of the account's tokens.
func (a *App) revokeToken(v *view) error {
	if err := v.send(fiber.MethodDelete, apiPath("tokens", v.c.Params("id")), nil, nil); err != nil {
		return err
	}
	return v.seeOther("/account?revoked=1")
}

// flashSet keeps a value shown once (a new token) for the page the form's redirect opens: the
// value never travels in a URL and is gone once read, or after flashTTL.
type flashSet struct {
	mu sync.Mutex
	m  map[string]flashEntry
}

type flashEntry struct {
	owner, value string
	at           time.Time
}

const flashTTL = 5 * time.Minute

// put keeps value for owner and answers the key its page reads it by.
func (s *flashSet) put(owner, value string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]flashEntry{}
	}
	now := time.Now()
	for k, e := range s.m {
		if now.Sub(e.at) > flashTTL {
			delete(s.m, k)
		}
	}
	k := randomToken()
	s.m[k] = flashEntry{owner: owner, value: value, at: now}
	return k
}

// take answers the value kept under key for owner, once.
func (s *flashSet) take(owner, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok || e.owner != owner || time.Since(e.at) > flashTTL {
		return ""
	}
	delete(s.m, key)
	return e.value
}
