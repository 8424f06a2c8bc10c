package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxd"
	"github.com/guildsai/guilds/orchestrator/sandbox/seccomp"
)

var errEmptyArgv = errors.New("exec: empty command")

// ToolsMount is where the pinned engines folder appears inside a bubblewrap sandbox (an npm
// node_modules/.bin folder appears as ToolsMount/node_modules/.bin, as in the image).
const ToolsMount = "/opt/guilds/tools"

// Bubblewrap gives each agent a sandbox of its own: the agent runs as the unprivileged user agent
// (uid 1000, no capabilities, no_new_privs, a seccomp filter) in its own user namespace, where uid
// 1000 is a host uid of that agent's own which owns its folder, mounted at /home/agent. It sees
// /usr read-only, a minimal /etc, size-limited private /tmp and /run/guilds, the helpers at
// /usr/local/bin and nothing else of the host. Its network namespace has its own loopback (the
// browser's DevTools port lives there) and, with NetworkUser, outbound traffic through
// slirp4netns, kept off the host's loopback and the host's own addresses; its processes, memory
// and CPU are bounded by control groups.
//
// Each agent's sandbox is one long-lived bwrap (started on the agent's first call) whose PID 1 is
// the exec server guilds-sandboxd; every Exec and Start asks that server to fork/exec the command
// inside the namespaces already built, so a call pays no bwrap start-up. A server that died is
// restarted on the next call; Close stops every sandbox.
type Bubblewrap struct {
	Root     string // host folder holding one folder per agent
	BinDir   string // host folder holding the guilds-* helpers and guilds-sandboxd
	ToolsDir string // optional host folder of pinned engines, mounted read-only at ToolsMount
	Env      []string
	Log      *slog.Logger  // nil discards; says when a sandbox starts, restarts or stops
	Idle     time.Duration // a sandbox with no call for this long stops; 0: DefaultSandboxIdle
	Network  string        // NetworkUser (the default) or NetworkNone
	// AllowNets are ranges the user-mode network may reach although the policy refuses them
	// (GUILDS_SANDBOX_ALLOW_NETS); the host's own addresses stay out of reach.
	AllowNets []netip.Prefix
	Limits    Limits // zero fields: the defaults
	UIDBase   uint32 // first id of the host range for agents; 0: DefaultUIDBase
	// Bind are host folders bound read-only into every sandbox at the same path, each one's bin
	// (or itself) on PATH (GUILDS_SANDBOX_BIND, checked by CheckBinds): toolchains such as Go.
	Bind  []string
	bwrap string

	prepOnce sync.Once
	h        *hostSetup

	mu      sync.Mutex
	closed  bool
	servers map[string]*serverSlot
	seq     int
	disk    *diskImages // the workspace images mounted, once a sandbox opened with a quota
}

// DefaultSandboxIdle is how long an agent's sandbox may go without a call before it stops, and
// with it what still runs there (background commands, Chromium); the next call starts it again.
const DefaultSandboxIdle = 30 * time.Minute

// shmSize bounds a sandbox's /dev/shm.
const shmSize = 64 << 20

// serverSlot holds one agent's running sandbox; its lock serializes that agent's starts. busy
// counts the Exec calls in flight; the idle timer runs only while it is zero.
type serverSlot struct {
	mu    sync.Mutex
	srv   *server
	ran   bool // a server ran before: a new start is a restart
	busy  int
	last  time.Time
	timer *time.Timer
}

// hostSetup is what every sandbox of a provider shares, found or made once: the isolation this
// host allows, and what it does not.
type hostSetup struct {
	status  Status
	limits  Limits
	asRoot  bool          // agents run as host uids of their own; the orchestrator makes their network and groups
	uids    *uidAllocator // asRoot only
	cg      *cgroups      // nil: no control groups
	hostNet *os.File      // the host's network namespace (NetworkUser as root)
	slirp   string        // slirp4netns (NetworkUser)
	netErr  error         // why NetworkUser cannot be had here: every start fails with it
	rootErr error         // why the sandbox folder cannot serve: every start fails with it
	filter  []byte        // the seccomp program; nil when it cannot be built here
	disk    *diskImages   // the workspace quota; nil: none
	etc     string        // the generated /etc files
	gid     uint32        // the network helpers' group
	stageMu sync.Mutex
}

