package httpapi

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
)

// IdentityService authenticates requests and keeps accounts, sessions, tokens and keys
// (identity.Service implements it).
type IdentityService interface {
	Authenticate(ctx context.Context, pr identity.Presented) (identity.Principal, error)
	SignIn(ctx context.Context, email, password, client, userAgent string) (identity.SignedIn, error)
	OpenSession(ctx context.Context, a orchestrator.Account, client, userAgent string) (identity.SignedIn, error)
	SignOut(ctx context.Context, p identity.Principal, everywhere bool) error
	CreateAccount(ctx context.Context, req identity.NewAccount) (orchestrator.Account, error)
	UpdateAccount(ctx context.Context, id string, ch identity.AccountChange) (orchestrator.Account, error)
	SetMember(ctx context.Context, at orchestrator.Chain, accountID, role string) (orchestrator.Membership, error)
	RemoveMember(ctx context.Context, at orchestrator.Chain, accountID string) error
	MintToken(ctx context.Context, p identity.Principal, req identity.TokenRequest) (identity.NewTokenAnswer, error)
	RevokeToken(ctx context.Context, accountID, id string) error
	MintAgentKey(ctx context.Context, p identity.Principal, agent orchestrator.Chain, name string, expires *time.Time) (identity.NewKeyAnswer, error)
	RevokeAgentKey(ctx context.Context, agentID, id string) error
	Invite(ctx context.Context, p identity.Principal, email string, at orchestrator.Chain, role string) (orchestrator.Invitation, string, error)
	Accept(ctx context.Context, req identity.Accepting) (orchestrator.Account, error)
}

// AccountReader reads what the identity routes list (postgres.Store implements it).
type AccountReader interface {
	GetAccount(ctx context.Context, id string) (orchestrator.Account, error)
	ListAccounts(ctx context.Context) ([]orchestrator.Account, error)
	Memberships(ctx context.Context, accountID string) ([]orchestrator.Membership, error)
	ListMembers(ctx context.Context, scope, scopeID string) ([]orchestrator.Member, error)
	ListTokens(ctx context.Context, accountID string) ([]orchestrator.APIToken, error)
	ListAgentKeys(ctx context.Context, agentID string) ([]orchestrator.AgentKey, error)
	ListAudit(ctx context.Context, q orchestrator.AuditQuery) ([]orchestrator.AuditEntry, error)
}

// identityRoutes registers accounts, members, invitations, sessions, tokens, agent keys and the
// audit log.
func (s *Server) identityRoutes(api fiber.Router) {
	s.route(api, "POST", "/accounts", "createAccount", admin(), s.createAccount)
	s.route(api, "GET", "/accounts", "listAccounts", admin(), s.listAccounts)
	s.route(api, "PATCH", "/accounts/:id", "updateAccount", admin(), s.updateAccount)
	s.route(api, "DELETE", "/accounts/:id", "deactivateAccount", admin(), s.deactivateAccount)
	for _, sc := range []struct{ path, kind, name string }{{"/orgs", orchestrator.ObjectOrg, "Org"}, {"/guilds", orchestrator.ObjectGuild, "Guild"}} {
		s.route(api, "GET", sc.path+"/:id/members", "list"+sc.name+"Members", read(sc.kind), s.listMembers)
		s.route(api, "PUT", sc.path+"/:id/members/:account_id", "put"+sc.name+"Member", own(sc.kind), s.putMember)
		s.route(api, "DELETE", sc.path+"/:id/members/:account_id", "delete"+sc.name+"Member", own(sc.kind), s.deleteMember)
	}
	s.route(api, "POST", "/invitations", "createInvitation", anyone(), s.invite)
	s.route(api, "POST", "/invitations/accept", "acceptInvitation", public(), s.acceptInvitation)
	s.route(api, "POST", "/sessions", "signIn", public(), s.signIn)
	s.route(api, "GET", "/sessions/current", "getCurrentSession", instanceView(), s.currentSession) // a runtime credential learns its agent and run
	s.route(api, "DELETE", "/sessions/current", "signOut", sessionOnly(), s.signOut(false))
	s.route(api, "DELETE", "/sessions", "signOutEverywhere", ownAccount(), s.signOut(true))
	s.route(api, "POST", "/tokens", "createToken", sessionOnly(), s.createToken)
	s.route(api, "GET", "/tokens", "listTokens", anyone(), s.listTokens)
	s.route(api, "DELETE", "/tokens/:id", "revokeToken", ownAccount(), s.revokeToken)
	s.route(api, "POST", "/agents/:id/keys", "createAgentKey", write(orchestrator.ObjectAgent), s.createAgentKey)
	s.route(api, "GET", "/agents/:id/keys", "listAgentKeys", write(orchestrator.ObjectAgent), s.listAgentKeys)
	s.route(api, "DELETE", "/agents/:id/keys/:key_id", "revokeAgentKey", write(orchestrator.ObjectAgent), s.revokeAgentKey)
	s.route(api, "GET", "/orgs/:id/audit", "listOrgAudit", own(orchestrator.ObjectOrg), s.listAudit(false))
	s.route(api, "GET", "/admin/audit", "listAudit", admin(), s.listAudit(true))
}

