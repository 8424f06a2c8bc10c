//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel tests re-run the test binary as a helper child (TestHelperProcess)
// selected by helperEnv. The child installs the filter on all its threads,
// tries every probe and prints one line: resultMark followed by helperResult
// as JSON. The parent test asserts on it.
const (
	helperEnv  = "GUILDS_SECCOMP_TEST_HELPER"
	benchNEnv  = "GUILDS_SECCOMP_TEST_BENCH_N"
	resultMark = "SECCOMP_TEST_RESULT "
)

// Helper modes.
const (
	modeFiltered      = "filtered"        // filter installed, run the probes
	modeControl       = "control"         // no filter, run the probes safe without it
	modeBenchPlain    = "bench-plain"     // no filter, time getppid
	modeBenchFiltered = "bench-filtered"  // filter installed, time getppid
	modeBenchAllowAll = "bench-allow-all" // a one-instruction allow-all filter installed, time getppid
)

// Pseudo errnos, above any real one, a probe reports when the outcome is not a plain errno.
const (
	notErrno  unix.Errno = 0x10000 // the call failed with an error that is not an errno
	badResult unix.Errno = 0x10001 // the call succeeded but did not do what it should (see Note)
)

// helperResult is what one helper child reports.
type helperResult struct {
	Errno           map[string]int    `json:"errno"`            // probe name -> errno (0 = success)
	Skip            map[string]string `json:"skip,omitempty"`   // probe name -> why it could not run
	Note            map[string]string `json:"note,omitempty"`   // probe name -> detail
	Threads         int               `json:"threads"`          // threads of the helper
	FilteredThreads int               `json:"filtered_threads"` // of those, in seccomp filter mode
	NsPerCall       float64           `json:"ns_per_call,omitempty"`
}

// probe is one syscall the helper tries.
type probe struct {
	name string
	want unix.Errno // under the filter; 0 means the call must succeed
	// unsafeUnfiltered marks probes that would harm the test process if the
	// filter did not stop them, so the unfiltered control child skips them.
	unsafeUnfiltered bool
	// passes marks probes whose want is the kernel's own answer: the filter must let the call through.
	passes bool
	run    func(o *outcome) unix.Errno
}

// outcome collects what a probe has to say beyond its errno.
type outcome struct {
	skip string // why the probe could not run
	note string // detail for the test log
}

// missingPath does not exist, so path-taking probes fail harmlessly (ENOENT) without the filter.
const missingPath = "/nonexistent-guilds-seccomp-probe"

// neg turns a negative int (-1, AT_FDCWD) into a syscall argument.
func neg(v int) uintptr { return uintptr(v) }

// errnoOf maps err to its errno, or notErrno.
func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return notErrno
}

// call wraps a x/sys/unix (or os/exec) call as a probe body.
func call(f func() error) func(*outcome) unix.Errno {
	return func(o *outcome) unix.Errno {
		err := f()
		if err != nil {
			o.note = err.Error()
		}
		return errnoOf(err)
	}
}

// raw wraps a raw syscall as a probe body.
func raw(nr uintptr, args ...uintptr) func(*outcome) unix.Errno {
	return func(*outcome) unix.Errno {
		var a [6]uintptr
		copy(a[:], args)
		_, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return e
	}
}

// rawClone calls clone(flags|CLONE_SIGHAND). CLONE_SIGHAND without CLONE_VM
// makes the kernel refuse with EINVAL before creating anything, so the probe
// cannot fork whatever the filter does: EPERM can only come from the filter.
func rawClone(flags uintptr) func(*outcome) unix.Errno {
	return func(*outcome) unix.Errno {
		_, _, e := unix.RawSyscall6(unix.SYS_CLONE, flags|unix.CLONE_SIGHAND, 0, 0, 0, 0, 0)
		return e
	}
}

// withPty runs f on a fresh pty master, or skips the probe if /dev/ptmx cannot be opened.
func withPty(f func(fd int) unix.Errno) func(*outcome) unix.Errno {
	return func(o *outcome) unix.Errno {
		fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			o.skip = "cannot open /dev/ptmx: " + err.Error()
			return 0
		}
		defer unix.Close(fd)
		return f(fd)
	}
}

// ioctlByte calls ioctl(fd, req, &b).
func ioctlByte(fd int, req uintptr) unix.Errno {
	b := byte('x')
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&b)))
	return e
}