// NewBubblewrap checks that bwrap is installed and returns the provider.
func NewBubblewrap(root, binDir, toolsDir string) (*Bubblewrap, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap is not installed (apt-get install bubblewrap, or run `make setup`)", ErrUnavailable)
	}
	return &Bubblewrap{Root: root, BinDir: binDir, ToolsDir: toolsDir, bwrap: path}, nil
}

// Kind names the provider.
func (p *Bubblewrap) Kind() string { return "bubblewrap" }

// Status says what isolation the provider's sandboxes have on this host.
func (p *Bubblewrap) Status() Status {
	h := p.host()
	st := h.status
	st.Missing = slices.Clone(st.Missing)
	return st
}

// host prepares, once, what every sandbox shares, and logs once what this host does not allow.
func (p *Bubblewrap) host() *hostSetup {
	p.prepOnce.Do(func() {
		p.h = p.prepare()
		if m := p.h.status.Missing; len(m) > 0 {
			p.log().Warn("sandbox isolation is incomplete on this host", "missing", m)
		} else {
			p.log().Info("sandbox isolation", "network", p.h.status.Network, "limits", p.h.status.Limits)
		}
	})
	return p.h
}

func (p *Bubblewrap) prepare() *hostSetup {
	h := &hostSetup{limits: p.Limits.withDefaults(), asRoot: os.Geteuid() == 0, gid: p.UIDBase}
	if h.gid == 0 {
		h.gid = DefaultUIDBase
	}
	h.status = Status{Backend: p.Kind(), UserNamespace: true, Missing: []string{}, Bind: append([]string{}, p.Bind...)}
	missing := func(format string, a ...any) { h.status.Missing = append(h.status.Missing, fmt.Sprintf(format, a...)) }
	network := p.Network
	switch {
	case network == "" && !h.asRoot:
		// The default cannot be had without root; a loopback only is the safe side of it.
		network = NetworkNone
		missing("network user: the orchestrator does not run as root, so the sandboxes have a loopback only")
	case network == "":
		network = NetworkUser
	}
	h.status.Network = network
	if err := os.MkdirAll(p.Root, 0o711); err != nil {
		h.rootErr = fmt.Errorf("create the sandbox folder: %w", err)
	} else if h.asRoot {
		if err := reachable(p.Root); err != nil {
			h.rootErr = fmt.Errorf("%w: the sandbox folder %s is out of the sandbox users' reach (%v): put GUILDS_DATA_DIR where others may search, or chmod o+x the folder in the way", ErrUnavailable, p.Root, err)
		}
	}
	if h.rootErr != nil {
		missing("sandbox folder: %v", h.rootErr)
	}
	h.etc = filepath.Join(p.Root, systemDirName, "etc")
	if err := writeEtc(h.etc, network); err != nil && h.rootErr == nil {
		h.rootErr = err
		missing("%v", err)
	}
	if h.asRoot {
		h.uids = &uidAllocator{base: h.gid, log: p.log()}
	} else {
		missing("per-agent host uids: the orchestrator does not run as root, so every agent's uid %d is the orchestrator's own user", SandboxUID)
	}
	switch network {
	case NetworkNone:
	case NetworkUser:
		h.netErr = p.prepareNetwork(h)
		if h.netErr != nil {
			missing("network user: %v", h.netErr)
		}
	default:
		h.netErr = fmt.Errorf("GUILDS_SANDBOX_NETWORK=%q is unknown: use user or none", network)
		missing("%v", h.netErr)
	}
	if h.asRoot {
		h.cg = setupCgroups(h.limits)
		h.status.Limits = h.cg.enforced
		h.status.Missing = append(h.status.Missing, h.cg.missing...)
		if len(h.cg.parent) == 0 {
			h.cg = nil
		}
	} else {
		missing("limits: the orchestrator does not run as root, so it cannot make control groups (no pids, memory or cpu limit)")
	}
	h.status.DiskQuota = DiskQuotaNone
	if h.limits.Disk > 0 && h.rootErr == nil {
		if d, err := probeDiskImages(p.Root, h.limits.Disk, p.log()); err != nil {
			missing("disk: no workspace quota (GUILDS_SANDBOX_DISK): %v", err)
		} else {
			h.disk, h.status.DiskQuota, h.status.Limits.Disk = d, DiskQuotaImage, h.limits.Disk
			p.checkDiskSpace(h)
		}
	}
	if prog, err := seccomp.Program(); err != nil {
		missing("seccomp: %v", err)
	} else {
		h.filter, h.status.Seccomp = prog, true
	}
	return h
}

