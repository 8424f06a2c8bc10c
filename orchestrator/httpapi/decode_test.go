package httpapi

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// decodeApp answers 200 when the body decodes as a run request and the error's code otherwise.
func decodeApp() *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post("/", func(c *fiber.Ctx) error {
		var b runBody
		if err := decode(c, &b); err != nil {
			return c.Status(statusOf(orchestrator.ErrorCode(err))).SendString(orchestrator.ErrorCode(err) + ": " + err.Error())
		}
		return c.SendString("ok")
	})
	return app
}

// FuzzDecode: any request body decodes or is refused with EMALFORMED (400) or EINVALID (422),
// never a panic or an internal error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"kind":"direct"}`, `{"kind":1}`, `{"x":1}`, `{"kind":"direct"} {}`, `[]`, ``, `{"tool_call_budget":1e99}`, `{"config":{"a":1}}`, "{\"kind\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	app := decodeApp()
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := app.Test(httptest.NewRequest("POST", "/", bytes.NewReader(body)), -1)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 400 && resp.StatusCode != 422 {
			t.Fatalf("body %q: status %d", body, resp.StatusCode)
		}
	})
}

func TestStatusOf(t *testing.T) {
	for code, want := range map[string]int{
		orchestrator.ENOTFOUND: 404, orchestrator.EFORBIDDEN: 403, orchestrator.EINVALID: 422, orchestrator.EMALFORMED: 400,
		orchestrator.ECONFLICT: 409, orchestrator.EUNAUTHORIZED: 401, orchestrator.EINTERNAL: 500, "ESOMETHINGNEW": 500,
	} {
		if got := statusOf(code); got != want {
			t.Errorf("statusOf(%s) = %d, want %d", code, got, want)
		}
	}
}
