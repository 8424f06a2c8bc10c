package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"golang.org/x/sys/unix"
)

// slirpStartTimeout bounds how long slirp4netns may take to configure a sandbox's network.
const slirpStartTimeout = 10 * time.Second

// sandboxDNS is the resolver slirp4netns offers inside the sandbox (it forwards to the host's).
const sandboxDNS = "10.0.2.3"

// newNetns creates a network namespace and returns it, from a thread that then goes back to the
// host's namespace (hostNet).
func newNetns(hostNet *os.File) (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	out := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // unshare failed: the thread is unchanged
			out <- result{nil, fmt.Errorf("create the sandbox's network namespace: %w", err)}
			return
		}
		f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid()))
		if serr := setns(hostNet, syscall.CLONE_NEWNET); serr != nil {
			// The thread stays locked and ends with this goroutine rather than serve others here.
			if f != nil {
				f.Close()
			}
			out <- result{nil, fmt.Errorf("return to the host's network namespace: %w", serr)}
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("open the sandbox's network namespace: %w", err)
		}
		out <- result{f, err}
	}()
	r := <-out
	return r.f, r.err
}

// isolatedStart starts cmd from an OS thread that first enters netns (nil: the host's) and the
// sandbox's v1 control groups (nil: none), which cmd and all it starts then inherit; the thread
// goes back to the host's namespace and the orchestrator's groups before it runs anything else.
// A thread that cannot go back ends with its goroutine (and, being bwrap's parent, ends bwrap).
func isolatedStart(cmd *exec.Cmd, hostNet, netns *os.File, cg *cgroup) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		clean, err := startOnThread(cmd, hostNet, netns, cg)
		if clean {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// startOnThread is isolatedStart's work on the locked thread; clean reports that the thread is
// back as it was.
func startOnThread(cmd *exec.Cmd, hostNet, netns *os.File, cg *cgroup) (clean bool, err error) {
	clean = true
	if netns != nil {
		if err := setns(netns, syscall.CLONE_NEWNET); err != nil {
			return true, fmt.Errorf("enter the sandbox's network namespace: %w", err)
		}
		defer func() {
			if serr := setns(hostNet, syscall.CLONE_NEWNET); serr != nil {
				clean = false
				if err == nil {
					err = fmt.Errorf("return to the host's network namespace: %w", serr)
				}
			}
		}()
	}
	if cg != nil && len(cg.c.own) > 0 {
		defer func() {
			if lerr := cg.leaveThread(); lerr != nil {
				clean = false
				if err == nil {
					err = lerr
				}
			}
		}()
		if err := cg.enterThread(); err != nil {
			return clean, err
		}
	}
	return clean, cmd.Start()
}

func setns(f *os.File, kind int) error { return unix.Setns(int(f.Fd()), kind) }

// slirp is one sandbox's user-mode network: slirp4netns attached to its network namespace, with
// the host's loopback out of reach, in a mount namespace of its own without capabilities.
type slirp struct {
	cmd  *exec.Cmd
	exit *os.File // closing it ends slirp4netns
	done chan struct{}
	out  *syncCapped
}

// startSlirp attaches slirp4netns (at path) to netns and waits until the network is configured.
// Its sockets belong to group gid, which the host filter keeps off the host's own addresses.
func startSlirp(path string, netns *os.File, gid uint32) (*slirp, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("slirp4netns ready pipe: %w", err)
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, fmt.Errorf("slirp4netns exit pipe: %w", err)
	}
	s := &slirp{exit: exitW, done: make(chan struct{}), out: &syncCapped{c: capped{limit: 16 << 10}}}
	// fd 3: the namespace, 4: ready, 5: exit.
	s.cmd = exec.Command(path, "--configure", "--mtu=65520", "--disable-host-loopback",
		"--enable-sandbox", "--enable-seccomp", "--netns-type=path", "--ready-fd=4", "--exit-fd=5",
		"/proc/self/fd/3", "tap0")
	s.cmd.Env = []string{}
	s.cmd.ExtraFiles = []*os.File{netns, readyW, exitR}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: 0, Gid: gid, Groups: []uint32{}}}
	err = s.cmd.Start()
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		return nil, fmt.Errorf("start slirp4netns: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	ready := make(chan error, 1)
	go func() {
		b := make([]byte, 1)
		_, err := readyR.Read(b)
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(slirpStartTimeout):
		err = fmt.Errorf("not configured within %s", slirpStartTimeout)
	}
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("slirp4netns did not configure the sandbox's network: %v; its output: %s", err, lastLines(s.out.String(), 3))
	}
	return s, nil
}