func probes() []probe {
	eperm := unix.EPERM
	var ps []probe
	add := func(name string, want unix.Errno, run func(*outcome) unix.Errno) {
		ps = append(ps, probe{name: name, want: want, run: run})
	}

	// Allowed syscalls keep working.
	add("getpid", 0, func(o *outcome) unix.Errno {
		pid, _, e := unix.Syscall(unix.SYS_GETPID, 0, 0, 0)
		if e == 0 && int(pid) != os.Getpid() {
			o.note = fmt.Sprintf("getpid returned %d, want %d", pid, os.Getpid())
			return badResult
		}
		return e
	})
	add("uname", 0, call(func() error { var u unix.Utsname; return unix.Uname(&u) }))
	add("openat_read", 0, call(func() error {
		fd, err := unix.Openat(unix.AT_FDCWD, "/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Read(fd, make([]byte, 64))
		return err
	}))
	add("exec_true", 0, call(func() error { return exec.Command("/bin/true").Run() }))

	// Architecture: x32 syscall numbers are refused on amd64 and do not exist on arm64.
	add("x32_getpid", unix.ENOSYS, raw(unix.SYS_GETPID|x32SyscallBit))

	// Namespaces: clone with a namespace flag, unshare, clone3.
	add("exec_cloneflags_newuser", eperm, call(func() error {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		return cmd.Run()
	}))
	for _, f := range []struct {
		name string
		flag uintptr
	}{
		{"newuser", unix.CLONE_NEWUSER}, {"newns", unix.CLONE_NEWNS}, {"newpid", unix.CLONE_NEWPID},
		{"newnet", unix.CLONE_NEWNET}, {"newuts", unix.CLONE_NEWUTS}, {"newipc", unix.CLONE_NEWIPC},
		{"newcgroup", unix.CLONE_NEWCGROUP}, {"newtime", unix.CLONE_NEWTIME},
	} {
		add("clone_"+f.name, eperm, rawClone(f.flag))
	}
	// Reaches the kernel, which refuses CLONE_SIGHAND without CLONE_VM.
	ps = append(ps, probe{name: "clone_no_namespace", want: unix.EINVAL, passes: true, run: rawClone(0)})
	add("unshare_newuser", eperm, call(func() error { return unix.Unshare(unix.CLONE_NEWUSER) }))
	// clone3(NULL, sizeof(struct clone_args)) fails with EFAULT in the kernel; ENOSYS is the filter's.
	add("clone3_null", unix.ENOSYS, func(*outcome) unix.Errno {
		_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 88, 0)
		return e
	})

	// ptrace: attaching to a process is refused; TRACEME and requests on tracees are not.
	ps = append(ps,
		probe{name: "ptrace_attach_parent", want: eperm, unsafeUnfiltered: true, run: ptraceParent(unix.PTRACE_ATTACH)},
		probe{name: "ptrace_seize_parent", want: eperm, unsafeUnfiltered: true, run: ptraceParent(unix.PTRACE_SEIZE)})
	// Reaches the kernel, which refuses it because the parent is not our tracee.
	ps = append(ps, probe{name: "ptrace_peekdata_parent", want: unix.ESRCH, passes: true, run: call(func() error {
		_, err := unix.PtracePeekData(os.Getppid(), 0, make([]byte, 8))
		return err
	})})
	add("ptrace_traceme_child", 0, tracemeChild)

	// ioctl: TIOCSTI and TIOCLINUX are refused, other requests are not.
	add("ioctl_tiocsti", eperm, withPty(func(fd int) unix.Errno { return ioctlByte(fd, unix.TIOCSTI) }))
	add("ioctl_tiocsti_high_bits", eperm, withPty(func(fd int) unix.Errno {
		return ioctlByte(fd, 0xdead<<32|unix.TIOCSTI) // the kernel uses only the low 32 bits
	}))
	add("ioctl_tioclinux", eperm, withPty(func(fd int) unix.Errno { return ioctlByte(fd, unix.TIOCLINUX) }))
	add("ioctl_tiocgwinsz", 0, withPty(func(fd int) unix.Errno {
		_, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		return errnoOf(err)
	}))

	// Denied outright. The arguments are invalid, so that without the filter
	// the kernel fails each call (the control child shows how) instead of
	// acting. vhangup has no harmless form and is checked only by TestFilterDecisions.
	pid := uintptr(os.Getpid())
	add("mount", eperm, call(func() error { return unix.Mount("none", missingPath, "tmpfs", 0, "") }))
	add("umount2", eperm, call(func() error { return unix.Unmount(missingPath, 0) }))
	add("pivot_root", eperm, call(func() error { return unix.PivotRoot(missingPath, missingPath) }))
	add("chroot", eperm, call(func() error { return unix.Chroot(missingPath) }))
	add("move_mount", eperm, raw(unix.SYS_MOVE_MOUNT, neg(-1), 0, neg(-1), 0, 0))
	add("open_tree", eperm, raw(unix.SYS_OPEN_TREE, neg(-1), 0, 0))
	add("open_tree_attr", eperm, raw(unix.SYS_OPEN_TREE_ATTR, neg(-1), 0, 0, 0, 0))
	add("fsopen", eperm, raw(unix.SYS_FSOPEN, 0, 0))
	add("fsconfig", eperm, raw(unix.SYS_FSCONFIG, neg(-1), 0, 0, 0, 0))
	add("fsmount", eperm, raw(unix.SYS_FSMOUNT, neg(-1), 0, 0))
	add("fspick", eperm, raw(unix.SYS_FSPICK, neg(-1), 0, 0))
	add("mount_setattr", eperm, raw(unix.SYS_MOUNT_SETATTR, neg(-1), 0, 0, 0, 0))
	add("setns", eperm, call(func() error { return unix.Setns(-1, 0) }))
	add("keyctl", eperm, call(func() error {
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_THREAD_KEYRING, 0, 0, 0)
		return err
	}))
	add("add_key", eperm, raw(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0))
	add("request_key", eperm, raw(unix.SYS_REQUEST_KEY, 0, 0, 0, 0))
	add("open_by_handle_at", eperm, raw(unix.SYS_OPEN_BY_HANDLE_AT, neg(unix.AT_FDCWD), 0, unix.O_RDONLY))
	add("name_to_handle_at", eperm, raw(unix.SYS_NAME_TO_HANDLE_AT, neg(unix.AT_FDCWD), 0, 0, 0, 0))
	add("bpf", eperm, raw(unix.SYS_BPF, 0xffff, 0, 0))
	add("perf_event_open", eperm, raw(unix.SYS_PERF_EVENT_OPEN, 0, 0, neg(-1), neg(-1), 0))
	add("userfaultfd", eperm, raw(unix.SYS_USERFAULTFD, 0xffffffff))
	add("io_uring_setup", eperm, raw(unix.SYS_IO_URING_SETUP, 1, 0))
	add("io_uring_enter", eperm, raw(unix.SYS_IO_URING_ENTER, neg(-1), 0, 0, 0, 0, 0))
	add("io_uring_register", eperm, raw(unix.SYS_IO_URING_REGISTER, neg(-1), 0, 0, 0))
	add("lookup_dcookie", eperm, raw(unix.SYS_LOOKUP_DCOOKIE, 0, 0, 0))
	// Too many segments (EINVAL): nothing is loaded.
	add("kexec_load", eperm, raw(unix.SYS_KEXEC_LOAD, 0, 1<<20, 0, 0))
	// Unknown flags (EINVAL): nothing is loaded.
	add("kexec_file_load", eperm, raw(unix.SYS_KEXEC_FILE_LOAD, neg(-1), neg(-1), 0, 0, 0x80000000))
	add("init_module", eperm, raw(unix.SYS_INIT_MODULE, 0, 0, 0))
	add("finit_module", eperm, raw(unix.SYS_FINIT_MODULE, neg(-1), 0, 0))
	add("delete_module", eperm, raw(unix.SYS_DELETE_MODULE, 0, 0))
	// No magic numbers (EINVAL): no reboot.
	add("reboot", eperm, raw(unix.SYS_REBOOT, 0, 0, 0, 0))
	add("swapon", eperm, raw(unix.SYS_SWAPON, 0, 0))
	add("swapoff", eperm, raw(unix.SYS_SWAPOFF, 0))
	add("acct", eperm, call(func() error { return unix.Acct(missingPath) }))
	add("quotactl", eperm, raw(unix.SYS_QUOTACTL, 0xffffffff, 0, 0, 0))
	add("quotactl_fd", eperm, raw(unix.SYS_QUOTACTL_FD, neg(-1), 0xffffffff, 0, 0))
	// Microseconds out of range (EINVAL): the clock is not set.
	add("settimeofday", eperm, call(func() error { return unix.Settimeofday(&unix.Timeval{Usec: 2_000_000}) }))
	// The monotonic clock cannot be set (EINVAL).
	add("clock_settime", eperm, call(func() error {
		return unix.ClockSettime(unix.CLOCK_MONOTONIC, &unix.Timespec{Sec: 1})
	}))
	add("clock_adjtime", eperm, raw(unix.SYS_CLOCK_ADJTIME, unix.CLOCK_REALTIME, 0))
	add("syslog", eperm, raw(unix.SYS_SYSLOG, 9999, 0, 0))
	// No iovecs: succeeds without copying anything.
	add("process_vm_readv", eperm, raw(unix.SYS_PROCESS_VM_READV, pid, 0, 0, 0, 0, 0))
	add("process_vm_writev", eperm, raw(unix.SYS_PROCESS_VM_WRITEV, pid, 0, 0, 0, 0, 0))
	add("kcmp", eperm, raw(unix.SYS_KCMP, pid, pid, 0xffff, 0, 0))
	add("pidfd_getfd", eperm, raw(unix.SYS_PIDFD_GETFD, neg(-1), 0, 0))
	return ps
}

