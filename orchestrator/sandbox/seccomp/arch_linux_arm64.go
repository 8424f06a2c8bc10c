package seccomp

import "golang.org/x/sys/unix"

// native describes the arm64 syscall ABI, which lacks iopl, ioperm, uselib, ustat, sysfs and _sysctl.
func native() (archSpec, error) {
	return archSpec{audit: unix.AUDIT_ARCH_AARCH64, denied: commonDenied()}, nil
}
