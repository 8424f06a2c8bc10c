package orchestrator_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layering of the orchestrator module is the table in README.md's Layout section: each package
// stands on one floor (floor) and imports only what its floor's rule allows (arrow), and the outside
// libraries that belong to one floor are imported only there (library). `go list` reports a
// package's imports without its _test.go files, so tests are exempt. A package on no floor fails
// too, so a new directory gets its place in the rule before it lands.

// modulePath is the import path of the orchestrator module.
const modulePath = "github.com/guildsai/guilds/orchestrator"

// rulesMayImport lists the arrows allowed between the rules packages, which otherwise import the
// root only. None today.
var rulesMayImport = map[string][]string{}

// listed is a package as `go list -json` reports it.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	Module     *struct{ Path string }
}

// goList lists the packages of the module in dir.
func goList(t *testing.T, dir string) []listed {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the layering test reads `go list`: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json ./... in %s: %v\n%s", dir, err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("read go list output of %s: %v", dir, err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list found no package in %s", dir)
	}
	return pkgs
}

// rel is a module import path relative to the module ("" for the root); ok is false outside it.
func rel(path string) (string, bool) {
	if path == modulePath {
		return "", true
	}
	r, ok := strings.CutPrefix(path, modulePath+"/")
	return r, ok
}

// top is the first element of a relative path.
func top(r string) string {
	first, _, _ := strings.Cut(r, "/")
	return first
}

// floor names the floor of a package of the module; "" when it has none.
func floor(r string) string {
	switch r {
	case "":
		return "root"
	case "tools":
		return "tool floor"
	case "connectors", "connectors/adapters":
		return "connector floor"
	}
	if unit(r) != "" {
		return "unit"
	}
	switch top(r) {
	case "registry", "pipeline", "sealed", "integrations":
		return "rules"
	case "config":
		return "config"
	case "runs", "bindings", "catalog", "events", "approvals":
		return "core"
	case "identity":
		return "identity"
	case "connections":
		return "connections"
	case "sandbox":
		return "sandbox"
	case "postgres":
		return "store"
	case "httpapi":
		return "httpapi"
	case "webapp":
		return "webapp"
	case "cmd":
		return "cmd"
	}
	return ""
}

// unit is the tool family or connector a package belongs to (tools/<family>,
// connectors/<name>, connectors/adapters/<name>); "" for any other package.
func unit(r string) string {
	parts := strings.Split(r, "/")
	switch {
	case len(parts) >= 2 && parts[0] == "tools":
		return strings.Join(parts[:2], "/")
	case len(parts) >= 3 && parts[0] == "connectors" && parts[1] == "adapters":
		return strings.Join(parts[:3], "/")
	case len(parts) >= 2 && parts[0] == "connectors" && parts[1] != "adapters":
		return strings.Join(parts[:2], "/")
	}
	return ""
}

// under reports whether r is p or inside it.
func under(r, p string) bool { return r == p || strings.HasPrefix(r, p+"/") }

