package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// fileAPI maps sandbox paths onto the agent's files. The workspace (and a local sandbox's run
// folder) is a host folder, reached as the agent's host uid with every path opened beneath it
// without following a link or blocking (hostfs.go), so a link, a hard link or a FIFO the agent
// planted can never make the orchestrator read, write or wait on anything but the agent's own
// files. A run folder that lives only inside the sandbox (bubblewrap's tmpfs) is reached by
// commands run in the sandbox as the agent.
type fileAPI struct {
	places Places
	home   string // host folder behind places.Home
	run    string // host folder behind places.RunDir; "" when it lives only inside the sandbox
	owner  owner
	exec   func(ctx context.Context, req ExecRequest) (ExecResult, error) // runs in the sandbox, for run files
}

// locate splits a sandbox path into the host folder that holds it ("" for the in-sandbox run
// folder) and the path inside that folder.
func (f fileAPI) locate(name string) (hostDir, rel string, err error) {
	if !path.IsAbs(name) {
		return "", "", fmt.Errorf("sandbox path %q is not absolute", name)
	}
	clean := path.Clean(name)
	for _, m := range []struct{ sandbox, host string }{{f.places.RunDir, f.run}, {f.places.Home, f.home}} {
		if clean == m.sandbox {
			return m.host, ".", nil
		}
		if strings.HasPrefix(clean, m.sandbox+"/") {
			return m.host, strings.TrimPrefix(clean, m.sandbox+"/"), nil
		}
	}
	return "", "", fmt.Errorf("sandbox path %q is outside %s and %s", name, f.places.Home, f.places.RunDir)
}

// inHome locates a path that must be in a host folder (the workspace).
func (f fileAPI) inHome(name string) (hostDir, rel string, err error) {
	hostDir, rel, err = f.locate(name)
	if err == nil && hostDir == "" {
		err = fmt.Errorf("sandbox path %q is not under %s", name, f.places.Home)
	}
	return hostDir, rel, err
}

// inRoot runs fn on the agent's host uid's thread with hostDir opened as the root every path is
// resolved beneath.
func (f fileAPI) inRoot(hostDir string, fn func(root *os.File) error) error {
	return f.owner.do(func() error {
		root, err := openRoot(hostDir)
		if err != nil {
			return err
		}
		defer root.Close()
		return fn(root)
	})
}

// openRoot opens a host folder of the sandbox (its home or run folder) to resolve paths beneath.
func openRoot(hostDir string) (*os.File, error) {
	fd, err := unix.Open(hostDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open sandbox folder: %w", err)
	}
	return os.NewFile(uintptr(fd), hostDir), nil
}

func (f fileAPI) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("sandbox path %q is a folder", name)
	}
	if hostDir == "" {
		return f.inside(ctx, "write", name, writeScript, data, fmt.Sprintf("%o", perm.Perm()))
	}
	return f.replace(hostDir, rel, name, perm, func(w *os.File) error {
		_, err := w.Write(data)
		return err
	})
}

// copyBuffer is the buffer of one streamed write: large enough that a write costs few syscalls.
const copyBuffer = 1 << 20

