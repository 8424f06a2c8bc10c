package sandbox

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Local is a plain folder per agent with the helpers run directly on the host. It isolates nothing.
type Local struct {
	Root     string // host folder holding one folder per agent
	BinDir   string // host folder holding the guilds-* helpers
	ToolsDir string // optional host folder of pinned engines (ast-grep, …), exported as GUILDS_TOOLS_DIR
	Env      []string
}

// Kind names the provider.
func (p *Local) Kind() string { return "local" }

// Open returns the agent's sandbox, creating its folders on first use.
func (p *Local) Open(ctx context.Context, agentID string) (Sandbox, error) {
	d, err := agentDirs(p.Root, agentID)
	if err != nil {
		return nil, err
	}
	places := Places{Home: d.home(), RunDir: d.run(), Tmp: d.tmp()}
	return &localBox{p: p, d: d, fileAPI: fileAPI{places: places, home: d.home(), run: d.run(), owner: noOwner}}, nil
}

// Status says that the local provider isolates nothing.
func (p *Local) Status() Status {
	return Status{Backend: p.Kind(), Network: NetworkHost, DiskQuota: DiskQuotaNone,
		Missing: []string{"isolation: the local sandbox runs helpers directly on the host as the orchestrator's user; set GUILDS_SANDBOX=bubblewrap"}}
}

type localBox struct {
	fileAPI
	p *Local
	d dirs
}

func (b *localBox) Places() Places { return b.places }

// SharesHostNetwork reports that a local sandbox's loopback is the host's.
func (b *localBox) SharesHostNetwork() bool { return true }

func (b *localBox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if len(req.Argv) == 0 {
		return ExecResult{}, errEmptyArgv
	}
	name, env := b.command(req)
	return run(ctx, req, name, req.Argv[1:], func(cmd *exec.Cmd) {
		cmd.Dir = b.d.home()
		cmd.Env = env
	})
}

// Start starts a long-lived command (its own process group; output to out) and returns without waiting.
func (b *localBox) Start(req ExecRequest, out io.Writer) (*Process, error) {
	if len(req.Argv) == 0 {
		return nil, errEmptyArgv
	}
	name, env := b.command(req)
	return start(name, req.Argv[1:], out, func(cmd *exec.Cmd) {
		cmd.Dir = b.d.home()
		cmd.Env = env
	})
}

// command maps the helper path onto the host and builds the environment.
func (b *localBox) command(req ExecRequest) (string, []string) {
	name := req.Argv[0]
	if strings.HasPrefix(name, BinDir+"/") {
		name = filepath.Join(b.p.BinDir, strings.TrimPrefix(name, BinDir+"/"))
	}
	path := b.p.BinDir
	if b.p.ToolsDir != "" {
		path += ":" + b.p.ToolsDir
	}
	env := []string{
		"PATH=" + path + ":" + os.Getenv("PATH"),
		"HOME=" + b.d.home(),
		"TMPDIR=" + b.d.tmp(),
		"LANG=C.UTF-8",
		"GUILDS_HOME=" + b.d.home(),
		"GUILDS_RUN_DIR=" + b.d.run(),
	}
	if b.p.ToolsDir != "" {
		env = append(env, "GUILDS_TOOLS_DIR="+b.p.ToolsDir)
	}
	return name, append(append(env, b.p.Env...), req.Env...)
}
