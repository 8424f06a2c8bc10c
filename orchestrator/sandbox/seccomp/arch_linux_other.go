//go:build linux && !amd64 && !arm64

package seccomp

import (
	"fmt"
	"runtime"
)

// native refuses architectures whose syscall numbers and seccomp_data layout the filter was not written for.
func native() (archSpec, error) {
	return archSpec{}, fmt.Errorf("seccomp: unsupported GOARCH %q: the sandbox filter supports only amd64 and arm64", runtime.GOARCH)
}