// arrow checks one import of the module by a package of the module and says what is wrong with
// it; "" when the rule allows it.
func arrow(from, to string) string {
	ff, tf := floor(from), floor(to)
	if ff == "cmd" {
		return ""
	}
	switch tf {
	case "cmd":
		return "nothing imports cmd: it is the wiring"
	case "store":
		if ff != "store" {
			return "only cmd imports postgres: declare the interface you need (or move the type to the root) and let cmd pass the store"
		}
	case "httpapi":
		if ff != "httpapi" {
			return "only cmd imports httpapi"
		}
	case "webapp":
		if ff != "webapp" {
			return "only cmd imports webapp"
		}
	case "config":
		if ff != "config" {
			return "only cmd reads the configuration: take the value as a field that cmd sets"
		}
	case "unit":
		switch {
		case unit(from) == unit(to):
			return ""
		case ff == "unit":
			return "a tool family or connector never imports another: move what both need to the tools floor (orchestrator/tools) or to the root"
		}
		return "only cmd imports a tool family or connector"
	case "":
		return "" // reported as a package on no floor
	}
	low := tf == "root" || tf == "rules" || tf == "identity" || tf == "core" || tf == "sandbox" || tf == "connections"
	switch ff {
	case "root":
		return "the root package imports nothing of the module: move what it needs into the root"
	case "rules":
		if tf == "root" || (top(from) == top(to)) || slices.Contains(rulesMayImport[top(from)], top(to)) {
			return ""
		}
		return "registry, pipeline, sealed and integrations are rules over the root types and import only the root"
	case "config":
		if tf == "root" || under(to, "sealed") || under(to, "integrations") || tf == "sandbox" || ff == tf {
			return ""
		}
		return "config imports only the root, sealed, integrations and sandbox: it parses the variables into their types"
	case "identity":
		if tf == "root" || tf == "rules" || tf == "identity" {
			return ""
		}
		return "identity decides who is calling from the root types: it imports only the root and the rules"
	case "connections":
		if tf == "root" || tf == "rules" || tf == "connections" || under(to, "catalog") {
			return ""
		}
		return "connections imports only the root, the rules, catalog and its own packages: a login's life knows no run, binding, sandbox or connector; declare the seam it needs (as MCPClient, LocalAdapters, DriveAPI) and let cmd pass the part"
	case "core":
		if low {
			return ""
		}
		return "runs, bindings and catalog import only the root, the rules, identity, connections, each other and sandbox"
	case "sandbox":
		if tf == "root" || tf == "sandbox" {
			return ""
		}
		return "sandbox knows no tool, run or binding: it imports only the root and its own subpackages; the tool glue goes to the tools floor (orchestrator/tools)"
	case "store":
		if tf == "root" || tf == "rules" || tf == "store" {
			return ""
		}
		return "postgres implements the root's interfaces: it imports only the root, the rules and its own subpackages; move the type it needs to the root"
	case "httpapi":
		if low || tf == "httpapi" {
			return ""
		}
		return "httpapi imports only the root, the rules, and data types of identity, core, connections and sandbox"
	case "webapp":
		if low || tf == "webapp" {
			return ""
		}
		return "webapp imports only the root, the rules, and data types of identity, core, connections and sandbox: it reaches everything else through the API"
	case "tool floor":
		if low {
			return ""
		}
		return "the tools floor imports only the root, the rules, identity, connections, core and sandbox"
	case "connector floor", "unit":
		if low || to == "tools" || (tf == "connector floor" && strings.HasPrefix(from, to+"/")) {
			return ""
		}
		if tf == "tool floor" || tf == "connector floor" {
			return "a tool family or connector imports only the floors above it (orchestrator/tools, and connectors, connectors/adapters for a connector)"
		}
		return "a tool family or connector imports only the root, the rules, identity, connections, core, sandbox and its floors"
	}
	return ""
}

// libraries are the outside libraries only some packages may import: the import path (a module
// and its packages), the packages of the module that may (each with what lies under it), and the
// rule a violation names.
var libraries = []struct {
	path    string
	allowed []string
	rule    string
}{
	{"github.com/jackc/pgx", []string{"postgres", "cmd"},
		"pgx only in postgres/... and cmd/...: declare the interface you need (its types in the root) and let postgres implement it"},
	{"github.com/gofiber/fiber", []string{"httpapi", "webapp", "cmd"},
		"fiber only in httpapi/..., webapp/... (the operator app) and cmd/...: reach the service through an interface httpapi declares, and keep HTTP out of the rest"},
}

// library checks one import of an outside package by a package of the module and names the rule
// it breaks; "" when none.
func library(from, path string) string {
	for _, l := range libraries {
		if path != l.path && !strings.HasPrefix(path, l.path+"/") {
			continue
		}
		for _, a := range l.allowed {
			if under(from, a) {
				return ""
			}
		}
		return l.rule
	}
	return ""
}

