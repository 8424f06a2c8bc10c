package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

const fakeHelper = `#!/bin/bash
case "$1" in
  args) shift; printf '%s|' "$@"; echo ;;
  env) echo "$GUILDS_HOME $GUILDS_RUN_DIR $(pwd) $EXTRA" ;;
  stdin) cat ;;
  exit) echo out; echo err >&2; exit 3 ;;
  cat) cat "$2" ;;
  sleep) sleep "$2" ;;
  write) echo x > "$2" ;;
  *) exit 99 ;;
esac
`

// providers returns each provider kind this machine can run, over fresh folders.
func providers(t *testing.T) map[string]Provider {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "guilds-fake"), []byte(fakeHelper), 0o755); err != nil {
		t.Fatal(err)
	}
	ps := map[string]Provider{"local": &Local{Root: t.TempDir(), BinDir: bin}}
	if bw, err := NewBubblewrap(sandboxtest.Root(t), bin, ""); err == nil {
		withServer(t, bin)
		t.Cleanup(func() { bw.Close() })
		ps["bubblewrap"] = bw
	} else if os.Getenv("CI") != "" {
		t.Fatalf("bubblewrap must be installed in CI: %v", err)
	} else {
		t.Logf("bubblewrap cases skipped: %v", err)
	}
	return ps
}

func TestExec(t *testing.T) {
	ctx := context.Background()
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_1")
			if err != nil {
				t.Fatal(err)
			}
			pl := box.Places()
			helper := BinDir + "/guilds-fake"

			res := mustExec(t, box, ExecRequest{Argv: []string{helper, "args", "a b", "", "c"}})
			if got := string(res.Stdout); got != "a b||c|\n" {
				t.Errorf("args: got %q", got)
			}
			res = mustExec(t, box, ExecRequest{Argv: []string{helper, "env"}, Env: []string{"EXTRA=yes"}})
			if want := pl.Home + " " + pl.RunDir + " " + pl.Home + " yes\n"; string(res.Stdout) != want {
				t.Errorf("env: got %q, want %q", res.Stdout, want)
			}
			res = mustExec(t, box, ExecRequest{Argv: []string{helper, "stdin"}, Stdin: []byte("fed")})
			if string(res.Stdout) != "fed" {
				t.Errorf("stdin: got %q", res.Stdout)
			}
			res = mustExec(t, box, ExecRequest{Argv: []string{helper, "exit"}})
			if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
				t.Errorf("exit: got %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
}

func TestExecTimeoutKillsGroup(t *testing.T) {
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(context.Background(), "agt_t")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = box.Exec(context.Background(), ExecRequest{Argv: []string{BinDir + "/guilds-fake", "sleep", "331.5"}, Timeout: 300 * time.Millisecond})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("want deadline error, got %v", err)
			}
			if d := time.Since(start); d > time.Minute { // a hang guard: the sleep lasts over 5 minutes
				t.Fatalf("timeout took %v", d)
			}
			gone(t, "sleep 331.5")
		})
	}
}

func TestFileAPI(t *testing.T) {
	ctx := context.Background()
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_f")
			if err != nil {
				t.Fatal(err)
			}
			pl := box.Places()
			req := pl.RunDir + "/requests/c1.json"
			if err := box.WriteFile(ctx, req, []byte(`{"a":1}`), 0o600); err != nil {
				t.Fatal(err)
			}
			res := mustExec(t, box, ExecRequest{Argv: []string{BinDir + "/guilds-fake", "cat", req}})
			if string(res.Stdout) != `{"a":1}` {
				t.Errorf("helper read %q through the sandbox", res.Stdout)
			}
			got, err := box.ReadFile(ctx, req, 1<<20)
			if err != nil || string(got) != `{"a":1}` {
				t.Errorf("ReadFile: %q %v", got, err)
			}
			for _, bad := range []string{"/etc/passwd", pl.Home + "/../x", "relative.txt", pl.RunDir + "x/y"} {
				if err := box.WriteFile(ctx, bad, []byte("x"), 0o600); err == nil {
					t.Errorf("WriteFile(%q) was allowed", bad)
				}
				if _, err := box.ReadFile(ctx, bad, 1<<20); err == nil {
					t.Errorf("ReadFile(%q) was allowed", bad)
				}
			}
		})
	}
}

