package sandbox

import (
	"fmt"
	"net/netip"
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
	// DiskSpace is the workspace images' claim on the host's disk at start; nil without a quota.
	DiskSpace *DiskSpace `json:"disk_space,omitempty"`
	// Egress is what the user-mode network may reach; nil without one.
	Egress  *Egress  `json:"egress,omitempty"`
	Missing []string `json:"missing"` // what this host does not let the sandbox enforce, and why
	// Bind are the host folders bound read-only into every sandbox (GUILDS_SANDBOX_BIND).
	Bind []string `json:"bind"`
}

// Egress is the user-mode network's policy: the host's own addresses are always refused, and
// so are the Refused ranges but for the Allowed ones (GUILDS_SANDBOX_ALLOW_NETS); the Resolvers
// (the host's, from /etc/resolv.conf, to which slirp4netns forwards the sandbox's DNS) are
// reachable on port 53 whatever their range.
type Egress struct {
	Refused   []string `json:"refused"`
	Allowed   []string `json:"allowed"`
	Resolvers []string `json:"resolvers"`
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

// ParseNets reads a list of ranges separated by commas (GUILDS_SANDBOX_ALLOW_NETS): each in CIDR
// form, such as 10.1.0.0/16 or fd00:1::/64, or an address alone for itself.
func ParseNets(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !strings.Contains(item, "/") {
			a, err := netip.ParseAddr(item)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is not a range such as 10.1.0.0/16 or fd00:1::/64, nor an address", item)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, fmt.Errorf("%q is not a range such as 10.1.0.0/16 or fd00:1::/64", item)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("%q has bits set past its first %d: write the range as %s", item, p.Bits(), p.Masked())
		}
		out = append(out, p)
	}
	return out, nil
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
