package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the host mounts its control groups.
const cgroupRoot = "/sys/fs/cgroup"

// sandboxGroups names the folder, under the orchestrator's own group, that holds one group per
// running sandbox.
const sandboxGroups = "guilds-sandboxes"

// cgroups creates each sandbox's control groups: v2 where the host has the unified hierarchy,
// else v1's pids, memory and cpu controllers, each used where the host lets it be written.
type cgroups struct {
	v2       bool
	parent   map[string]string // v1 controller (or "unified") → the folder of the sandboxes' groups
	own      map[string]string // v1 controller → the orchestrator's own group, to put a launching thread back
	limits   Limits
	enforced StatusLimits
	missing  []string
}

// v1Controllers are the controllers a sandbox's v1 groups use, with the file each limit goes to.
var v1Controllers = []string{"pids", "memory", "cpu"}

// setupCgroups finds the orchestrator's groups and makes the folder of the sandboxes' groups in
// each controller it may write; what it may not is listed in missing.
func setupCgroups(l Limits) *cgroups {
	c := &cgroups{parent: map[string]string{}, own: map[string]string{}, limits: l}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		c.missing = append(c.missing, fmt.Sprintf("cgroups: read /proc/self/cgroup: %v (no pids, memory or cpu limit)", err))
		return c
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		c.v2 = true
		c.setupV2(self)
		return c
	}
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			paths[ctrl] = parts[2]
		}
	}
	for _, ctrl := range v1Controllers {
		own, ok := paths[ctrl]
		if !ok {
			c.missing = append(c.missing, fmt.Sprintf("cgroup %s: the host has no %s controller (no %s limit)", ctrl, ctrl, limitName(ctrl)))
			continue
		}
		ownDir := filepath.Join(cgroupRoot, ctrl, own)
		dir := filepath.Join(ownDir, sandboxGroups)
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			removeStale(dir)
			err = probeGroup(dir, c.limitFiles(ctrl, false))
		}
		if err != nil {
			c.missing = append(c.missing, fmt.Sprintf("cgroup %s: %v (no %s limit)", ctrl, err, limitName(ctrl)))
			continue
		}
		c.parent[ctrl], c.own[ctrl] = dir, ownDir
		c.markEnforced(ctrl)
	}
	return c
}

// probeGroup creates a group under parent, writes files (a limit each) in it and removes it, so a
// folder that exists but takes no new group or limit (a read-only cgroup mount, a container
// without the rights) is found once at start rather than at every sandbox's start. The probe's
// name starts with this process's pid, as removeStale expects.
func probeGroup(parent string, files [][2]string) error {
	dir := filepath.Join(parent, fmt.Sprintf("%d.probe", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create a probe group: %w", err)
	}
	werr := writeLimits(dir, files)
	if err := syscall.Rmdir(dir); err != nil && werr == nil {
		werr = fmt.Errorf("remove the probe group %s: %w", dir, err)
	}
	return werr
}

// writeLimits writes each file of a group; swap accounting is optional: without it there is no
// swap limit to set.
func writeLimits(dir string, files [][2]string) error {
	for _, f := range files {
		err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0)
		if err != nil && !(errors.Is(err, os.ErrNotExist) && strings.Contains(f[0], "sw")) {
			return fmt.Errorf("set %s: %w", f[0], err)
		}
	}
	return nil
}

// limitFiles are the files, and their values, that set controller ctrl's limit in one sandbox's
// group: v1's or the unified hierarchy's.
func (c *cgroups) limitFiles(ctrl string, v2 bool) [][2]string {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch {
	case ctrl == "pids":
		return [][2]string{{"pids.max", n(c.limits.Pids)}}
	case ctrl == "memory" && v2:
		return [][2]string{{"memory.max", n(c.limits.Memory)}, {"memory.swap.max", "0"}}
	case ctrl == "memory":
		return [][2]string{{"memory.limit_in_bytes", n(c.limits.Memory)}, {"memory.memsw.limit_in_bytes", n(c.limits.Memory)}}
	case ctrl == "cpu" && v2:
		return [][2]string{{"cpu.weight", n(c.limits.CPUWeight)}}
	case ctrl == "cpu":
		return [][2]string{{"cpu.shares", n(max(2, c.limits.CPUWeight*1024/100))}}
	}
	return nil
}

// setupV2 prepares the unified hierarchy: the orchestrator moves into a leaf of its own group so
// that group may delegate pids, memory and cpu to the sandboxes' groups beside it.
func (c *cgroups) setupV2(self []byte) {
	own := ""
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	fail := func(err error) {
		c.missing = append(c.missing, fmt.Sprintf("cgroup v2: %v (no pids, memory or cpu limit)", err))
	}
	ownDir := filepath.Join(cgroupRoot, own)
	avail, err := os.ReadFile(filepath.Join(ownDir, "cgroup.controllers"))
	if err != nil {
		fail(err)
		return
	}
	var want []string
	for _, ctrl := range v1Controllers {
		if bytes.Contains(append(append([]byte(" "), bytes.TrimSpace(avail)...), ' '), []byte(" "+ctrl+" ")) {
			want = append(want, "+"+ctrl)
		} else {
			c.missing = append(c.missing, fmt.Sprintf("cgroup v2: the %s controller is not delegated to %s (no %s limit)", ctrl, ownDir, limitName(ctrl)))
		}
	}
	if len(want) == 0 {
		return
	}
	enable := []byte(strings.Join(want, " "))
	if err := os.WriteFile(filepath.Join(ownDir, "cgroup.subtree_control"), enable, 0); err != nil && own != "/" {
		// A group holding processes cannot delegate: move the orchestrator into a leaf first.
		leaf := filepath.Join(ownDir, "orchestrator")
		if err := os.MkdirAll(leaf, 0o755); err != nil {
			fail(err)
			return
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			fail(fmt.Errorf("move the orchestrator into %s: %w", leaf, err))
			return
		}
		if err := os.WriteFile(filepath.Join(ownDir, "cgroup.subtree_control"), enable, 0); err != nil {
			fail(fmt.Errorf("delegate %s in %s: %w", enable, ownDir, err))
			return
		}
	}
	dir := filepath.Join(ownDir, sandboxGroups)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), enable, 0); err != nil {
		fail(fmt.Errorf("delegate %s in %s: %w", enable, dir, err))
		return
	}
	removeStale(dir)
	for _, w := range want {
		ctrl := strings.TrimPrefix(w, "+")
		if err := probeGroup(dir, c.limitFiles(ctrl, true)); err != nil {
			c.missing = append(c.missing, fmt.Sprintf("cgroup v2 %s: %v (no %s limit)", ctrl, err, limitName(ctrl)))
			continue
		}
		c.parent["unified"] = dir
		c.markEnforced(ctrl)
	}
}