func (f fileAPI) WriteFrom(ctx context.Context, name string, r io.Reader, perm fs.FileMode, limit int64) (int64, error) {
	hostDir, rel, err := f.inHome(name)
	if err != nil {
		return 0, err
	}
	if rel == "." {
		return 0, fmt.Errorf("sandbox path %q is a folder", name)
	}
	var n int64
	err = f.replace(hostDir, rel, name, perm, func(w *os.File) error {
		var err error
		// Only the writer's Write: *os.File's ReadFrom would copy through a small buffer.
		n, err = io.CopyBuffer(struct{ io.Writer }{w}, io.LimitReader(r, limit+1), make([]byte, copyBuffer))
		if err == nil && n > limit {
			err = &TooLargeError{Name: name, Size: -1, Limit: limit}
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// replace writes a file at rel under hostDir as the agent: a new temporary file beside it, filled
// by fill, then renamed over rel (which replaces a link there rather than writing through it).
// Missing folders are made; on any failure the temporary file goes and rel is untouched.
func (f fileAPI) replace(hostDir, rel, name string, perm fs.FileMode, fill func(*os.File) error) error {
	return f.inRoot(hostDir, func(root *os.File) error {
		dir, err := mkdirBeneath(root, path.Dir(rel))
		if err != nil {
			return hostError("write", name, err)
		}
		defer dir.Close()
		tmp := ".guilds-write-" + randomHex()
		w, err := openBeneath(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
		if err != nil {
			return hostError("write", name, err)
		}
		err = fill(w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), path.Base(rel))
		}
		if err != nil {
			_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
			var tl *TooLargeError
			if errors.As(err, &tl) {
				return err
			}
			return hostError("write", name, err)
		}
		return nil
	})
}

// randomHex is a fresh name part.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (f fileAPI) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return nil, err
	}
	if hostDir == "" {
		return f.insideRead(ctx, name, limit)
	}
	var out []byte
	err = f.inRoot(hostDir, func(root *os.File) error {
		file, err := openBeneath(root, rel, unix.O_RDONLY, 0)
		if err != nil {
			return hostError("read", name, err)
		}
		defer file.Close()
		out, err = readBounded(file, name, limit)
		return err
	})
	return out, err
}

// Node is an open workspace path: a regular file to stream (Read, at most its size when opened),
// or a folder with its entries read.
type Node struct {
	Name    string // the sandbox path
	Dir     bool
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
	// Entries are a folder's, sorted by name, at most MaxListEntries (Truncated says more were left).
	Entries   []Entry
	Truncated bool

	file *os.File
	r    io.Reader
}

// Read reads the file's bytes, never more than its size when it was opened.
func (n *Node) Read(p []byte) (int, error) {
	if n.r == nil {
		return 0, io.EOF
	}
	return n.r.Read(p)
}

// Close releases the file.
func (n *Node) Close() error {
	if n.file == nil {
		return nil
	}
	return n.file.Close()
}

// Entry is one name in a listed folder; a link is described, never followed.
type Entry struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"` // file, dir, link, fifo, socket, device or other
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"` // the permission bits in octal, such as 0644
	ModTime time.Time `json:"modified_at"`
	Target  string    `json:"target,omitempty"` // a link's target as written
}

// MaxListEntries bounds one folder's listing.
const MaxListEntries = 10000

func (f fileAPI) Open(ctx context.Context, name string) (*Node, error) {
	hostDir, rel, err := f.inHome(name)
	if err != nil {
		return nil, err
	}
	var n *Node
	err = f.inRoot(hostDir, func(root *os.File) error {
		file, err := openBeneath(root, rel, unix.O_RDONLY, 0)
		if err != nil {
			return hostError("open", name, err)
		}
		st, err := fstat(file)
		if err != nil {
			file.Close()
			return hostError("open", name, err)
		}
		n = &Node{Name: name, Size: st.size, Mode: st.mode, ModTime: time.Unix(0, st.mtime).UTC()}
		switch {
		case st.mode.IsRegular():
			n.file, n.r = file, io.LimitReader(file, st.size)
			return nil
		case st.mode.IsDir():
			defer file.Close()
			n.Dir = true
			n.Entries, n.Truncated, err = list(file)
			if err != nil {
				return hostError("list", name, err)
			}
			return nil
		}
		file.Close()
		return notRegular(name, st.mode)
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// list reads an open folder's entries, each described by fstatat without following it.
func list(dir *os.File) ([]Entry, bool, error) {
	var names []string
	truncated := false
	for {
		batch, err := dir.Readdirnames(1024)
		names = append(names, batch...)
		if errors.Is(err, io.EOF) || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, false, err
		}
		if len(names) > MaxListEntries {
			truncated = true
			break
		}
	}
	slices.Sort(names)
	if len(names) > MaxListEntries {
		names, truncated = names[:MaxListEntries], true
	}
	out := make([]Entry, 0, len(names))
	for _, nm := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(int(dir.Fd()), nm, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone meanwhile
		}
		fi := statOf(&st)
		e := Entry{Name: nm, Type: kindOf(fi.mode), Size: fi.size, Mode: fmt.Sprintf("%04o", fi.mode.Perm()), ModTime: time.Unix(0, fi.mtime).UTC()}
		if e.Type == "link" {
			buf := make([]byte, 4096)
			if k, err := unix.Readlinkat(int(dir.Fd()), nm, buf); err == nil {
				e.Target = string(buf[:k])
			}
		}
		out = append(out, e)
	}
	return out, truncated, nil
}

func (f fileAPI) Remove(ctx context.Context, name string) error {
	hostDir, rel, err := f.locate(name)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("sandbox path %q is a top folder of the sandbox and cannot be removed", name)
	}
	if hostDir == "" {
		return f.inside(ctx, "remove", name, removeScript, nil)
	}
	return f.inRoot(hostDir, func(root *os.File) error {
		dir, err := openDir(root, path.Dir(rel))
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			return hostError("remove", name, err)
		}
		defer dir.Close()
		base := path.Base(rel)
		var st unix.Stat_t
		if err := unix.Fstatat(int(dir.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			return nil
		}
		flags := 0
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			flags = unix.AT_REMOVEDIR
		}
		if err := unix.Unlinkat(int(dir.Fd()), base, flags); err != nil && !errors.Is(err, unix.ENOENT) {
			return hostError("remove", name, err)
		}
		return nil
	})
}