// TestLayering fails on every import of the module against the rule above, naming the files
// that make it.
func TestLayering(t *testing.T) {
	pkgs := goList(t, ".")
	byPath := map[string]listed{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			t.Errorf("go list in the module listed %s, which is outside it", p.ImportPath)
			continue
		}
		if floor(from) == "" {
			t.Errorf("%s is on no floor of the layering: give it one in layering_test.go and in README.md's Layout section", name(from))
			continue
		}
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				if why := library(from, imp); why != "" {
					t.Errorf("%s imports %s (%s): %s", name(from), imp, strings.Join(importers(t, p, imp), ", "), why)
				}
				continue
			}
			why := arrow(from, to)
			if why == "" {
				continue
			}
			t.Errorf("%s imports %s (%s): %s", name(from), name(to), strings.Join(importers(t, p, imp), ", "), why)
		}
		if floor(from) == "httpapi" || floor(from) == "webapp" {
			checkDataTypesOnly(t, p, byPath)
		}
	}
}

// TestLayeringRule: the rule itself, arrow by arrow, including floors that do not exist yet.
func TestLayeringRule(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"", "registry", false},
		{"registry", "", true},
		{"registry", "pipeline", false},
		{"sealed", "runs", false},
		{"config", "sealed", true},
		{"config", "registry", false},
		{"runs", "config", false},
		{"bindings", "runs", true},
		{"bindings", "catalog", true},
		{"runs", "sandbox", true},
		{"runs", "tools/notes", false},
		{"catalog", "postgres", false},
		{"bindings", "httpapi", false},
		{"runs", "connectors/mcp", false},
		{"sandbox", "", true},
		{"sandbox", "sandbox/sandboxd", true},
		{"sandbox", "registry", false},
		{"sandbox", "runs", false},
		{"sandbox", "tools", false},
		{"postgres", "", true},
		{"postgres", "sealed", true},
		{"postgres/pgtest", "postgres", true},
		{"postgres", "runs", false},
		{"postgres", "bindings", false},
		{"postgres", "sandbox", false},
		{"postgres", "tools/records", false},
		{"postgres", "httpapi", false},
		{"postgres", "connectors/mcp", false},
		{"tools", "sandbox", true},
		{"tools", "registry", true},
		{"tools", "tools/code", false},
		{"tools/code", "tools", true},
		{"tools/code", "sandbox", true},
		{"tools/code", "tools/code/schema", true},
		{"tools/schedules", "runs", true},
		{"tools/schedules", "postgres", false},
		{"tools/schedules", "httpapi", false},
		{"tools/schedules", "config", false},
		{"tools/scripts", "tools/code", false},
		{"tools/search", "connectors/mcp", false},
		{"tools/search", "connectors", false},
		{"connectors/mcp", "bindings", true},
		{"connectors/mcp", "tools", true},
		{"connectors/mcp", "connectors", true},
		{"connectors/mcp", "connectors/oauth", false},
		{"connectors/mcp", "tools/notes", false},
		{"connectors/mcp", "postgres", false},
		{"connectors/mcp", "httpapi", false},
		{"connectors/adapters", "connectors", true},
		{"connectors/adapters", "connectors/adapters/coingecko", false},
		{"connectors/adapters/coingecko", "connectors/adapters", true},
		{"connectors/adapters/coingecko", "connectors", true},
		{"connectors/adapters/coingecko", "connectors/adapters/qonto", false},
		{"connectors/github", "connectors/adapters", false},
		{"identity", "", true},
		{"identity", "sealed", true},
		{"identity", "runs", false},
		{"identity", "postgres", false},
		{"runs", "identity", true},
		{"httpapi", "identity", true},
		{"postgres", "identity", false},
		{"httpapi", "runs", true},
		{"httpapi", "sandbox", true},
		{"httpapi", "integrations", true},
		{"httpapi", "postgres", false},
		{"httpapi", "tools", false},
		{"httpapi", "tools/secrets", false},
		{"httpapi", "connectors/mcp", false},
		{"config", "integrations", true},
		{"config", "sandbox", true},
		{"config", "runs", false},
		{"connections", "", true},
		{"connections", "catalog", true},
		{"connections", "registry", true},
		{"connections/lifecycle", "connections", true},
		{"connections", "bindings", false},
		{"connections", "runs", false},
		{"connections", "sandbox", false},
		{"connections", "postgres", false},
		{"connections", "connectors/mcp", false},
		{"connections", "httpapi", false},
		{"bindings", "connections", true},
		{"runs", "connections/lifecycle", true},
		{"httpapi", "connections", true},
		{"webapp", "", true},
		{"webapp", "identity", true},
		{"webapp", "bindings", true},
		{"webapp", "integrations", true},
		{"webapp", "httpapi", false},
		{"httpapi", "webapp", false},
		{"webapp", "postgres", false},
		{"webapp", "tools/secrets", false},
		{"webapp", "connectors/mcp", false},
		{"webapp", "config", false},
		{"connectors/adapters", "connections", true},
		{"connectors/mcp", "connections", true},
		{"tools", "connections", true},
		{"postgres", "connections", false},
		{"sandbox", "connections", false},
		{"cmd/orchestrator", "postgres", true},
		{"cmd/orchestrator", "tools/code", true},
		{"cmd/orchestrator", "connectors/mcp", true},
		{"tools/notes", "cmd/orchestrator", false},
	} {
		if why := arrow(tc.from, tc.to); (why == "") != tc.ok {
			t.Errorf("%s → %s: allowed %v, want %v (%s)", name(tc.from), name(tc.to), why == "", tc.ok, why)
		}
	}
	for _, r := range []string{"", "registry", "config", "runs", "sandbox/seccomp", "postgres/pgtest", "httpapi", "tools", "tools/code",
		"connections", "connections/lifecycle", "connectors", "connectors/adapters", "connectors/mcp", "connectors/adapters/coingecko", "cmd/orchestrator"} {
		if floor(r) == "" {
			t.Errorf("%s is on no floor", name(r))
		}
	}
	if floor("widgets") != "" {
		t.Error("an unknown directory is on a floor")
	}
	for _, tc := range []struct {
		from, path string
		ok         bool
	}{
		{"postgres", "github.com/jackc/pgx/v5/pgxpool", true},
		{"postgres/pgtest", "github.com/jackc/pgx/v5", true},
		{"cmd/orchestrator", "github.com/jackc/pgx/v5/pgxpool", true},
		{"cmd/orchestrator/wire", "github.com/jackc/pgx/v5/pgxpool", true},
		{"tools/notes", "github.com/jackc/pgx/v5/pgxpool", false},
		{"connectors/adapters/wallet", "github.com/jackc/pgx/v5", false},
		{"runs", "github.com/jackc/pgx/v5/pgconn", false},
		{"", "github.com/jackc/pgx/v5", false},
		{"httpapi", "github.com/gofiber/fiber/v2", true},
		{"httpapi", "github.com/gofiber/fiber/v2/middleware/adaptor", true},
		{"webapp", "github.com/gofiber/fiber/v2", true},
		{"cmd/orchestrator/wire", "github.com/gofiber/fiber/v2", true},
		{"runs", "github.com/gofiber/fiber/v2", false},
		{"connections/lifecycle", "github.com/gofiber/fiber/v2", false},
		{"postgres", "github.com/gofiber/fiber/v2", false},
		{"runs", "github.com/jackc/pgxlisten", true}, // another module, whose path only starts the same
		{"runs", "golang.org/x/sync/singleflight", true},
	} {
		if why := library(tc.from, tc.path); (why == "") != tc.ok {
			t.Errorf("%s → %s: allowed %v, want %v (%s)", name(tc.from), tc.path, why == "", tc.ok, why)
		}
	}
}

