//go:build linux

// Package seccomp builds the seccomp-BPF denylist filter that bubblewrap sandboxes load with bwrap --seccomp FD.
package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Offsets of the 32-bit words of struct seccomp_data the filter reads. The
// argument offsets select the low word of each 64-bit argument, which is only
// right on little-endian machines; both supported architectures are.
const (
	offNr      = 0
	offArch    = 4
	offArg0Low = 16
	offArg1Low = 24
)

// bpfMaxInsns is the kernel's limit on the length of one filter (BPF_MAXINSNS).
const bpfMaxInsns = 4096

// Actions the filter returns.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

// nsCloneFlags are the clone flags that create namespaces; clone with any of them is refused.
const nsCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// sysNr names one syscall number of the native architecture.
type sysNr struct {
	name string
	nr   uint32
}

// archSpec describes the native syscall ABI the filter is built for.
type archSpec struct {
	audit  uint32  // seccomp_data.arch of native syscalls
	x32    bool    // refuse syscall numbers with __X32_SYSCALL_BIT set (amd64)
	denied []sysNr // syscalls refused with EPERM whatever their arguments
}

// x32SyscallBit is __X32_SYSCALL_BIT: x32 syscalls carry AUDIT_ARCH_X86_64 and are told apart only by this bit.
const x32SyscallBit = 0x40000000

// Filter returns the seccomp-BPF program for the native architecture; it fails on any but amd64 and arm64.
func Filter() ([]unix.SockFilter, error) {
	spec, err := native()
	if err != nil {
		return nil, err
	}
	return build(spec)
}

// Program returns the Filter program encoded as bwrap --seccomp reads it: 8 native-endian bytes per instruction.
func Program() ([]byte, error) {
	prog, err := Filter()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(prog))
	for _, ins := range prog {
		out = binary.NativeEndian.AppendUint16(out, ins.Code)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

// build assembles the filter for spec.
//
// Every syscall except ioctl, clone and ptrace reaches a return instruction
// having loaded only nr and arch, so the kernel's seccomp action cache
// (kernel/seccomp.c, seccomp_is_const_allow) resolves allowed syscalls without
// running the filter.
func build(spec archSpec) ([]unix.SockFilter, error) {
	var a asm
	a.load(offArch)
	a.jeq(spec.audit, "", "kill")
	a.load(offNr)
	if spec.x32 {
		a.jset(x32SyscallBit, "enosys", "")
	}
	a.jeq(unix.SYS_IOCTL, "ioctl", "")
	a.jeq(unix.SYS_CLONE, "clone", "")
	a.jeq(unix.SYS_PTRACE, "ptrace", "")
	// clone3 passes its flags in memory the filter cannot read; ENOSYS makes
	// glibc and Go fall back to clone, whose flags it can.
	a.jeq(unix.SYS_CLONE3, "enosys", "")
	for _, s := range spec.denied {
		a.jeq(s.nr, "eperm", "")
	}
	a.ret(retAllow)

	// The kernel truncates the ioctl request to 32 bits, so the low word is the whole request.
	a.label("ioctl")
	a.load(offArg1Low)
	a.jeq(unix.TIOCSTI, "eperm", "")
	a.jeq(unix.TIOCLINUX, "eperm", "allow")

	// clone uses only the low 32 bits of its flags, where all namespace flags are.
	a.label("clone")
	a.load(offArg0Low)
	a.jset(nsCloneFlags, "eperm", "allow")

	// PTRACE_TRACEME and requests on existing tracees stay allowed. The
	// kernel compares the full request, so matching the low word only refuses more.
	a.label("ptrace")
	a.load(offArg0Low)
	a.jeq(unix.PTRACE_ATTACH, "eperm", "")
	a.jeq(unix.PTRACE_SEIZE, "eperm", "allow")

	a.label("allow")
	a.ret(retAllow)
	a.label("eperm")
	a.ret(retEPERM)
	a.label("enosys")
	a.ret(retENOSYS)
	a.label("kill")
	a.ret(retKill)
	return a.assemble()
}

// asm is a tiny classic-BPF assembler with forward jumps to named labels.
type asm struct {
	prog   []unix.SockFilter
	jumps  []jump
	labels map[string]int
	err    error
}

// jump records the label targets of the conditional jump at prog[at]; "" is the next instruction.
type jump struct {
	at     int
	jt, jf string
}

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = make(map[string]int)
	}
	if _, dup := a.labels[name]; dup && a.err == nil {
		a.err = fmt.Errorf("seccomp: label %q defined twice", name)
	}
	a.labels[name] = len(a.prog)
}

func (a *asm) emit(code uint16, k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *asm) load(off uint32) { a.emit(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }

func (a *asm) ret(k uint32) { a.emit(unix.BPF_RET|unix.BPF_K, k) }

func (a *asm) jeq(k uint32, jt, jf string) { a.cond(unix.BPF_JEQ, k, jt, jf) }

func (a *asm) jset(k uint32, jt, jf string) { a.cond(unix.BPF_JSET, k, jt, jf) }

func (a *asm) cond(op uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, jump{at: len(a.prog), jt: jt, jf: jf})
	a.emit(unix.BPF_JMP|op|unix.BPF_K, k)
}

// assemble resolves the jumps, refusing any whose offset does not fit in 8 bits.
func (a *asm) assemble() ([]unix.SockFilter, error) {
	if a.err != nil {
		return nil, a.err
	}
	if len(a.prog) > bpfMaxInsns {
		return nil, fmt.Errorf("seccomp: program has %d instructions, the kernel accepts at most %d", len(a.prog), bpfMaxInsns)
	}
	if n := len(a.prog); n == 0 || a.prog[n-1].Code != unix.BPF_RET|unix.BPF_K {
		return nil, fmt.Errorf("seccomp: program does not end with a return")
	}
	offset := func(from int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := a.labels[label]
		if !ok {
			return 0, fmt.Errorf("seccomp: undefined label %q", label)
		}
		d := to - (from + 1)
		if d < 0 || d > 0xff {
			return 0, fmt.Errorf("seccomp: jump from %d to %q (%d) needs offset %d, outside [0, 255]", from, label, to, d)
		}
		return uint8(d), nil
	}
	prog := append([]unix.SockFilter(nil), a.prog...)
	for _, j := range a.jumps {
		var err error
		if prog[j.at].Jt, err = offset(j.at, j.jt); err != nil {
			return nil, err
		}
		if prog[j.at].Jf, err = offset(j.at, j.jf); err != nil {
			return nil, err
		}
	}
	return prog, nil
}
