package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// AgentConfig holds an agent's tool flags and its script and schedule limits; a run snapshots it
// at start.
type AgentConfig struct {
	Browser      bool `json:"browser"`       // the eight browser tools
	Coding       bool `json:"coding"`        // the eleven code tools
	Scripting    bool `json:"scripting"`     // the five script tools
	Memory       bool `json:"memory"`        // memory_write
	MaxScripts   int  `json:"max_scripts"`   // how many scripts the agent may keep; 0 (a config stored before the key) means DefaultMaxScripts
	MaxSchedules int  `json:"max_schedules"` // how many schedules the agent may keep; 0 (a config stored before the key) means DefaultMaxSchedules
}

// Bounds of an agent's max_scripts: the default, and the most an operator may set (every script
// with parameters is a tool offered to the model on each new run).
const (
	DefaultMaxScripts = 10
	MaxMaxScripts     = 100
)

// Bounds of an agent's max_schedules: the default, and the most an operator may set (every
// schedule starts a run at each of its wake-ups).
const (
	DefaultMaxSchedules = 10
	MaxMaxSchedules     = 100
)

// DefaultAgentConfig is a new agent's config: browser and coding off, scripting and memory on,
// at most DefaultMaxScripts scripts and DefaultMaxSchedules schedules.
func DefaultAgentConfig() AgentConfig {
	return AgentConfig{Browser: false, Coding: false, Scripting: true, Memory: true, MaxScripts: DefaultMaxScripts, MaxSchedules: DefaultMaxSchedules}
}

// ScriptLimit is the agent's max_scripts, DefaultMaxScripts when the config predates the key.
func (c AgentConfig) ScriptLimit() int {
	if c.MaxScripts <= 0 {
		return DefaultMaxScripts
	}
	return c.MaxScripts
}

// ScheduleLimit is the agent's max_schedules, DefaultMaxSchedules when the config predates the key.
func (c AgentConfig) ScheduleLimit() int {
	if c.MaxSchedules <= 0 {
		return DefaultMaxSchedules
	}
	return c.MaxSchedules
}

// ConfigPatch is a partial AgentConfig: only the keys that were sent are non-nil.
type ConfigPatch struct {
	Browser    *bool `json:"browser,omitempty"`
	Coding     *bool `json:"coding,omitempty"`
	Scripting  *bool `json:"scripting,omitempty"`
	Memory     *bool `json:"memory,omitempty"`
	MaxScripts *int  `json:"max_scripts,omitempty"`
	// MaxSchedules is the agent's max_schedules; like max_scripts, an agent's setting, not a run's.
	MaxSchedules *int `json:"max_schedules,omitempty"`
}

// configKeys are the keys a config object may carry, sorted.
var configKeys = []string{"browser", "coding", "max_schedules", "max_scripts", "memory", "scripting"}

// ParseConfigPatch decodes a partial config object; an unknown key, a non-boolean flag, a
// max_scripts that is not an integer from 1 to MaxMaxScripts or a max_schedules that is not one
// from 1 to MaxMaxSchedules is an EINVALID error naming every problem.
func ParseConfigPatch(raw json.RawMessage) (ConfigPatch, error) {
	var p ConfigPatch
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return p, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return p, Errorf(EINVALID, "config must be an object (browser, coding, memory, scripting: booleans; max_scripts: an integer 1 to %d; max_schedules: an integer 1 to %d): %v", MaxMaxScripts, MaxMaxSchedules, err)
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
		case "max_scripts":
			n, err := parseLimit(k, m[k], MaxMaxScripts, DefaultMaxScripts, "scripts")
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			p.MaxScripts = &n
			continue
		case "max_schedules":
			n, err := parseLimit(k, m[k], MaxMaxSchedules, DefaultMaxSchedules, "schedules")
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			p.MaxSchedules = &n
			continue
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
	if p.MaxScripts != nil {
		c.MaxScripts = *p.MaxScripts
	}
	if p.MaxSchedules != nil {
		c.MaxSchedules = *p.MaxSchedules
	}
	return c
}

// parseLimit decodes config.<key>, a limit on how many of what the agent may keep: a whole number
// from 1 to most.
func parseLimit(key string, raw json.RawMessage, most, def int, what string) (int, error) {
	var f float64
	txt := string(bytes.TrimSpace(raw))
	if err := json.Unmarshal(raw, &f); err != nil || txt == "null" || f != math.Trunc(f) || f < 1 || f > float64(most) {
		return 0, fmt.Errorf("config.%s: must be a whole number from 1 to %d (how many %s the agent may keep; default %d), got %s",
			key, most, what, def, clip(txt, 40))
	}
	return int(f), nil
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
