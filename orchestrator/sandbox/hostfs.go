package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The host side of the file API. Every operation on an agent's host folder runs on an OS thread
// whose filesystem ids are the agent's host uid and gid (so the kernel checks it as the agent's and
// what it creates is the agent's), and opens each path beneath the folder without following a
// link, without crossing a mount and without blocking (a FIFO or a leased file answers at once).

// do runs fn as the owner: on an OS thread of its own whose fsuid and fsgid are the agent's host
// ids, which drops the capabilities that bypass file permissions for that thread alone. The thread
// is never given back: it ends with fn's goroutine, so no other code ever runs with the agent's ids
// and no thread outlives the operation. Without an owner (the local provider, or bubblewrap not as
// root) fn runs as the orchestrator's user.
func (o owner) do(fn func() error) error {
	if !o.set() {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		// setfsgid first: once the fsuid is not 0, the thread may no longer change its fsgid.
		_, _ = unix.SetfsgidRetGid(o.gid)
		_, _ = unix.SetfsuidRetUid(o.uid)
		uid, _ := unix.SetfsuidRetUid(-1) // -1 changes nothing and answers the current id
		gid, _ := unix.SetfsgidRetGid(-1)
		if uid != o.uid || gid != o.gid {
			done <- fmt.Errorf("act as the agent's host uid %d: the thread kept uid %d, gid %d", o.uid, uid, gid)
			return
		}
		done <- fn()
	}()
	return <-done
}

// resolveBeneath is how openBeneath resolves: never a link, never another mount, never above the folder.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// noOpenat2 is set once openat2 turned out to be refused here (an old kernel, or a seccomp filter
// of a container runtime): opens walk the path one component at a time instead.
var noOpenat2 atomic.Bool

// openBeneath opens rel (a clean relative path, "." for dir itself) beneath the open folder dir,
// with flags (O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC added) and perm for a file it creates.
func openBeneath(dir *os.File, rel string, flags int, perm uint32) (*os.File, error) {
	if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
		return nil, fmt.Errorf("%s: %w", rel, unix.EXDEV)
	}
	flags |= unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	if !noOpenat2.Load() {
		fd, err := unix.Openat2(int(dir.Fd()), rel, &unix.OpenHow{Flags: uint64(flags), Mode: uint64(perm), Resolve: resolveBeneath})
		if err == nil {
			return os.NewFile(uintptr(fd), rel), nil
		}
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return nil, err
		}
		if _, probe := unix.Openat2(int(dir.Fd()), ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveBeneath}); probe == nil {
			return nil, err // openat2 works: the EPERM was the file's
		}
		noOpenat2.Store(true)
	}
	return walkBeneath(dir, rel, flags, perm)
}

// walkBeneath is openBeneath without openat2: each folder on the way is opened with O_NOFOLLOW
// and O_DIRECTORY from the one before, so a link anywhere fails the open.
func walkBeneath(dir *os.File, rel string, flags int, perm uint32) (*os.File, error) {
	parts := strings.Split(rel, "/")
	at := int(dir.Fd())
	var held []int
	defer func() {
		for _, fd := range held {
			unix.Close(fd)
		}
	}()
	for i, part := range parts {
		if part == ".." {
			return nil, unix.EXDEV
		}
		if i == len(parts)-1 {
			fd, err := unix.Openat(at, part, flags, perm)
			if err != nil {
				return nil, err
			}
			return os.NewFile(uintptr(fd), rel), nil
		}
		fd, err := unix.Openat(at, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOTDIR) {
				err = unix.ELOOP // a link (or a file) where a folder should be
			}
			return nil, err
		}
		held = append(held, fd)
		at = fd
	}
	return nil, unix.ENOENT
}

// openDir opens the folder rel beneath dir, never through a link: a link where the folder should
// be is ELOOP, like one on the way.
func openDir(dir *os.File, rel string) (*os.File, error) {
	f, err := openBeneath(dir, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(int(dir.Fd()), rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP
		}
	}
	return f, err
}

