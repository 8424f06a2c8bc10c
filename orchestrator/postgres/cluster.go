package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clusterPort names the socket file (.s.PGSQL.5432); the server listens on no TCP address, so it
// never collides with another server's port.
const clusterPort = 5432

// ClusterOptions tune a local cluster.
type ClusterOptions struct {
	// Durable keeps fsync on. Throwaway test clusters turn it off for speed.
	Durable bool
	// Logger receives start and stop lines; nil discards them.
	Logger *slog.Logger
}

// Cluster is a PostgreSQL cluster this process runs with the machine's initdb and pg_ctl, in its own
// folder: data in <dir>/data, the unix socket in <dir> (owned by postgres, mode 0700, so only root and
// postgres can reach it), the server log in <dir>/postgres.log. A watchdog process stops the server
// when this process goes away without calling Stop (a crash, SIGKILL, a test binary timing out).
type Cluster struct {
	dir      string
	bin      string
	durable  bool
	asUser   []string // "runuser -u postgres --" when running as root
	log      *slog.Logger
	watchdog *exec.Cmd
	watchIn  io.WriteCloser
	lock     *os.File // <dir>/orchestrator.lock, flocked while this process owns the cluster

	mu        sync.Mutex
	stopping  bool          // Stop was called: the supervisor restarts nothing
	superDone chan struct{} // closed when the supervisor returns; nil when none runs
	superStop context.CancelFunc
}

// PostgresBinDir finds the folder holding initdb and pg_ctl: the one on PATH, else the newest
// /usr/lib/postgresql/<version>/bin.
func PostgresBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) < pgVersion(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("PostgreSQL's initdb and pg_ctl were not found on PATH or under /usr/lib/postgresql/*/bin; run `make setup` (it installs postgresql) or set DATABASE_URL")
}

// pgVersion extracts the numeric version from /usr/lib/postgresql/<v>/bin.
func pgVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// StartCluster initialises the cluster in dir when it holds none yet, starts it and waits until it
// accepts connections. As root, the server runs as the postgres user (runuser -u postgres --) and dir
// is handed to that user.
func StartCluster(ctx context.Context, dir string, o ClusterOptions) (*Cluster, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bin, err := PostgresBinDir()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("postgres folder: %w", err)
	}
	if n := len(filepath.Join(dir, ".s.PGSQL.5432")); n > 107 {
		return nil, fmt.Errorf("postgres folder %s is too deep for a unix socket path (%d bytes, at most 107); use a shorter GUILDS_DATA_DIR", dir, n)
	}
	c := &Cluster{dir: dir, bin: bin, durable: o.Durable, log: log}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create postgres folder: %w", err)
	}
	if err := c.takeLock(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.releaseLock()
		}
	}()
	if os.Geteuid() == 0 {
		if err := c.handToPostgres(); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("postgres folder: %w", err)
	}
	if _, err := os.Stat(filepath.Join(c.dataDir(), "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		args := []string{"-D", c.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"}
		if !o.Durable {
			args = append(args, "--no-sync")
		}
		start := time.Now()
		if out, err := c.command(ctx, "initdb", args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb %s: %w\n%s", c.dataDir(), err, lastLines(out, 15))
		}
		log.Info("postgres: initialised cluster", "dir", c.dataDir(), "ms", time.Since(start).Milliseconds())
	}
	if c.running(ctx) {
		// This process holds the lock, so the orchestrator that started this server is gone (killed,
		// crashed) and its watchdog may be stopping it right now: finish that stop, then start.
		if err := c.stopOrphan(ctx); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if err := c.startServer(ctx); err != nil {
		return nil, err
	}
	if err := c.startWatchdog(); err != nil {
		_ = c.stopServer(context.WithoutCancel(ctx))
		return nil, err
	}
	log.Info("postgres: started", "dir", dir, "ms", time.Since(start).Milliseconds())
	ok = true
	return c, nil
}

