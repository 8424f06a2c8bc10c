package orchestrator

import (
	"strings"
	"testing"
)

func TestNULPath(t *testing.T) {
	cases := []struct{ doc, want string }{
		{`{"name":"nul\u0000byte"}`, "name"},
		{`{"name":"ok","arguments":{"command":"echo \u0000"}}`, "arguments.command"},
		{`{"items":[{"text":"a"},{"text":"b"},{"text":"\u0000"}]}`, "items[2].text"},
		{`{"credentials":{"api key":"k\u0000"}}`, `credentials["api key"]`},
		{`{"a":{"x\u0000y":1}}`, `a["x\x00y"]`},
		{`{"a":[1,true,null,["\u0000"]]}`, "a[3][0]"},
		{`"\u0000"`, ""},
		{`{"a":[],"b":{},"c":"\u0000"}`, "c"},
	}
	for _, c := range cases {
		got, ok := NULPath([]byte(c.doc))
		if !ok || got != c.want {
			t.Errorf("NULPath(%s) = %q, %v; want %q", c.doc, got, ok, c.want)
		}
	}
	for _, doc := range []string{`{"a":"\\u0000"}`, `{"a":"x"}`, `{"a":"\u0000`, `[1,2]`, ``} {
		if got, ok := NULPath([]byte(doc)); ok {
			t.Errorf("NULPath(%s) = %q; want none", doc, got)
		}
	}
}

func TestValidNameRefusesControlCharacters(t *testing.T) {
	for _, name := range []string{"nul\x00byte", "line\nbreak", "tab\there", "bell\a", "c1\u0085"} {
		err := ValidName("organisation", name)
		if ErrorCode(err) != EINVALID {
			t.Errorf("ValidName(%q) = %v, want EINVALID", name, err)
		}
	}
	if err := ValidName("organisation", "nul\x00byte"); err == nil || !strings.Contains(err.Error(), "organisation name holds a NUL") {
		t.Errorf("NUL: %v", err)
	}
	for _, name := range []string{"Acme", "Équipe été", "a b"} {
		if err := ValidName("guild", name); err != nil {
			t.Errorf("ValidName(%q) = %v", name, err)
		}
	}
	if err := ValidName("guild", "   "); err == nil || !strings.Contains(err.Error(), "blank") {
		t.Errorf("blank: %v", err)
	}
}
