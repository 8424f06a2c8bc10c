package ariatree

import (
	"reflect"
	"testing"
)

const snap = `- generic [active] [ref=e1]:
  - heading "Form" [level=1] [ref=e2]
  - paragraph [ref=e3]: Hello there
  - text: plain
  - textbox "Name" [ref=e7]: ab
  - button "Say \"hi\"" [ref=f1e8]
  - 'button "it''s: here" [ref=e9]'
  - link "link" [ref=e10] [cursor=pointer]:
    - /url: "#x"
  - option "a" [selected]
`

func TestRefs(t *testing.T) {
	got := Refs(snap)
	want := map[string]Node{
		"e1":   {Role: "generic"},
		"e2":   {Role: "heading", Name: "Form", Named: true},
		"e3":   {Role: "paragraph"},
		"e7":   {Role: "textbox", Name: "Name", Named: true},
		"f1e8": {Role: "button", Name: `Say "hi"`, Named: true},
		"e9":   {Role: "button", Name: "it's: here", Named: true},
		"e10":  {Role: "link", Name: "link", Named: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Refs:\n got %#v\nwant %#v", got, want)
	}
}

func TestParseLocator(t *testing.T) {
	tests := []struct {
		in      string
		want    Locator
		wantErr bool
	}{
		{in: "e12", want: Locator{Ref: "e12"}},
		{in: " f2e3 ", want: Locator{Ref: "f2e3"}},
		{in: "ref=e4", want: Locator{Ref: "e4"}},
		{in: "[ref=e4]", want: Locator{Ref: "e4"}},
		{in: `button "Save"`, want: Locator{Role: "button", Name: "Save", Named: true}},
		{in: `Button Save draft`, want: Locator{Role: "button", Name: "Save draft", Named: true}},
		{in: `textbox`, want: Locator{Role: "textbox"}},
		{in: `- button "Save" [ref=e8]`, want: Locator{Ref: "e8"}},
		{in: `button "Sa`, wantErr: true},
		{in: ``, wantErr: true},
		{in: `#id .css`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseLocator(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseLocator(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && got != tt.want {
			t.Errorf("ParseLocator(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func FuzzRefs(f *testing.F) {
	f.Add(snap)
	f.Add("- 'unterminated")
	f.Fuzz(func(t *testing.T, s string) {
		for ref, n := range Refs(s) {
			if ref == "" || n.Role == "" {
				t.Fatalf("empty ref or role from %q", s)
			}
		}
	})
}

func FuzzParseLocator(f *testing.F) {
	for _, s := range []string{"e1", `button "x"`, `link a b`, `[ref=f1e2]`, `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocator(s)
		if err == nil && l.Ref == "" && l.Role == "" {
			t.Fatalf("ParseLocator(%q) gave an empty locator without error", s)
		}
	})
}

func TestIsARIARole(t *testing.T) {
	for role, want := range map[string]bool{"button": true, "textbox": true, "generic": true, "iframe": false, "": false, "button link": false, "butt": false} {
		if got := IsARIARole(role); got != want {
			t.Errorf("IsARIARole(%q) = %v, want %v", role, got, want)
		}
	}
}
