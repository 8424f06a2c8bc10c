// Package runs owns a call's place in the workspace: its run folder, working directory, logs and path rules.
package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/guildsai/guilds/shared/atomicfile"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/places"
)

// KeepRuns is how many run folders .runs/ keeps.
const KeepRuns = 20

// Call is one tool call with the places it works in.
type Call struct {
	Req    envelope.Request
	Home   string // GUILDS_HOME, absolute and cleaned
	RunDir string // GUILDS_RUN_DIR
	Max    int    // cap on reply text in bytes
}

// New builds a call from a validated request and the environment.
func New(req envelope.Request) *Call {
	return &Call{Req: req, Home: places.Home(), RunDir: places.RunDir(), Max: places.ResultMax()}
}

// Dir is the run's folder, .runs/<run id>.
func (c *Call) Dir() string { return filepath.Join(c.Home, ".runs", c.Req.RunID) }

// LogPath is where this call's full shell log goes.
func (c *Call) LogPath() string { return filepath.Join(c.Dir(), c.Req.CallID+".log") }

// Open makes sure the run folder exists; creating it prunes .runs/ to the KeepRuns most recent.
func (c *Call) Open() error {
	dir := c.Dir()
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create run folder: %w", err)
	}
	return prune(filepath.Dir(dir), KeepRuns)
}

func prune(root string, keep int) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("list runs: %w", err)
	}
	type run struct {
		name string
		mod  int64
	}
	var all []run
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		all = append(all, run{e.Name(), info.ModTime().UnixNano()})
	}
	if len(all) <= keep {
		return nil
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod > all[j].mod })
	for _, r := range all[keep:] {
		_ = os.RemoveAll(filepath.Join(root, r.name))
	}
	return nil
}

// Cwd is the run's working directory: the one stored in .runs/<id>/cwd, or Home when none is
// stored or the stored folder is gone.
func (c *Call) Cwd() string {
	b, err := os.ReadFile(filepath.Join(c.Dir(), "cwd"))
	if err != nil {
		return c.Home
	}
	dir := strings.TrimSpace(string(b))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || !filepath.IsAbs(dir) {
		return c.Home
	}
	return dir
}

// SetCwd stores the run's working directory.
func (c *Call) SetCwd(dir string) error {
	if err := c.Open(); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(c.Dir(), "cwd"), []byte(dir+"\n"), 0o644)
}

// ErrOutside is returned for a path that resolves outside the workspace.
var ErrOutside = errors.New("outside the workspace")

// Abs is a tool's path argument as a clean absolute path, before any link is followed: relative
// paths start at the run's working directory, and "~" and "~/…" at Home, as the shell the model
// also uses expands them ("./~" names a file called "~").
func (c *Call) Abs(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = c.Home + p[1:]
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Cwd(), p)
	}
	return filepath.Clean(p)
}

// Resolve turns a tool's path argument into an absolute path inside Home: Abs, then links
// followed (for a path that does not exist yet, through its deepest existing ancestor), and
// anything that lands outside Home is refused.
func (c *Call) Resolve(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	abs := c.Abs(p)
	home, err := filepath.EvalSymlinks(c.Home)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", c.Home, err)
	}
	real, err := evalExisting(abs, 0)
	if err != nil {
		return "", err
	}
	if !Within(home, real) {
		return "", fmt.Errorf("%s resolves to %s, %w (%s)", p, real, ErrOutside, c.Home)
	}
	return real, nil
}

// Within reports whether path is root or inside it (both clean and absolute).
func Within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator)) || root == "/"
}

// maxLinkHops bounds how many dangling links evalExisting follows, as the kernel bounds link loops.
const maxLinkHops = 40

// evalExisting follows links in the longest existing prefix of abs and appends the rest.
func evalExisting(abs string, hops int) (string, error) {
	if hops > maxLinkHops {
		return "", fmt.Errorf("resolve %s: too many levels of links", abs)
	}
	rest := []string{}
	cur := abs
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				real = filepath.Join(real, rest[i])
			}
			return real, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("resolve %s: %w", abs, err)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		// A dangling link must not be written through: resolve its target instead of its name.
		if fi, lerr := os.Lstat(cur); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, rerr := os.Readlink(cur)
			if rerr != nil {
				return "", fmt.Errorf("resolve %s: %w", cur, rerr)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(parent, target)
			}
			next, err := evalExisting(filepath.Clean(target), hops+1)
			if err != nil {
				return "", err
			}
			for i := len(rest) - 1; i >= 0; i-- {
				next = filepath.Join(next, rest[i])
			}
			return next, nil
		}
		rest = append(rest, filepath.Base(cur))
		cur = parent
	}
}

// Rel renders an absolute path the way the model can pass it back to a file tool: relative to
// the working directory when it lies under it (links in the working directory or Home followed),
// else absolute.
func (c *Call) Rel(abs string) string {
	cwd := c.Cwd()
	bases := []string{cwd}
	if real, err := filepath.EvalSymlinks(cwd); err == nil && real != cwd {
		bases = append(bases, real)
	}
	for _, base := range bases {
		if r, ok := under(base, abs); ok {
			return r
		}
	}
	return abs
}

// under returns path relative to base when path is base or inside it.
func under(base, path string) (string, bool) {
	r, err := filepath.Rel(base, path)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") || filepath.IsAbs(r) {
		return "", false
	}
	return r, true
}

// DecodeArgs decodes the call's arguments into v (a pointer to a struct), refusing unknown
// arguments and naming the argument whose type is wrong.
func (c *Call) DecodeArgs(v any) error {
	dec := json.NewDecoder(bytes.NewReader(c.Req.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field == "":
			return fmt.Errorf("arguments must be a JSON object of named arguments, got %s", te.Value)
		case errors.As(err, &te):
			return fmt.Errorf("argument %s must be %s, got %s", te.Field, kindName(te.Type), te.Value)
		case errors.As(err, &se):
			return fmt.Errorf("arguments are not valid JSON: %v", err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.TrimPrefix(err.Error(), "json: unknown field ")
			return fmt.Errorf("unknown argument %s for %s; it takes %s", name, c.Req.Tool, fieldList(v))
		default:
			return fmt.Errorf("arguments: %v", err)
		}
	}
	return nil
}

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

func fieldList(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "no arguments"
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		if tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, ", ")
}
