package sandbox

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits bound what one bubblewrap sandbox may use; a zero field takes its default.
type Limits struct {
	Pids      int64 // processes and threads (GUILDS_SANDBOX_PIDS)
	Memory    int64 // bytes of memory, its tmpfs pages included (GUILDS_SANDBOX_MEMORY)
	CPUWeight int64 // CPU weight against other sandboxes, 1 to 10000, 100 an even share (GUILDS_SANDBOX_CPU)
	Tmp       int64 // bytes of /tmp (GUILDS_SANDBOX_TMP)
	Run       int64 // bytes of /run/guilds (GUILDS_SANDBOX_RUN)
	Disk      int64 // bytes of the agent's workspace, /home/agent (GUILDS_SANDBOX_DISK); 0: no quota
}

// Default limits of one sandbox.
const (
	DefaultPids      = 1024
	DefaultMemory    = 4 << 30
	DefaultCPUWeight = 100
	DefaultTmp       = 1 << 30
	DefaultRun       = 64 << 20
)

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Pids, DefaultPids)
	def(&l.Memory, DefaultMemory)
	def(&l.CPUWeight, DefaultCPUWeight)
	def(&l.Tmp, DefaultTmp)
	def(&l.Run, DefaultRun)
	l.CPUWeight = min(l.CPUWeight, 10000)
	return l
}

// Network modes of a bubblewrap sandbox (GUILDS_SANDBOX_NETWORK).
const (
	NetworkUser = "user" // its own loopback, outbound traffic through slirp4netns, nothing of the host
	NetworkNone = "none" // its own loopback only
	NetworkHost = "host" // the host's network (the local provider: isolates nothing)
)

// Status says what isolation this orchestrator's sandboxes have, as GET /api/instance reports it.
type Status struct {
	Backend       string       `json:"backend"`
	UserNamespace bool         `json:"user_namespace"` // agents run as uid 1000 mapped to a host uid of their own
	Network       string       `json:"network"`
	Seccomp       bool         `json:"seccomp"`
	Limits        StatusLimits `json:"limits"`
	DiskQuota     string       `json:"disk_quota"` // how the workspace quota is enforced: image, or none
	Missing       []string     `json:"missing"`    // what this host does not let the sandbox enforce, and why
}

// StatusLimits are the limits in force; 0 means not enforced on this host.
type StatusLimits struct {
	Pids   int64 `json:"pids"`
	Memory int64 `json:"memory"`
	CPU    int64 `json:"cpu"`
	Disk   int64 `json:"disk"` // the workspace quota in bytes
}

// Reporter is a Provider that can say what isolation it gives.
type Reporter interface {
	Status() Status
}

// ParseBytes reads a size: a number of bytes, or one with a unit (k, M, G, KiB, MiB, GiB; K, M
// and G count in 1024s, as memory sizes do).
func ParseBytes(s string) (int64, error) {
	v := strings.TrimSpace(s)
	unit := int64(1)
	lower := strings.ToLower(v)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suffix) {
			unit, v = u.n, strings.TrimSpace(v[:len(v)-len(u.suffix)])
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/unit {
		return 0, fmt.Errorf("%q is not a size such as 4GiB, 512MiB or 1048576", s)
	}
	return n * unit, nil
}
