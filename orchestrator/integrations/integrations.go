// Package integrations is the box's integrations registry: what each one reads from the
// environment and what it switches on. Modules ask it, never the environment.
package integrations

import "strings"

// Integration is something the whole box can do once the operator sets its variables.
type Integration struct {
	Name       string   // openrouter, deepinfra, web-search, group-routing, github-app, google-connectors, error-reporting
	Required   []string // variables it requires
	Optional   []string // variables that tune it (e.g. TYPESAFE_MODEL)
	Providers  []string // model providers it switches on
	Tools      []string // native tools it switches on (e.g. tavily_search)
	Connectors []string // connector slugs it switches on (e.g. github, gmail, drive)
	Summary    string   // the "Switches on" column of the spec's table
}

// State is whether an integration is usable.
type State string

// The three states: every required variable set, none set, or some set.
const (
	On         State = "on"
	Off        State = "off"
	Incomplete State = "incomplete"
)

// Status is one integration as the box currently has it.
type Status struct {
	Integration
	State     State
	Variables []Variable // every required and optional variable, whether it is set, never its value
}

// Variable says whether one variable is set; it never carries the value.
type Variable struct {
	Name     string
	Set      bool
	Required bool
}

var table = []Integration{
	{Name: "openrouter", Required: []string{"OPENROUTER_API_KEY"}, Providers: []string{"openrouter"},
		Summary: "OpenRouter models for an organisation with no OpenRouter key of its own"},
	{Name: "deepinfra", Required: []string{"DEEPINFRA_API_KEY"}, Providers: []string{"deepinfra"},
		Summary: "DeepInfra models for an organisation with no DeepInfra key of its own"},
	{Name: "web-search", Required: []string{"TAVILY_API_KEY"}, Tools: []string{"tavily_search"},
		Summary: "tavily_search"},
	{Name: "group-routing", Required: []string{"TYPESAFE_API_KEY"}, Optional: []string{"TYPESAFE_MODEL"},
		Summary: "Recipient and history selection in group chat"},
	{Name: "github-app", Required: []string{"GITHUB_APP_ID", "GITHUB_APP_SLUG", "GITHUB_APP_PRIVATE_KEY", "GITHUB_APP_CLIENT_ID", "GITHUB_APP_CLIENT_SECRET"},
		Connectors: []string{"github"}, Summary: "The GitHub connector and a guild's repositories"},
	{Name: "google-connectors", Required: []string{"GMAIL_OAUTH_CLIENT_ID", "GMAIL_OAUTH_CLIENT_SECRET"},
		Connectors: []string{"gmail", "drive"}, Summary: "The Gmail and Drive connectors"},
	{Name: "error-reporting", Required: []string{"SENTRY_DSN"}, Summary: "Sentry"},
}

// All returns the spec's table, in its order. The result is a copy.
func All() []Integration {
	out := make([]Integration, len(table))
	for i, in := range table {
		out[i] = in.clone()
	}
	return out
}

// Lookup returns the integration named name.
func Lookup(name string) (Integration, bool) {
	for _, in := range table {
		if in.Name == name {
			return in.clone(), true
		}
	}
	return Integration{}, false
}

func (in Integration) clone() Integration {
	c := in
	for _, p := range []*[]string{&c.Required, &c.Optional, &c.Providers, &c.Tools, &c.Connectors} {
		*p = append([]string(nil), (*p)...)
	}
	return c
}

// Set is which of the integrations' variables the box has set: config reads it once, from the
// environment and .env, and a variable holding only blanks ("KEY= " in .env) is not set.
type Set map[string]bool

// SetOf is the Set of the variables among values that hold more than blanks.
func SetOf(values map[string]string) Set {
	set := Set{}
	for k, v := range values {
		if strings.TrimSpace(v) != "" {
			set[k] = true
		}
	}
	return set
}

// Variables lists every variable the integrations read, required and optional, in table order.
func Variables() []string {
	var out []string
	for _, in := range table {
		out = append(out, in.Required...)
		out = append(out, in.Optional...)
	}
	return out
}

// Evaluate returns every integration's status, in table order: on when every required variable is
// set, off when none is, incomplete when some are. Optional variables never change the state.
func Evaluate(set Set) []Status {
	out := make([]Status, 0, len(table))
	for _, in := range table {
		out = append(out, evaluate(set, in))
	}
	return out
}

func evaluate(set Set, in Integration) Status {
	st := Status{Integration: in.clone()}
	n := 0
	for _, v := range in.Required {
		ok := set[v]
		if ok {
			n++
		}
		st.Variables = append(st.Variables, Variable{Name: v, Set: ok, Required: true})
	}
	for _, v := range in.Optional {
		st.Variables = append(st.Variables, Variable{Name: v, Set: set[v]})
	}
	switch {
	case n == len(in.Required):
		st.State = On
	case n == 0:
		st.State = Off
	default:
		st.State = Incomplete
	}
	return st
}

// Enabled reports whether the integration named name is on. An unknown name is never enabled.
func Enabled(set Set, name string) bool {
	in, ok := Lookup(name)
	return ok && evaluate(set, in).State == On
}

// Missing lists the required variables of the named integration that are not set: what the
// operator must add to switch it on. An unknown name has none.
func Missing(set Set, name string) []string {
	in, ok := Lookup(name)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range in.Required {
		if !set[v] {
			out = append(out, v)
		}
	}
	return out
}

// ForTool returns the integration that switches on the native tool, if one does (tavily_search → web-search).
func ForTool(tool string) (Integration, bool) {
	for _, in := range table {
		for _, t := range in.Tools {
			if t == tool {
				return in.clone(), true
			}
		}
	}
	return Integration{}, false
}

// ForConnector returns the integration that switches on the connector slug, if one does.
func ForConnector(slug string) (Integration, bool) {
	for _, in := range table {
		for _, c := range in.Connectors {
			if c == slug {
				return in.clone(), true
			}
		}
	}
	return Integration{}, false
}
