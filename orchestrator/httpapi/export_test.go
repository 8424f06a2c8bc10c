package httpapi

import "github.com/gofiber/fiber/v2"

// NewAccountsApp is an app of the routes the principal guard serves, for their tests until New
// wires the guard: the identity routes, single sign-on and the instance view.
func NewAccountsApp(s *Server) *fiber.App {
	app := fiber.New(s.fiberConfig())
	app.Use(s.recoverAndLog)
	api := app.Group("/api", requestID, s.audit)
	s.identityRoutes(api)
	s.ssoRoutes(api)
	s.route(api, "GET", "/instance", "getInstance", instanceView(), s.instance)
	return app
}