func TestFileAPIDoesNotFollowPlantedLinks(t *testing.T) {
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Local{Root: t.TempDir(), BinDir: t.TempDir()}
	box, err := p.Open(ctx, "agt_l")
	if err != nil {
		t.Fatal(err)
	}
	reqDir := filepath.Join(box.Places().RunDir, "requests")
	os.MkdirAll(reqDir, 0o755)
	// A link at the destination, and a linked folder on the way.
	os.Symlink(outside, filepath.Join(reqDir, "c1.json"))
	os.Symlink(filepath.Dir(outside), filepath.Join(box.Places().RunDir, "evil"))
	if err := box.WriteFile(ctx, box.Places().RunDir+"/requests/c1.json", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := box.WriteFile(ctx, box.Places().RunDir+"/evil/victim", []byte("new"), 0o600); err == nil {
		t.Error("write through a linked folder was allowed")
	}
	if _, err := box.ReadFile(ctx, box.Places().RunDir+"/evil/victim", 1<<20); err == nil {
		t.Error("read through a linked folder was allowed")
	}
	if b, _ := os.ReadFile(outside); string(b) != "untouched" {
		t.Fatalf("file outside the sandbox changed: %q", b)
	}
}

func TestBubblewrapIsolation(t *testing.T) {
	ps := providers(t)
	p, ok := ps["bubblewrap"]
	if !ok {
		t.Skip("bubblewrap not installed")
	}
	secret := filepath.Join(t.TempDir(), "host-only")
	os.WriteFile(secret, []byte("x"), 0o644)
	box, err := p.Open(context.Background(), "agt_i")
	if err != nil {
		t.Fatal(err)
	}
	helper := BinDir + "/guilds-fake"
	if res := mustExec(t, box, ExecRequest{Argv: []string{helper, "cat", secret}}); res.ExitCode == 0 {
		t.Errorf("host file %s is visible in the sandbox", secret)
	}
	if res := mustExec(t, box, ExecRequest{Argv: []string{helper, "write", "/usr/bin/guilds-probe"}}); res.ExitCode == 0 {
		t.Error("the system is writable")
	}
	if res := mustExec(t, box, ExecRequest{Argv: []string{helper, "write", "/home/agent/ok"}}); res.ExitCode != 0 {
		t.Errorf("the workspace is not writable: %s", res.Stderr)
	}
}

func TestFromKind(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := FromKind("docker", "r", "b", "", log); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("unknown kind: %v", err)
	}
	p, err := FromKind("local", "r", "b", "", log)
	if err != nil || p.Kind() != "local" {
		t.Errorf("local: %v %v", p, err)
	}
	if _, err := p.Open(context.Background(), "../x"); err == nil {
		t.Error("an agent id with a slash named a folder")
	}
}

func mustExec(t *testing.T, box Sandbox, req ExecRequest) ExecResult {
	t.Helper()
	res, err := box.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("exec %v: %v", req.Argv, err)
	}
	return res
}

func TestFileAPIRemove(t *testing.T) {
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(outside, []byte("untouched"), 0o644)
	for kind, p := range providers(t) {
		t.Run(kind, func(t *testing.T) {
			box, err := p.Open(ctx, "agt_rm")
			if err != nil {
				t.Fatal(err)
			}
			pl := box.Places()
			file := pl.RunDir + "/requests/c1.json"
			if err := box.WriteFile(ctx, file, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := box.Remove(ctx, file); err != nil {
				t.Fatal(err)
			}
			if _, err := box.ReadFile(ctx, file, 1<<20); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("removed file still reads: %v", err)
			}
			if err := box.Remove(ctx, file); err != nil {
				t.Fatalf("a missing file is not an error: %v", err)
			}
			// A planted link in the workspace (a host folder) is removed itself; its target and a
			// linked folder's contents are safe.
			var hostHome string
			switch p := p.(type) {
			case *Local:
				hostHome = filepath.Join(p.Root, "agt_rm", "home")
			case *Bubblewrap:
				hostHome = filepath.Join(p.Root, "agt_rm", "home")
			}
			os.MkdirAll(filepath.Join(hostHome, "requests"), 0o755)
			os.Symlink(outside, filepath.Join(hostHome, "requests", "link.json"))
			os.Symlink(filepath.Dir(outside), filepath.Join(hostHome, "evil"))
			asAgent(t, hostHome, "requests", "requests/link.json", "evil") // planted as the agent would
			if err := box.Remove(ctx, pl.Home+"/requests/link.json"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(hostHome, "requests", "link.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the planted link is still there: %v", err)
			}
			if err := box.Remove(ctx, pl.Home+"/evil/victim"); err == nil {
				t.Error("remove through a linked folder was allowed")
			}
			if b, _ := os.ReadFile(outside); string(b) != "untouched" {
				t.Fatalf("file outside the sandbox changed: %q", b)
			}
			for _, bad := range []string{"/etc/passwd", pl.RunDir, pl.Home, "relative", pl.Home + "/../x"} {
				if err := box.Remove(ctx, bad); err == nil {
					t.Errorf("Remove(%q) was allowed", bad)
				}
			}
		})
	}
}

