package sandboxtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// PeerListener makes a test host of the test's own and listens on a TCP port there: a network
// namespace joined to this one by a veth pair, this side 198.18.<subnet>.1 and the peer
// 198.18.<subnet>.2, which a sandbox on the user-mode network reaches as it would reach a host on
// the internet (and the host's own addresses, the veth's side among them, it must not). Tests that
// may run at once take different subnets. The test host is scaffolding, not what a test checks:
// when this machine will not make one (after three tries with fresh names), the test is skipped,
// saying why. Everything is removed when the test ends.
func PeerListener(t testing.TB, subnet int) net.Listener {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 is missing")
	}
	var ns string
	var err error
	for try := 0; try < 3; try++ {
		if ns, err = makePeer(t, subnet, try); err == nil {
			break
		}
	}
	if err != nil {
		links, _ := exec.Command("ip", "-br", "link").CombinedOutput()
		t.Skipf("cannot make a test host here: %v; links: %s", err, links)
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
		ln, err := net.Listen("tcp", fmt.Sprintf("198.18.%d.2:0", subnet))
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

// makePeer makes the test host's namespace and veth pair, with names of its own for each try.
func makePeer(t testing.TB, subnet, try int) (string, error) {
	id := fmt.Sprintf("%d%d%d", os.Getpid()%10000, subnet, try)
	ns, host, peer := "guilds-peer-"+id, "gp"+id+"h", "gp"+id+"p"
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %v: %v: %s", args, err, bytes.TrimSpace(out))
		}
		return nil
	}
	_ = exec.Command("ip", "link", "del", host).Run()
	_ = exec.Command("ip", "netns", "del", ns).Run()
	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run(); exec.Command("ip", "netns", "del", ns).Run() })
	for _, args := range [][]string{
		{"netns", "add", ns},
		// One command makes the pair with its peer end already in the namespace.
		{"link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns},
		{"addr", "add", fmt.Sprintf("198.18.%d.1/30", subnet), "dev", host},
		{"link", "set", host, "up"},
		{"-n", ns, "addr", "add", fmt.Sprintf("198.18.%d.2/30", subnet), "dev", peer},
		{"-n", ns, "link", "set", peer, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			return "", err
		}
	}
	return ns, nil
}
