package wire

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/guildsai/guilds/orchestrator/config"
	"github.com/guildsai/guilds/orchestrator/registry"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/tools/browser"
	"github.com/guildsai/guilds/orchestrator/tools/code"
)

// sandboxProvider chooses the agents' sandbox from GUILDS_SANDBOX (bubblewrap, local, or empty for
// bubblewrap where bwrap exists), with one folder per agent under GUILDS_DATA_DIR/sandboxes, the
// helpers from GUILDS_BIN_DIR (default: the folder holding this binary) and the pinned engines from
// GUILDS_TOOLS_DIR. A sandbox that cannot start does not stop the orchestrator: every sandbox call
// then fails with the reason and its install step.
func sandboxProvider(cfg config.Config, log *slog.Logger) sandbox.Provider {
	binDir := cfg.Sandbox.BinDir
	if binDir == "" {
		if exe, err := os.Executable(); err == nil {
			binDir = filepath.Dir(exe)
		}
	}
	root, err := filepath.Abs(filepath.Join(cfg.DataDir, "sandboxes"))
	if err == nil {
		err = os.MkdirAll(root, 0o755)
	}
	if err != nil {
		err = fmt.Errorf("%w: sandbox folder under GUILDS_DATA_DIR: %v", sandbox.ErrUnavailable, err)
		log.Error("sandbox unavailable: code and browser tools will fail", "err", err.Error())
		return sandbox.Unavailable{Err: err}
	}
	p, err := sandbox.FromKind(cfg.Sandbox.Kind, root, binDir, cfg.Sandbox.ToolsDir, log)
	if err != nil {
		log.Error("sandbox unavailable: code and browser tools will fail", "err", err.Error())
		return sandbox.Unavailable{Err: err}
	}
	log.Info("sandbox", "kind", p.Kind(), "root", root, "helpers", binDir)
	return p
}

// registerSandboxTools registers the tool families that run helpers in the agent's sandbox: the
// code tools and the browser tools (each agent's headless Chromium starts on its first browser
// call and stops after GUILDS_CHROMIUM_IDLE without one, default 10m; a bubblewrap sandbox stops
// after GUILDS_SANDBOX_IDLE without a call, default 30m); a bubblewrap sandbox's uid range is locked
// host-wide. The returned func stops those browsers, then the sandboxes, then releases the range.
// gitEnv is shell's GitHub environment, secretEnv the agent's secrets.
func registerSandboxTools(reg *registry.Registry, p sandbox.Provider, cfg config.Config, log *slog.Logger, gitEnv, secretEnv func(context.Context, *registry.Call) ([]string, error)) (func(), error) {
	if err := (&code.Tools{Sandbox: p, GitEnv: gitEnv, SecretEnv: secretEnv}).Register(reg); err != nil {
		return nil, fmt.Errorf("register code tools: %w", err)
	}
	browsers := &sandbox.Browsers{Provider: p, Log: log, Idle: cfg.Sandbox.ChromiumIdle}
	unlock := func() {}
	if bw, ok := p.(*sandbox.Bubblewrap); ok {
		sb := cfg.Sandbox
		bw.Idle, bw.Network, bw.AllowNets, bw.Limits, bw.UIDBase = sb.Idle, sb.Network, sb.AllowNets, sb.Limits, sb.UIDBase
		// Another orchestrator of this host on the same uid range would share its agents' uids.
		dataDir, _ := filepath.Abs(cfg.DataDir)
		if err := sandbox.CheckBinds(sb.Bind, dataDir, bw.Root, bw.BinDir); err != nil {
			return nil, fmt.Errorf("GUILDS_SANDBOX_BIND: %w", err)
		}
		bw.Bind = sb.Bind
		var err error
		if unlock, err = bw.LockUIDRange(dataDir); err != nil {
			return nil, err
		}
		// Once at start: what this host lets the sandboxes enforce, logged and kept for /api/instance.
		bw.Status()
	}
	if err := (&browser.Tools{Sandbox: p, Browsers: browsers}).Register(reg); err != nil {
		unlock()
		return nil, fmt.Errorf("register browser tools: %w", err)
	}
	return func() {
		browsers.Close()
		if c, ok := p.(io.Closer); ok {
			_ = c.Close()
		}
		unlock()
	}, nil
}

// reporter returns the provider's isolation report, or nil when it has none.
func reporter(p sandbox.Provider) sandbox.Reporter {
	r, _ := p.(sandbox.Reporter)
	return r
}
