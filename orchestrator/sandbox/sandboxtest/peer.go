package sandboxtest

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// PeerListener makes a test host of the test's own and listens on a TCP port there: a network
// namespace joined to this one by a veth pair, this side 198.18.<subnet>.1 and the peer
// 198.18.<subnet>.2, which a sandbox on the user-mode network reaches as it would reach a host on
// the internet (and the host's own addresses, the veth's side among them, it must not). Tests that
// may run at once take different subnets. See PeerListenerAt.
func PeerListener(t testing.TB, subnet int) net.Listener {
	t.Helper()
	return PeerListenerAt(t, netip.MustParsePrefix(fmt.Sprintf("198.18.%d.1/30", subnet)), netip.MustParseAddr(fmt.Sprintf("198.18.%d.2", subnet)))
}

// PeerListenerAt makes a test host at peer and listens on a TCP port there: a network namespace
// joined to this one by a veth pair whose side here holds host (an address, with the range both
// sides share). The test host is scaffolding, not what a test checks: when this machine will not
// make one (after three tries with fresh names), the test is skipped, saying why (it fails under
// CI). Everything is removed when the test ends.
func PeerListenerAt(t testing.TB, host netip.Prefix, peer netip.Addr) net.Listener {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		missing(t, "iproute2 is missing")
	}
	var ns string
	var err error
	for try := 0; try < 3; try++ {
		if ns, err = makePeer(t, host, peer); err == nil {
			break
		}
	}
	if err != nil {
		links, _ := exec.Command("ip", "-br", "link").CombinedOutput()
		missing(t, fmt.Sprintf("cannot make a test host here: %v; links: %s", err, links))
	}
	target, err := os.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	self, err := os.Open("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	// A socket belongs to the namespace it was made in: listen from a thread inside the peer's.
	type result struct {
		ln  net.Listener
		err error
	}
	rc := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			rc <- result{err: err}
			return // the thread stays locked and ends with the goroutine
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(peer, 0).String())
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		rc <- result{ln, err}
	}()
	r := <-rc
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.ln.Close() })
	return r.ln
}

// missing skips the test for want of a part of this machine, or fails it under CI.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// peerSeq numbers this process's test hosts, for names of their own.
var peerSeq atomic.Int32

// makePeer makes the test host's namespace and veth pair, with names of their own.
func makePeer(t testing.TB, host netip.Prefix, peer netip.Addr) (string, error) {
	id := fmt.Sprintf("%d%d", os.Getpid()%10000, peerSeq.Add(1))
	ns, hostLink, peerLink := "guilds-peer-"+id, "gp"+id+"h", "gp"+id+"p"
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %v: %v: %s", args, err, bytes.TrimSpace(out))
		}
		return nil
	}
	_ = exec.Command("ip", "link", "del", hostLink).Run()
	_ = exec.Command("ip", "netns", "del", ns).Run()
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", hostLink).Run()
		exec.Command("ip", "netns", "del", ns).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", ns},
		// One command makes the pair with its peer end already in the namespace.
		{"link", "add", hostLink, "type", "veth", "peer", "name", peerLink, "netns", ns},
		{"addr", "add", host.String(), "dev", hostLink},
		{"link", "set", hostLink, "up"},
		{"-n", ns, "addr", "add", netip.PrefixFrom(peer, host.Bits()).String(), "dev", peerLink},
		{"-n", ns, "link", "set", peerLink, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			return "", err
		}
	}
	return ns, nil
}
