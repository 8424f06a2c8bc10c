package code_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
)

// TestSandboxAttacks runs, through the real orchestrator and the bubblewrap backend, every attack
// of issue 15 from inside agent B's sandbox against agent A's, the host and the orchestrator.
// Each case prints BLOCKED lines for what failed as it must and BREACH for anything that got
// through; after all of them A, B and the orchestrator still work.
func TestSandboxAttacks(t *testing.T) {
	bin := helperBin(t)
	bw, err := sandbox.NewBubblewrap(sandboxtest.Root(t), bin, "")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	// Small limits keep the bombs quick on a small machine; what is checked is that they hold.
	bw.Limits = sandbox.Limits{Pids: 256, Memory: 384 << 20, Tmp: 64 << 20}
	t.Cleanup(func() { bw.Close() })
	st := bw.Status()
	if len(st.Missing) > 0 {
		t.Fatalf("this host does not isolate the sandboxes fully: %v", st.Missing)
	}
	e := newEnv(t, bw)
	org := e.do(201, "POST", "/api/orgs", map[string]any{"name": "Acme"})
	g := e.do(201, "POST", "/api/orgs/"+org["id"].(string)+"/guilds", map[string]any{"name": "Builders"})
	agent := func(name string) (id, run string) {
		a := e.do(201, "POST", "/api/guilds/"+g["id"].(string)+"/agents", map[string]any{"name": name, "config": map[string]any{"coding": true}})
		r := e.do(201, "POST", "/api/agents/"+a["id"].(string)+"/runs", map[string]any{"kind": "direct", "config": map[string]any{"coding": true}})
		return a["id"].(string), r["id"].(string)
	}
	idA, runA := agent("Ada")
	idB, runB := agent("Bob")
	shell := func(run, command string, timeout int) string {
		t.Helper()
		out, _ := e.call(run, "shell", map[string]any{"command": command, "timeout_seconds": timeout})
		return out
	}
	const secret = "a-secret-only-A-holds-7c1e"
	if out := shell(runA, "printf %s "+secret+" > hello.txt && cat hello.txt", 30); !strings.Contains(out, secret) {
		t.Fatalf("A cannot write its own file: %s", out)
	}
	homeA := filepath.Join(bw.Root, idA, "home")
	helloA := filepath.Join(homeA, "hello.txt")

	// The ids: each agent is uid 1000 inside, a host uid of its own outside, never root.
	var stA, stB syscall.Stat_t
	if err := syscall.Stat(homeA, &stA); err != nil {
		t.Fatal(err)
	}
	shell(runB, "true", 30)
	if err := syscall.Stat(filepath.Join(bw.Root, idB, "home"), &stB); err != nil {
		t.Fatal(err)
	}
	if stA.Uid == 0 || stB.Uid == 0 || stA.Uid == stB.Uid || stA.Mode&0o777 != 0o700 {
		t.Fatalf("host owners of the agents' folders: A %d (mode %o), B %d", stA.Uid, stA.Mode&0o777, stB.Uid)
	}
	if out := shell(runB, "id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; cat /proc/self/uid_map", 30); !strings.Contains(out, "1000\n") ||
		!strings.Contains(out, "CapEff:\t0000000000000000") || !strings.Contains(out, "CapBnd:\t0000000000000000") ||
		!strings.Contains(out, "NoNewPrivs:\t1") || !strings.Contains(out, "Seccomp:\t2") || strings.Contains(out, "4294967295") {
		t.Fatalf("B's identity in its sandbox: %s", out)
	}

	// A's browser, its DevTools on A's own loopback: A reaches it, nothing else does.
	browsers := &sandbox.Browsers{Provider: bw}
	defer browsers.Close()
	if _, err := exec.LookPath("chromium"); err == nil {
		if _, err := browsers.CDPURL(context.Background(), idA); err != nil {
			t.Fatal(err)
		}
		if out := shell(runA, `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9222/json/version').read()[:20])"`, 30); !strings.Contains(out, "Browser") {
			t.Fatalf("A does not reach its own browser's DevTools: %s", out)
		}
	} else if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing in CI: run make setup")
	}

	// What of the host B aims at: the orchestrator's API, a service on every host address, the
	// database's unix socket, the data folders.
	_, apiPort, _ := net.SplitHostPort(strings.TrimPrefix(e.base, "http://"))
	wild, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer wild.Close()
	go func() {
		for {
			c, err := wild.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host service\n"))
			c.Close()
		}
	}()
	wildPort := strconv.Itoa(wild.Addr().(*net.TCPAddr).Port)
	targets := []string{"127.0.0.1:" + apiPort, "10.0.2.2:" + apiPort, "10.0.2.2:" + wildPort, "10.0.2.2:9222"}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLinkLocalUnicast() {
			for _, port := range []string{apiPort, wildPort, "9222"} {
				targets = append(targets, net.JoinHostPort(ipn.IP.String(), port))
			}
		}
	}
	// The host itself reaches its wildcard service on each address, so a refusal in B is the sandbox's.
	for _, tgt := range targets {
		if strings.HasPrefix(tgt, "10.0.2.2:") || !strings.HasSuffix(tgt, ":"+wildPort) {
			continue
		}
		c, err := net.DialTimeout("tcp", tgt, 2*time.Second)
		if err != nil {
			t.Fatalf("the host does not reach its own service at %s: %v", tgt, err)
		}
		c.Close()
	}
	pgSocket := ""
	if cfg := e.pool.Config().ConnConfig; strings.HasPrefix(cfg.Host, "/") {
		pgSocket = filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	if _, err := os.Stat(pgSocket); err != nil {
		t.Fatalf("the test database's socket %q: %v", pgSocket, err)
	}
	handle, _, err := unix.NameToHandleAt(unix.AT_FDCWD, helloA, 0)
	if err != nil {
		t.Fatalf("name_to_handle_at on the host: %v", err)
	}
	blockDev := hostBlockDevice(t)

	py := func(body string) string {
		return "python3 - <<'PYEOF'\nimport ctypes, os, socket, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n" +
			"def blocked(what, err=None):\n    print('BLOCKED', what, err if err is not None else '')\n" +
			"def breach(what):\n    print('BREACH', what)\n" + body + "\nPYEOF"
	}
	cases := []struct {
		name, command string
		timeout       int
		blocked       int // BLOCKED lines the case must print at least
	}{
		{"read A's files by host path", "for f in " + helloA + " " + homeA + "/hello.txt /home/agent/hello.txt; do cat \"$f\" 2>/dev/null && echo BREACH $f || echo BLOCKED $f; done", 30, 3},
		{"read A's files through /proc/<pid>/root", "for p in /proc/[0-9]*; do for f in $p/root" + helloA + " $p/root/home/agent/hello.txt; do if cat \"$f\" 2>/dev/null | grep -q " + secret + "; then echo BREACH $f; fi; done; done; echo BLOCKED proc-root", 60, 1},
		{"read the exec server through /proc/1", "for f in environ mem maps fd/3 root/proc/1/environ; do if cat /proc/1/$f >/dev/null 2>&1; then echo BREACH /proc/1/$f; else echo BLOCKED /proc/1/$f; fi; done; grep -l " + secret + " /proc/[0-9]*/environ 2>/dev/null | sed 's/^/BREACH /'", 30, 5},
		{"find any DevTools or service on the sandbox's loopback", py(`
open_ports = []
for port in range(1, 65536):
    s = socket.socket(); s.settimeout(0.2)
    # A connect to the ephemeral port the kernel picked for this very socket meets itself
    # (TCP simultaneous open): that is no listener.
    if s.connect_ex(('127.0.0.1', port)) == 0 and s.getsockname() != s.getpeername(): open_ports.append(port)
    s.close()
if open_ports: breach('open loopback ports %s' % open_ports)
else: blocked('no port open on loopback')`), 120, 1},
		{"reach A's DevTools, the orchestrator's API and host services at the host's addresses", py(`
import urllib.request
for t in ` + pyList(targets) + `:
    host, port = t.rsplit(':', 1)
    host = host.strip('[]')
    s = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET); s.settimeout(3)
    try:
        s.connect((host, int(port))); breach('connected to %s' % t)
    except OSError as e: blocked(t, e)
    finally: s.close()`), 120, len(targets)},
		{"CDP Page.navigate to A's file through any DevTools endpoint", py(`
import urllib.request, json
for base in ['http://127.0.0.1:9222', 'http://10.0.2.2:9222', 'http://localhost:9222']:
    try:
        pages = json.loads(urllib.request.urlopen(base + '/json/list', timeout=3).read())
        breach('DevTools answered at %s: %s' % (base, [p.get('url') for p in pages]))
    except Exception as e: blocked(base, e)`), 60, 3},
		{"reach PostgreSQL's unix socket", py(`
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(` + strconv.Quote(pgSocket) + `); breach('connected to PostgreSQL')
except OSError as e: blocked('postgres socket', e)`), 30, 1},
		{"read /etc/shadow and the orchestrator's data folders", "for f in /etc/shadow /etc/gshadow /root/.ssh " + bw.Root + " " + filepath.Dir(pgSocket) + " " + filepath.Dir(filepath.Dir(pgSocket)) + "; do ls -d \"$f\" >/dev/null 2>&1 && echo BREACH $f || echo BLOCKED $f; done", 30, 6},
		{"mount, mknod a host block device and mount it", "mkdir -p /tmp/m; mount -t tmpfs none /tmp/m 2>&1 && echo BREACH tmpfs || echo BLOCKED tmpfs; " +
			"mknod /tmp/disk b " + blockDev + " 2>&1 && echo BREACH mknod || echo BLOCKED mknod; mount /tmp/disk /tmp/m 2>&1 && echo BREACH mount-disk || echo BLOCKED mount-disk", 30, 3},
		{"open_by_handle_at on a host file handle", py(`
hb = bytes.fromhex('` + hex.EncodeToString(handle.Bytes()) + `')
class FH(ctypes.Structure):
    _fields_ = [('handle_bytes', ctypes.c_uint), ('handle_type', ctypes.c_int), ('f_handle', ctypes.c_char * len(hb))]
fh = FH(len(hb), ` + strconv.Itoa(int(handle.Type())) + `, hb)
for mnt in ['/home/agent', '/', '/tmp']:
    mfd = os.open(mnt, os.O_RDONLY)
    fd = libc.open_by_handle_at(mfd, ctypes.byref(fh), os.O_RDONLY)
    if fd >= 0: breach('opened A\'s file through %s: %r' % (mnt, os.read(fd, 64)))
    else: blocked('open_by_handle_at via ' + mnt, errno.errorcode.get(ctypes.get_errno()))`), 30, 3},
		{"ptrace the exec server", py(`
for req, name in [(16, 'PTRACE_ATTACH'), (0x4206, 'PTRACE_SEIZE')]:
    if libc.ptrace(req, 1, 0, 0) == 0: breach(name + ' of PID 1')
    else: blocked(name, errno.errorcode.get(ctypes.get_errno()))`), 30, 2},
		{"kill -9 the exec server", "kill -9 1 2>&1; sleep 0.5; kill -0 1 && echo BLOCKED kill -9 1", 30, 1},
		// Kills every process B may signal, this command's own helper too: only the exec server
		// survives it, and the next call works.
		{"kill -9 every process", "kill -KILL -1", 30, 0},
		{"unshare -r", "unshare -r id 2>&1 && echo BREACH unshare || echo BLOCKED unshare; unshare -n true 2>&1 && echo BREACH netns || echo BLOCKED netns", 30, 2},
		{"fill /tmp", "dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>&1 | tail -1; s=$(stat -c %s /tmp/fill); rm -f /tmp/fill; [ \"$s\" -le $((64<<20)) ] && echo BLOCKED tmp at $s || echo BREACH tmp $s", 60, 1},
		{"memory bomb", "python3 -c \"b = b'x' * (1 << 30); print('BRE' + 'ACH allocated', len(b))\"", 60, 0},
		// The bomb forks on past its shell's timeout, then past its shell's exit: each time
		// everything it forked must go with the command, or the next command meets the process
		// limit still full.
		{"fork bomb", "bomb() { bomb | bomb & }; bomb; sleep 60", 8, 0},
		{"fork bomb left running", "bomb() { bomb | bomb & }; bomb; sleep 3", 30, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out := shell(runB, c.command, c.timeout)
			if strings.Contains(out, "BREACH") || strings.Count(out, "BLOCKED") < c.blocked {
				t.Errorf("got through, or did not run (%d BLOCKED lines, want %d):\n%s", strings.Count(out, "BLOCKED"), c.blocked, out)
			}
			switch c.name {
			case "memory bomb":
				if !strings.Contains(out, "ran out of the sandbox's memory limit") {
					t.Errorf("the result does not say the command ran out of memory:\n%s", out)
				}
			case "fork bomb":
				// The bomb may starve the helper's own threads, so its output may be lost; the
				// result still says which limit it met.
				if !strings.Contains(out, "ran into the sandbox's process limit") {
					t.Errorf("the fork bomb did not meet the sandbox's process limit:\n%.2000s", out)
				}
			}
			// After each attack, A, B and the orchestrator work.
			if got := shell(runA, "cat hello.txt", 30); !strings.Contains(got, secret) {
				t.Fatalf("A after %q: %s", c.name, got)
			}
			if got := shell(runB, "echo alive", 30); !strings.Contains(got, "alive") {
				t.Fatalf("B after %q: %s", c.name, got)
			}
			e.do(200, "GET", "/api/instance", nil)
			t.Logf("%s: %s", c.name, time.Since(start).Round(time.Millisecond))
		})
	}
	if out := shell(runB, "cat "+helloA+" 2>&1; ls /home/agent", 30); strings.Contains(out, secret) {
		t.Fatalf("B reads A's file: %s", out)
	}
}

// hostBlockDevice returns the major:minor ("8 0") of one of the host's block devices.
func hostBlockDevice(t *testing.T) string {
	t.Helper()
	devs, _ := filepath.Glob("/sys/block/*/dev")
	for _, d := range devs {
		if strings.Contains(d, "/loop") || strings.Contains(d, "/ram") {
			continue
		}
		if b, err := os.ReadFile(d); err == nil {
			return strings.ReplaceAll(strings.TrimSpace(string(b)), ":", " ")
		}
	}
	return "8 0" // sda's numbers: mknod must fail whatever the device
}

// pyList renders strings as a Python list literal.
func pyList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