// accountBody is the body of POST and PATCH /api/accounts.
type accountBody struct {
	Email         *string `json:"email"`
	Name          *string `json:"name"`
	Password      *string `json:"password"`
	InstanceAdmin *bool   `json:"instance_admin"`
	Deactivated   *bool   `json:"deactivated"`
}

func (s *Server) createAccount(c *fiber.Ctx) error {
	var b accountBody
	if err := decode(c, &b); err != nil {
		return err
	}
	if b.Email == nil || b.Name == nil {
		return orchestrator.Errorf(orchestrator.EINVALID, "email and name are required")
	}
	if b.Deactivated != nil {
		return orchestrator.Errorf(orchestrator.EINVALID, "deactivated cannot be set on a new account")
	}
	req := identity.NewAccount{Email: *b.Email, Name: *b.Name, InstanceAdmin: b.InstanceAdmin != nil && *b.InstanceAdmin}
	if b.Password != nil {
		req.Password = *b.Password
		if req.Password == "" {
			return orchestrator.Errorf(orchestrator.EINVALID, "password must not be empty; leave it out for an account that signs in by single sign-on")
		}
	}
	a, err := s.Identity.CreateAccount(c.UserContext(), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(a)
}

func (s *Server) listAccounts(c *fiber.Ctx) error {
	r := s.Accounts
	as, err := r.ListAccounts(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"accounts": as})
}

func (s *Server) updateAccount(c *fiber.Ctx) error {
	var b accountBody
	if err := decode(c, &b); err != nil {
		return err
	}
	ch := identity.AccountChange{Name: b.Name, Email: b.Email, Password: b.Password, InstanceAdmin: b.InstanceAdmin}
	if b.Deactivated != nil {
		ch.Deactivate, ch.Reactivate = *b.Deactivated, !*b.Deactivated
	}
	a, err := s.Identity.UpdateAccount(c.UserContext(), c.Params("id"), ch)
	if err != nil {
		return err
	}
	return c.JSON(a)
}

func (s *Server) deactivateAccount(c *fiber.Ctx) error {
	a, err := s.Identity.UpdateAccount(c.UserContext(), c.Params("id"), identity.AccountChange{Deactivate: true})
	if err != nil {
		return err
	}
	return c.JSON(a)
}

func (s *Server) listMembers(c *fiber.Ctx) error {
	r := s.Accounts
	t := targetOf(c)
	ms, err := r.ListMembers(c.UserContext(), t.Scope, t.ID())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"members": ms})
}

// roleBody is the body of PUT …/members/:account_id.
type roleBody struct {
	Role string `json:"role"`
}

func (s *Server) putMember(c *fiber.Ctx) error {
	var b roleBody
	if err := decode(c, &b); err != nil {
		return err
	}
	m, err := s.Identity.SetMember(c.UserContext(), targetOf(c).Chain, c.Params("account_id"), b.Role)
	if err != nil {
		return err
	}
	return c.JSON(m)
}

