package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/identity"
)

// SessionCookie is the cookie a signed-in account's session travels in.
const SessionCookie = "guilds_session"

// CSRFHeader carries a session's CSRF token on every state-changing request made with its cookie.
const CSRFHeader = "X-CSRF-Token"

// Locals keys.
const (
	localPrincipal = "guilds.principal"
	localTarget    = "guilds.target"
	localOp        = "guilds.op"
	localRoute     = "guilds.route"
	localParams    = "guilds.params"
	localRequestID = "guilds.request_id"
	localAudited   = "guilds.audited" // set by a GET that changes state (a sign-in): audited like a write
)

// Auditor takes audit rows behind the requests (identity.Auditor implements it).
type Auditor interface {
	Record(e orchestrator.AuditEntry)
	Flush(ctx context.Context)
}

// rule says who may call a route and what object it acts on.
type rule struct {
	need   identity.Need
	public bool // no credential needed: sign-in, the API document, the OAuth callbacks
	// kind and param name the object the route acts on (a path parameter); "" none.
	kind, param string
	// locate finds the object's id elsewhere in the request (a GitHub Connect's state names its
	// login), instead of param.
	locate func(c *fiber.Ctx) (string, error)
}

// Rules of the routes. read, write and own name the least role over the object the path names;
// the run and agent forms also let the runtime credentials of that run or agent through.
func public() rule      { return rule{public: true} }
func anyone() rule      { return rule{} }
func admin() rule       { return rule{need: identity.Need{Admin: true}} }
func sessionOnly() rule { return rule{need: identity.Need{Session: true}} }
func ownAccount() rule  { return rule{need: identity.Need{Account: true}} } // the caller's own tokens and sessions
func operatorSomewhere() rule { // a Connect form's helper: an operator of some scope
	return rule{need: identity.Need{Role: orchestrator.RoleOperator}}
}
func read(kind string) rule  { return on(kind, orchestrator.RoleViewer) }
func write(kind string) rule { return on(kind, orchestrator.RoleOperator) }
func own(kind string) rule   { return on(kind, orchestrator.RoleOwner) }
func on(kind, role string) rule {
	return rule{need: identity.Need{Role: role}, kind: kind, param: "id"}
}
func (r rule) within() rule { r.need.Within = true; return r }
func (r rule) at(locate func(c *fiber.Ctx) (string, error)) rule {
	r.locate = locate
	return r
}
func (r rule) runtime(which int) rule { r.need.Runtime = which; return r }
func instanceView() rule              { return rule{need: identity.Need{Runtime: identity.RuntimeAny}} }
func anyCaller() rule                 { return rule{need: identity.Need{Runtime: identity.RuntimeAny}} } // any credential; the handler decides
func readRun() rule                   { return read(orchestrator.ObjectRun).runtime(identity.RuntimeRun) }
func writeRun() rule                  { return write(orchestrator.ObjectRun).runtime(identity.RuntimeRun) }
func agentRuntime(role string) rule {
	return on(orchestrator.ObjectAgent, role).runtime(identity.RuntimeAgent)
}
func principalOf(c *fiber.Ctx) identity.Principal {
	p, _ := c.Locals(localPrincipal).(identity.Principal)
	return p
}

// targetOf is the object the route's rule placed, zero when the route names none.
func targetOf(c *fiber.Ctx) identity.Target {
	t, _ := c.Locals(localTarget).(identity.Target)
	return t
}

// route registers one operation under its operationId with the rule that guards it.
func (s *Server) route(r fiber.Router, method, path, op string, ru rule, h fiber.Handler) {
	r.Add(method, path, s.guard(op, ru), h).Name(op)
}