// name is how a message names a package of the module.
func name(r string) string {
	if r == "" {
		return "the root package orchestrator"
	}
	return r
}

// parseFiles parses a package's own (non-test) files.
func parseFiles(t *testing.T, p listed, mode parser.Mode) map[string]*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]*ast.File{}
	for _, f := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
		af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, mode)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		r, _ := rel(p.ImportPath)
		out[filepath.ToSlash(filepath.Join(r, f))] = af
	}
	return out
}

// importers lists the files of p that import path.
func importers(t *testing.T, p listed, path string) []string {
	t.Helper()
	var out []string
	for f, af := range parseFiles(t, p, parser.ImportsOnly) {
		for _, is := range af.Imports {
			if v, _ := strconv.Unquote(is.Path.Value); v == path {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkDataTypesOnly fails when an httpapi file names anything of an identity, core, connections
// or sandbox package but a data type or a constant: no function, variable, interface or service (a
// type with a method taking a context), since httpapi reaches the services through interfaces it
// declares.
func checkDataTypesOnly(t *testing.T, p listed, byPath map[string]listed) {
	t.Helper()
	for f, af := range parseFiles(t, p, 0) {
		local := map[string]string{} // local name → import path of a core or sandbox package
		for _, is := range af.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			r, ok := rel(path)
			if !ok || (floor(r) != "core" && floor(r) != "connections" && floor(r) != "sandbox" && floor(r) != "identity") {
				continue
			}
			n := filepath.Base(path)
			if is.Name != nil {
				n = is.Name.Name
			}
			local[n] = path
		}
		ast.Inspect(af, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || local[x.Name] == "" {
				return true
			}
			path := local[x.Name]
			if !dataNames(t, byPath[path])[sel.Sel.Name] {
				r, _ := rel(path)
				t.Errorf("%s uses %s.%s, which is not a data type of %s: declare the interface httpapi needs in httpapi and let cmd pass the service", f, x.Name, sel.Sel.Name, r)
			}
			return true
		})
	}
}

// dataNames lists the exported constants and data types of a package: types that are not
// interfaces and have no method taking a context.
func dataNames(t *testing.T, p listed) map[string]bool {
	t.Helper()
	names, services := map[string]bool{}, map[string]bool{}
	for _, af := range parseFiles(t, p, 0) {
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if _, iface := s.Type.(*ast.InterfaceType); !iface {
							names[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						if d.Tok == token.CONST {
							for _, n := range s.Names {
								names[n.Name] = true
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && takesContext(d.Type) {
					services[receiver(d.Recv.List[0].Type)] = true
				}
			}
		}
	}
	for s := range services {
		delete(names, s)
	}
	return names
}

// takesContext reports whether a function's first parameter is a context.Context.
func takesContext(ft *ast.FuncType) bool {
	if ft.Params == nil || len(ft.Params.List) == 0 {
		return false
	}
	sel, ok := ft.Params.List[0].Type.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "context" && sel.Sel.Name == "Context"
}

// receiver names a method's receiver type.
func receiver(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiver(e.X)
	case *ast.IndexExpr:
		return receiver(e.X)
	case *ast.IndexListExpr:
		return receiver(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// TestHelpersImportOnlyShared: the helper modules import nothing of the project but shared and
// themselves, and shared imports nothing of the project but itself.
func TestHelpersImportOnlyShared(t *testing.T) {
	const project, shared = "github.com/guildsai/guilds/", "github.com/guildsai/guilds/shared"
	dirs, err := filepath.Glob(filepath.Join("..", "helpers", "guilds-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no helper module under ../helpers (%v)", err)
	}
	for _, dir := range append(dirs, filepath.Join("..", "shared")) {
		for _, p := range goList(t, dir) {
			if p.Module == nil {
				t.Fatalf("go list gave %s no module", p.ImportPath)
			}
			for _, imp := range p.Imports {
				if !strings.HasPrefix(imp, project) || under(imp, shared) || under(imp, p.Module.Path) {
					continue
				}
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, fmt.Sprintf("%s imports only %s (and its own packages)", strings.TrimPrefix(p.Module.Path, project), shared))
			}
		}
	}
}
