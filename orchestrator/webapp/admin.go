package webapp

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// adminRoutes registers Admin, the instance admin's pages: Platform keys, the Connector catalog,
// Accounts, API tokens and the audit log. Anyone else gets the app's 404, as the API answers them.
func (a *App) adminRoutes(r fiber.Router) {
	r.Get("/admin", a.page(a.admin(func(v *view) error { return v.c.Redirect("/admin/keys", http.StatusSeeOther) })))
	r.Get("/admin/keys", a.page(a.admin(a.platformKeys)))
	r.Get("/admin/accounts", a.page(a.admin(a.accounts)))
	r.Post("/admin/accounts", a.action(a.admin(a.createAccount)))
	r.Post("/admin/invitations", a.action(a.admin(a.invite)))
	r.Post("/admin/accounts/:id", a.action(a.admin(a.updateAccount)))
	r.Post("/admin/roles", a.action(a.admin(a.setRole)))
	r.Get("/admin/tokens", a.page(a.admin(a.adminTokens)))
	r.Get("/admin/audit", a.page(a.admin(a.audit)))
	a.catalogRoutes(r)
}

// admin wraps an Admin page: a session that is not an instance admin's gets the app's 404.
func (a *App) admin(h func(v *view) error) func(v *view) error {
	return func(v *view) error {
		if !v.me.Admin {
			return notFound("no page " + v.c.Path())
		}
		return h(v)
	}
}

// adminTabs are Admin's sections.
var adminTabs = []link{{Label: "Platform keys", Href: "/admin/keys"}, {Label: "Connector catalog", Href: "/admin/catalog"}, {Label: "Accounts", Href: "/admin/accounts"},
	{Label: "API tokens", Href: "/admin/tokens"}, {Label: "Audit log", Href: "/admin/audit"}}

// adminPage is the page data of an Admin section.
func (v *view) adminPage(tab string, d any) pageData {
	return pageData{Title: tab + " · Admin", Heading: "Admin", Me: v.me, Inst: v.inst, Nav: "Admin", Tabs: adminTabs, Tab: tab, D: d}
}

// platformKeys shows every integration of the box with its state and the variables it reads
// (whether each is set, never a value).
func (a *App) platformKeys(v *view) error {
	return a.render(v.c, http.StatusOK, "admin-keys", v.adminPage("Platform keys", v.inst.Integrations))
}

// accountsData is the Accounts page's.
type accountsData struct {
	Accounts []orchestrator.Account
	Orgs     []orchestrator.Org
	Create   *form
	Invite   *form
	Roles    []string
	Link     string // an invitation's link, shown once
}

func (a *App) accounts(v *view) error { return a.showAccounts(v, http.StatusOK, nil, nil, "", "", "") }

func (a *App) showAccounts(v *view, status int, create, invite *form, notice, inviteLink, fail string) error {
	var out struct {
		Accounts []orchestrator.Account `json:"accounts"`
	}
	if err := v.get("/api/accounts", &out); err != nil {
		return err
	}
	var orgs struct {
		Orgs []orchestrator.Org `json:"orgs"`
	}
	if err := v.get("/api/orgs", &orgs); err != nil {
		return err
	}
	if create == nil {
		create = &form{Values: map[string]string{}, Errors: map[string]string{}}
	}
	if invite == nil {
		invite = &form{Values: map[string]string{"role": orchestrator.RoleOperator}, Errors: map[string]string{}}
	}
	d := accountsData{Accounts: out.Accounts, Orgs: orgs.Orgs, Create: create, Invite: invite, Link: inviteLink,
		Roles: []string{orchestrator.RoleViewer, orchestrator.RoleOperator, orchestrator.RoleOwner}}
	pd := v.adminPage("Accounts", d)
	pd.Notice, pd.Error = notice, fail
	if notice == "" && fail == "" {
		pd.Notice = map[string]string{"created": "The account is created: it signs in with the password you gave it.",
			"admin": "The account is an instance admin now.", "member": "The account is an instance admin no more.",
			"deactivated": "The account is deactivated: its sessions and tokens stop working.", "reactivated": "The account is active again.", "role": "The role is saved."}[v.c.Query("done")]
	}
	return a.render(v.c, status, "admin-accounts", pd)
}

// createAccount makes an account that signs in with a password (POST /api/accounts); the password
// is never shown again, nor kept in a refused form.
func (a *App) createAccount(v *view) error {
	f := newForm(v.c, "email", "name", "password", "instance_admin")
	pw := f.Values["password"]
	f.forget("password")
	body := map[string]any{"email": f.Values["email"], "name": f.Values["name"], "instance_admin": f.Values["instance_admin"] == "on"}
	if pw != "" {
		body["password"] = pw
	}
	if err := v.send(fiber.MethodPost, "/api/accounts", body, nil); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showAccounts(v, status, f, nil, "", "", "") })
	}
	return v.seeOther("/admin/accounts?done=created")
}

