package webapp

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// secretRoutes registers an agent's secrets: their names (never a value), storing one, deleting
// one, and answering the agent's pending secret requests.
func (a *App) secretRoutes(r fiber.Router) {
	r.Get("/agents/:id/secrets", a.page(a.secrets))
	r.Post("/agents/:id/secrets", a.action(a.storeSecret))
	r.Post("/agents/:id/secrets/:name/delete", a.action(a.deleteSecret))
}

// secretsData is an agent's secrets page.
type secretsData struct {
	Place    place
	Secrets  []orchestrator.SecretInfo
	Requests []orchestrator.SecretRequest // pending
	Form     *form                        // the new secret's (its value never kept)
	Answer   string                       // the request whose answer the API refused
	AnswerE  string                       // and why
}

func (a *App) secrets(v *view) error { return a.showSecrets(v, http.StatusOK, nil, "") }

func (a *App) showSecrets(v *view, status int, f *form, notice string) error {
	p, err := v.placeAgent(v.c.Params("id"))
	if err != nil {
		return err
	}
	var out struct {
		Secrets  []orchestrator.SecretInfo    `json:"secrets"`
		Requests []orchestrator.SecretRequest `json:"requests"`
	}
	if err := v.get(apiPath("agents", p.Agent.ID, "secrets"), &out); err != nil {
		return err
	}
	if f == nil {
		f = &form{Values: map[string]string{}, Errors: map[string]string{}}
	}
	d := secretsData{Place: p, Secrets: out.Secrets, Form: f}
	for _, r := range out.Requests {
		if r.AnsweredAt == nil {
			d.Requests = append(d.Requests, r)
		}
	}
	if f.Values["request"] != "" {
		d.Answer, d.AnswerE = f.Values["name"], f.Errors["value"]+f.Error
	}
	pd := v.at(p, "Secrets", "Secrets · "+p.Agent.Name, d)
	pd.Notice = notice
	switch {
	case v.c.Query("stored") != "":
		pd.Notice = v.c.Query("stored") + " is stored: the agent's shell and scripts get it as an environment variable of that name."
	case v.c.Query("deleted") != "":
		pd.Notice = v.c.Query("deleted") + " is deleted."
	}
	return a.render(v.c, status, "secrets", pd)
}

// storeSecret stores a secret (PUT /api/agents/{id}/secrets/{name}), which also answers the
// agent's pending requests for that name. The value is never shown again, nor kept in a refused
// form.
func (a *App) storeSecret(v *view) error {
	f := newForm(v.c, "name", "value", "request")
	value := f.Values["value"]
	f.forget("value")
	name := f.Values["name"]
	if name == "" {
		f.Errors["name"] = "name is required: letters, digits and _, such as STRIPE_API_KEY"
		return a.showSecrets(v, http.StatusUnprocessableEntity, f, "")
	}
	if err := v.send(fiber.MethodPut, apiPath("agents", v.c.Params("id"), "secrets", name), map[string]string{"value": value}, nil); err != nil {
		return a.refused(v, err, f, func(status int) error { return a.showSecrets(v, status, f, "") })
	}
	return v.seeOther("/agents/" + v.c.Params("id") + "/secrets?" + queryOf("stored", name))
}

// deleteSecret deletes one of the agent's secrets.
func (a *App) deleteSecret(v *view) error {
	name := v.c.Params("name")
	if err := v.send(fiber.MethodDelete, apiPath("agents", v.c.Params("id"), "secrets", name), nil, nil); err != nil {
		return err
	}
	return v.seeOther("/agents/" + v.c.Params("id") + "/secrets?" + queryOf("deleted", name))
}