// checkDiskSpace reports the workspace images' claim on the host's disk, and warns when together
// they may outgrow it.
func (p *Bubblewrap) checkDiskSpace(h *hostSetup) {
	space, err := diskSpace(p.Root, h.limits.Disk)
	if err != nil {
		p.log().Warn("sandbox workspace images: the disk they may take is not known", "err", err.Error())
		return
	}
	h.status.DiskSpace = &space
	if space.Oversubscribed {
		p.log().Warn("sandbox workspace images may outgrow the host's disk: a workspace may meet a full disk before its quota; free space, or lower GUILDS_SANDBOX_DISK for new agents",
			"images", space.Images, "quota", sizeLabel(space.Quota), "may_grow_by", space.Growth, "free", space.Free, "folder", p.Root)
	}
}

// prepareNetwork finds slirp4netns and nft and installs the host filter.
func (p *Bubblewrap) prepareNetwork(h *hostSetup) error {
	if !h.asRoot {
		return fmt.Errorf("%w: the user-mode network needs the orchestrator to run as root (or set GUILDS_SANDBOX_NETWORK=none)", ErrUnavailable)
	}
	var err error
	if h.slirp, err = exec.LookPath("slirp4netns"); err != nil {
		return fmt.Errorf("%w: slirp4netns is not installed (apt-get install slirp4netns, or run `make setup`; or set GUILDS_SANDBOX_NETWORK=none)", ErrUnavailable)
	}
	nft, err := exec.LookPath("nft")
	if err != nil {
		return fmt.Errorf("%w: nft is not installed, so the sandboxes' traffic cannot be kept off the host's addresses (apt-get install nftables, or run `make setup`; or set GUILDS_SANDBOX_NETWORK=none)", ErrUnavailable)
	}
	egress := egressPolicy(p.AllowNets, nameservers("/etc/resolv.conf"))
	if err := installHostFilter(nft, h.gid, egress); err != nil {
		return fmt.Errorf("%w: keep the sandboxes' traffic off the host's addresses and the refused ranges: %v (or set GUILDS_SANDBOX_NETWORK=none)", ErrUnavailable, err)
	}
	h.status.Egress = &egress
	if h.hostNet, err = os.Open("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("%w: open the host's network namespace: %v", ErrUnavailable, err)
	}
	return nil
}