// mkdirBeneath creates the folders of rel beneath dir that are missing (mode 0755) and opens the last.
func mkdirBeneath(dir *os.File, rel string) (*os.File, error) {
	cur, err := openDir(dir, ".")
	if err != nil {
		return nil, err
	}
	if rel == "." || rel == "" {
		return cur, nil
	}
	for _, part := range strings.Split(rel, "/") {
		if err := unix.Mkdirat(int(cur.Fd()), part, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			cur.Close()
			return nil, err
		}
		next, err := openDir(cur, part)
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// fileStat is what fstat says of an open file.
type fileStat struct {
	mode  fs.FileMode
	size  int64
	mtime int64 // Unix nanoseconds
	uid   uint32
}

func statOf(st *unix.Stat_t) fileStat {
	var m fs.FileMode
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m = fs.ModeDir
	case unix.S_IFLNK:
		m = fs.ModeSymlink
	case unix.S_IFIFO:
		m = fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m = fs.ModeSocket
	case unix.S_IFCHR:
		m = fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m = fs.ModeDevice
	case unix.S_IFREG:
	default:
		m = fs.ModeIrregular
	}
	return fileStat{mode: m | fs.FileMode(st.Mode&0o777), size: st.Size, mtime: st.Mtim.Nano(), uid: st.Uid}
}

// fstat describes an open file.
func fstat(f *os.File) (fileStat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileStat{}, err
	}
	return statOf(&st), nil
}

// kindOf names a file's type as the API and the errors say it.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "link"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "other"
}

// readBounded reads an open regular file whole, at most limit bytes: a larger one (by its fstat
// size, or by what a read finds when it grew meanwhile) is a *TooLargeError.
func readBounded(f *os.File, name string, limit int64) ([]byte, error) {
	st, err := fstat(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if !st.mode.IsRegular() {
		return nil, notRegular(name, st.mode)
	}
	if st.size > limit {
		return nil, &TooLargeError{Name: name, Size: st.size, Limit: limit}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		clear(b)
		return nil, &TooLargeError{Name: name, Size: -1, Limit: limit}
	}
	return b, nil
}

// TooLargeError is a file over the limit of one read or write.
type TooLargeError struct {
	Name  string
	Size  int64 // -1: not known (it grew while it was read, or a stream passed the limit)
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s passes %s, the most one read or write takes", e.Name, sizeLabel(e.Limit))
	}
	return fmt.Sprintf("%s is %d bytes, over %s, the most one read takes", e.Name, e.Size, sizeLabel(e.Limit))
}

// NotRegularError is a path that names a folder, a FIFO, a device or a socket where a regular file
// is needed.
type NotRegularError struct {
	Name, Kind string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file", e.Name, e.Kind)
}

func notRegular(name string, m fs.FileMode) error {
	return &NotRegularError{Name: name, Kind: kindOf(m)}
}

// hostError says in the caller's terms why a host-side file operation on name failed.
func hostError(op, name string, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	switch errno {
	case unix.ELOOP:
		return fmt.Errorf("%s %s: %w", op, name, &LinkError{Name: name})
	case unix.ENOENT:
		return fmt.Errorf("%s %s: %w", op, name, fs.ErrNotExist)
	case unix.EXDEV:
		return fmt.Errorf("%s %s: the path leaves the agent's folder or crosses a mount: %w", op, name, fs.ErrPermission)
	case unix.EAGAIN:
		return fmt.Errorf("%s %s: %w", op, name, ErrBusy)
	case unix.ENOTDIR:
		return fmt.Errorf("%s %s: a part of the path is not a folder: %w", op, name, fs.ErrNotExist)
	case unix.EACCES, unix.EPERM:
		return fmt.Errorf("%s %s: the agent's user may not: %w", op, name, fs.ErrPermission)
	case unix.ENOSPC, unix.EDQUOT:
		return fmt.Errorf("%s %s: %w", op, name, ErrFull)
	case unix.EISDIR:
		return fmt.Errorf("%s %s: it is a folder: %w", op, name, fs.ErrExist)
	case unix.EEXIST:
		return fmt.Errorf("%s %s: %w", op, name, fs.ErrExist)
	case unix.ENOTEMPTY:
		return fmt.Errorf("%s %s: the folder is not empty: %w", op, name, fs.ErrExist)
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}

// Errors of host-side file operations the caller can act on.
var (
	ErrBusy = errors.New("a process in the sandbox holds a lease on it; try again once it lets go")
	ErrFull = errors.New("the agent's workspace is full (no space left under its disk quota)")
)

// LinkError is a path that is a symbolic link or passes through one: the orchestrator never
// follows a link in an agent's folder.
type LinkError struct{ Name string }

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link or passes through one; the orchestrator does not follow links in the workspace: name the file itself", e.Name)
}