// guard authenticates the request, checks a session's CSRF token, places the object the route
// names and decides with the principal's roles: 401, 403 or 404 before the handler runs.
func (s *Server) guard(op string, ru rule) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Locals(localOp, op)
		c.Locals(localRoute, c.Route().Path)
		c.Locals(localParams, c.AllParams())
		if ru.public {
			return c.Next()
		}
		p, err := s.authenticate(c)
		if err != nil {
			return err
		}
		if p.Kind == orchestrator.CredentialSession && changesState(c.Method()) {
			got := c.Get(CSRFHeader)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(p.CSRF)) != 1 {
				return orchestrator.Errorf(orchestrator.EFORBIDDEN, "this request changes state with a session cookie but without its CSRF token: send %s (answered by POST /api/sessions and GET /api/sessions/current)", CSRFHeader)
			}
		}
		var t identity.Target
		if ru.kind != "" {
			id := c.Params(ru.param)
			if ru.locate != nil {
				if id, err = ru.locate(c); err != nil {
					return err
				}
			}
			if t, err = s.place(c.UserContext(), ru.kind, id); err != nil {
				return err
			}
		}
		if err := p.May(t, ru.need); err != nil {
			return err
		}
		c.Locals(localTarget, t)
		return c.Next()
	}
}

// authenticate resolves the principal once per request.
func (s *Server) authenticate(c *fiber.Ctx) (identity.Principal, error) {
	if p, ok := c.Locals(localPrincipal).(identity.Principal); ok {
		return p, nil
	}
	if s.Identity == nil {
		return identity.Principal{}, orchestrator.Errorf(orchestrator.EINTERNAL, "no authenticator is configured on this server")
	}
	p, err := s.Identity.Authenticate(c.UserContext(), identity.Presented{Authorization: c.Get(fiber.HeaderAuthorization), Cookie: c.Cookies(SessionCookie)})
	if err != nil {
		if orchestrator.ErrorCode(err) == orchestrator.EUNAUTHORIZED {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="guilds"`)
		}
		return p, err
	}
	c.Locals(localPrincipal, p)
	return p, nil
}

// authorize decides for an object a handler found in the request's body or query (a binding's
// scope, a connection's owner): the same answers as a route's rule.
func (s *Server) authorize(c *fiber.Ctx, kind, id string, need identity.Need) (identity.Target, error) {
	p, err := s.authenticate(c)
	if err != nil {
		return identity.Target{}, err
	}
	t, err := s.place(c.UserContext(), kind, id)
	if err != nil {
		return t, err
	}
	if err := p.May(t, need); err != nil {
		return t, err
	}
	c.Locals(localTarget, t)
	return t, nil
}

// authorizeScope decides for a scope a body or query names (a binding's, a login's owner): the
// platform is the instance admin's, an organisation, guild or agent needs the role there.
func (s *Server) authorizeScope(c *fiber.Ctx, scope, id, role string) (identity.Target, error) {
	switch scope {
	case orchestrator.ScopePlatform:
		return s.authorize(c, scope, id, identity.Need{Admin: true})
	case orchestrator.ScopeOrg, orchestrator.ScopeGuild, orchestrator.ScopeAgent:
		return s.authorize(c, scope, id, identity.Need{Role: role})
	}
	return identity.Target{}, orchestrator.Errorf(orchestrator.EINVALID, "scope must be platform, org, guild or agent, got %q", scope)
}

// keep returns the items for which ok holds (a listing filtered to the caller's reach), never nil.
func keep[T any](items []T, ok func(T) bool) []T {
	out := make([]T, 0, len(items))
	for _, it := range items {
		if ok(it) {
			out = append(out, it)
		}
	}
	return out
}

// place places an object; the platform is its own place.
func (s *Server) place(ctx context.Context, kind, id string) (identity.Target, error) {
	if kind == orchestrator.ScopePlatform {
		return identity.Target{Chain: orchestrator.Chain{Scope: orchestrator.ScopePlatform}}, nil
	}
	if !orchestrator.ValidID(id) {
		return identity.Target{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "%s %q not found", kind, id)
	}
	if s.Places == nil {
		return identity.Target{}, orchestrator.Errorf(orchestrator.EINTERNAL, "no placer is configured on this server")
	}
	c, run, err := s.Places.Place(ctx, kind, id)
	if err != nil {
		return identity.Target{}, err
	}
	return identity.Target{Chain: c, RunID: run}, nil
}

// changesState reports whether a method changes state (and so needs a session's CSRF token).
func changesState(method string) bool {
	return method != fiber.MethodGet && method != fiber.MethodHead && method != fiber.MethodOptions
}

// requestID sets each request's id: the client's X-Request-Id when it is a plain token, else a
// new one; answered in the same header.
func requestID(c *fiber.Ctx) error {
	id := c.Get(fiber.HeaderXRequestID)
	if len(id) == 0 || len(id) > 64 || !orchestrator.ValidID(id) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		const hexdigits = "0123456789abcdef"
		out := make([]byte, 0, 24)
		for _, x := range b {
			out = append(out, hexdigits[x>>4], hexdigits[x&15])
		}
		id = string(out)
	}
	c.Locals(localRequestID, id)
	c.Set(fiber.HeaderXRequestID, id)
	return c.Next()
}

// audit writes one row for every request that changes state and every refused one that carried a
// credential, after it is answered. It never fails or holds up the request.
func (s *Server) audit(c *fiber.Ctx) error {
	err := c.Next()
	if s.Audit == nil || !strings.HasPrefix(c.Path(), "/api/") && c.Path() != "/mcp" && c.Locals(localOp) == nil { // the API, the MCP front door and every guarded route (/metrics)
		return err
	}
	status := c.Response().StatusCode()
	if err != nil {
		if fe, ok := err.(*fiber.Error); ok {
			status = fe.Code
		} else {
			status = statusOf(orchestrator.ErrorCode(err))
		}
	}
	carried := c.Get(fiber.HeaderAuthorization) != "" || c.Cookies(SessionCookie) != ""
	refused := status == fiber.StatusUnauthorized || status == fiber.StatusForbidden || status == fiber.StatusNotFound
	if !changesState(c.Method()) && !(refused && carried) && c.Locals(localAudited) == nil {
		return err
	}
	e := orchestrator.AuditEntry{At: s.now(), ActorKind: "anonymous", Method: c.Method(), Status: status, ClientAddr: c.IP()}
	e.RequestID, _ = c.Locals(localRequestID).(string)
	e.Operation, _ = c.Locals(localOp).(string)
	e.Path, _ = c.Locals(localRoute).(string)
	if e.Path == "" {
		e.Path = "unrouted"
	}
	if e.Operation == "" {
		e.Operation = "unknown"
	}
	e.Targets, _ = c.Locals(localParams).(map[string]string)
	if p, ok := c.Locals(localPrincipal).(identity.Principal); ok {
		e.ActorKind, e.ActorID, e.AccountID = p.Kind, p.ID, p.AccountID()
	}
	if t, ok := c.Locals(localTarget).(identity.Target); ok {
		e.OrgID, e.GuildID = t.OrgID, t.GuildID
	}
	s.Audit.Record(e)
	return err
}

// loopback reports whether a host (with or without its port) is a loopback name or address.
func loopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// setSession sets the session cookie: HttpOnly, SameSite=Lax, Secure off loopback.
func (s *Server) setSession(c *fiber.Ctx, value string, expires time.Time) {
	c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: value, Path: "/", Expires: expires, HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: c.Protocol() == "https" || !loopback(c.Hostname())})
}

// clearSession removes the session cookie.
func (s *Server) clearSession(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: "", Path: "/", Expires: time.Unix(0, 0), MaxAge: -1, HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode,
		Secure: c.Protocol() == "https" || !loopback(c.Hostname())})
}

// routes is a group of routes served by one service: on a server built without it, every route of
// the group answers 500 naming what is missing (after the guard, so reach is still decided).
type routes struct {
	s       *Server
	r       fiber.Router
	missing string // "" when the service is there
}

// serving starts a group of routes that need the service named what.
func (s *Server) serving(r fiber.Router, present bool, what string) routes {
	g := routes{s: s, r: r}
	if !present {
		g.missing = what
	}
	return g
}

// add registers one route of the group.
func (g routes) add(method, path, op string, ru rule, h fiber.Handler) {
	if g.missing != "" { // the caller is still authenticated; nothing is placed, since nothing will run
		what := g.missing
		ru.kind = ""
		h = func(*fiber.Ctx) error {
			return orchestrator.Errorf(orchestrator.EINTERNAL, "%s is not configured on this server", what)
		}
	}
	g.s.route(g.r, method, path, op, ru, h)
}
