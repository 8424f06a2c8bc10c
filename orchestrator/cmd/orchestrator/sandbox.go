package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
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
// then the sandboxes. gitEnv is shell's GitHub environment, secretEnv the agent's secrets.
func registerSandboxTools(reg *registry.Registry, p sandbox.Provider, cfg config.Config, log *slog.Logger, gitEnv, secretEnv func(context.Context, *registry.Call) ([]string, error)) (func(), error) {
	if err := (&code.Tools{Sandbox: p, GitEnv: gitEnv, SecretEnv: secretEnv}).Register(reg); err != nil {
		return nil, fmt.Errorf("register code tools: %w", err)
	}
	browsers := &sandbox.Browsers{Provider: p, Log: log}
	var err error
	if browsers.Idle, err = idleSetting(cfg, "GUILDS_CHROMIUM_IDLE"); err != nil {
		return nil, err
	}
	unlock := func() {}
	if bw, ok := p.(*sandbox.Bubblewrap); ok {
		if bw.Idle, err = idleSetting(cfg, "GUILDS_SANDBOX_IDLE"); err != nil {
			return nil, err
		}
		if err := isolationSettings(cfg, bw); err != nil {
			return nil, err
		}
		// Another orchestrator of this host on the same uid range would share its agents' uids.
		dataDir, _ := filepath.Abs(cfg.DataDir)
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

// isolationSettings reads the bubblewrap sandbox's network, limits and host uid range:
// GUILDS_SANDBOX_NETWORK (user or none), GUILDS_SANDBOX_ALLOW_NETS, GUILDS_SANDBOX_PIDS,
// GUILDS_SANDBOX_MEMORY, GUILDS_SANDBOX_CPU, GUILDS_SANDBOX_TMP, GUILDS_SANDBOX_RUN and
// GUILDS_SANDBOX_UID_BASE; unset takes the default.
func isolationSettings(cfg config.Config, bw *sandbox.Bubblewrap) error {
	switch v := cfg.Getenv("GUILDS_SANDBOX_NETWORK"); v {
	case "", sandbox.NetworkUser, sandbox.NetworkNone:
		bw.Network = v
	default:
		return fmt.Errorf("GUILDS_SANDBOX_NETWORK=%q is unknown: use user (outbound traffic, nothing of the host) or none (a loopback only)", v)
	}
	nets, err := sandbox.ParseNets(cfg.Getenv("GUILDS_SANDBOX_ALLOW_NETS"))
	if err != nil {
		return fmt.Errorf("GUILDS_SANDBOX_ALLOW_NETS: %w (ranges separated by commas, e.g. 10.20.0.0/16,fd00:1::/64)", err)
	}
	bw.AllowNets = nets
	count := func(name string, lo, hi int64, dst *int64) error {
		v := cfg.Getenv(name)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s=%q is not a whole number from %d to %d", name, v, lo, hi)
		}
		*dst = n
		return nil
	}
	size := func(name string, least int64, dst *int64) error {
		v := cfg.Getenv(name)
		if v == "" {
			return nil
		}
		n, err := sandbox.ParseBytes(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if n < least {
			return fmt.Errorf("%s=%q is below the least a sandbox can run in, %d MiB", name, v, least>>20)
		}
		*dst = n
		return nil
	}
	var base int64
	for _, err := range []error{
		count("GUILDS_SANDBOX_PIDS", 64, 1<<22, &bw.Limits.Pids),
		count("GUILDS_SANDBOX_CPU", 1, 10000, &bw.Limits.CPUWeight),
		size("GUILDS_SANDBOX_MEMORY", 64<<20, &bw.Limits.Memory),
		size("GUILDS_SANDBOX_TMP", 1<<20, &bw.Limits.Tmp),
		size("GUILDS_SANDBOX_RUN", 1<<20, &bw.Limits.Run),
		diskSetting(cfg, &bw.Limits.Disk),
		count("GUILDS_SANDBOX_UID_BASE", 65536, 1<<31, &base),
	} {
		if err != nil {
			return err
		}
	}
	bw.UIDBase = uint32(base)
	return nil
}

// diskSetting reads GUILDS_SANDBOX_DISK, each agent's workspace quota: a size (default 10GiB), or
// none (or 0) for no quota.
func diskSetting(cfg config.Config, dst *int64) error {
	v := cfg.Getenv("GUILDS_SANDBOX_DISK")
	switch v {
	case "":
		*dst = sandbox.DefaultDisk
		return nil
	case "none", "0":
		*dst = 0
		return nil
	}
	n, err := sandbox.ParseBytes(v)
	if err != nil {
		return fmt.Errorf("GUILDS_SANDBOX_DISK: %w (or none for no quota)", err)
	}
	if n < sandbox.MinDisk {
		return fmt.Errorf("GUILDS_SANDBOX_DISK=%q is below the smallest workspace quota, %d MiB (or set none)", v, sandbox.MinDisk>>20)
	}
	*dst = n
	return nil
}

// reporter returns the provider's isolation report, or nil when it has none.
func reporter(p sandbox.Provider) sandbox.Reporter {
	r, _ := p.(sandbox.Reporter)
	return r
}