// ptraceParent tries ptrace(req, parent). If that succeeds (a broken filter),
// it releases the parent so the test fails instead of leaving go test stopped.
func ptraceParent(req int) func(*outcome) unix.Errno {
	return func(*outcome) unix.Errno {
		runtime.LockOSThread() // the tracer is this thread
		defer runtime.UnlockOSThread()
		ppid := os.Getppid()
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(ppid), 0, 0, 0, 0)
		if e != 0 {
			return e
		}
		if req == unix.PTRACE_SEIZE {
			unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_INTERRUPT, uintptr(ppid), 0, 0, 0, 0)
		}
		for range 100 {
			var ws unix.WaitStatus
			if _, err := unix.Wait4(ppid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
				break
			}
			if sig := ws.StopSignal(); sig != unix.SIGSTOP && sig != unix.SIGTRAP {
				unix.PtraceCont(ppid, int(sig)) // pass the signal on and wait for our stop
				continue
			}
			unix.PtraceDetach(ppid) // drops the SIGSTOP of PTRACE_ATTACH
			break
		}
		return 0
	}
}

// tracemeChild starts /bin/true with SysProcAttr.Ptrace, whose forked child
// calls ptrace(PTRACE_TRACEME) before exec (ptrace(TRACEME) in the helper
// itself would make go test its tracer). Start fails with the errno if
// TRACEME is refused; when allowed, TRACEME returns 0, the child stops with
// SIGTRAP at exec and is detached here to run to completion.
func tracemeChild(o *outcome) unix.Errno {
	runtime.LockOSThread() // ptrace requests must come from the thread that started the tracee
	defer runtime.UnlockOSThread()
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		o.note = err.Error()
		return errnoOf(err)
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		o.note = fmt.Sprintf("waiting for the exec stop: status %#x, err %v", ws, err)
		cmd.Process.Kill()
		cmd.Wait()
		return badResult
	}
	if err := unix.PtraceDetach(pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return errnoOf(err)
	}
	if err := cmd.Wait(); err != nil {
		o.note = "traced /bin/true: " + err.Error()
		return badResult
	}
	return 0
}