// peerHost makes a test host of this test's own (sandboxtest.PeerListener on 198.18.0.0/30)
// serving one line on a TCP port, and returns its address.
func peerHost(t *testing.T) string {
	t.Helper()
	ln := sandboxtest.PeerListener(t, 0)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("peer says hello\n"))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestUserNetwork: a sandbox with the user-mode network reaches a host beyond this one (here a
// test host in a namespace of the test's own), while the host's own addresses, the veth's host
// side among them, stay out of reach; with none it has a loopback only.
func TestUserNetwork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the user-mode network needs root")
	}
	peer := peerHost(t)
	// A service of the host on every address, which the host reaches on the veth's side.
	wild, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer wild.Close()
	go func() {
		for c, err := wild.Accept(); err == nil; c, err = wild.Accept() {
			c.Write([]byte("host service\n"))
			c.Close()
		}
	}()
	port := strconv.Itoa(wild.Addr().(*net.TCPAddr).Port)
	if c, err := net.Dial("tcp", "198.18.0.1:"+port); err != nil {
		t.Fatalf("the host does not reach its own service on the veth: %v", err)
	} else {
		c.Close()
	}
	probe := `for a in ` + peer + ` 198.18.0.1:` + port + `; do
  if out=$(timeout 5 bash -c "exec 3<>/dev/tcp/${a%:*}/${a##*:}; head -1 <&3" 2>&1); then echo "reached $a: $out"; else echo "refused $a"; fi
done; ip -br addr | grep -c UP || true`
	for _, network := range []string{NetworkUser, NetworkNone} {
		t.Run(network, func(t *testing.T) {
			bw := bwrapOnly(t, nil)
			bw.Network = network
			box, err := bw.Open(context.Background(), "agt_net")
			if err != nil {
				t.Fatal(err)
			}
			res := mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", probe}, Timeout: 30 * time.Second})
			out := string(res.Stdout)
			reached := strings.Contains(out, "reached "+peer+": peer says hello")
			if reached != (network == NetworkUser) || !strings.Contains(out, "refused 198.18.0.1:"+port) {
				t.Fatalf("%s network:\n%s%s", network, out, res.Stderr)
			}
		})
	}
}

// uniqueUIDBase is a host uid range of this test process's own: its nftables table and uid range
// lock are then its own too, whatever other tests on this host run at once.
func uniqueUIDBase() uint32 { return uint32(1_000_000_000 + (os.Getpid()%1000)*1_000_000) }

