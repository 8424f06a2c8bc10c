package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

var errEmptyArgv = errors.New("exec: empty command")

// ToolsMount is where the pinned engines folder appears inside a bubblewrap sandbox (an npm
// node_modules/.bin folder appears as ToolsMount/node_modules/.bin, as in the image).
const ToolsMount = "/opt/guilds/tools"

// Bubblewrap gives each agent its own folder at /home/agent, a private /run/guilds and /tmp, the
// helpers at /usr/local/bin, the system read-only, and nothing else of the host. Processes share
// the host's PID and network namespaces so background commands outlive the call that started them
// and a browser on the sandbox's loopback stays reachable.
type Bubblewrap struct {
	Root     string // host folder holding one folder per agent
	BinDir   string // host folder holding the guilds-* helpers
	ToolsDir string // optional host folder of pinned engines, mounted read-only at ToolsMount
	Env      []string
	bwrap    string
}

// NewBubblewrap checks that bwrap is installed and returns the provider.
func NewBubblewrap(root, binDir, toolsDir string) (*Bubblewrap, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap is not installed (apt-get install bubblewrap, or run `make setup`)", ErrUnavailable)
	}
	return &Bubblewrap{Root: root, BinDir: binDir, ToolsDir: toolsDir, bwrap: path}, nil
}

// Kind names the provider.
func (p *Bubblewrap) Kind() string { return "bubblewrap" }

// Open returns the agent's sandbox, creating its folders on first use.
func (p *Bubblewrap) Open(ctx context.Context, agentID string) (Sandbox, error) {
	d, err := agentDirs(p.Root, agentID)
	if err != nil {
		return nil, err
	}
	return &bwrapBox{p: p, d: d, fileAPI: fileAPI{places: Places{Home: Home, RunDir: RunDir}, d: d}}, nil
}

type bwrapBox struct {
	fileAPI
	p *Bubblewrap
	d dirs
}

func (b *bwrapBox) Places() Places { return b.places }

// args builds the bwrap command line for one exec.
func (b *bwrapBox) args(req ExecRequest) ([]string, error) {
	a := []string{"--die-with-parent", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--ro-bind", "/usr", "/usr", "--tmpfs", "/usr/local"}
	// Merged-/usr systems link /bin, /lib, … into /usr; others get them bound read-only.
	for _, top := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(top)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(top)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", top, err)
			}
			a = append(a, "--symlink", target, top)
		default:
			a = append(a, "--ro-bind", top, top)
		}
	}
	a = append(a, "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
		"--bind", b.d.tmp(), "/tmp", "--bind", b.d.home(), Home, "--bind", b.d.run(), RunDir)
	helpers, err := filepath.Glob(filepath.Join(b.p.BinDir, "guilds-*"))
	if err != nil {
		return nil, err
	}
	if len(helpers) == 0 {
		return nil, fmt.Errorf("%w: no guilds-* helpers in %s (run `make build`)", ErrUnavailable, b.p.BinDir)
	}
	sort.Strings(helpers)
	for _, h := range helpers {
		a = append(a, "--ro-bind", h, filepath.Join(BinDir, filepath.Base(h)))
	}
	path := BinDir + ":/usr/bin:/bin"
	env := []string{"HOME=" + Home, "TMPDIR=/tmp", "LANG=C.UTF-8", "GUILDS_HOME=" + Home, "GUILDS_RUN_DIR=" + RunDir}
	if b.p.ToolsDir != "" {
		src, dst, tools := b.p.ToolsDir, ToolsMount, ToolsMount
		if filepath.Base(src) == ".bin" && filepath.Base(filepath.Dir(src)) == "node_modules" {
			// An npm .bin folder links into its node_modules: mount that whole folder where the
			// image keeps it (/opt/guilds/tools/node_modules), so the links and playwright-core resolve.
			src, dst = filepath.Dir(src), ToolsMount+"/node_modules"
			tools = dst + "/.bin"
		}
		a = append(a, "--ro-bind", src, dst)
		path = BinDir + ":" + tools + ":/usr/bin:/bin"
		env = append(env, "GUILDS_TOOLS_DIR="+tools)
	}
	env = append([]string{"PATH=" + path}, env...)
	a = append(a, "--chdir", Home, "--clearenv")
	for _, kv := range append(append(env, b.p.Env...), req.Env...) {
		k, v, ok := cut(kv)
		if !ok {
			return nil, fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
		a = append(a, "--setenv", k, v)
	}
	return append(append(a, "--"), req.Argv...), nil
}

func (b *bwrapBox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if len(req.Argv) == 0 {
		return ExecResult{}, errEmptyArgv
	}
	args, err := b.args(req)
	if err != nil {
		return ExecResult{}, err
	}
	return run(ctx, req, b.p.bwrap, args, func(cmd *exec.Cmd) { cmd.Env = []string{} })
}

// Start starts a long-lived command in the sandbox (its own process group; stdout and stderr
// to the given writer) and returns without waiting.
func (b *bwrapBox) Start(req ExecRequest, out io.Writer) (*exec.Cmd, error) {
	if len(req.Argv) == 0 {
		return nil, errEmptyArgv
	}
	args, err := b.args(req)
	if err != nil {
		return nil, err
	}
	return start(b.p.bwrap, args, out, func(cmd *exec.Cmd) { cmd.Env = []string{} })
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], i > 0
		}
	}
	return "", "", false
}
