//go:build cgo

package extract

import (
	"context"
	"testing"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
)

// TestQueriesCompile compiles every language's query against its grammar.
func TestQueriesCompile(t *testing.T) {
	for _, l := range langs {
		if _, _, _, err := load(l); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
	}
}

// TestExtractEachLanguage parses a small sample per language and checks its symbols and calls.
func TestExtractEachLanguage(t *testing.T) {
	cases := []struct {
		lang, src string
		syms      []string // Container.Name:kind
		calls     []string // recv.name
	}{
		{"go", "package p\n\n// T is a thing.\ntype T struct{}\n\nfunc (t *T) M() { helper(); t.N() }\n\nfunc helper() {}\n\nconst C = 1\n",
			[]string{"T:struct", "T.M:method", "helper:function", "C:const"}, []string{"helper", "t.N"}},
		{"python", "import os\n\nclass A:\n    def m(self):\n        self.n()\n\ndef f():\n    A().m()\n\nX = 1\n",
			[]string{"A:class", "A.m:method", "f:function", "X:var"}, []string{"self.n", "A", "A().m"}},
		{"javascript", "class A { m() { this.n(); } }\nfunction f() { new A(); g(); }\nconst h = () => f();\n",
			[]string{"A:class", "A.m:method", "f:function", "h:function"}, []string{"this.n", "A", "g", "f"}},
		{"typescript", "interface I { m(): void }\nclass A implements I { m() { f(); } }\nfunction f(): void {}\ntype T = string;\nenum E { X }\n",
			[]string{"I:interface", "I.m:method", "A:class", "A.m:method", "f:function", "T:type", "E:enum"}, []string{"f"}},
		{"tsx", "export function App() { return <div>{render()}</div>; }\nfunction render() { return null; }\n",
			[]string{"App:function", "render:function"}, []string{"render"}},
		{"rust", "struct S;\nimpl S { fn new() -> S { S } fn m(&self) { Self::new(); helper(); } }\nfn helper() {}\ntrait T { fn t(&self); }\n",
			[]string{"S:struct", "S.new:method", "S.m:method", "helper:function", "T:trait", "T.t:method"}, []string{"Self.new", "helper"}},
		{"java", "class A { A() {} void m() { n(); B.s(); new A(); } void n() {} }\ninterface I { void x(); }\n",
			[]string{"A:class", "A.A:method", "A.m:method", "A.n:method", "I:interface", "I.x:method"}, []string{"n", "B.s", "A"}},
		{"c", "struct s { int x; };\nstatic int helper(int a) { return a; }\nint main(void) { return helper(1); }\n#define N 3\n",
			[]string{"s:struct", "helper:function", "main:function", "N:const"}, []string{"helper"}},
		{"cpp", "namespace ns { class A { public: void m(); }; }\nvoid ns::A::m() { helper(); }\nint helper() { return 0; }\n",
			[]string{"ns:module", "ns.A:class", "A.m:method", "A.m:method", "helper:function"}, []string{"helper"}},
		{"ruby", "module M\n  class A\n    def m\n      n(1)\n    end\n  end\nend\nX = 1\n",
			[]string{"M:module", "M.A:class", "A.m:method", "X:const"}, []string{"n"}},
		{"csharp", "namespace N { class A { void M() { N2(); } void N2() {} } }\n",
			[]string{"N:module", "N.A:class", "A.M:method", "A.N2:method"}, []string{"N2"}},
		{"php", "<?php\nfunction f() { g(); }\nclass A { function m() { $this->n(); } }\n",
			[]string{"f:function", "A:class", "A.m:method"}, []string{"g", "$this.n"}},
		{"kotlin", "class A { fun m() { n() } }\nfun top() { A().m() }\n",
			[]string{"A:class", "A.m:method", "top:function"}, []string{"n", "A"}},
		{"bash", "greet() { echo hi; }\nmain() { greet; }\n",
			[]string{"greet:function", "main:function"}, []string{"echo", "greet"}},
	}
	x := New()
	defer x.Close()
	for _, tc := range cases {
		t.Run(tc.lang, func(t *testing.T) {
			f := &graph.File{Path: "x", Lang: tc.lang}
			if err := x.Extract(context.Background(), graph.LangNamed(tc.lang), []byte(tc.src), f); err != nil {
				t.Fatal(err)
			}
			var syms, calls []string
			for _, s := range f.Syms() {
				n := s.Name
				if s.Container != "" {
					n = s.Container + "." + n
				}
				syms = append(syms, n+":"+s.Kind.String())
			}
			for _, r := range f.Refs {
				n := r.Name
				if r.Recv != "" {
					n = r.Recv + "." + n
				}
				calls = append(calls, n)
			}
			for _, want := range tc.syms {
				if !has(syms, want) {
					t.Errorf("symbol %s missing; got %v", want, syms)
				}
			}
			for _, want := range tc.calls {
				if !has(calls, want) {
					t.Errorf("call %s missing; got %v", want, calls)
				}
			}
		})
	}
}

func has(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
