package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox"
)

// loadSandbox reads the sandboxes' settings: the kind and its folders, the idle periods, and the
// bubblewrap sandbox's network (and the private ranges it may reach), limits and host uid range;
// unset takes the default.
func loadSandbox(get func(string) string) (Sandbox, error) {
	sb := Sandbox{Kind: get("GUILDS_SANDBOX"), BinDir: get("GUILDS_BIN_DIR"), ToolsDir: get("GUILDS_TOOLS_DIR")}
	switch v := get("GUILDS_SANDBOX_NETWORK"); v {
	case "", sandbox.NetworkUser, sandbox.NetworkNone:
		sb.Network = v
	default:
		return sb, fmt.Errorf("GUILDS_SANDBOX_NETWORK=%q is unknown: use user (outbound traffic, nothing of the host) or none (a loopback only)", v)
	}
	nets, err := sandbox.ParseNets(get("GUILDS_SANDBOX_ALLOW_NETS"))
	if err != nil {
		return sb, fmt.Errorf("GUILDS_SANDBOX_ALLOW_NETS: %w (ranges separated by commas, e.g. 10.20.0.0/16,fd00:1::/64)", err)
	}
	sb.AllowNets = nets
	if sb.Bind, err = sandbox.ParseBinds(get("GUILDS_SANDBOX_BIND")); err != nil {
		return sb, fmt.Errorf("GUILDS_SANDBOX_BIND: %w", err)
	}
	idle := func(name string, dst *time.Duration) error {
		v := get(name)
		if v == "" {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s=%q is not a positive duration such as 10m", name, v)
		}
		*dst = d
		return nil
	}
	count := func(name string, lo, hi int64, dst *int64) error {
		v := get(name)
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
		v := get(name)
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
		idle("GUILDS_CHROMIUM_IDLE", &sb.ChromiumIdle),
		idle("GUILDS_SANDBOX_IDLE", &sb.Idle),
		count("GUILDS_SANDBOX_PIDS", 64, 1<<22, &sb.Limits.Pids),
		count("GUILDS_SANDBOX_CPU", 1, 10000, &sb.Limits.CPUWeight),
		size("GUILDS_SANDBOX_MEMORY", 64<<20, &sb.Limits.Memory),
		size("GUILDS_SANDBOX_TMP", 1<<20, &sb.Limits.Tmp),
		size("GUILDS_SANDBOX_RUN", 1<<20, &sb.Limits.Run),
		disk(get("GUILDS_SANDBOX_DISK"), &sb.Limits.Disk),
		count("GUILDS_SANDBOX_UID_BASE", 65536, 1<<31, &base),
	} {
		if err != nil {
			return sb, err
		}
	}
	sb.UIDBase = uint32(base)
	return sb, nil
}

// disk reads GUILDS_SANDBOX_DISK, each agent's workspace quota: a size (default 10GiB), or none
// (or 0) for no quota.
func disk(v string, dst *int64) error {
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
