package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ParseBinds reads GUILDS_SANDBOX_BIND: host folders separated by commas (or colons, as in
// PATH), each absolute; empty parts are skipped.
func ParseBinds(v string) ([]string, error) {
	var out []string
	for _, d := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ':' }) {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("%q is not an absolute path: name host folders such as /usr/local/go", d)
		}
		out = append(out, filepath.Clean(d))
	}
	return out, nil
}

// CheckBinds refuses a bind that is not an existing folder, that is / or /usr, that is, holds or
// sits in a folder the sandbox makes itself (/home/agent, /run, /proc, /dev, /etc, /bin, /sbin,
// /lib, /lib64; /tmp itself, not a folder under it), or that holds or sits in one of the guarded folders (the orchestrator's
// data, its binaries' folder, the agents' folders): no agent may read those. Folders under /usr
// are allowed (already visible; /usr/local is the sandbox's own, so /usr/local/go needs the bind).
// Links are resolved first, so a link cannot smuggle a refused folder in.
func CheckBinds(binds []string, guarded ...string) error {
	for _, d := range binds {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return fmt.Errorf("bind %s: %w", d, err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return fmt.Errorf("bind %s: not a folder", d)
		}
		for _, p := range []string{d, real} {
			if p == "/" || p == "/usr" {
				return fmt.Errorf("bind %s: the sandbox mounts %s itself; name a toolchain's own folder, such as /usr/local/go or /opt/toolchain", d, p)
			}
			for _, top := range []string{Home, Tmp, "/run", "/proc", "/dev", "/etc", "/bin", "/sbin", "/lib", "/lib64"} {
				// A folder under /tmp is bound over the sandbox's own /tmp, which it does not replace.
				if (within(top, p) && top != Tmp) || within(p, top) {
					return fmt.Errorf("bind %s: it is, holds or sits in %s, which the sandbox makes itself; name a toolchain's own folder, such as /usr/local/go or /opt/toolchain", d, top)
				}
			}
			for _, g := range guarded {
				if g == "" {
					continue
				}
				gr, err := filepath.EvalSymlinks(g)
				if err != nil {
					gr = filepath.Clean(g)
				}
				if within(p, gr) || within(gr, p) {
					return fmt.Errorf("bind %s: it holds or sits in %s (the orchestrator's data, its binaries or the agents' folders), which no sandbox may read", d, g)
				}
			}
		}
		if err := othersReach(real); err != nil {
			return fmt.Errorf("bind %s: %w; the agents' own users mount and read it", d, err)
		}
	}
	return nil
}

// othersReach checks that any user may list and enter dir and enter every folder above it.
func othersReach(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o005 != 0o005 {
		return fmt.Errorf("%s is not readable by other users (mode %v)", dir, fi.Mode().Perm())
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s above it is not searchable by other users (mode %v)", d, fi.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// bindPath is what a bound folder adds to the sandbox's PATH: its bin folder when it has one,
// else the folder itself.
func bindPath(d string) string {
	if fi, err := os.Stat(filepath.Join(d, "bin")); err == nil && fi.IsDir() {
		return filepath.Join(d, "bin")
	}
	return d
}
