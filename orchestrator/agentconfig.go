package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// AgentConfig holds an agent's tool flags; a run snapshots it at start.
type AgentConfig struct {
	Browser   bool `json:"browser"`   // the eight browser tools
	Coding    bool `json:"coding"`    // the eleven code tools
	Scripting bool `json:"scripting"` // the five script tools
	Memory    bool `json:"memory"`    // memory_write
}

// DefaultAgentConfig is a new agent's config: browser and coding off, scripting and memory on.
func DefaultAgentConfig() AgentConfig {
	return AgentConfig{Browser: false, Coding: false, Scripting: true, Memory: true}
}

// ConfigPatch is a partial AgentConfig: only the keys that were sent are non-nil.
type ConfigPatch struct {
	Browser   *bool `json:"browser,omitempty"`
	Coding    *bool `json:"coding,omitempty"`
	Scripting *bool `json:"scripting,omitempty"`
	Memory    *bool `json:"memory,omitempty"`
}

// configKeys are the keys a config object may carry, sorted.
var configKeys = []string{"browser", "coding", "memory", "scripting"}

// ParseConfigPatch decodes a partial config object; an unknown key or a non-boolean value is an
// EINVALID error naming every problem.
func ParseConfigPatch(raw json.RawMessage) (ConfigPatch, error) {
	var p ConfigPatch
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return p, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return p, Errorf(EINVALID, "config must be an object of booleans (%s): %v", strings.Join(configKeys, ", "), err)
	}
	var problems []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var dst **bool
		switch k {
		case "browser":
			dst = &p.Browser
		case "coding":
			dst = &p.Coding
		case "scripting":
			dst = &p.Scripting
		case "memory":
			dst = &p.Memory
		default:
			problems = append(problems, fmt.Sprintf("config.%s: unknown key; the keys are %s", k, strings.Join(configKeys, ", ")))
			continue
		}
		var b bool
		if err := json.Unmarshal(m[k], &b); err != nil || string(bytes.TrimSpace(m[k])) == "null" {
			problems = append(problems, fmt.Sprintf("config.%s: must be true or false, got %s", k, clip(string(m[k]), 40)))
			continue
		}
		*dst = &b
	}
	if len(problems) > 0 {
		return ConfigPatch{}, Errorf(EINVALID, "%s", strings.Join(problems, "; "))
	}
	return p, nil
}

// Apply returns c with the patch's keys set.
func (p ConfigPatch) Apply(c AgentConfig) AgentConfig {
	if p.Browser != nil {
		c.Browser = *p.Browser
	}
	if p.Coding != nil {
		c.Coding = *p.Coding
	}
	if p.Scripting != nil {
		c.Scripting = *p.Scripting
	}
	if p.Memory != nil {
		c.Memory = *p.Memory
	}
	return c
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
