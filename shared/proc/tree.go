package proc

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// descendants lists the live processes under this one that belong to the command led by
// leader: the leader's own subtree, anything in its session or process group, and anything
// carrying its token (a grandchild that called setsid and was re-parented to us, the subreaper).
// The leader itself is left out: its exit status belongs to exec.Cmd.Wait.
func descendants(leader int, token string) []int {
	if !hasChildren() {
		// Every survivor of an exited command has a living ancestor that is our child: its
		// parent, or the topmost survivor, re-parented to us as the subreaper. No children, so
		// nothing was left behind, and the /proc walk (a read per thread) is skipped.
		return nil
	}
	var out []int
	type node struct {
		pid    int
		marked bool
	}
	queue := []node{}
	for _, c := range childrenOf(os.Getpid()) {
		queue = append(queue, node{c, false})
	}
	seen := map[int]bool{}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n.pid] {
			continue
		}
		seen[n.pid] = true
		b, err := os.ReadFile("/proc/" + strconv.Itoa(n.pid) + "/stat")
		if err != nil {
			continue
		}
		_, state, pgrp, sid, ok := parseStat(b)
		if !ok {
			continue
		}
		mine := n.marked || n.pid == leader || pgrp == leader || sid == leader || hasToken(n.pid, token)
		if mine && n.pid != leader && state != 'Z' && state != 'X' {
			out = append(out, n.pid)
		}
		if mine && n.pid != leader && state == 'Z' {
			reap([]int{n.pid}) // an exited orphan of ours: collect it
		}
		for _, c := range childrenOf(n.pid) {
			queue = append(queue, node{c, mine})
		}
	}
	return out
}

// hasChildren reports whether this process has any child, live or exited and not yet reaped;
// it answers true when it cannot tell.
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return !errors.Is(err, unix.ECHILD)
}

// childrenOf lists pid's children from /proc/<pid>/task/*/children, or, where the kernel does
// not offer that file, from a scan of every process's parent.
func childrenOf(pid int) []int {
	taskDir := "/proc/" + strconv.Itoa(pid) + "/task/"
	d, err := os.Open(taskDir)
	if err != nil {
		return nil
	}
	tids, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(taskDir + tid + "/children")
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(taskDir + tid); serr == nil {
				return scanChildren(pid) // a kernel without CONFIG_PROC_CHILDREN
			}
			continue // the thread just ended
		}
		for _, f := range bytes.Fields(b) {
			if n, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func scanChildren(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if ppid, _, _, _, ok := parseStat(b); ok && ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// parseStat reads the parent, state, process group and session out of /proc/<pid>/stat.
func parseStat(b []byte) (ppid int, state byte, pgrp, sid int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, 0, 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 4 || len(f[0]) != 1 {
		return 0, 0, 0, 0, false
	}
	ppid, e1 := strconv.Atoi(string(f[1]))
	pgrp, e2 := strconv.Atoi(string(f[2]))
	sid, e3 := strconv.Atoi(string(f[3]))
	if e1 != nil || e2 != nil || e3 != nil {
		return 0, 0, 0, 0, false
	}
	return ppid, f[0][0], pgrp, sid, true
}