// startServer runs pg_ctl start and waits until the server accepts connections.
func (c *Cluster) startServer(ctx context.Context) error {
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -p %d", shellQuote(c.dir), clusterPort)
	if !c.durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	cmd := c.command(ctx, "pg_ctl", "-D", c.dataDir(), "-l", filepath.Join(c.dir, "postgres.log"), "-w", "-t", "60", "-o", opts, "start")
	// Its own process group: a Ctrl-C in the terminal reaches the orchestrator, which stops the
	// server in order, instead of reaching the server directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		logTail, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
		return fmt.Errorf("pg_ctl start %s: %w\n%s\n%s", c.dataDir(), err, lastLines(out, 5), lastLines(logTail, 10))
	}
	return nil
}

// running reports whether pg_ctl finds a live server on the data folder.
func (c *Cluster) running(ctx context.Context) bool {
	return c.command(ctx, "pg_ctl", "-D", c.dataDir(), "status").Run() == nil
}

// orphanStopWait bounds how long a start waits for a dead orchestrator's server to stop.
const orphanStopWait = 4 * time.Second

// stopOrphan stops a server whose orchestrator is gone: a fast stop (which the old watchdog may be
// running too), and an immediate one when that takes longer than orphanStopWait.
func (c *Cluster) stopOrphan(ctx context.Context) error {
	c.log.Warn("postgres: a server left by an orchestrator that is gone is running; stopping it before starting", "dir", c.dir)
	start := time.Now()
	for _, mode := range []string{"fast", "immediate"} {
		sctx, cancel := context.WithTimeout(ctx, orphanStopWait)
		// Its exit status says little: "no server running" when the watchdog got there first.
		_ = c.command(sctx, "pg_ctl", "-D", c.dataDir(), "-m", mode, "-w", "-t", strconv.Itoa(int(orphanStopWait/time.Second)), "stop").Run()
		cancel()
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if !c.running(ctx) {
				c.log.Info("postgres: the left server stopped", "mode", mode, "ms", time.Since(start).Milliseconds())
				return nil
			}
		}
	}
	return fmt.Errorf("a PostgreSQL server left on %s by an orchestrator that is gone did not stop in %s; stop it by hand: pg_ctl -D %s -m immediate stop", c.dataDir(), time.Since(start).Round(time.Second), c.dataDir())
}

// lockName is the file whose flock says which orchestrator owns the cluster; it holds that pid.
const lockName = "orchestrator.lock"

// takeLock flocks <dir>/orchestrator.lock and writes this pid into it; a live holder is refused by
// its pid. The kernel drops the lock when the holder dies, however it dies.
func (c *Cluster) takeLock() error {
	path := filepath.Join(c.dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the cluster's lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(holder))
			return fmt.Errorf("the PostgreSQL cluster in %s belongs to orchestrator process %s, which is still running; stop that process (kill %s) or give this one another GUILDS_DATA_DIR", c.dir, pid, pid)
		}
		return fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	c.lock = f
	return nil
}

// releaseLock gives the cluster up.
func (c *Cluster) releaseLock() {
	if c.lock != nil {
		_ = c.lock.Close()
		c.lock = nil
	}
}

// Supervision's bounds: the first retry's wait, the longest wait, and the tries before giving up.
const (
	superFirstWait = 500 * time.Millisecond
	superMaxWait   = 30 * time.Second
	superTries     = 12
)

// Supervise restarts the server when it ends without Stop (killed, crashed, stopped by hand), with
// a growing wait between tries, logging each incident once when it starts and once when it ends,
// and gives up after superTries failed tries with an error in the log. It runs until Stop.
func (c *Cluster) Supervise() {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	if c.superDone != nil || c.stopping {
		c.mu.Unlock()
		cancel()
		return
	}
	done := make(chan struct{})
	c.superDone, c.superStop = done, cancel
	c.mu.Unlock()
	go func() {
		defer close(done)
		c.supervise(ctx)
	}()
}

// supervise is Supervise's loop.
func (c *Cluster) supervise(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.alive() {
			continue
		}
		if !c.recover(ctx) {
			return
		}
	}
}

