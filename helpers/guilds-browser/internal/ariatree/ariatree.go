// Package ariatree reads the refs out of a Playwright AI-mode aria snapshot and parses locators.
package ariatree

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Node is the role and accessible name a snapshot line gave a ref.
type Node struct {
	Role string
	Name string
	// Named is false when the snapshot showed no name (none, or one too long to print).
	Named bool
}

var refRE = regexp.MustCompile(`\[ref=((?:f\d+)?e\d+)\]`)

// Refs maps every ref in a snapshot to the role and name its line shows.
func Refs(snapshot string) map[string]Node {
	refs := map[string]Node{}
	for _, line := range strings.Split(snapshot, "\n") {
		key, ok := lineKey(line)
		if !ok {
			continue
		}
		m := refRE.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		n, ok := parseKey(key)
		if !ok {
			continue
		}
		refs[m[1]] = n
	}
	return refs
}

// lineKey returns the node key of a "- key" or "- key: value" line, unquoting a YAML single-quoted key.
func lineKey(line string) (string, bool) {
	s := strings.TrimLeft(line, " ")
	if !strings.HasPrefix(s, "- ") {
		return "", false
	}
	s = s[2:]
	if !strings.HasPrefix(s, "'") {
		return s, true
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), true
	}
	return "", false
}

// parseKey splits `role "name" [attr]…` into role and name; the name is a JSON string.
func parseKey(key string) (Node, bool) {
	role, rest, _ := strings.Cut(key, " ")
	if role == "" || !isRole(role) {
		return Node{}, false
	}
	n := Node{Role: role}
	if strings.HasPrefix(rest, `"`) {
		dec := json.NewDecoder(strings.NewReader(rest))
		var name string
		if err := dec.Decode(&name); err != nil {
			return Node{}, false
		}
		n.Name, n.Named = name, true
	}
	return n, true
}

func isRole(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

// Locator is what click, type and fill were told to act on: a ref, or a role with an optional name.
type Locator struct {
	Ref  string
	Role string
	Name string
	// Named is true when a name was given.
	Named bool
}

var bareRefRE = regexp.MustCompile(`^(?:\[?ref=)?((?:f\d+)?e\d+)\]?$`)

// ParseLocator reads a locator as the model writes it: `e12`, `ref=e12`, `[ref=e12]`,
// `button "Save"`, `button Save` or `button`.
func ParseLocator(s string) (Locator, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Locator{}, fmt.Errorf("locator is empty: pass a ref from browser_snapshot (e.g. e12) or a role and name (e.g. button \"Save\")")
	}
	if m := bareRefRE.FindStringSubmatch(s); m != nil {
		return Locator{Ref: m[1]}, nil
	}
	s = strings.TrimPrefix(s, "- ")
	role, rest, _ := strings.Cut(s, " ")
	if !isRole(role) {
		return Locator{}, fmt.Errorf("locator %q is neither a ref (e12) nor a role and name (button \"Save\")", s)
	}
	l := Locator{Role: strings.ToLower(role)}
	if !IsARIARole(l.Role) {
		return Locator{}, fmt.Errorf("locator %q is neither a ref (e12) nor a role and name (button \"Save\"): %q is not an ARIA role", s, role)
	}
	rest = strings.TrimSpace(rest)
	// A pasted snapshot line may carry attributes and a ref; a ref wins.
	if m := refRE.FindStringSubmatch(rest); m != nil {
		return Locator{Ref: m[1]}, nil
	}
	if rest == "" {
		return l, nil
	}
	if strings.HasPrefix(rest, `"`) {
		var name string
		if err := json.NewDecoder(strings.NewReader(rest)).Decode(&name); err != nil {
			return Locator{}, fmt.Errorf("locator %q: the name is not a closed \"quoted\" string", s)
		}
		l.Name = name
	} else {
		l.Name = rest
	}
	l.Named = true
	return l, nil
}

// String renders the locator as the snapshot would show it.
func (l Locator) String() string {
	if l.Ref != "" {
		return l.Ref
	}
	if !l.Named {
		return l.Role
	}
	b, _ := json.Marshal(l.Name)
	return l.Role + " " + string(b)
}

// IsARIARole reports whether Playwright's getByRole accepts role.
func IsARIARole(role string) bool {
	return role != "" && !strings.Contains(role, " ") && strings.Contains(ariaRoles, " "+role+" ")
}

// ariaRoles are the roles Playwright's getByRole accepts, space-separated (no work at init).
const ariaRoles = " alert alertdialog application article banner blockquote button caption cell checkbox code columnheader combobox complementary contentinfo definition deletion dialog directory document emphasis feed figure form generic grid gridcell group heading img insertion link list listbox listitem log main marquee math meter menu menubar menuitem menuitemcheckbox menuitemradio navigation none note option paragraph presentation progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox separator slider spinbutton status strong subscript superscript switch tab table tablist tabpanel term textbox time timer toolbar tooltip tree treegrid treeitem "
