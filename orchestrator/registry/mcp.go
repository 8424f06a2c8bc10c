package registry

import (
	"bytes"
	"encoding/json"
)

// DropOptionalEmptyStrings applies the MCP-side rule: before an MCP tool call, a top-level argument
// whose value is "" is dropped only when that key is optional in the tool's input schema (declared
// under properties and not listed in required). A required empty string is forwarded, and so is an
// empty string under a key the schema does not declare, or any key when the schema cannot be read:
// when in doubt the call goes out as the model sent it. Returns a new map; args is not modified.
func DropOptionalEmptyStrings(schema json.RawMessage, args map[string]any) map[string]any {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []json.RawMessage          `json:"required"`
	}
	dec := json.NewDecoder(bytes.NewReader(schema))
	readable := dec.Decode(&s) == nil
	required := map[string]bool{}
	for _, r := range s.Required {
		var name string
		if json.Unmarshal(r, &name) == nil {
			required[name] = true
		}
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		if str, ok := v.(string); ok && str == "" && readable && !required[k] {
			if _, declared := s.Properties[k]; declared {
				continue
			}
		}
		out[k] = v
	}
	return out
}