// installFilter loads prog on every thread of the process, as bwrap would before exec.
func installFilter(prog []unix.SockFilter) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	tid, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", e)
	}
	if tid != 0 {
		return fmt.Errorf("seccomp TSYNC: thread %d cannot be synchronized", tid)
	}
	return nil
}

// threadModes counts the process's threads and those in seccomp filter mode (Seccomp: 2).
func threadModes() (total, filtered int, err error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, 0, err
	}
	for _, task := range tasks {
		status, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread exited
		}
		total++
		if bytes.Contains(status, []byte("\nSeccomp:\t2\n")) {
			filtered++
		}
	}
	return total, filtered, nil
}

// TestHelperProcess is the helper child of the kernel tests; it does nothing unless started by runHelper.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	r, err := helper(mode)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seccomp helper:", err)
		os.Exit(2)
	}
	out, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seccomp helper:", err)
		os.Exit(2)
	}
	fmt.Printf("%s%s\n", resultMark, out)
}

func helper(mode string) (*helperResult, error) {
	r := &helperResult{Errno: map[string]int{}, Skip: map[string]string{}, Note: map[string]string{}}
	switch mode {
	case modeFiltered, modeBenchFiltered:
		prog, err := Filter()
		if err != nil {
			return nil, err
		}
		if err := installFilter(prog); err != nil {
			return nil, err
		}
	case modeBenchAllowAll:
		if err := installFilter([]unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: retAllow}}); err != nil {
			return nil, err
		}
	case modeControl, modeBenchPlain:
		// Same no_new_privs state as the filtered child, no filter.
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown mode %q", mode)
	}
	var err error
	if r.Threads, r.FilteredThreads, err = threadModes(); err != nil {
		return nil, err
	}
	switch mode {
	case modeBenchPlain, modeBenchFiltered, modeBenchAllowAll:
		n, err := strconv.Atoi(os.Getenv(benchNEnv))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad %s: %q", benchNEnv, os.Getenv(benchNEnv))
		}
		r.NsPerCall = timeGetppid(n)
		return r, nil
	}
	for _, p := range probes() {
		if mode == modeControl && p.unsafeUnfiltered {
			continue
		}
		var o outcome
		r.Errno[p.name] = int(p.run(&o))
		if o.skip != "" {
			r.Skip[p.name] = o.skip
		}
		if o.note != "" {
			r.Note[p.name] = o.note
		}
	}
	return r, nil
}

