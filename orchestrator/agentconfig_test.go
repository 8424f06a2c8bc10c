package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseConfigPatch(t *testing.T) {
	base := DefaultAgentConfig()
	tests := []struct {
		in   string
		want AgentConfig
		err  string
	}{
		{``, base, ""},
		{`null`, base, ""},
		{`{}`, base, ""},
		{`{"coding": true}`, AgentConfig{Coding: true, Scripting: true, Memory: true, MaxScripts: 10, MaxSchedules: 10}, ""},
		{`{"browser": true, "memory": false}`, AgentConfig{Browser: true, Scripting: true, MaxScripts: 10, MaxSchedules: 10}, ""},
		{`{"max_scripts": 25}`, AgentConfig{Scripting: true, Memory: true, MaxScripts: 25, MaxSchedules: 10}, ""},
		{`{"max_scripts": 1, "coding": true}`, AgentConfig{Coding: true, Scripting: true, Memory: true, MaxScripts: 1, MaxSchedules: 10}, ""},
		{`{"max_scripts": 100}`, AgentConfig{Scripting: true, Memory: true, MaxScripts: 100, MaxSchedules: 10}, ""},
		{`{"max_scripts": 0}`, base, "config.max_scripts: must be a whole number from 1 to 100 (how many scripts the agent may keep; default 10), got 0"},
		{`{"max_scripts": -3}`, base, "config.max_scripts: must be a whole number from 1 to 100"},
		{`{"max_scripts": 101}`, base, "got 101"},
		{`{"max_scripts": 2.5}`, base, "got 2.5"},
		{`{"max_scripts": "10"}`, base, `got "10"`},
		{`{"max_scripts": null}`, base, "got null"},
		{`{"max_scripts": 1e999}`, base, "config.max_scripts: must be a whole number"},
		{`{"gpu": true, "coding": "yes"}`, base, "config.coding: must be true or false, got \"yes\"; config.gpu: unknown key; the keys are browser, coding, max_schedules, max_scripts, memory, scripting"},
		{`{"max_schedules": 3}`, AgentConfig{Scripting: true, Memory: true, MaxScripts: 10, MaxSchedules: 3}, ""},
		{`{"max_schedules": 100, "max_scripts": 2}`, AgentConfig{Scripting: true, Memory: true, MaxScripts: 2, MaxSchedules: 100}, ""},
		{`{"max_schedules": 0}`, base, "config.max_schedules: must be a whole number from 1 to 100 (how many schedules the agent may keep; default 10), got 0"},
		{`{"max_schedules": 101}`, base, "config.max_schedules: must be a whole number from 1 to 100"},
		{`{"max_schedules": 1.5}`, base, "got 1.5"},
		{`{"coding": null}`, base, "config.coding: must be true or false"},
		{`[true]`, base, "config must be an object"},
		{`"coding"`, base, "config must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParseConfigPatch(json.RawMessage(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || ErrorCode(err) != EINVALID {
					t.Fatalf("err = %v, want EINVALID containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Apply(base); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestScriptLimit(t *testing.T) {
	if got := (AgentConfig{}).ScriptLimit(); got != DefaultMaxScripts {
		t.Fatalf("a config stored before max_scripts: limit %d, want %d", got, DefaultMaxScripts)
	}
	if got := (AgentConfig{MaxScripts: 3}).ScriptLimit(); got != 3 {
		t.Fatalf("limit %d, want 3", got)
	}
	var c AgentConfig
	if err := json.Unmarshal([]byte(`{"browser":false,"coding":true,"scripting":true,"memory":true}`), &c); err != nil || c.ScriptLimit() != 10 {
		t.Fatalf("old stored config: %+v %v", c, err)
	}
}

func TestScheduleLimit(t *testing.T) {
	if got := (AgentConfig{}).ScheduleLimit(); got != DefaultMaxSchedules {
		t.Fatalf("a config stored before max_schedules: limit %d, want %d", got, DefaultMaxSchedules)
	}
	if got := (AgentConfig{MaxSchedules: 4}).ScheduleLimit(); got != 4 {
		t.Fatalf("limit %d, want 4", got)
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID(PrefixRun)
		if !ValidID(id) || !strings.HasPrefix(id, "run_") || len(id) != 24 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "a b", "../x", strings.Repeat("a", 65), "run_é"} {
		if ValidID(bad) {
			t.Fatalf("ValidID(%q) = true", bad)
		}
	}
}

func TestErrors(t *testing.T) {
	if ErrorCode(nil) != "" || ErrorCode(Errorf(ENOTFOUND, "x")) != ENOTFOUND || ErrorCode(json.Unmarshal([]byte("{"), &struct{}{})) != EINTERNAL {
		t.Fatal("ErrorCode")
	}
	if m := ErrorMessage(json.Unmarshal([]byte("{"), &struct{}{})); strings.Contains(m, "JSON") || !strings.Contains(m, "log") {
		t.Fatalf("internal detail leaks into the message: %q", m)
	}
}

// FuzzParseConfigPatch: any input (it comes from API clients) parses or fails with EINVALID.
func FuzzParseConfigPatch(f *testing.F) {
	for _, s := range []string{`{"coding":true}`, `{"gpu":1}`, `[]`, `null`, `{"browser":false,"memory":true}`, `{"a":`, `{"max_scripts":7}`, `{"max_scripts":1e2}`, `{"max_schedules":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ParseConfigPatch(in)
		if err != nil {
			if ErrorCode(err) != EINVALID {
				t.Fatalf("error without EINVALID: %v", err)
			}
			return
		}
		c := p.Apply(DefaultAgentConfig())
		if c.MaxScripts < 1 || c.MaxScripts > MaxMaxScripts || c.ScriptLimit() != c.MaxScripts {
			t.Fatalf("max_scripts %d out of bounds after %q", c.MaxScripts, in)
		}
		if c.MaxSchedules < 1 || c.MaxSchedules > MaxMaxSchedules || c.ScheduleLimit() != c.MaxSchedules {
			t.Fatalf("max_schedules %d out of bounds after %q", c.MaxSchedules, in)
		}
	})
}