// Open returns the agent's sandbox, creating its folder (owned by the agent's host uid) on first
// use; its bwrap starts on the first Exec or Start.
func (p *Bubblewrap) Open(ctx context.Context, agentID string) (Sandbox, error) {
	if !agentIDPattern.MatchString(agentID) {
		return nil, fmt.Errorf("agent id %q cannot name a sandbox folder", agentID)
	}
	h := p.host()
	if h.rootErr != nil {
		return nil, h.rootErr
	}
	home := filepath.Join(p.Root, agentID, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("create sandbox folder: %w", err)
	}
	o := noOwner
	if h.uids != nil {
		if err := os.Chmod(filepath.Dir(home), 0o711); err != nil {
			return nil, fmt.Errorf("create sandbox folder: %w", err)
		}
		var err error
		if o, err = h.uids.assign(p.Root, agentID, home); err != nil {
			return nil, err
		}
	}
	if h.disk != nil {
		p.mu.Lock()
		p.disk = h.disk // for Close
		p.mu.Unlock()
		if err := h.disk.attach(home, o); err != nil {
			return nil, err
		}
	}
	b := &bwrapBox{p: p, agentID: agentID, home: home, owner: o}
	b.fileAPI = fileAPI{places: Places{Home: Home, RunDir: RunDir, Tmp: Tmp}, home: home, owner: o, exec: b.Exec}
	return b, nil
}

// Close stops every agent's sandbox (each server, and with it every process in its PID
// namespace) and refuses later calls.
func (p *Bubblewrap) Close() error {
	p.mu.Lock()
	p.closed = true
	all := p.servers
	p.servers = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for id, sl := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl.mu.Lock()
			defer sl.mu.Unlock()
			if sl.timer != nil {
				sl.timer.Stop()
			}
			if sl.srv != nil {
				sl.srv.kill()
				sl.srv = nil
				p.log().Info("sandbox stopped", "agent_id", id)
			}
		}()
	}
	wg.Wait()
	p.mu.Lock()
	disk := p.disk
	p.mu.Unlock()
	if disk != nil {
		disk.detachAll()
	}
	return nil
}

// Running counts the agents' sandboxes running now.
func (p *Bubblewrap) Running() int {
	p.mu.Lock()
	slots := make([]*serverSlot, 0, len(p.servers))
	for _, sl := range p.servers {
		slots = append(slots, sl)
	}
	p.mu.Unlock()
	n := 0
	for _, sl := range slots {
		if sl.mu.TryLock() { // one starting or stopping now is not counted
			if sl.srv != nil {
				n++
			}
			sl.mu.Unlock()
		}
	}
	return n
}

// stop ends one agent's sandbox, if it runs; its next call starts it again.
func (p *Bubblewrap) stop(agentID string) {
	p.mu.Lock()
	sl := p.servers[agentID]
	p.mu.Unlock()
	if sl == nil {
		return
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.srv != nil {
		sl.srv.kill()
		sl.srv = nil
	}
}

func (p *Bubblewrap) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}

// acquire returns the agent's running sandbox, starting it (again, if it died or stopped) as
// needed, and holds it awake until release is called.
func (p *Bubblewrap) acquire(ctx context.Context, b *bwrapBox) (*server, func(), error) {
	sl, srv, err := p.server(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	sl.busy++
	if sl.timer != nil {
		sl.timer.Stop()
	}
	sl.mu.Unlock()
	var once sync.Once
	return srv, func() { once.Do(func() { p.release(b.agentID, sl) }) }, nil
}

// release ends one call's hold on the slot's sandbox and arms the idle timer when none is left.
func (p *Bubblewrap) release(agentID string, sl *serverSlot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.busy--
	sl.last = time.Now()
	if sl.busy > 0 || sl.srv == nil {
		return
	}
	if sl.timer == nil {
		sl.timer = time.AfterFunc(p.idle(), func() { p.expire(agentID, sl) })
	} else {
		sl.timer.Reset(p.idle())
	}
}

// expire stops the slot's sandbox when it has had no call for the whole idle period.
func (p *Bubblewrap) expire(agentID string, sl *serverSlot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.srv == nil || sl.busy > 0 {
		return
	}
	if rest := p.idle() - time.Since(sl.last); rest > 0 {
		sl.timer.Reset(rest)
		return
	}
	sl.srv.kill()
	sl.srv = nil
	p.log().Info("sandbox stopped after being idle", "agent_id", agentID, "idle", p.idle().String())
}

func (p *Bubblewrap) idle() time.Duration {
	if p.Idle > 0 {
		return p.Idle
	}
	return DefaultSandboxIdle
}

// server returns the agent's slot, locked, and its running sandbox, starting it (again, if it
// died or stopped) as needed.
func (p *Bubblewrap) server(ctx context.Context, b *bwrapBox) (sl *serverSlot, srv *server, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, errClosed
	}
	if p.servers == nil {
		p.servers = map[string]*serverSlot{}
	}
	sl = p.servers[b.agentID]
	if sl == nil {
		sl = &serverSlot{}
		p.servers[b.agentID] = sl
	}
	p.mu.Unlock()
	locked := sl
	locked.mu.Lock()
	defer func() {
		if err != nil {
			locked.mu.Unlock()
		}
	}()
	if sl.srv != nil && sl.srv.alive() {
		return sl, sl.srv, nil
	}
	if sl.srv != nil {
		p.log().Warn("sandbox exec server ended: restarting the sandbox", "agent_id", b.agentID, "state", sl.srv.state())
		sl.srv.kill()
		sl.srv = nil
	}
	// The sandbox outlives this call and serves the agent's next ones: the call's cancellation or
	// short timeout does not abort its start (serverStartTimeout bounds it).
	srv, err = b.start(context.WithoutCancel(ctx))
	if err != nil {
		return nil, nil, err
	}
	p.log().Info("sandbox started", "agent_id", b.agentID, "pid", srv.cmd.Process.Pid, "restart", sl.ran)
	sl.srv, sl.ran = srv, true
	// Closed meanwhile: do not leave this one behind.
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		srv.kill()
		sl.srv = nil
		return nil, nil, errClosed
	}
	return sl, srv, nil
}