// recover restarts a server found dead; false means it gave up (or Stop was called).
func (c *Cluster) recover(ctx context.Context) bool {
	c.log.Error("postgres: the server ended unexpectedly; restarting it", "dir", c.dir)
	began, wait := time.Now(), superFirstWait
	var err error
	for try := 1; try <= superTries; try++ {
		if ctx.Err() != nil {
			return false
		}
		if c.alive() { // started by someone else meanwhile
			err = nil
		} else {
			err = c.startServer(ctx)
		}
		if err == nil {
			c.log.Info("postgres: restarted", "dir", c.dir, "tries", try, "ms", time.Since(began).Milliseconds())
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, superMaxWait)
	}
	c.log.Error("postgres: gave up restarting the server; the API answers 503 until it runs again (see postgres.log, then restart the orchestrator)",
		"dir", c.dir, "tries", superTries, "err", err.Error())
	return false
}

// alive reports whether the postmaster named in postmaster.pid is a live process.
func (c *Cluster) alive() bool {
	b, err := os.ReadFile(filepath.Join(c.dataDir(), "postmaster.pid"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// handToPostgres makes dir owned by the postgres user and checks that user can reach it.
func (c *Cluster) handToPostgres() error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root, the cluster must run as the postgres user, which does not exist (%v); run `make setup` to install postgresql", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(c.dir, uid, gid); err != nil {
		return fmt.Errorf("hand %s to postgres: %w", c.dir, err)
	}
	for p := filepath.Dir(c.dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("postgres folder parent: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("the postgres user cannot reach %s: its parent %s is not searchable by others (mode %v); use a folder whose parents are (chmod o+x %s)", c.dir, p, fi.Mode().Perm(), p)
		}
		if p == "/" {
			break
		}
	}
	c.asUser = []string{"runuser", "-u", "postgres", "--"}
	return nil
}

// dataDir is PGDATA.
func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

// command builds a command for one of the PostgreSQL binaries, as the postgres user when root.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	full := append(append(append([]string{}, c.asUser...), filepath.Join(c.bin, name)), args...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// startWatchdog starts a shell that waits on a pipe from this process: a line means "already
// stopped", end of file means this process died, and then it stops the server.
func (c *Cluster) startWatchdog() error {
	stop := c.command(context.Background(), "pg_ctl", "-D", c.dataDir(), "-m", "fast", "-w", "stop")
	args := append([]string{"-c", `read -r _ || exec "$@" >/dev/null 2>&1`, "guilds-pg-watchdog"}, stop.Args...)
	w := exec.Command("/bin/sh", args...)
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := w.StdinPipe()
	if err != nil {
		return fmt.Errorf("postgres watchdog: %w", err)
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("postgres watchdog: %w", err)
	}
	c.watchdog, c.watchIn = w, in
	return nil
}

// DSN returns a connection string for database over the cluster's unix socket.
func (c *Cluster) DSN(database string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", dsnQuote(c.dir), clusterPort, dsnQuote(database))
}

// Dir returns the cluster's folder.
func (c *Cluster) Dir() string { return c.dir }

// Stop shuts the server down (fast mode: open sessions are ended) and waits for it to exit.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopping = true
	done, cancel := c.superDone, c.superStop
	c.mu.Unlock()
	if done != nil {
		cancel()
		<-done
	}
	err := c.stopServer(ctx)
	if c.watchIn != nil {
		_, _ = c.watchIn.Write([]byte("stopped\n"))
		_ = c.watchIn.Close()
		_ = c.watchdog.Wait()
		c.watchIn = nil
	}
	c.releaseLock()
	if err == nil {
		c.log.Info("postgres: stopped", "dir", c.dir)
	}
	return err
}

// stopServer runs pg_ctl stop.
func (c *Cluster) stopServer(ctx context.Context) error {
	out, err := c.command(ctx, "pg_ctl", "-D", c.dataDir(), "-m", "fast", "-w", "-t", "60", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop %s: %w\n%s", c.dataDir(), err, lastLines(out, 5))
	}
	return nil
}

// lastLines returns the last n lines of out, trimmed.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// shellQuote quotes s for pg_ctl's -o string, which a shell splits.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// dsnQuote quotes a keyword/value DSN value.
func dsnQuote(s string) string {
	var b bytes.Buffer
	b.WriteByte('\'')
	for _, r := range s {
		if r == '\'' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}