// stop ends slirp4netns and waits for it.
func (s *slirp) stop() {
	s.exit.Close()
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// hostFilterTable names the nftables table that keeps group gid's sockets off the host.
func hostFilterTable(gid uint32) string { return fmt.Sprintf("guilds_sandbox_%d", gid) }

// refusedNets are the ranges a sandbox's traffic may not reach unless GUILDS_SANDBOX_ALLOW_NETS
// opens them (orchestrator.RefusedNets, which webhooks refuse too).
var refusedNets = orchestrator.RefusedNets

// egressPolicy is what the sandboxes' traffic may reach: everything but the host's own addresses
// (always refused) and the refused ranges, except the allowed ones; the resolvers are reachable
// on port 53 whatever their range (slirp4netns forwards the sandbox's DNS to them).
func egressPolicy(allowed []netip.Prefix, resolvers []netip.Addr) Egress {
	allowed = outermost(allowed)
	e := Egress{Refused: []string{}, Allowed: []string{}, Resolvers: []string{}}
	for _, r := range refusedNets {
		if !slices.ContainsFunc(allowed, func(a netip.Prefix) bool { return covers(a, r) }) {
			e.Refused = append(e.Refused, r.String())
		}
	}
	for _, a := range allowed {
		e.Allowed = append(e.Allowed, a.String())
	}
	for _, r := range resolvers {
		e.Resolvers = append(e.Resolvers, r.String())
	}
	return e
}

// covers reports whether range a holds all of range b.
func covers(a, b netip.Prefix) bool {
	return a.Addr().Is4() == b.Addr().Is4() && a.Bits() <= b.Bits() && a.Contains(b.Addr())
}

// outermost drops the ranges another of the list holds (an nftables set refuses overlapping
// intervals), keeping the order of the rest.
func outermost(ps []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for i, p := range ps {
		held := false
		for j, q := range ps {
			if i != j && covers(q, p) && (q != p || j < i) {
				held = true
				break
			}
		}
		if !held {
			out = append(out, p)
		}
	}
	return out
}

// installHostFilter (re)writes, in one transaction, the nftables rules that refuse every packet a
// socket of group gid (the sandboxes' slirp4netns) sends to an address of this host (its loopback
// and its own addresses, whatever interface holds them) or to a range the policy refuses. The
// policy's resolvers stay reachable on port 53, so names still resolve in the sandbox.
func installHostFilter(nft string, gid uint32, e Egress) error {
	cmd := exec.Command(nft, "-f", "-")
	cmd.Stdin = strings.NewReader(hostFilterScript(gid, e))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// hostFilterScript is installHostFilter's nft script.
func hostFilterScript(gid uint32, e Egress) string {
	var rules strings.Builder
	rule := func(format string, a ...any) {
		fmt.Fprintf(&rules, "\t\tmeta skgid %d "+format+"\n", append([]any{gid}, a...)...)
	}
	family := func(addr string) string {
		if strings.Contains(addr, ":") {
			return "ip6"
		}
		return "ip"
	}
	for _, ns := range e.Resolvers {
		for _, proto := range []string{"udp", "tcp"} {
			rule("%s daddr %s %s dport 53 accept", family(ns), ns, proto)
		}
	}
	rule("fib daddr type local meta l4proto tcp reject with tcp reset")
	rule("fib daddr type local reject")
	sets := func(ranges []string) map[string]string {
		by := map[string][]string{}
		for _, r := range ranges {
			by[family(r)] = append(by[family(r)], r)
		}
		out := map[string]string{}
		for f, rs := range by {
			out[f] = "{ " + strings.Join(rs, ", ") + " }"
		}
		return out
	}
	allowed, refused := sets(e.Allowed), sets(e.Refused)
	for _, f := range []string{"ip", "ip6"} {
		if set, ok := allowed[f]; ok {
			rule("%s daddr %s accept", f, set)
		}
	}
	for _, f := range []string{"ip", "ip6"} {
		if set, ok := refused[f]; ok {
			rule("%s daddr %s meta l4proto tcp reject with tcp reset", f, set)
			rule("%s daddr %s reject", f, set)
		}
	}
	return fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\ntable inet %[1]s {\n\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n%[2]s\t}\n}\n", hostFilterTable(gid), rules.String())
}

// nameservers returns the nameservers of a resolv.conf (those with a zone, which a rule cannot
// name, left out).
func nameservers(file string) []netip.Addr {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Addr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		if ip, err := netip.ParseAddr(fields[1]); err == nil && ip.Zone() == "" && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	return out
}