// timeGetppid returns the best of five rounds of n getppid calls, in ns per call.
func timeGetppid(n int) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := math.Inf(1)
	for range 5 {
		start := time.Now()
		for range n {
			unix.Getppid()
		}
		best = min(best, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	return best
}

// runHelper runs the test binary as a helper child in mode and returns its result.
func runHelper(tb testing.TB, mode string, env ...string) *helperResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("helper %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, out, stderr.Bytes())
	}
	for line := range strings.Lines(string(out)) {
		if js, ok := strings.CutPrefix(strings.TrimSpace(line), resultMark); ok {
			var r helperResult
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				tb.Fatalf("helper %s: %v in %s", mode, err, js)
			}
			return &r
		}
	}
	tb.Fatalf("helper %s printed no result\nstdout:\n%s\nstderr:\n%s", mode, out, stderr.Bytes())
	return nil
}

// errName names a probe outcome.
func errName(e int) string {
	switch unix.Errno(e) {
	case 0:
		return "success"
	case notErrno:
		return "a non-errno error"
	case badResult:
		return "a wrong result"
	}
	if n := unix.ErrnoName(unix.Errno(e)); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(e)
}

// TestFilterInKernel loads the filter in a child process and checks what the kernel answers each probe.
func TestFilterInKernel(t *testing.T) {
	filtered := runHelper(t, modeFiltered)
	control := runHelper(t, modeControl)
	if filtered.Threads < 2 || filtered.FilteredThreads != filtered.Threads {
		t.Errorf("filter on %d of %d threads, want all (and more than one)", filtered.FilteredThreads, filtered.Threads)
	}
	if control.FilteredThreads != 0 {
		t.Errorf("control child has %d filtered threads", control.FilteredThreads)
	}
	for _, p := range probes() {
		t.Run(p.name, func(t *testing.T) {
			if reason, ok := filtered.Skip[p.name]; ok {
				t.Skip(reason)
			}
			got, ok := filtered.Errno[p.name]
			if !ok {
				t.Fatal("probe did not run")
			}
			if unix.Errno(got) != p.want {
				t.Errorf("with the filter: %s, want %s", errName(got), errName(int(p.want)))
				if note := filtered.Note[p.name]; note != "" {
					t.Log(note)
				}
			}
			c, ok := control.Errno[p.name]
			if !ok {
				t.Logf("with the filter: %s; not tried without it", errName(got))
			} else {
				t.Logf("with the filter: %s; without: %s", errName(got), errName(c))
				if p.want != 0 && !p.passes && c == int(p.want) {
					t.Logf("note: this probe gets %s here without the filter too, so it does not show the filter acted", errName(c))
				}
			}
		})
	}
}

// seccompData is struct seccomp_data.
type seccompData struct {
	nr   uint32
	arch uint32
	ip   uint64
	args [6]uint64
}

// word is the little-endian 32-bit word of d at byte offset off.
func (d *seccompData) word(off uint32) (uint32, bool) {
	var b [64]byte
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	binary.LittleEndian.PutUint64(b[8:], d.ip)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	if off%4 != 0 || off+4 > uint32(len(b)) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[off:]), true
}