// errClosed is the error of a call after Close.
var errClosed = errors.New("the sandbox provider is closed (the orchestrator is shutting down)")

type bwrapBox struct {
	fileAPI
	p       *Bubblewrap
	agentID string
	home    string // host folder mounted at Home
	owner   owner  // the agent's host uid and gid
}

func (b *bwrapBox) Places() Places { return b.places }

// Running reports whether the agent's sandbox runs now (a call would not have to start it).
func (b *bwrapBox) Running() bool {
	b.p.mu.Lock()
	sl := b.p.servers[b.agentID]
	b.p.mu.Unlock()
	if sl == nil {
		return false
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.srv != nil && sl.srv.alive()
}

// start starts the agent's sandbox: its control groups, its network namespace with slirp4netns
// attached, then bwrap as the agent's host uid from a thread inside both, and waits until the
// exec server reports ready.
func (b *bwrapBox) start(ctx context.Context) (*server, error) {
	h := b.p.host()
	if h.rootErr != nil {
		return nil, h.rootErr
	}
	network := h.status.Network
	if network == NetworkUser && h.netErr != nil {
		return nil, h.netErr
	}
	mounts, err := b.stagedMounts(h)
	if err != nil {
		return nil, err
	}
	// What the sandbox holds beside bwrap, freed in reverse once bwrap ended (startServer runs it).
	var held []func()
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	handedOver := false
	defer func() {
		if !handedOver {
			release()
		}
	}()
	var cg *cgroup
	if h.cg != nil {
		b.p.mu.Lock()
		b.p.seq++
		name := fmt.Sprintf("%d.%d.%s", os.Getpid(), b.p.seq, b.agentID)
		b.p.mu.Unlock()
		if cg, err = h.cg.create(name); err != nil {
			return nil, err
		}
		held = append(held, cg.remove)
	}
	var netns *os.File
	if network == NetworkUser {
		if netns, err = newNetns(h.hostNet); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		defer netns.Close() // bwrap and slirp4netns hold it from here on
		sl, err := startSlirp(h.slirp, netns, h.gid)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		held = append(held, sl.stop)
	}
	var extra []*os.File
	args := b.serverArgs(h, mounts)
	if h.filter != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("seccomp pipe: %w", err)
		}
		_, werr := w.Write(h.filter) // far below a pipe's buffer
		w.Close()
		if werr != nil {
			r.Close()
			return nil, fmt.Errorf("seccomp pipe: %w", werr)
		}
		defer r.Close()
		extra = append(extra, r)
		args = append([]string{"--seccomp", strconv.Itoa(sandboxd.CtlFD + len(extra))}, args...)
	}
	cmd := exec.Command(b.p.bwrap, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if b.owner.set() {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(b.owner.uid), Gid: uint32(b.owner.gid), Groups: []uint32{}}
	}
	if cg != nil && cg.fd != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.fd.Fd())
	}
	launch := func(cmd *exec.Cmd) error {
		if netns == nil && (cg == nil || len(cg.c.own) == 0) {
			return cmd.Start()
		}
		return isolatedStart(cmd, h.hostNet, netns, cg)
	}
	handedOver = true
	srv, err := startServer(ctx, cmd, extra, launch, release)
	if err != nil {
		return nil, err
	}
	srv.cg = cg
	return srv, nil
}

