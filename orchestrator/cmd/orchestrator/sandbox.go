package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

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
	binDir := cfg.Getenv("GUILDS_BIN_DIR")
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
	p, err := sandbox.FromKind(cfg.Getenv("GUILDS_SANDBOX"), root, binDir, cfg.Getenv("GUILDS_TOOLS_DIR"), log)
	if err != nil {
		log.Error("sandbox unavailable: code and browser tools will fail", "err", err.Error())
		return sandbox.Unavailable{Err: err}
	}
	log.Info("sandbox", "kind", p.Kind(), "root", root, "helpers", binDir)
	return p
}

// idleSetting reads an idle period (a Go duration) from name; unset is 0, the package default.
func idleSetting(cfg config.Config, name string) (time.Duration, error) {
	v := cfg.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration such as 10m", name, v)
	}
	return d, nil
}

// registerSandboxTools registers the tool families that run helpers in the agent's sandbox: the
// code tools and the browser tools (each agent's headless Chromium starts on its first browser
// call and stops after GUILDS_CHROMIUM_IDLE without one, default 10m; a bubblewrap sandbox stops
// after GUILDS_SANDBOX_IDLE without a call, default 30m). The returned func stops those browsers,
// then the sandboxes.
func registerSandboxTools(reg *registry.Registry, p sandbox.Provider, cfg config.Config, log *slog.Logger) (func(), error) {
	if err := (&code.Tools{Sandbox: p}).Register(reg); err != nil {
		return nil, fmt.Errorf("register code tools: %w", err)
	}
	browsers := &sandbox.Browsers{Provider: p, Log: log}
	var err error
	if browsers.Idle, err = idleSetting(cfg, "GUILDS_CHROMIUM_IDLE"); err != nil {
		return nil, err
	}
	if bw, ok := p.(*sandbox.Bubblewrap); ok {
		if bw.Idle, err = idleSetting(cfg, "GUILDS_SANDBOX_IDLE"); err != nil {
			return nil, err
		}
	}
	if err := (&browser.Tools{Sandbox: p, Browsers: browsers}).Register(reg); err != nil {
		return nil, fmt.Errorf("register browser tools: %w", err)
	}
	return func() {
		browsers.Close()
		if c, ok := p.(io.Closer); ok {
			_ = c.Close()
		}
	}, nil
}
