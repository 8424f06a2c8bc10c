package graph

import (
	"strings"
	"testing"
)

// TestRustJavaText covers the readers of expression and type text that Rust and Java resolution take
// from the source as written.
func TestRustJavaText(t *testing.T) {
	segs := []struct {
		in, want string
		ok       bool
	}{
		{"self.store.get(1)?.save", "self store get()? save", true},
		{"Store::open(\"x\").unwrap()", "Store::open() unwrap()", true},
		{"Vec::<u8>::new()", "Vec::<u8>::new()", true},
		{"Cache { x: 1 }", "Cache{}", true},
		{"a[0].b()", "", false},
		{"vec![1]", "", false},
		{"a + b", "", false},
		{"f(", "", false},
	}
	for _, c := range segs {
		got, ok := rsSegments(c.in)
		var names []string
		for _, s := range got {
			n := s.name
			if s.call {
				n += "()"
			}
			if s.lit {
				n += "{}"
			}
			names = append(names, n+strings.Repeat("?", s.tries))
		}
		if strings.Join(names, " ") != c.want || ok != c.ok {
			t.Errorf("rsSegments(%q) = %q, %v; want %q, %v", c.in, strings.Join(names, " "), ok, c.want, c.ok)
		}
	}
	paths := []struct{ in, want string }{
		{"crate::store::Store", "crate store Store"},
		{"Vec::<u8>", "Vec"},
		{"super::util", "super util"},
		{"", ""},
	}
	for _, c := range paths {
		if got := strings.Join(rsSplitPath(c.in), " "); got != c.want {
			t.Errorf("rsSplitPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	impls := []struct{ in, want string }{
		{"impl Shape for Square", "Shape"},
		{"impl<T: Clone> fmt::Display for Wrapper<T>", "Display"},
		{"impl<'a> Iterator<Item = &'a u8> for Iter<'a>", "Iterator"},
		{"impl Square", ""},
		{"pub fn for_each()", ""},
	}
	for _, c := range impls {
		if got := rsImplTrait(c.in); got != c.want {
			t.Errorf("rsImplTrait(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := rsTrimRef("&mut *&x"); got != "x" {
		t.Errorf("rsTrimRef = %q, want x", got)
	}
	java := []struct{ in, want string }{
		{"Store", "Store"},
		{"java.util.List<Store>", "List"},
		{"@Nullable final Store", "Store"},
		{"Map.Entry<K, V>", "Entry"},
		{"@Bad", ""},
	}
	for _, c := range java {
		if got := jvBaseName(c.in); got != c.want {
			t.Errorf("jvBaseName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzRustJavaText: the readers of Rust and Java text never panic on what a source file may hold, and
// what they return stays inside their input.
func FuzzRustJavaText(f *testing.F) {
	for _, s := range []string{"self.a.b(c)?", "T::<X>::new()", "S { a }", "impl<T> A for B", "&mut x", "a::<", "@A b.C<D>", "((", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if segs, ok := rsSegments(s); ok {
			for _, seg := range segs {
				if seg.name == "" || !strings.Contains(s, seg.name) {
					t.Fatalf("rsSegments(%q) gave a name %q not in it", s, seg.name)
				}
			}
		}
		for _, p := range rsSplitPath(s) {
			if !strings.Contains(s, p) {
				t.Fatalf("rsSplitPath(%q) gave %q not in it", s, p)
			}
		}
		if tr := rsImplTrait(s); !strings.Contains(s, tr) {
			t.Fatalf("rsImplTrait(%q) = %q not in it", s, tr)
		}
		if r := rsTrimRef(s); !strings.Contains(s, r) {
			t.Fatalf("rsTrimRef(%q) = %q not in it", s, r)
		}
		if n := jvBaseName(s); !strings.Contains(s, n) {
			t.Fatalf("jvBaseName(%q) = %q not in it", s, n)
		}
	})
}