// mount is one read-only bind of a host path into the sandbox.
type mount struct{ src, dst string }

// stagedMounts lists the helpers, the exec server and the engines, each at a host path the
// agent's host uid can reach (a copy under the sandbox folder when the original is out of reach).
func (b *bwrapBox) stagedMounts(h *hostSetup) ([]mount, error) {
	srv := filepath.Join(b.p.BinDir, ServerName)
	if fi, err := os.Stat(srv); err != nil || fi.IsDir() {
		return nil, fmt.Errorf("%w: the sandbox exec server %s is missing (run `make build`)", ErrUnavailable, srv)
	}
	helpers, err := filepath.Glob(filepath.Join(b.p.BinDir, "guilds-*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(helpers)
	var ms []mount
	for _, h := range helpers {
		if name := filepath.Base(h); name != ServerName && !strings.HasPrefix(name, ".") {
			ms = append(ms, mount{h, filepath.Join(BinDir, name)})
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: no guilds-* helpers in %s (run `make build`)", ErrUnavailable, b.p.BinDir)
	}
	ms = append(ms, mount{srv, ServerPath})
	if b.p.ToolsDir != "" {
		src, dst := b.p.ToolsDir, ToolsMount
		if filepath.Base(src) == ".bin" && filepath.Base(filepath.Dir(src)) == "node_modules" {
			// An npm .bin folder links into its node_modules: mount that whole folder where the
			// image keeps it (/opt/guilds/tools/node_modules), so the links and playwright-core resolve.
			src, dst = filepath.Dir(src), ToolsMount+"/node_modules"
		}
		ms = append(ms, mount{src, dst})
	}
	if !b.owner.set() {
		return ms, nil // bwrap runs as the orchestrator's user, who reaches them all
	}
	h.stageMu.Lock()
	defer h.stageMu.Unlock()
	staged := filepath.Join(b.p.Root, systemDirName)
	for i, m := range ms {
		fi, err := os.Stat(m.src)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if fi.IsDir() {
			ms[i].src, err = stageTree(m.src, filepath.Join(staged, "tools"))
		} else {
			ms[i].src, err = stageFile(m.src, filepath.Join(staged, "bin"))
		}
		if err != nil {
			return nil, fmt.Errorf("put %s where the sandbox user can read it: %w", m.src, err)
		}
	}
	return ms, nil
}

// serverArgs builds the bwrap command line of the agent's long-lived sandbox: its namespaces, its
// mounts, its limits, its base environment, with the exec server as PID 1.
func (b *bwrapBox) serverArgs(h *hostSetup, mounts []mount) []string {
	uid := strconv.Itoa(SandboxUID)
	a := []string{"--die-with-parent", "--unshare-user", "--disable-userns", "--uid", uid, "--gid", uid, "--cap-drop", "ALL",
		"--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox", "--unshare-cgroup-try"}
	if h.status.Network != NetworkUser {
		a = append(a, "--unshare-net") // its own loopback and nothing else
	}
	a = append(a, "--ro-bind", "/usr", "/usr", "--tmpfs", "/usr/local")
	// Merged-/usr systems link /bin, /lib, … into /usr; others get them bound read-only.
	for _, top := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(top)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(top); err == nil {
				a = append(a, "--symlink", target, top)
			}
		default:
			a = append(a, "--ro-bind", top, top)
		}
	}
	a = append(a, etcArgs(h.etc)...)
	size := func(n int64) string { return strconv.FormatInt(n, 10) }
	a = append(a, "--proc", "/proc", "--dev", "/dev",
		"--size", size(shmSize), "--perms", "01777", "--tmpfs", "/dev/shm",
		"--size", size(h.limits.Tmp), "--perms", "01777", "--tmpfs", Tmp,
		"--dir", "/run", "--size", size(h.limits.Run), "--perms", "0700", "--tmpfs", RunDir,
		"--dir", "/home", "--bind", b.home, Home)
	for _, m := range mounts {
		a = append(a, "--ro-bind", m.src, m.dst)
	}
	for _, d := range b.p.Bind {
		a = append(a, "--ro-bind", d, d)
	}
	// The folders bwrap made to hold the mounts are the agent's until remounted read-only: the
	// agent must not rename /usr/local/bin away and put helpers of its own in its place.
	a = append(a, "--remount-ro", "/usr/local", "--remount-ro", "/dev", "--remount-ro", "/")
	a = append(a, "--chdir", Home, "--clearenv")
	for _, kv := range b.baseEnv() {
		k, v, _ := cut(kv)
		a = append(a, "--setenv", k, v)
	}
	return append(a, "--", ServerPath)
}

// baseEnv is the sandbox's environment before the provider's and the request's additions.
func (b *bwrapBox) baseEnv() []string {
	path := BinDir + ":/usr/bin:/bin"
	env := []string{"HOME=" + Home, "USER=agent", "LOGNAME=agent", "TMPDIR=" + Tmp, "LANG=C.UTF-8",
		"GUILDS_HOME=" + Home, "GUILDS_RUN_DIR=" + RunDir}
	if b.p.ToolsDir != "" {
		tools := ToolsMount
		if filepath.Base(b.p.ToolsDir) == ".bin" && filepath.Base(filepath.Dir(b.p.ToolsDir)) == "node_modules" {
			tools = ToolsMount + "/node_modules/.bin"
		}
		path = BinDir + ":" + tools + ":/usr/bin:/bin"
		env = append(env, "GUILDS_TOOLS_DIR="+tools)
	}
	for _, d := range b.p.Bind {
		path += ":" + bindPath(d)
	}
	return append([]string{"PATH=" + path}, env...)
}

// request builds the exec server's request: the whole environment (base, provider, request; a
// later KEY wins) and the workspace as the working directory.
func (b *bwrapBox) request(req ExecRequest) (sandboxd.Request, error) {
	if len(req.Argv) == 0 {
		return sandboxd.Request{}, errEmptyArgv
	}
	all := append(append(b.baseEnv(), b.p.Env...), req.Env...)
	env := make([]string, 0, len(all))
	at := map[string]int{}
	for _, kv := range all {
		k, _, ok := cut(kv)
		if !ok {
			return sandboxd.Request{}, fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
		if i, seen := at[k]; seen {
			env[i] = kv
			continue
		}
		at[k] = len(env)
		env = append(env, kv)
	}
	return sandboxd.Request{Argv: req.Argv, Env: env, Dir: Home, TimeoutMS: req.Timeout.Milliseconds()}, nil
}

// launch starts req through the agent's exec server, restarting the sandbox once when its server
// turns out to be gone before the command started. The sandbox stays awake until release.
func (b *bwrapBox) launch(ctx context.Context, req sandboxd.Request, stdin, stdout, stderr *os.File) (r *remote, release func(), err error) {
	for attempt := 0; ; attempt++ {
		srv, release, err := b.p.acquire(ctx, b)
		if err != nil {
			return nil, nil, err
		}
		before := srv.events()
		r, err := srv.start(ctx, req, stdin, stdout, stderr)
		if errors.Is(err, errServerGone) && attempt == 0 && ctx.Err() == nil && srv.ended(time.Second) {
			release()
			continue // server() logs the restart
		}
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("start %s in the sandbox: %w", req.Argv[0], err)
		}
		r.srv, r.before = srv, before
		return r, release, nil
	}
}

func (b *bwrapBox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	sreq, err := b.request(req)
	if err != nil {
		return ExecResult{}, err
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	stdin, feed, err := stdinFor(req.Stdin)
	if err != nil {
		return ExecResult{}, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return ExecResult{}, fmt.Errorf("output pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		stdin.Close()
		outR.Close()
		outW.Close()
		return ExecResult{}, fmt.Errorf("output pipe: %w", err)
	}
	start := time.Now()
	r, release, err := b.launch(ctx, sreq, stdin, outW, errW)
	stdin.Close()
	outW.Close()
	errW.Close()
	stdout, stderr := &capped{limit: maxOutput}, &capped{limit: maxOutput}
	outDone, errDone := drain(stdout, outR), drain(stderr, errR)
	defer feed()
	if err != nil {
		outR.Close()
		errR.Close()
		<-outDone
		<-errDone
		return ExecResult{}, err
	}
	defer release()
	ev, werr := r.wait(ctx)
	// The command exited; what it left holding its output gets outputGrace before reading stops.
	grace, stopGrace := context.WithTimeout(context.Background(), outputGrace)
	for _, done := range []chan struct{}{outDone, errDone} {
		select {
		case <-done:
		case <-grace.Done():
		}
	}
	stopGrace()
	outR.Close()
	errR.Close()
	<-outDone
	<-errDone
	after := r.srv.events()
	res := ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: ev.ExitCode, Duration: time.Since(start),
		OOMKilled: int(after.oomKills - r.before.oomKills), PidsRefused: int(after.pidsRefused - r.before.pidsRefused)}
	switch {
	case werr != nil && ctx.Err() != nil:
		return res, fmt.Errorf("%s: %w", req.Argv[0], werr)
	case werr != nil:
		return res, fmt.Errorf("run %s: %w", req.Argv[0], werr)
	case ev.TimedOut:
		return res, fmt.Errorf("%s: %w", req.Argv[0], context.DeadlineExceeded)
	}
	return res, nil
}

// stdinFor returns the command's stdin: /dev/null, or a pipe that feed fills with data (feed
// returns once the writer is done or the command stopped reading).
func stdinFor(data []byte) (*os.File, func(), error) {
	if data == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, fmt.Errorf("open %s: %w", os.DevNull, err)
		}
		return f, func() {}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("input pipe: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_, _ = w.Write(data)
		w.Close()
		close(done)
	}()
	// A command that ends without reading all of it: closing the write side unblocks the writer.
	return r, func() { _ = w.Close(); <-done }, nil
}

// Start starts a long-lived command in the sandbox (its own process group; stdout and stderr
// to out) and returns without waiting.
func (b *bwrapBox) Start(req ExecRequest, out io.Writer) (*Process, error) {
	sreq, err := b.request(req)
	if err != nil {
		return nil, err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer null.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	r, release, err := b.launch(context.Background(), sreq, null, pw, pw)
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	// A long-lived process, like a background command, does not hold the sandbox awake.
	release()
	copied := drain(out, pr)
	p := &Process{Pid: r.pid, signal: r.signal, done: make(chan struct{})}
	go func() {
		ev, err := r.wait(context.Background())
		select {
		case <-copied:
		case <-time.After(outputGrace):
		}
		pr.Close()
		<-copied
		if err != nil {
			p.state = err.Error()
		} else {
			p.state = fmt.Sprintf("exit status %d", ev.ExitCode)
		}
		close(p.done)
	}()
	return p, nil
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], i > 0
		}
	}
	return "", "", false
}
