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
		{`{"coding": true}`, AgentConfig{Coding: true, Scripting: true, Memory: true}, ""},
		{`{"browser": true, "memory": false}`, AgentConfig{Browser: true, Scripting: true}, ""},
		{`{"gpu": true, "coding": "yes"}`, base, "config.coding: must be true or false, got \"yes\"; config.gpu: unknown key; the keys are browser, coding, memory, scripting"},
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
	for _, s := range []string{`{"coding":true}`, `{"gpu":1}`, `[]`, `null`, `{"browser":false,"memory":true}`, `{"a":`} {
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
		_ = p.Apply(DefaultAgentConfig())
	})
}