func (c *cgroups) markEnforced(ctrl string) {
	switch ctrl {
	case "pids":
		c.enforced.Pids = c.limits.Pids
	case "memory":
		c.enforced.Memory = c.limits.Memory
	case "cpu":
		c.enforced.CPU = c.limits.CPUWeight
	}
}

func limitName(ctrl string) string {
	if ctrl == "pids" {
		return "process"
	}
	return ctrl
}

// removeStale removes the groups that sandboxes of an orchestrator no longer running left behind
// (each group's name starts with the pid of the orchestrator that made it).
func removeStale(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.SplitN(e.Name(), ".", 2)[0])
		if !e.IsDir() || err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		_ = syscall.Rmdir(filepath.Join(dir, e.Name()))
	}
}

// cgroup is one sandbox's groups.
type cgroup struct {
	c    *cgroups
	dirs map[string]string // v1 controller (or "unified") → the sandbox's folder
	fd   *os.File          // v2: the folder, for CLONE_INTO_CGROUP
}

// create makes a sandbox's groups, named name, and writes its limits.
func (c *cgroups) create(name string) (*cgroup, error) {
	g := &cgroup{c: c, dirs: map[string]string{}}
	for ctrl, parent := range c.parent {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.remove()
			return nil, fmt.Errorf("create the sandbox's cgroup: %w", err)
		}
		g.dirs[ctrl] = dir
		files := c.limitFiles(ctrl, false)
		if ctrl == "unified" {
			for _, on := range []struct {
				ctrl string
				set  bool
			}{{"pids", c.enforced.Pids > 0}, {"memory", c.enforced.Memory > 0}, {"cpu", c.enforced.CPU > 0}} {
				if on.set {
					files = append(files, c.limitFiles(on.ctrl, true)...)
				}
			}
		}
		if err := writeLimits(dir, files); err != nil {
			g.remove()
			return nil, fmt.Errorf("the sandbox's cgroup: %w", err)
		}
	}
	if dir, ok := g.dirs["unified"]; ok {
		fd, err := os.Open(dir)
		if err != nil {
			g.remove()
			return nil, fmt.Errorf("open the sandbox's cgroup: %w", err)
		}
		g.fd = fd
	}
	return g, nil
}

// enterThread moves the calling OS thread into the sandbox's v1 groups, so what it forks starts
// there (v1 has no way to fork into a group).
func (g *cgroup) enterThread() error {
	tid := []byte(strconv.Itoa(syscall.Gettid()))
	for ctrl, dir := range g.dirs {
		if ctrl == "unified" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "tasks"), tid, 0); err != nil {
			return fmt.Errorf("enter the sandbox's %s cgroup: %w", ctrl, err)
		}
	}
	return nil
}

// leaveThread puts the calling OS thread back into the orchestrator's own groups.
func (g *cgroup) leaveThread() error {
	tid := []byte(strconv.Itoa(syscall.Gettid()))
	for ctrl := range g.dirs {
		if own, ok := g.c.own[ctrl]; ok {
			if err := os.WriteFile(filepath.Join(own, "tasks"), tid, 0); err != nil {
				return fmt.Errorf("leave the sandbox's %s cgroup: %w", ctrl, err)
			}
		}
	}
	return nil
}

// limitEvents counts what the sandbox's limits refused so far.
type limitEvents struct {
	oomKills    uint64 // processes the kernel killed for want of memory
	pidsRefused uint64 // forks and new threads refused at the process limit
}

// events reads the sandbox's limit counters; a counter the host does not keep reads 0.
func (g *cgroup) events() limitEvents {
	var ev limitEvents
	if dir, ok := g.dirs["memory"]; ok {
		ev.oomKills = counter(filepath.Join(dir, "memory.oom_control"), "oom_kill")
	} else if dir, ok := g.dirs["unified"]; ok {
		ev.oomKills = counter(filepath.Join(dir, "memory.events"), "oom_kill")
	}
	if dir, ok := g.dirs["pids"]; ok {
		ev.pidsRefused = counter(filepath.Join(dir, "pids.events"), "max")
	} else if dir, ok := g.dirs["unified"]; ok {
		ev.pidsRefused = counter(filepath.Join(dir, "pids.events"), "max")
	}
	return ev
}

// counter reads the value of the "key value" line of a cgroup file, 0 when it has none.
func counter(file, key string) uint64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes the sandbox's groups once its processes are gone (they may take a moment to
// leave after the sandbox's PID 1 ended).
func (g *cgroup) remove() {
	if g.fd != nil {
		g.fd.Close()
	}
	for _, dir := range g.dirs {
		for i := 0; i < 50; i++ {
			if err := syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
