// Package atomicfile replaces files atomically: a reader sees the old content or the new, never a mix.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteFile replaces path with data; see Write.
func WriteFile(path string, data []byte, mode fs.FileMode) error {
	return Write(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces path with what fill writes, through a temporary file in the same folder that is
// synced to disk and then renamed over path. An existing file keeps its mode; a new one gets
// mode. The data goes into an unnamed file (O_TMPFILE) that is given a name only to be renamed
// over path, so a process killed mid-write leaves nothing behind; where the file system lacks
// O_TMPFILE it falls back to a named temporary file, and the next write to path removes any its
// dead writer left. The folder must exist.
func Write(path string, mode fs.FileMode, fill func(io.Writer) error) error {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	dir, base := filepath.Dir(path), filepath.Base(path)
	removeStaleTemps(dir, base)
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.guilds-tmp-%d-%d", base, os.Getpid(), rand.Uint32()))
	f, err := os.OpenFile(dir, os.O_RDWR|unix.O_TMPFILE, 0o600)
	if err != nil {
		return writeNamedTemp(path, tmp, mode, fill)
	}
	defer f.Close()
	if err := complete(f, path, mode, fill); err != nil {
		return err
	}
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW); err != nil {
		// The unnamed file cannot be named (no /proc): copy it into a named one rather than
		// fill again, since fill may not be repeatable.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return writeNamedTemp(path, tmp, mode, func(w io.Writer) error {
			_, err := io.Copy(w, f)
			return err
		})
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// complete fills f, sets its mode and syncs it.
func complete(f *os.File, path string, mode fs.FileMode, fill func(io.Writer) error) error {
	if err := fill(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// writeNamedTemp is Write through the named temporary file tmp.
func writeNamedTemp(path, tmp string, mode fs.FileMode, fill func(io.Writer) error) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := complete(f, path, mode, fill); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	ok = true
	return nil
}

// removeStaleTemps deletes temporary files for base in dir whose writing process is gone.
func removeStaleTemps(dir, base string) {
	prefix := "." + base + ".guilds-tmp-"
	names, _ := filepath.Glob(filepath.Join(dir, globEscape(prefix)+"*"))
	for _, name := range names {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(name), prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			os.Remove(name)
		}
	}
}

// globEscape quotes the pattern characters of filepath.Match in s.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