// eval runs prog on d like the kernel's classic BPF interpreter, for the
// opcodes the filter uses. With constOnly it stops, as the kernel's action
// cache does (seccomp_is_const_allow), at any load of something other than
// nr or arch and reports ok == false.
func eval(prog []unix.SockFilter, d seccompData, constOnly bool) (ret uint32, ok bool, err error) {
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		switch ins.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if constOnly && ins.K != offNr && ins.K != offArch {
				return 0, false, nil
			}
			var valid bool
			if acc, valid = d.word(ins.K); !valid {
				return 0, false, fmt.Errorf("pc %d: load at bad offset %d", pc, ins.K)
			}
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			taken := acc == ins.K
			if ins.Code&0xf0 == unix.BPF_JSET {
				taken = acc&ins.K != 0
			}
			if taken {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return ins.K, true, nil
		default:
			return 0, false, fmt.Errorf("pc %d: unexpected opcode %#x", pc, ins.Code)
		}
	}
	return 0, false, errors.New("ran off the end of the program")
}

func mustFilter(t *testing.T) ([]unix.SockFilter, archSpec) {
	t.Helper()
	prog, err := Filter()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := native()
	if err != nil {
		t.Fatal(err)
	}
	return prog, spec
}

func TestProgramEncoding(t *testing.T) {
	prog, _ := mustFilter(t)
	b, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 8*len(prog) {
		t.Fatalf("Program() is %d bytes, want 8*%d", len(b), len(prog))
	}
	for i, ins := range prog {
		c := b[8*i:]
		got := unix.SockFilter{Code: binary.NativeEndian.Uint16(c), Jt: c[2], Jf: c[3], K: binary.NativeEndian.Uint32(c[4:])}
		if got != ins {
			t.Errorf("instruction %d encodes as %+v, want %+v", i, got, ins)
		}
	}
	t.Logf("%d instructions, %d bytes", len(prog), len(b))
}

// TestProgramShape walks the program: valid opcodes and loads, every jump
// target in range, every instruction reachable, and every path ending at a
// return of one of the filter's actions.
func TestProgramShape(t *testing.T) {
	prog, _ := mustFilter(t)
	if len(prog) == 0 || len(prog) > 255 {
		t.Fatalf("program has %d instructions, want a small one", len(prog))
	}
	reachable := make([]bool, len(prog))
	reachable[0] = true
	for i, ins := range prog {
		if !reachable[i] {
			t.Errorf("instruction %d (%+v) is unreachable", i, ins)
		}
		var next []int
		switch ins.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if ins.K%4 != 0 || ins.K > 60 {
				t.Errorf("instruction %d loads bad offset %d", i, ins.K)
			}
			next = []int{i + 1}
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			next = []int{i + 1 + int(ins.Jt), i + 1 + int(ins.Jf)}
		case unix.BPF_RET | unix.BPF_K:
			if !slices.Contains([]uint32{retAllow, retEPERM, retENOSYS, retKill}, ins.K) {
				t.Errorf("instruction %d returns unexpected action %#x", i, ins.K)
			}
		default:
			t.Errorf("instruction %d has unexpected opcode %#x", i, ins.Code)
		}
		for _, n := range next {
			if n >= len(prog) {
				t.Errorf("instruction %d continues at %d, past the end (%d)", i, n, len(prog))
				continue
			}
			reachable[n] = true
		}
	}
}

func TestAssemblerRefusesBadJumps(t *testing.T) {
	var far asm
	far.jeq(1, "end", "")
	for range 256 {
		far.load(offNr)
	}
	far.label("end")
	far.ret(retAllow)
	if _, err := far.assemble(); err == nil || !strings.Contains(err.Error(), "outside [0, 255]") {
		t.Errorf("jump of 256: err = %v, want an out-of-range error", err)
	}

	var undefined asm
	undefined.jeq(1, "nowhere", "")
	undefined.ret(retAllow)
	if _, err := undefined.assemble(); err == nil {
		t.Error("jump to an undefined label assembled")
	}

	var dup asm
	dup.label("x")
	dup.ret(retAllow)
	dup.label("x")
	dup.ret(retAllow)
	if _, err := dup.assemble(); err == nil {
		t.Error("label defined twice assembled")
	}

	var open asm
	open.load(offNr)
	if _, err := open.assemble(); err == nil {
		t.Error("program not ending in a return assembled")
	}
}

// wantDenied are the syscalls the filter must refuse outright on every architecture.
var wantDenied = []string{
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "open_tree_attr", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr", "unshare", "setns", "keyctl", "add_key", "request_key",
	"open_by_handle_at", "name_to_handle_at", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
	"kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
	"quotactl", "quotactl_fd", "settimeofday", "clock_settime", "clock_adjtime", "syslog", "process_vm_readv",
	"process_vm_writev", "lookup_dcookie", "io_uring_setup", "io_uring_enter", "io_uring_register", "vhangup",
	"kcmp", "pidfd_getfd",
}

