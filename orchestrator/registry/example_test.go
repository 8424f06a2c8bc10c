package registry_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/guildsai/guilds/orchestrator/registry"
)

func ExampleShapeSchema() {
	shaped, _ := registry.ShapeSchema(json.RawMessage(`{"type":"object","properties":{
		"query":{"type":"string"},
		"since":{"type":"string","format":"date-time","description":"Oldest change first."}},
		"required":["query"],"additionalProperties":false}`))
	fmt.Println(string(shaped))
	// Output:
	// {"type":"object","properties":{"query":{"type":"string"},"since":{"type":"string","description":"Oldest change first.\nOmit when unused."}},"required":["query"]}
}

func ExampleRegistry_Invoke() {
	r := registry.New()
	r.MustRegister(registry.Tool{
		Name:   "greet",
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`),
		Handler: func(_ context.Context, c *registry.Call) (string, error) {
			var a struct{ Name string }
			err := json.Unmarshal(c.Args, &a)
			return "hello " + a.Name, err
		},
	})
	out, _ := r.Invoke(context.Background(), "greet", &registry.Call{Args: json.RawMessage(`{"name":"Ada"}`)})
	fmt.Println(out)
	_, err := r.Invoke(context.Background(), "greet", &registry.Call{Args: json.RawMessage(`{"nom":"Ada"}`)})
	fmt.Println("ERROR: " + err.Error())
	// Output:
	// hello Ada
	// ERROR: invalid arguments: argument name: required but missing; argument nom: not an argument this tool takes; remove it
}