// TestEgressPolicy: from a sandbox on the user-mode network, services on a private range, on CGNAT
// and at the cloud metadata address (test hosts in namespaces of the test's own) are refused, a
// range GUILDS_SANDBOX_ALLOW_NETS opens is reached, and the sandbox's DNS still gets the host's
// resolvers' answers, although on this host they sit on a private address.
func TestEgressPolicy(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root")
		}
		t.Skip("the user-mode network needs root")
	}
	serve := func(host, peer string) string {
		ln := sandboxtest.PeerListenerAt(t, netip.MustParsePrefix(host), netip.MustParseAddr(peer))
		go func() {
			for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
				c.Write([]byte("hello from " + peer + "\n"))
				c.Close()
			}
		}()
		if c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second); err != nil {
			t.Fatalf("the host does not reach its test host %s: %v", ln.Addr(), err)
		} else {
			c.Close()
		}
		return ln.Addr().String()
	}
	refused := []string{serve("192.168.77.1/30", "192.168.77.2"), serve("100.64.77.1/30", "100.64.77.2"), serve("169.254.169.253/30", "169.254.169.254")}
	opened := serve("192.168.78.1/30", "192.168.78.2")

	bw := bwrapOnly(t, nil)
	bw.UIDBase = uniqueUIDBase()
	allow, err := ParseNets("192.168.78.0/24")
	if err != nil {
		t.Fatal(err)
	}
	bw.AllowNets = allow
	st := bw.Status()
	t.Cleanup(func() { exec.Command("nft", "delete", "table", "inet", hostFilterTable(bw.UIDBase)).Run() })
	if st.Egress == nil || !slices.Contains(st.Egress.Refused, "192.168.0.0/16") || !slices.Contains(st.Egress.Refused, "169.254.0.0/16") ||
		!slices.Equal(st.Egress.Allowed, []string{"192.168.78.0/24"}) || len(st.Egress.Resolvers) == 0 {
		t.Fatalf("the status's egress policy: %+v (missing %v)", st.Egress, st.Missing)
	}
	box, err := bw.Open(context.Background(), "agt_egress")
	if err != nil {
		t.Fatal(err)
	}
	probe := `for a in ` + strings.Join(append(refused, opened), " ") + `; do
  if out=$(timeout 5 bash -c "exec 3<>/dev/tcp/${a%:*}/${a##*:}; head -1 <&3" 2>&1); then echo "reached $a: $out"; else echo "refused $a"; fi
done
python3 -c '
import socket, struct
q = struct.pack(">HHHHHH", 10537, 0x0100, 1, 0, 0, 0) + b"\x0bguilds-test\x07invalid\x00" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
s.sendto(q, ("` + sandboxDNS + `", 53))
try:
    d = s.recv(512)
    print("dns answered id=%d rcode=%d" % (struct.unpack(">H", d[:2])[0], d[3] & 15))
except OSError as e:
    print("dns silent:", e)
'`
	res := mustExec(t, box, ExecRequest{Argv: []string{"bash", "-c", probe}, Timeout: 60 * time.Second})
	out := string(res.Stdout)
	for _, a := range refused {
		if !strings.Contains(out, "refused "+a+"\n") {
			t.Errorf("%s was not refused", a)
		}
	}
	if !strings.Contains(out, "reached "+opened+": hello from 192.168.78.2") {
		t.Errorf("%s, opened by GUILDS_SANDBOX_ALLOW_NETS, was not reached", opened)
	}
	if !strings.Contains(out, "dns answered id=10537") {
		t.Errorf("the sandbox's DNS got no answer from the host's resolvers %v", st.Egress.Resolvers)
	}
	if t.Failed() {
		t.Fatalf("from the sandbox:\n%s%s", out, res.Stderr)
	}
}

func TestParseNets(t *testing.T) {
	got, err := ParseNets(" 10.1.0.0/16, 192.168.7.9 ,fd00:1::/64,, ")
	if err != nil || fmt.Sprint(got) != "[10.1.0.0/16 192.168.7.9/32 fd00:1::/64]" {
		t.Fatalf("ParseNets: %v %v", got, err)
	}
	for in, says := range map[string]string{"10.1.2.3/8": "write the range as 10.0.0.0/8", "lan": "not a range", "10.0.0.0/33": "not a range"} {
		if _, err := ParseNets(in); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseNets(%q): %v, want %q", in, err, says)
		}
	}
	// An allowed range that holds a refused one drops it; nested and repeated allowed ranges
	// are written once (an nftables set refuses overlapping intervals).
	e := egressPolicy([]netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")},
		[]netip.Addr{netip.MustParseAddr("10.255.255.53")})
	if slices.Contains(e.Refused, "10.0.0.0/8") || !slices.Equal(e.Allowed, []string{"10.0.0.0/8"}) || !slices.Equal(e.Resolvers, []string{"10.255.255.53"}) {
		t.Fatalf("policy %+v", e)
	}
	script := hostFilterScript(7, e)
	for _, want := range []string{"meta skgid 7 ip daddr 10.255.255.53 udp dport 53 accept", "meta skgid 7 ip daddr { 10.0.0.0/8 } accept",
		"meta skgid 7 ip6 daddr { fc00::/7, fe80::/10, ff00::/8 } reject"} {
		if !strings.Contains(script, want) {
			t.Errorf("the nft script lacks %q:\n%s", want, script)
		}
	}
}

// asAgent gives the named paths under an agent's host home (never following a link) to the home's
// owner, as if the agent had made them.
func asAgent(t *testing.T, home string, names ...string) {
	t.Helper()
	fi, err := os.Stat(home)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	for _, n := range names {
		if err := os.Lchown(filepath.Join(home, n), int(st.Uid), int(st.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}
