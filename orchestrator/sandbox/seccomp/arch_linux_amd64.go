package seccomp

import "golang.org/x/sys/unix"

// native describes the amd64 syscall ABI.
func native() (archSpec, error) {
	return archSpec{
		audit: unix.AUDIT_ARCH_X86_64,
		x32:   true,
		denied: append(commonDenied(),
			sysNr{"iopl", unix.SYS_IOPL},
			sysNr{"ioperm", unix.SYS_IOPERM},
			sysNr{"uselib", unix.SYS_USELIB},
			sysNr{"ustat", unix.SYS_USTAT},
			sysNr{"sysfs", unix.SYS_SYSFS},
			sysNr{"_sysctl", unix.SYS__SYSCTL},
		),
	}, nil
}
