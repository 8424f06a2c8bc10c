package graphtools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/store"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
)

// DefaultBudget is how long a graph call may spend bringing the graph up to date (the spec's 11 minutes).
const DefaultBudget = 11 * time.Minute

// Budget is how long one call may wait for its graph; tests shorten it.
var Budget = DefaultBudget

// repo is the repository a call addresses, its graph, and the folder or file `in` narrows to.
type repo struct {
	name  string
	root  string // absolute, links resolved
	scope string // slash path inside the repository that answers are narrowed to; "" for all of it
	g     *store.Graph
}

func reposDir(c *runs.Call) string { return filepath.Join(c.Home, "repos") }

// repoNames lists the folders under repos/.
func repoNames(c *runs.Call) []string {
	entries, err := os.ReadDir(reposDir(c))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		} else if e.Type()&os.ModeSymlink != 0 {
			if fi, err := os.Stat(filepath.Join(reposDir(c), e.Name())); err == nil && fi.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	return names
}

func haveRepos(c *runs.Call) string {
	names := repoNames(c)
	if len(names) == 0 {
		return fmt.Sprintf("there are no repositories: clone one into %s first", reposDir(c))
	}
	return "the repositories are " + strings.Join(names, ", ")
}

// repoNamed addresses a repository by its folder name under repos/.
func repoNamed(c *runs.Call, name string) (*repo, error) {
	if name == "" {
		return nil, fmt.Errorf("repo is required: the name of a folder under repos/; %s", haveRepos(c))
	}
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("repo %q is not a repository name (a folder directly under repos/); %s", name, haveRepos(c))
	}
	dir := filepath.Join(reposDir(c), name)
	real, err := c.Resolve(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("no repository named %q; %s", name, haveRepos(c))
	}
	return &repo{name: name, root: real}, nil
}

// repoFor addresses the repository holding p (a path argument), else the working directory, else the only one.
func repoFor(c *runs.Call, p string) (*repo, error) {
	base, err := c.Resolve(reposDir(c))
	if err != nil {
		return nil, err
	}
	if p != "" {
		abs, err := c.Resolve(p)
		if err != nil {
			return nil, err
		}
		r, ok := repoHolding(c, base, abs)
		if !ok {
			return nil, fmt.Errorf("%s is not inside a repository under %s; %s", p, reposDir(c), haveRepos(c))
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("%s does not exist in repository %s", p, r.name)
		}
		return r, nil
	}
	return repoDefault(c, base, "a path inside one (in or path)")
}

// repoDefault addresses the repository holding the working directory, else the only one; what says
// which argument picks one when neither rule does.
func repoDefault(c *runs.Call, base, what string) (*repo, error) {
	if cwd, err := c.Resolve(c.Cwd()); err == nil {
		if r, ok := repoHolding(c, base, cwd); ok {
			r.scope = ""
			return r, nil
		}
	}
	names := repoNames(c)
	if len(names) == 1 {
		return repoNamed(c, names[0])
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("there are no repositories: clone one into %s first", reposDir(c))
	}
	return nil, fmt.Errorf("the working directory is not inside a repository and there are several (%s); pass %s", strings.Join(names, ", "), what)
}

// repoOrDefault addresses the repository named (code_map's repo), else the default one.
func repoOrDefault(c *runs.Call, name string) (*repo, error) {
	if name != "" {
		return repoNamed(c, name)
	}
	base, err := c.Resolve(reposDir(c))
	if err != nil {
		return nil, err
	}
	return repoDefault(c, base, "repo (the name of a folder under repos/)")
}

func repoHolding(c *runs.Call, base, abs string) (*repo, bool) {
	rel, ok := relSlash(base, abs)
	if !ok || rel == "" {
		return nil, false
	}
	name, rest, _ := strings.Cut(rel, "/")
	root, err := filepath.EvalSymlinks(filepath.Join(base, name))
	if err != nil {
		return nil, false
	}
	return &repo{name: name, root: root, scope: rest}, true
}

// open loads the repository's graph, up to date, within the call's budget.
func (r *repo) open(ctx context.Context, c *runs.Call) error {
	ctx, cancel := context.WithTimeout(ctx, Budget)
	defer cancel()
	g, err := store.Open(ctx, r.root, filepath.Join(c.Home, ".cache", "graft", r.name))
	if err != nil {
		return fmt.Errorf("graph of %s: %w", r.name, err)
	}
	r.g = g
	return nil
}

// inScope reports whether a repository file is inside the call's `in`.
func (r *repo) inScope(p string) bool {
	return r.scope == "" || p == r.scope || strings.HasPrefix(p, r.scope+"/")
}

// missingNote says what the answer lacks: files the budget left unparsed and files the parser
// crashed on; "" when it lacks nothing.
func (r *repo) missingNote(c *runs.Call) string {
	if r.g == nil {
		return ""
	}
	var b strings.Builder
	if r.g.Missing > 0 {
		fmt.Fprintf(&b, "note: the graph is incomplete: %d files were not parsed within the %s budget; this answer covers the rest (call again to continue the build)\n",
			r.g.Missing, Budget.Round(time.Second))
	}
	if n := len(r.g.Failed); n > 0 {
		const shown = 5
		files, them := "files; they have", "them"
		if n == 1 {
			files, them = "file; it has", "it"
		}
		fmt.Fprintf(&b, "note: the parser crashed on %d %s no symbols in the graph until changed (text search still finds %s):", n, files, them)
		for i, f := range r.g.Failed {
			if i == shown {
				fmt.Fprintf(&b, " and %d more", n-shown)
				break
			}
			if i > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s (%s)", r.rel(c, f.Path), f.Reason)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// rel renders a repository path relative to the working directory.
func (r *repo) rel(c *runs.Call, p string) string {
	return c.Rel(filepath.Join(r.root, filepath.FromSlash(p)))
}

// relSlash is rel with forward slashes, or "" when target is not under root.
func relSlash(root, target string) (string, bool) {
	r, err := filepath.Rel(root, target)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}
