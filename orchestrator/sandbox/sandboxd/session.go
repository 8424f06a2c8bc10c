package sandboxd

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// sessionEndLimit bounds how long endSession keeps at a session whose processes will not go (one
// stuck in the kernel, say).
const sessionEndLimit = 5 * time.Second

// endSession kills every process of session sid (a command and all it started that did not move to
// a session of its own) and returns once none is left. Each round sends SIGKILL to every process
// group of the session (a group's signal also reaches the child of a fork under way) and to every
// member, then looks again, so what was forked while a round ran is caught by the next, however
// fast it forks. It gives up after sessionEndLimit.
func endSession(sid int) {
	deadline := time.Now().Add(sessionEndLimit)
	for {
		members := sessionMembers(sid)
		if len(members) == 0 || time.Now().After(deadline) {
			return
		}
		killed := map[int]bool{}
		for _, m := range members {
			if !killed[m.pgrp] {
				killed[m.pgrp] = true
				_ = syscall.Kill(-m.pgrp, syscall.SIGKILL)
			}
			_ = syscall.Kill(m.pid, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// member is one live process of a session.
type member struct{ pid, pgrp int }

// sessionMembers lists the processes of session sid that have not exited (a zombie holds nothing
// but its pid, which its reaper frees).
func sessionMembers(sid int) []member {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []member
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		state, pgrp, s, ok := parseStat(b)
		if ok && s == sid && state != 'Z' && state != 'X' {
			out = append(out, member{pid, pgrp})
		}
	}
	return out
}

// parseStat reads the state, process group and session of a /proc/<pid>/stat line (the command
// name before them may hold spaces and parentheses: the fields start after its last ')').
func parseStat(b []byte) (state byte, pgrp, sid int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 4 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	pgrp, e1 := strconv.Atoi(string(f[2]))
	sid, e2 := strconv.Atoi(string(f[3]))
	if e1 != nil || e2 != nil {
		return 0, 0, 0, false
	}
	return f[0][0], pgrp, sid, true
}
