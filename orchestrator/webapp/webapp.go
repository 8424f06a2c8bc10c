// Package webapp is the operator app: server-rendered pages (html/template, with htmx for the
// controls that update in place) served by the orchestrator on the API's own listener at /. Every
// read and write goes through the operator API in process, under the browser's own session: the
// API's guard decides who may see and do what, its rules validate every form, and its audit log
// records every change, exactly as for any other client. The app keeps no state of its own but the
// forms it has answered (a double submit does one thing).
package webapp

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
)

// App is the operator app. cmd sets API before the first request.
type App struct {
	API API          // the operator API, in process
	Log *slog.Logger // nil: discarded
	Now func() time.Time

	// onRequest is told each API request a page makes (the benchmark reads it); nil: nothing.
	onRequest func(method, path string)

	once  onceSet  // the forms already answered
	flash flashSet // values shown once (a new token) on the page a form's redirect opens
}

func (a *App) log() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (a *App) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Mount registers the app's pages and assets on r, outside /api. Mount it after the API's routes:
// its last route answers every other path outside /api with the app's own "not found" page.
func (a *App) Mount(r fiber.Router) {
	r.Get(assetPrefix+"*", serveAsset)
	r.Get("/", a.page(a.home))
	r.Get("/signin", a.signInPage)
	r.Post("/signin", a.signIn)
	r.Post("/signout", a.action(a.signOut))
	r.Get("/invitations/accept", a.acceptPage)
	r.Post("/invitations/accept", a.accept)
	a.scopeRoutes(r)
	a.toolRoutes(r)
	a.runRoutes(r)
	a.issueRoutes(r)
	a.secretRoutes(r)
	a.testRoutes(r)
	a.connectRoutes(r)
	a.adminRoutes(r)
	a.collectionRoutes(r)
	a.accountRoutes(r)
	a.approvalRoutes(r)
	r.Use(func(c *fiber.Ctx) error {
		if isAPI(c.Path()) || c.Method() != fiber.MethodGet {
			return c.Next()
		}
		return a.page(func(v *view) error { return notFound("no page " + c.Path()) })(c)
	})
}

// isAPI reports whether a path is the API's (or its health probes'), which the app never answers.
func isAPI(path string) bool {
	return path == "/api" || len(path) > 4 && path[:5] == "/api/" || path == "/healthz" || path == "/readyz" || path == "/metrics"
}

// navItems is the top navigation: Approvals joins it for a signed-in account, Admin for the
// instance admin.
func navItems(d pageData) []link {
	out := []link{{Label: "Organisations", Href: "/orgs"}}
	if d.Me != nil {
		out = append(out, link{Label: "Approvals", Href: "/approvals"})
	}
	if d.Me != nil && d.Me.Admin {
		out = append(out, link{Label: "Admin", Href: "/admin"})
	}
	return out
}