func (s *Server) deleteMember(c *fiber.Ctx) error {
	if err := s.Identity.RemoveMember(c.UserContext(), targetOf(c).Chain, c.Params("account_id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// scopeBody names an organisation or a guild in a body.
type scopeBody struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// placeScope places a body's scope, which must be an organisation or a guild.
func (s *Server) placeScope(c *fiber.Ctx, sc *scopeBody, need identity.Need) (identity.Target, error) {
	if sc == nil || (sc.Kind != orchestrator.ScopeOrg && sc.Kind != orchestrator.ScopeGuild) {
		return identity.Target{}, orchestrator.Errorf(orchestrator.EINVALID, `scope must be {"kind": "org" or "guild", "id": …}`)
	}
	return s.authorize(c, sc.Kind, sc.ID, need)
}

// invitationBody is the body of POST /api/invitations.
type invitationBody struct {
	Email string     `json:"email"`
	Scope *scopeBody `json:"scope"`
	Role  string     `json:"role"`
}

func (s *Server) invite(c *fiber.Ctx) error {
	var b invitationBody
	if err := decode(c, &b); err != nil {
		return err
	}
	t, err := s.placeScope(c, b.Scope, identity.Need{Role: orchestrator.RoleOwner})
	if err != nil {
		return err
	}
	inv, token, err := s.Identity.Invite(c.UserContext(), principalOf(c), b.Email, t.Chain, b.Role)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"invitation": inv, "url": s.publicBase(c) + "/invitations/accept?token=" + token})
}

// acceptBody is the body of POST /api/invitations/accept.
type acceptBody struct {
	Token    string `json:"token"`
	Name     string `json:"name"`
	Password string `json:"password"`
}

func (s *Server) acceptInvitation(c *fiber.Ctx) error {
	var b acceptBody
	if err := decode(c, &b); err != nil {
		return err
	}
	a, err := s.Identity.Accept(c.UserContext(), identity.Accepting{Token: b.Token, Name: b.Name, Password: b.Password})
	if err != nil {
		return err
	}
	in, err := s.Identity.OpenSession(c.UserContext(), a, c.IP(), c.Get(fiber.HeaderUserAgent))
	if err != nil {
		return err
	}
	return s.signedIn(c, in, fiber.StatusCreated)
}

// signInBody is the body of POST /api/sessions.
type signInBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func (s *Server) signIn(c *fiber.Ctx) error {
	var b signInBody
	if err := decode(c, &b); err != nil {
		return err
	}
	in, err := s.Identity.SignIn(c.UserContext(), b.Email, b.Password, c.IP(), c.Get(fiber.HeaderUserAgent))
	if err != nil {
		if de, ok := err.(*orchestrator.Error); ok && de.Code == orchestrator.ELIMIT {
			if secs, ok := de.Fields["retry_after_seconds"].(int); ok {
				c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
			}
		}
		return err
	}
	return s.signedIn(c, in, fiber.StatusCreated)
}

// signedIn sets the cookie of a new session and answers the account with its memberships and the
// session's CSRF token.
func (s *Server) signedIn(c *fiber.Ctx, in identity.SignedIn, status int) error {
	c.Locals(localPrincipal, identity.Principal{Kind: orchestrator.CredentialSession, ID: in.SessionID, Account: &in.Account}) // the audit row's actor
	s.setSession(c, in.Cookie, in.Expires)
	ms, err := s.memberships(c.UserContext(), in.Account.ID)
	if err != nil {
		return err
	}
	return c.Status(status).JSON(fiber.Map{"account": in.Account, "memberships": ms, "csrf_token": in.CSRF, "expires_at": in.Expires})
}

// memberships reads an account's memberships.
func (s *Server) memberships(ctx context.Context, accountID string) ([]orchestrator.Membership, error) {
	r := s.Accounts
	return r.Memberships(ctx, accountID)
}

// currentSession answers who is calling: the account with its memberships, the credential's kind,
// and a session's CSRF token.
func (s *Server) currentSession(c *fiber.Ctx) error {
	p := principalOf(c)
	body := fiber.Map{"credential": p.Kind, "instance_admin": p.Admin, "account": nil, "memberships": p.Members, "csrf_token": nil}
	if p.Members == nil {
		body["memberships"] = []orchestrator.Membership{}
	}
	if p.Account != nil {
		body["account"] = p.Account
	}
	if p.Kind == orchestrator.CredentialSession {
		body["csrf_token"] = p.CSRF
	}
	if p.Runtime() {
		body["agent_id"], body["run_id"] = p.Chain.AgentID, p.RunID
	}
	return c.JSON(body)
}

// signOut ends the request's session, or every session of its account.
func (s *Server) signOut(everywhere bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p := principalOf(c)
		if p.Account == nil {
			return orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s is not a signed-in account", p.Label())
		}
		if err := s.Identity.SignOut(c.UserContext(), p, everywhere); err != nil {
			return err
		}
		if p.Kind == orchestrator.CredentialSession {
			s.clearSession(c)
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
}

// tokenBody is the body of POST /api/tokens.
type tokenBody struct {
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Scope     *scopeBody `json:"scope"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func (s *Server) createToken(c *fiber.Ctx) error {
	var b tokenBody
	if err := decode(c, &b); err != nil {
		return err
	}
	req := identity.TokenRequest{Name: b.Name, Role: b.Role, ExpiresAt: b.ExpiresAt}
	if b.Scope != nil {
		if b.Scope.Kind != orchestrator.ScopeOrg && b.Scope.Kind != orchestrator.ScopeGuild {
			return orchestrator.Errorf(orchestrator.EINVALID, `scope must be {"kind": "org" or "guild", "id": …}`)
		}
		t, err := s.place(c.UserContext(), b.Scope.Kind, b.Scope.ID)
		if err != nil {
			return err
		}
		req.Scope, req.ScopeAt = &identity.TokenScope{Kind: b.Scope.Kind, ID: b.Scope.ID}, t.Chain
	}
	tok, err := s.Identity.MintToken(c.UserContext(), principalOf(c), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(tok)
}

// accountOf is the account behind the request, or a 403 for a principal that has none.
func accountOf(c *fiber.Ctx) (*orchestrator.Account, error) {
	p := principalOf(c)
	if p.Account == nil {
		return nil, orchestrator.Errorf(orchestrator.EFORBIDDEN, "%s has no account: API tokens belong to signed-in accounts", p.Label())
	}
	return p.Account, nil
}

func (s *Server) listTokens(c *fiber.Ctx) error {
	a, err := accountOf(c)
	if err != nil {
		return err
	}
	r := s.Accounts
	ts, err := r.ListTokens(c.UserContext(), a.ID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"tokens": ts})
}

func (s *Server) revokeToken(c *fiber.Ctx) error {
	a, err := accountOf(c)
	if err != nil {
		return err
	}
	if err := s.Identity.RevokeToken(c.UserContext(), a.ID, c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// keyBody is the body of POST /api/agents/:id/keys.
type keyBody struct {
	Name      string     `json:"name"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func (s *Server) createAgentKey(c *fiber.Ctx) error {
	var b keyBody
	if err := decode(c, &b); err != nil {
		return err
	}
	k, err := s.Identity.MintAgentKey(c.UserContext(), principalOf(c), targetOf(c).Chain, b.Name, b.ExpiresAt)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(k)
}

func (s *Server) listAgentKeys(c *fiber.Ctx) error {
	r := s.Accounts
	ks, err := r.ListAgentKeys(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"keys": ks})
}

func (s *Server) revokeAgentKey(c *fiber.Ctx) error {
	if err := s.Identity.RevokeAgentKey(c.UserContext(), c.Params("id"), c.Params("key_id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// Paging of the audit log.
const (
	defaultAuditPage = 50
	maxAuditPage     = 500
)

// listAudit answers a page of the audit log, newest first: an organisation's, or every row for the
// instance admin. limit, after (an id), actor, operation and since (RFC 3339) filter it.
func (s *Server) listAudit(all bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r := s.Accounts
		q := orchestrator.AuditQuery{Limit: defaultAuditPage, Actor: c.Query("actor"), Operation: c.Query("operation")}
		if !all {
			q.OrgID = c.Params("id")
		}
		if v := c.Query("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxAuditPage {
				return orchestrator.Errorf(orchestrator.EINVALID, "limit must be 1 to %d, got %q", maxAuditPage, v)
			}
			q.Limit = n
		}
		if v := c.Query("after"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return orchestrator.Errorf(orchestrator.EINVALID, "after must be the id of an audit row (a positive whole number), got %q", v)
			}
			q.After = n
		}
		if v := c.Query("since"); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return orchestrator.Errorf(orchestrator.EINVALID, "since must be an RFC 3339 time such as 2026-12-01T00:00:00Z, got %q", v)
			}
			q.Since = &t
		}
		if s.Audit != nil {
			fctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
			s.Audit.Flush(fctx) // the rows of requests answered before this one
			cancel()
		}
		rows, err := r.ListAudit(c.UserContext(), q)
		if err != nil {
			return err
		}
		body := fiber.Map{"entries": rows, "next_after": nil}
		if len(rows) == q.Limit {
			body["next_after"] = rows[len(rows)-1].ID
		}
		return c.JSON(body)
	}
}

// publicBase is the address the box is reached at: PUBLIC_BASE_URL, else the request's own.
func (s *Server) publicBase(c *fiber.Ctx) string {
	if s.PublicBaseURL != "" {
		return strings.TrimRight(s.PublicBaseURL, "/")
	}
	return c.Protocol() + "://" + c.Hostname()
}
