package integrations

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func env(m map[string]string) Set { return SetOf(m) }

func TestAllFollowsTheSpecTable(t *testing.T) {
	var names []string
	for _, in := range All() {
		names = append(names, in.Name)
		if len(in.Required) == 0 || in.Summary == "" {
			t.Errorf("%s: no required variable or no summary", in.Name)
		}
	}
	want := "openrouter deepinfra web-search group-routing github-app google-connectors error-reporting"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
	gh, _ := Lookup("github-app")
	if got := strings.Join(gh.Required, ","); got != "GITHUB_APP_ID,GITHUB_APP_SLUG,GITHUB_APP_PRIVATE_KEY,GITHUB_APP_CLIENT_ID,GITHUB_APP_CLIENT_SECRET" {
		t.Errorf("github-app variables = %s", got)
	}
	all := All()
	all[0].Required[0] = "CHANGED"
	if again := All(); again[0].Required[0] != "OPENROUTER_API_KEY" {
		t.Error("All returns the registry's own slices")
	}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want map[string]State
	}{
		{"nothing set", nil, map[string]State{"openrouter": Off, "web-search": Off, "github-app": Off, "google-connectors": Off, "group-routing": Off}},
		{"single-variable integrations", map[string]string{"OPENROUTER_API_KEY": "sk-or", "TAVILY_API_KEY": "tvly", "SENTRY_DSN": "https://k@o.ingest/1"},
			map[string]State{"openrouter": On, "deepinfra": Off, "web-search": On, "error-reporting": On}},
		{"some of the GitHub App", map[string]string{"GITHUB_APP_ID": "1", "GITHUB_APP_SLUG": "guilds"}, map[string]State{"github-app": Incomplete}},
		{"all of the GitHub App", map[string]string{"GITHUB_APP_ID": "1", "GITHUB_APP_SLUG": "s", "GITHUB_APP_PRIVATE_KEY": "-----BEGIN", "GITHUB_APP_CLIENT_ID": "c", "GITHUB_APP_CLIENT_SECRET": "x"}, map[string]State{"github-app": On}},
		{"one Google variable", map[string]string{"GMAIL_OAUTH_CLIENT_SECRET": "x"}, map[string]State{"google-connectors": Incomplete}},
		{"optional alone does not switch on", map[string]string{"TYPESAFE_MODEL": "m"}, map[string]State{"group-routing": Off}},
		{"required without optional is on", map[string]string{"TYPESAFE_API_KEY": "k"}, map[string]State{"group-routing": On}},
		{"blank counts as unset", map[string]string{"TAVILY_API_KEY": "  ", "GMAIL_OAUTH_CLIENT_ID": "\t", "GMAIL_OAUTH_CLIENT_SECRET": "s"}, map[string]State{"web-search": Off, "google-connectors": Incomplete}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]State{}
			for _, st := range Evaluate(env(tt.env)) {
				got[st.Name] = st.State
				if Enabled(env(tt.env), st.Name) != (st.State == On) {
					t.Errorf("Enabled(%s) disagrees with state %s", st.Name, st.State)
				}
			}
			for name, want := range tt.want {
				if got[name] != want {
					t.Errorf("%s = %s, want %s", name, got[name], want)
				}
			}
		})
	}
}

func TestStatusVariablesNeverHoldValues(t *testing.T) {
	const secret = "tsk-very-secret-value"
	sts := Evaluate(env(map[string]string{"TYPESAFE_API_KEY": secret, "TYPESAFE_MODEL": "gpt-x"}))
	for _, st := range sts {
		if st.Name != "group-routing" {
			continue
		}
		want := []Variable{{Name: "TYPESAFE_API_KEY", Set: true, Required: true}, {Name: "TYPESAFE_MODEL", Set: true}}
		if !reflect.DeepEqual(st.Variables, want) {
			t.Errorf("Variables = %+v, want %+v", st.Variables, want)
		}
	}
	if strings.Contains(fmt.Sprintf("%+v", sts), secret) {
		t.Error("a status carries a variable's value")
	}
}

func TestLookupsAndMissing(t *testing.T) {
	e := env(map[string]string{"GITHUB_APP_ID": "1", "GITHUB_APP_CLIENT_ID": "c"})
	if got := strings.Join(Missing(e, "github-app"), ","); got != "GITHUB_APP_SLUG,GITHUB_APP_PRIVATE_KEY,GITHUB_APP_CLIENT_SECRET" {
		t.Errorf("Missing(github-app) = %s", got)
	}
	if Missing(e, "no-such") != nil || Enabled(e, "no-such") {
		t.Error("an unknown integration must be neither missing anything nor enabled")
	}
	if in, ok := ForTool("tavily_search"); !ok || in.Name != "web-search" || in.Required[0] != "TAVILY_API_KEY" {
		t.Errorf("ForTool(tavily_search) = %+v, %v", in, ok)
	}
	if _, ok := ForTool("note_get"); ok {
		t.Error("note_get needs no integration")
	}
	for slug, want := range map[string]string{"github": "github-app", "gmail": "google-connectors", "drive": "google-connectors"} {
		if in, ok := ForConnector(slug); !ok || in.Name != want {
			t.Errorf("ForConnector(%s) = %s, %v; want %s", slug, in.Name, ok, want)
		}
	}
	for name, providers := range map[string]string{"openrouter": "openrouter", "deepinfra": "deepinfra"} {
		if in, _ := Lookup(name); strings.Join(in.Providers, ",") != providers {
			t.Errorf("%s providers = %v", name, in.Providers)
		}
	}
}