// wantDeniedAmd64 are the denied syscalls only amd64 has.
var wantDeniedAmd64 = []string{"iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl"}

// TestFilterDecisions evaluates the program on crafted seccomp_data.
func TestFilterDecisions(t *testing.T) {
	prog, spec := mustFilter(t)

	want := slices.Clone(wantDenied)
	if runtime.GOARCH == "amd64" {
		want = append(want, wantDeniedAmd64...)
	}
	var names []string
	seen := map[uint32]string{}
	for _, s := range spec.denied {
		names = append(names, s.name)
		if other, dup := seen[s.nr]; dup {
			t.Errorf("%s and %s are both syscall %d", s.name, other, s.nr)
		}
		seen[s.nr] = s.name
		switch s.nr {
		case unix.SYS_IOCTL, unix.SYS_CLONE, unix.SYS_CLONE3, unix.SYS_PTRACE:
			t.Errorf("%s (%d) is both denied and argument-checked", s.name, s.nr)
		}
	}
	sort.Strings(names)
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Errorf("denied syscalls:\n got %v\nwant %v", names, want)
	}

	args := [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}, {1, 2, 3, 4, 5, 6}}
	check := func(name string, d seccompData, want uint32) {
		t.Helper()
		got, _, err := eval(prog, d, false)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if got != want {
			t.Errorf("%s (nr %d, arch %#x, args %#x): action %#x, want %#x", name, d.nr, d.arch, d.args, got, want)
		}
	}
	sys := func(nr uint32, a ...uint64) seccompData {
		d := seccompData{nr: nr, arch: spec.audit, ip: 0x400000}
		copy(d.args[:], a)
		return d
	}

	for _, s := range spec.denied {
		for _, a := range args {
			check(s.name, seccompData{nr: s.nr, arch: spec.audit, args: a}, retEPERM)
		}
	}
	for _, nr := range []uint32{unix.SYS_GETPID, unix.SYS_GETPPID, unix.SYS_READ, unix.SYS_WRITE, unix.SYS_OPENAT,
		unix.SYS_EXECVE, unix.SYS_EXIT_GROUP, unix.SYS_FUTEX, unix.SYS_RT_SIGRETURN, unix.SYS_SECCOMP} {
		for _, a := range args {
			check("allowed", seccompData{nr: nr, arch: spec.audit, args: a}, retAllow)
		}
	}
	for _, a := range args {
		check("clone3", seccompData{nr: unix.SYS_CLONE3, arch: spec.audit, args: a}, retENOSYS)
	}

	// Foreign architectures, including the compat ones (i386, arm), are killed.
	for _, arch := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, 0} {
		if arch == spec.audit {
			continue
		}
		check("foreign arch getpid", seccompData{nr: unix.SYS_GETPID, arch: arch}, retKill)
		check("foreign arch mount", seccompData{nr: unix.SYS_MOUNT, arch: arch}, retKill)
	}
	if spec.x32 {
		check("x32 getpid", sys(unix.SYS_GETPID|x32SyscallBit), retENOSYS)
		check("x32 mount", sys(unix.SYS_MOUNT|x32SyscallBit), retENOSYS)
		check("x32 clone", sys(unix.SYS_CLONE|x32SyscallBit), retENOSYS)
	}

	// clone: namespace flags in the low word.
	for _, f := range []uint64{unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
		unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME} {
		check("clone namespace", sys(unix.SYS_CLONE, f|uint64(unix.SIGCHLD)), retEPERM)
		check("clone namespace, high word", sys(unix.SYS_CLONE, 0xffffffff00000000|f), retEPERM)
	}
	thread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
		unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	check("clone thread", sys(unix.SYS_CLONE, thread, 0, ^uint64(0), ^uint64(0), ^uint64(0)), retAllow)
	check("clone fork", sys(unix.SYS_CLONE, uint64(unix.SIGCHLD)), retAllow)
	check("clone vfork", sys(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_VFORK|unix.CLONE_PIDFD|uint64(unix.SIGCHLD)), retAllow)
	check("clone high word only", sys(unix.SYS_CLONE, 0xffffffff00000000), retAllow)

	// ptrace: request in the low word of args[0].
	check("ptrace attach", sys(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 1), retEPERM)
	check("ptrace seize", sys(unix.SYS_PTRACE, unix.PTRACE_SEIZE, 1), retEPERM)
	check("ptrace attach, high word", sys(unix.SYS_PTRACE, 0xabcd00000000|unix.PTRACE_ATTACH), retEPERM)
	for _, req := range []uint64{unix.PTRACE_TRACEME, unix.PTRACE_PEEKDATA, unix.PTRACE_CONT, unix.PTRACE_DETACH,
		unix.PTRACE_INTERRUPT, unix.PTRACE_GETREGSET, unix.PTRACE_SETOPTIONS} {
		check("ptrace other", sys(unix.SYS_PTRACE, req, unix.PTRACE_ATTACH, unix.PTRACE_SEIZE), retAllow)
	}

	// ioctl: request in the low word of args[1].
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		check("ioctl denied", sys(unix.SYS_IOCTL, 0, req), retEPERM)
		check("ioctl denied, high word", sys(unix.SYS_IOCTL, 0, 0xffffffff00000000|req), retEPERM)
		check("ioctl request as fd", sys(unix.SYS_IOCTL, req, unix.TIOCGWINSZ, req), retAllow)
	}
	for _, req := range []uint64{unix.TIOCGWINSZ, unix.TCGETS, unix.TIOCINQ, unix.TIOCSCTTY, unix.TIOCSWINSZ} {
		check("ioctl other", sys(unix.SYS_IOCTL, 0, req), retAllow)
	}
}

