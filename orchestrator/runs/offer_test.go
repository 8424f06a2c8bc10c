package runs

import (
	"context"
	"slices"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// TestDefaultOffer walks the spec's "What a run offers" rules over one tool of each kind.
func TestDefaultOffer(t *testing.T) {
	tools := []registry.Tool{
		{Name: "browser_click", Family: orchestrator.FamilyBrowser},
		{Name: "shell", Family: orchestrator.FamilyCode},
		{Name: "script_run", Family: orchestrator.FamilyScripts},
		{Name: "memory_write", Family: orchestrator.FamilyMemory},
		{Name: "schedule_list", Family: orchestrator.FamilySchedules},
		{Name: "secret_store", Family: orchestrator.FamilySecrets},
		{Name: "secret_request", Family: orchestrator.FamilySecrets},
		{Name: "note_get", Family: orchestrator.FamilyNotes},
		{Name: "tavily_search", Family: orchestrator.FamilySearch},
		{Name: "group_post", Family: orchestrator.FamilyGroup},
	}
	def := orchestrator.DefaultAgentConfig()
	all := orchestrator.AgentConfig{Browser: true, Coding: true, Scripting: true, Memory: true}
	none := orchestrator.AgentConfig{}
	withKey := integrations.Set{"TAVILY_API_KEY": true}
	tests := []struct {
		name string
		kind string
		cfg  orchestrator.AgentConfig
		set  integrations.Set
		want []string
	}{
		{"direct, defaults", "direct", def, nil,
			[]string{"script_run", "memory_write", "schedule_list", "secret_store", "secret_request", "note_get", "group_post"}},
		{"direct, everything on, search key", "direct", all, withKey,
			[]string{"browser_click", "shell", "script_run", "memory_write", "schedule_list", "secret_store", "secret_request", "note_get", "tavily_search", "group_post"}},
		{"direct, flags off", "direct", none, nil,
			[]string{"schedule_list", "secret_store", "secret_request", "note_get", "group_post"}},
		{"group", "group", def, nil, []string{"script_run", "memory_write", "secret_store", "note_get", "group_post"}},
		{"schedule", "schedule", def, nil, []string{"script_run", "memory_write", "secret_store", "note_get", "group_post"}},
		{"group chat", "group_chat", def, nil, []string{"script_run", "schedule_list", "secret_store", "note_get", "group_post"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultOffer{Integrations: tt.set}.Offer(context.Background(), OfferInput{Kind: tt.kind, Config: tt.cfg}, tools)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range got {
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Fatalf("offered %v\nwant    %v", names, tt.want)
			}
		})
	}
}

// TestAlwaysOfferedWhateverThePolicy: a policy that offers nothing (bindings all off) still leaves
// every FamilyAlways tool offered, with its shaped schema.
func TestAlwaysOfferedWhateverThePolicy(t *testing.T) {
	reg := registry.New()
	schema := []byte(`{"type":"object","properties":{"kind":{"type":"string"}},"additionalProperties":false}`)
	noop := func(context.Context, *registry.Call) (string, error) { return "", nil }
	reg.MustRegister(registry.Tool{Name: "report_issue", Family: orchestrator.FamilyAlways, Description: "File a problem.", Schema: schema, Handler: noop})
	reg.MustRegister(registry.Tool{Name: "note_get", Family: orchestrator.FamilyNotes, Description: "Read a note.", Schema: schema, Handler: noop})
	nothing := OfferFunc(func(context.Context, OfferInput, []registry.Tool) ([]registry.Tool, error) { return nil, nil })
	s := &Service{Registry: reg, Offer: nothing}
	got, err := s.offer(context.Background(), OfferInput{Kind: orchestrator.KindDirect})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := reg.OfferedSchema("report_issue")
	if len(got) != 1 || got[0].Name != "report_issue" || string(got[0].InputSchema) != string(want) || got[0].Description != "File a problem." {
		t.Fatalf("offered %+v", got)
	}
}