// invite invites an email to an organisation with a role (POST /api/invitations) and shows the
// invitation's link once, to pass on.
func (a *App) invite(v *view) error {
	f := newForm(v.c, "email", "org", "role")
	var out struct {
		URL string `json:"url"`
	}
	body := map[string]any{"email": f.Values["email"], "scope": map[string]string{"kind": orchestrator.ScopeOrg, "id": f.Values["org"]}, "role": f.Values["role"]}
	if err := v.send(fiber.MethodPost, "/api/invitations", body, &out); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showAccounts(v, status, nil, f, "", "", "") })
	}
	return a.showAccounts(v, http.StatusCreated, nil, nil, f.Values["email"]+" is invited as "+f.Values["role"]+": pass on the link below; it is shown once.", out.URL, "")
}

// updateAccount makes an account an instance admin or not, or deactivates or reactivates it
// (PATCH /api/accounts/{id}).
func (a *App) updateAccount(v *view) error {
	change := v.c.FormValue("change")
	var body map[string]any
	switch change {
	case "admin", "member":
		body = map[string]any{"instance_admin": change == "admin"}
	case "deactivated", "reactivated":
		body = map[string]any{"deactivated": change == "deactivated"}
	default:
		return &apiError{Status: http.StatusUnprocessableEntity, Code: orchestrator.EINVALID, Message: "change must be admin, member, deactivated or reactivated, got " + quote(change)}
	}
	if err := v.send(fiber.MethodPatch, apiPath("accounts", v.c.Params("id")), body, nil); err != nil {
		if s := statusOf(err); s == http.StatusUnprocessableEntity || s == http.StatusConflict || s == http.StatusForbidden {
			return a.showAccounts(v, s, nil, nil, "", "", messageOf(err))
		}
		return err
	}
	return v.seeOther("/admin/accounts?done=" + change)
}

// setRole gives an account a role in an organisation (PUT /api/orgs/{id}/members/{account}), or
// takes its role there away ("none": DELETE).
func (a *App) setRole(v *view) error {
	f := newForm(v.c, "account", "org", "role")
	path := apiPath("orgs", f.Values["org"], "members", f.Values["account"])
	var err error
	if f.Values["role"] == "none" {
		err = v.send(fiber.MethodDelete, path, nil, nil)
	} else {
		err = v.send(fiber.MethodPut, path, map[string]string{"role": f.Values["role"]}, nil)
	}
	if err != nil {
		switch s := statusOf(err); s {
		case http.StatusUnprocessableEntity, http.StatusConflict, http.StatusForbidden, http.StatusNotFound:
			return a.showAccounts(v, s, nil, nil, "", "", messageOf(err))
		}
		return err
	}
	return v.seeOther("/admin/accounts?done=role")
}

// adminTokens lists the admin's own API tokens: the API lists each account's tokens to itself
// only, and each account mints and revokes its own on its account page.
func (a *App) adminTokens(v *view) error {
	var toks struct {
		Tokens []orchestrator.APIToken `json:"tokens"`
	}
	if err := v.get("/api/tokens", &toks); err != nil {
		return err
	}
	return a.render(v.c, http.StatusOK, "admin-tokens", v.adminPage("API tokens", toks.Tokens))
}

// auditData is a page of the audit log.
type auditData struct {
	Entries   []orchestrator.AuditEntry
	Actor, Op string
	Next      string // the next (older) page's link
	First     bool
}

// audit shows the instance's audit log, newest first, 50 a page, filtered by actor and operation.
func (a *App) audit(v *view) error {
	q := url.Values{"limit": {"50"}}
	d := auditData{Actor: v.c.Query("actor"), Op: v.c.Query("operation"), First: v.c.Query("after") == ""}
	for k, val := range map[string]string{"actor": d.Actor, "operation": d.Op, "after": v.c.Query("after")} {
		if val != "" {
			q.Set(k, val)
		}
	}
	var out struct {
		Entries   []orchestrator.AuditEntry `json:"entries"`
		NextAfter *int64                    `json:"next_after"`
	}
	if err := v.get("/api/admin/audit?"+q.Encode(), &out); err != nil {
		return err
	}
	d.Entries = out.Entries
	if out.NextAfter != nil {
		next := url.Values{"after": {strconv.FormatInt(*out.NextAfter, 10)}}
		for k, val := range map[string]string{"actor": d.Actor, "operation": d.Op} {
			if val != "" {
				next.Set(k, val)
			}
		}
		d.Next = "/admin/audit?" + next.Encode()
	}
	return a.render(v.c, http.StatusOK, "admin-audit", v.adminPage("Audit log", d))
}