// The scripts behind the in-sandbox file API; $1 is the sandbox path. They run as the agent, so
// whatever the agent planted in its run folder can lead them nowhere but the agent's own files.
const (
	// writeScript writes stdin to $1 atomically with mode $2, creating missing folders.
	writeScript = `set -e; umask 077; d=$(dirname -- "$1"); mkdir -p -- "$d"
t=$(mktemp -- "$d/.guilds-write.XXXXXX"); trap 'rm -f -- "$t"' EXIT
cat > "$t"; chmod -- "$2" "$t"; mv -f -T -- "$t" "$1"; trap - EXIT`
	// readScript prints at most $2 bytes of the regular file $1; it exits 3 when there is no such
	// file, 4 when it is a link or not a regular file.
	readScript = `if [ -L "$1" ] || { [ -e "$1" ] && [ ! -f "$1" ]; }; then exit 4; fi
[ -e "$1" ] || exit 3; exec head -c "$2" -- "$1"`
	// removeScript removes $1 (an empty folder with rmdir), never following a link.
	removeScript = `if [ -d "$1" ] && [ ! -L "$1" ]; then exec rmdir -- "$1"; fi; exec rm -f -- "$1"`
)

// fileOpTimeout bounds one in-sandbox file operation.
const fileOpTimeout = 30 * time.Second

// inside runs one of the file scripts (op names it in errors) in the sandbox for name, with stdin
// (nil: none) and extra arguments.
func (f fileAPI) inside(ctx context.Context, op, name, script string, stdin []byte, args ...string) error {
	argv := append([]string{"/bin/sh", "-c", script, "sh", path.Clean(name)}, args...)
	res, err := f.exec(ctx, ExecRequest{Argv: argv, Stdin: stdin, Timeout: fileOpTimeout})
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s %s: %s", op, name, res.StderrLine(fmt.Sprintf("exit status %d", res.ExitCode)))
	}
	return nil
}

// insideRead reads at most limit bytes of name from inside the sandbox (a read there is bounded by
// what one command's output may hold).
func (f fileAPI) insideRead(ctx context.Context, name string, limit int64) ([]byte, error) {
	limit = min(limit, maxOutput-1)
	argv := []string{"/bin/sh", "-c", readScript, "sh", path.Clean(name), strconv.FormatInt(limit+1, 10)}
	res, err := f.exec(ctx, ExecRequest{Argv: argv, Timeout: fileOpTimeout})
	switch {
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", name, err)
	case res.ExitCode == 3:
		return nil, fmt.Errorf("read %s: %w", name, fs.ErrNotExist)
	case res.ExitCode == 4:
		return nil, &NotRegularError{Name: name, Kind: "link or special file"}
	case res.ExitCode != 0:
		return nil, fmt.Errorf("read %s: %s", name, res.StderrLine(fmt.Sprintf("exit status %d", res.ExitCode)))
	}
	if int64(len(res.Stdout)) > limit {
		return nil, &TooLargeError{Name: name, Size: -1, Limit: limit}
	}
	return res.Stdout, nil
}

// TailReader is a Sandbox that reads the end of a workspace file without reading all of it (the
// local and bubblewrap sandboxes are): a long call's progress follows its log this way.
type TailReader interface {
	// ReadTail reads at most n bytes from the end of a file at a sandbox path under Places().Home.
	ReadTail(ctx context.Context, name string, n int) ([]byte, error)
}

// ReadTail reads at most n bytes from the end of a regular workspace file, opened as ReadFile
// opens it: as the agent, beneath its folder, following no link and waiting on no FIFO.
func (f fileAPI) ReadTail(ctx context.Context, name string, n int) ([]byte, error) {
	hostDir, rel, err := f.inHome(name)
	if err != nil {
		return nil, err
	}
	var out []byte
	err = f.inRoot(hostDir, func(root *os.File) error {
		file, err := openBeneath(root, rel, unix.O_RDONLY, 0)
		if err != nil {
			return hostError("read", name, err)
		}
		defer file.Close()
		st, err := fstat(file)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if !st.mode.IsRegular() {
			return notRegular(name, st.mode)
		}
		from := max(st.size-int64(n), 0)
		buf := make([]byte, st.size-from)
		got, err := file.ReadAt(buf, from)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s: %w", name, err)
		}
		out = buf[:got]
		return nil
	})
	return out, err
}
