package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultUIDBase is the first host id of the sandboxes' range (GUILDS_SANDBOX_UID_BASE): the
// network helpers run with it as their group, and agents get the ids after it, one each.
const DefaultUIDBase = 1_000_000

// uidRange is how many host ids one orchestrator takes from its base: the base (the network
// helpers' group), then one per agent, so one data folder holds uidRange-1 agents.
const uidRange = 1_000_000

// SandboxUID is the uid and gid of the agent inside every sandbox.
const SandboxUID = 1000

// owner is the host uid and gid that own an agent's files; -1 keeps the orchestrator's.
type owner struct{ uid, gid int }

// noOwner leaves files to the orchestrator's user (the local provider, or bubblewrap not as root).
var noOwner = owner{-1, -1}

func (o owner) set() bool { return o.uid >= 0 }

// uidAllocator hands each agent of one sandbox folder a host uid of its own. The allocation is the
// ownership of the agent's home folder, so it survives restarts without a table of its own.
type uidAllocator struct {
	base uint32
	log  *slog.Logger

	mu      sync.Mutex
	scanned bool
	byUID   map[uint32]string
	byAgent map[string]uint32
}

func (a *uidAllocator) inRange(uid uint32) bool {
	return uid > a.base && uid < a.base+uidRange
}

// scan reads the owners of the agents' home folders under root once.
func (a *uidAllocator) scan(root string) error {
	if a.scanned {
		return nil
	}
	a.byUID, a.byAgent = map[uint32]string{}, map[string]uint32{}
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the sandbox folder: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || !agentIDPattern.MatchString(e.Name()) {
			continue
		}
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(root, e.Name(), "home"), &st) != nil || !a.inRange(st.Uid) {
			continue
		}
		if _, taken := a.byUID[st.Uid]; !taken {
			a.byUID[st.Uid], a.byAgent[e.Name()] = e.Name(), st.Uid
		}
	}
	a.scanned = true
	return nil
}

// assign returns the host owner of the agent's files: the owner of its home folder when that is
// the agent's id in the range, else the lowest free id, with the home folder and what it holds
// handed to it.
func (a *uidAllocator) assign(root, agentID, home string) (owner, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.scan(root); err != nil {
		return owner{}, err
	}
	uid, ok := a.byAgent[agentID]
	if !ok {
		for id := a.base + 1; id < a.base+uidRange; id++ {
			if _, taken := a.byUID[id]; !taken {
				uid, ok = id, true
				break
			}
		}
		if !ok {
			return owner{}, fmt.Errorf("no host uid is left for agent %s: every id of %d–%d is in use", agentID, a.base+1, a.base+uidRange-1)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(home, &st); err != nil {
		return owner{}, fmt.Errorf("stat the agent's home folder: %w", err)
	}
	// The whole tree is walked only when the folder is not the agent's yet (a new agent, or one
	// from before agents had uids of their own); the agent may change its folder's mode, which
	// costs one chmod.
	if st.Uid != uid {
		if err := chownTree(home, int(uid), a.log); err != nil {
			return owner{}, fmt.Errorf("give agent %s's folder to its host uid %d: %w", agentID, uid, err)
		}
	}
	if st.Uid != uid || st.Mode&0o777 != 0o700 {
		if err := os.Chmod(home, 0o700); err != nil {
			return owner{}, fmt.Errorf("give agent %s's folder to its host uid %d: %w", agentID, uid, err)
		}
	}
	a.byUID[uid], a.byAgent[agentID] = agentID, uid
	return owner{int(uid), int(uid)}, nil
}

// chownTree gives dir and everything under it to uid (group too), never following a link. A file
// with more than one hard link keeps its owner: its other name may be outside the folder.
func chownTree(dir string, uid int, log *slog.Logger) error {
	skipped := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		if int(st.Uid) == uid && int(st.Gid) == uid {
			return nil
		}
		if !d.IsDir() && st.Nlink > 1 {
			skipped++
			return nil
		}
		return os.Lchown(p, uid, uid)
	})
	if skipped > 0 && log != nil {
		log.Warn("sandbox: files with several hard links keep their owner", "folder", dir, "files", skipped)
	}
	return err
}

// UIDLockDir holds each orchestrator's lock on its uid range, host-wide.
const UIDLockDir = "/run/guilds"

// uidLockHolder is what a uid range's lock file says of the orchestrator holding it.
type uidLockHolder struct {
	PID     int    `json:"pid"`
	DataDir string `json:"data_dir"`
}

// LockUIDRange takes the host-wide lock on the sandboxes' uid range (from UIDBase, or
// DefaultUIDBase), held until release is called or the process ends, and writes this process's pid
// and dataDir into it: two orchestrators on one host would otherwise give their agents the same
// host uids. It refuses while another live orchestrator holds this range or one overlapping it,
// naming that one and the fix. Without root the agents have no uids of their own and nothing is
// locked.
func (p *Bubblewrap) LockUIDRange(dataDir string) (release func(), err error) {
	if os.Geteuid() != 0 {
		return func() {}, nil
	}
	base := p.UIDBase
	if base == 0 {
		base = DefaultUIDBase
	}
	return lockUIDRange(UIDLockDir, base, dataDir)
}

// lockUIDRange is LockUIDRange with the lock folder given: one file per base, uid-range-<base>.lock.
func lockUIDRange(dir string, base uint32, dataDir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock the sandboxes' uid range: %w", err)
	}
	name := func(b uint32) string { return filepath.Join(dir, fmt.Sprintf("uid-range-%d.lock", b)) }
	f, err := os.OpenFile(name(base), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the sandboxes' uid range: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, uidRangeTaken(name(base), base, base, err)
	}
	// Another base whose range overlaps this one's is as bad: its live holder keeps its file locked.
	others, _ := filepath.Glob(filepath.Join(dir, "uid-range-*.lock"))
	for _, other := range others {
		var b uint32
		if _, err := fmt.Sscanf(filepath.Base(other), "uid-range-%d.lock", &b); err != nil || b == base ||
			uint64(b)+uidRange <= uint64(base) || uint64(base)+uidRange <= uint64(b) {
			continue
		}
		o, err := os.Open(other)
		if err != nil {
			continue
		}
		err = unix.Flock(int(o.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		o.Close() // a lock this probe took goes with it
		if err != nil {
			f.Close()
			return nil, uidRangeTaken(other, base, b, err)
		}
	}
	me, _ := json.Marshal(uidLockHolder{PID: os.Getpid(), DataDir: dataDir})
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(append(me, '\n'), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the sandboxes' uid range: write %s: %w", name(base), err)
	}
	return func() { f.Close() }, nil
}

// uidRangeTaken says which orchestrator holds the range from held that overlaps the one from
// base, and what to do.
func uidRangeTaken(file string, base, held uint32, lockErr error) error {
	if !errors.Is(lockErr, unix.EWOULDBLOCK) {
		return fmt.Errorf("lock the sandboxes' uid range in %s: %w", file, lockErr)
	}
	who := "another orchestrator"
	var h uidLockHolder
	if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &h) == nil && h.PID > 0 {
		who = fmt.Sprintf("another orchestrator (pid %d, data folder %s)", h.PID, h.DataDir)
	}
	return fmt.Errorf("the sandboxes' host ids %d–%d (GUILDS_SANDBOX_UID_BASE=%d) overlap %d–%d, held by %s on this host (lock %s): "+
		"its agents and this one's would share host uids; set another GUILDS_SANDBOX_UID_BASE for this orchestrator, at least %d from every other's, e.g. %d",
		base, base+uidRange-1, base, held, held+uidRange-1, who, file, uidRange, held+uidRange)
}