// TestFilterCacheable checks that the kernel's seccomp action cache can
// resolve every native syscall number but ioctl, clone and ptrace without
// running the filter: the filter returns having looked at nr and arch only.
func TestFilterCacheable(t *testing.T) {
	prog, spec := mustFilter(t)
	argDependent := map[uint32]bool{unix.SYS_IOCTL: true, unix.SYS_CLONE: true, unix.SYS_PTRACE: true}
	denied := map[uint32]bool{unix.SYS_CLONE3: true}
	for _, s := range spec.denied {
		denied[s.nr] = true
	}
	allowed := 0
	for nr := uint32(0); nr < 1024; nr++ {
		ret, constant, err := eval(prog, seccompData{nr: nr, arch: spec.audit}, true)
		if err != nil {
			t.Fatalf("nr %d: %v", nr, err)
		}
		switch {
		case argDependent[nr]:
			if constant {
				t.Errorf("nr %d: constant result %#x, want the arguments checked", nr, ret)
			}
		case !constant:
			t.Errorf("nr %d: result depends on more than nr and arch", nr)
		case denied[nr]:
			if ret == retAllow {
				t.Errorf("nr %d: allowed, want refused", nr)
			}
		case ret != retAllow:
			t.Errorf("nr %d: action %#x, want allow", nr, ret)
		default:
			allowed++
		}
	}
	t.Logf("%d of 1024 syscall numbers resolve to a constant allow", allowed)
}

// BenchmarkFilteredSyscall times getppid in a child without the filter and in
// a child with it, and reports both and their ratio. For scale it also reports
// a child with a one-instruction allow-all filter: what any seccomp filter
// costs an allowed syscall, here entering the kernel's seccomp path at all.
func BenchmarkFilteredSyscall(b *testing.B) {
	const calls = 1 << 20
	env := benchNEnv + "=" + strconv.Itoa(calls)
	var plain, filtered, allowAll float64
	n := 0
	for b.Loop() {
		p := runHelper(b, modeBenchPlain, env)
		f := runHelper(b, modeBenchFiltered, env)
		a := runHelper(b, modeBenchAllowAll, env)
		if p.FilteredThreads != 0 || f.FilteredThreads != f.Threads || a.FilteredThreads != a.Threads {
			b.Fatalf("threads in filter mode: unfiltered child %d of %d, filtered %d of %d, allow-all %d of %d",
				p.FilteredThreads, p.Threads, f.FilteredThreads, f.Threads, a.FilteredThreads, a.Threads)
		}
		plain += p.NsPerCall
		filtered += f.NsPerCall
		allowAll += a.NsPerCall
		n++
	}
	plain /= float64(n)
	filtered /= float64(n)
	allowAll /= float64(n)
	b.ReportMetric(0, "ns/op") // an op is three child processes; the metrics below are what matters
	b.ReportMetric(plain, "unfiltered_ns/getppid")
	b.ReportMetric(filtered, "filtered_ns/getppid")
	b.ReportMetric(filtered/plain, "filtered_x_vs_unfiltered")
	b.ReportMetric(allowAll/plain, "allow_all_x_vs_unfiltered")
}
