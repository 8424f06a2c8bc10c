package graph

import (
	"strings"
	"testing"
)

// TestTypeText covers the readers of type and expression text that Python and TypeScript resolution
// take from the source as written.
func TestTypeText(t *testing.T) {
	py := []struct{ in, want string }{
		{"Foo", "Foo"},
		{"'Foo'", "Foo"},
		{"Optional[Foo]", "Foo"},
		{`typing.Optional["mod.Foo"]`, "mod.Foo"},
		{"Foo | None", "Foo"},
		{"None | Foo", "Foo"},
		{"Foo | Bar", ""},
		{"list[Foo]", ""},
		{"Callable[[int], str]", ""},
	}
	for _, c := range py {
		if got := pyAnnotation(c.in); got != c.want {
			t.Errorf("pyAnnotation(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	ts := []struct {
		in   string
		want string
		ok   bool
	}{
		{"Subscriber<T>", "Subscriber", true},
		{"Foo | null | undefined", "Foo", true},
		{"rx.Observable<T>", "Observable", true},
		{"string", "", false},
		{"Foo[]", "", false},
		{"(a: A) => void", "", false},
		{"{ a: number }", "", false},
		{"Foo | Bar", "", true},
		{"A & B", "", true},
	}
	for _, c := range ts {
		if got, ok := tsAnnotation(c.in); got != c.want || ok != c.ok {
			t.Errorf("tsAnnotation(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	segs := []struct {
		in   string
		want string
		ok   bool
	}{
		{"self.parser.parse(fp)", "self parser parse()", true},
		{"Parser(*args, **kws)", "Parser()", true},
		{"super()", "super()", true},
		{"a[0]", "", false},
		{"(a or b)", "", false},
		{"f(x).g(y, (z)).h", "f() g() h", true},
		{"f(", "", false},
	}
	for _, c := range segs {
		got, ok := pySegments(c.in)
		var names []string
		for _, s := range got {
			n := s.name
			if s.call {
				n += "()"
			}
			names = append(names, n)
		}
		if strings.Join(names, " ") != c.want || ok != c.ok {
			t.Errorf("pySegments(%q) = %q, %v; want %q, %v", c.in, strings.Join(names, " "), ok, c.want, c.ok)
		}
	}
	if got := tsPlain("x!.a?.b<T, Map<K, V>>(y)"); got != "x.a.b(y)" {
		t.Errorf("tsPlain = %q, want x.a.b(y)", got)
	}
	if got := tsParamTypes("(this: Observable<T>, a: Subscriber<T>, b) => void"); strings.Join(got, "|") != "Subscriber<T>|any" {
		t.Errorf("tsParamTypes = %q", got)
	}
	if got := tsParamIndex("(source, subscriber: Subscriber<T> = x)", "subscriber"); got != 1 {
		t.Errorf("tsParamIndex = %d, want 1", got)
	}
	if got := tsTopLevelAs("(x as any)[k] as Admin"); got != 13 {
		t.Errorf("tsTopLevelAs = %d, want 13", got)
	}
}

// FuzzTypeText: the readers of type and expression text never panic on what a source file may hold,
// and what they return stays inside their input.
func FuzzTypeText(f *testing.F) {
	for _, s := range []string{"self.a.b(c)", "Optional['X']", "Foo<T> | null", "(a: A, b: (c) => D) => E", "x as T", "((a)", "f(x).g", "a<b<c>", "'\"`", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if segs, ok := pySegments(s); ok {
			for _, seg := range segs {
				if seg.name == "" || !strings.Contains(s, seg.name) {
					t.Fatalf("pySegments(%q) gave a name %q not in it", s, seg.name)
				}
			}
		}
		_ = pyAnnotation(s)
		_, _ = tsAnnotation(s)
		if p := tsPlain(s); len(p) > len(s) {
			t.Fatalf("tsPlain(%q) = %q grew", s, p)
		}
		_ = tsParamTypes(s)
		_ = tsParamIndex(s, "a")
		if i := tsTopLevelAs(s); i >= 0 && !strings.HasPrefix(s[i:], " as ") {
			t.Fatalf("tsTopLevelAs(%q) = %d", s, i)
		}
		for i := 0; i < len(s) && i < 8; i++ {
			if j := closing(s, i); j >= len(s) || j >= 0 && j < i {
				t.Fatalf("closing(%q, %d) = %d", s, i, j)
			}
		}
		_ = tsSplitTop(s)
	})
}
