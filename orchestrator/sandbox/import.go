package sandbox

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Imported is what an import unpacked.
type Imported struct {
	Files int   `json:"files"`
	Dirs  int   `json:"dirs"`
	Links int   `json:"links"` // symbolic and hard
	Bytes int64 `json:"bytes"` // the regular files' bytes
}

// ImportError is an archive refused for one of its entries; nothing of it was written.
type ImportError struct {
	Entry  string // the entry's name as the archive spells it; "" for the archive itself
	Reason string
}

func (e *ImportError) Error() string {
	if e.Entry == "" {
		return "archive refused: " + e.Reason + "; nothing was written"
	}
	return fmt.Sprintf("archive refused: entry %q %s; nothing was written", e.Entry, e.Reason)
}

// tarHeaderSize is what each entry counts toward the unpacked limit besides its bytes, so that a
// flood of empty entries is bounded too.
const tarHeaderSize = 512

func (f fileAPI) Import(ctx context.Context, dir string, archive io.Reader, limit int64) (Imported, error) {
	hostDir, rel, err := f.inHome(dir)
	if err != nil {
		return Imported{}, err
	}
	if rel == "." {
		return Imported{}, fmt.Errorf("import into %s: name a new folder under it, such as %s/repos/name", dir, dir)
	}
	var got Imported
	err = f.inRoot(hostDir, func(root *os.File) error {
		parent, err := mkdirBeneath(root, path.Dir(rel))
		if err != nil {
			return hostError("import into", dir, err)
		}
		defer parent.Close()
		base := path.Base(rel)
		replaceEmpty, err := emptyTarget(parent, base, dir)
		if err != nil {
			return err
		}
		stage := ".guilds-import-" + randomHex()
		if err := unix.Mkdirat(int(parent.Fd()), stage, 0o700); err != nil {
			return hostError("import into", dir, err)
		}
		done := false
		defer func() {
			if !done {
				_ = removeTree(parent, stage)
			}
		}()
		sd, err := openDir(parent, stage)
		if err != nil {
			return hostError("import into", dir, err)
		}
		got, err = unpack(ctx, sd, tar.NewReader(archive), limit)
		sd.Close()
		if err != nil {
			return err
		}
		if replaceEmpty {
			if err := unix.Unlinkat(int(parent.Fd()), base, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
				return hostError("import into", dir, err)
			}
		}
		if err := unix.Renameat2(int(parent.Fd()), stage, int(parent.Fd()), base, unix.RENAME_NOREPLACE); err != nil {
			return hostError("import into", dir, err)
		}
		done = true
		return nil
	})
	return got, err
}

// emptyTarget checks an import's target: missing (false), or an empty folder to replace (true);
// anything else exists and is refused.
func emptyTarget(parent *os.File, base, name string) (bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(parent.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, hostError("import into", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, fmt.Errorf("import into %s: it exists and is a %s; import into a new folder: %w", name, kindOf(statOf(&st).mode), fs.ErrExist)
	}
	d, err := openDir(parent, base)
	if err != nil {
		return false, hostError("import into", name, err)
	}
	defer d.Close()
	if names, _ := d.Readdirnames(1); len(names) > 0 {
		return false, fmt.Errorf("import into %s: the folder exists and is not empty; import into a new folder, or remove it first: %w", name, fs.ErrExist)
	}
	return true, nil
}

// unpack writes the archive's entries beneath root, refusing the first entry that may not be.
func unpack(ctx context.Context, root *os.File, tr *tar.Reader, limit int64) (Imported, error) {
	var got Imported
	var total int64
	dirModes := map[string]uint32{}
	buf := make([]byte, copyBuffer)
	for {
		if err := ctx.Err(); err != nil {
			return got, err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return got, &ImportError{Reason: "is not a valid tar stream (" + err.Error() + ")"}
		}
		if h.Typeflag == tar.TypeXGlobalHeader { // git archive's commit id
			continue
		}
		refuse := func(reason string) error { return &ImportError{Entry: h.Name, Reason: reason} }
		rel, why := entryPath(h.Name)
		if why != "" {
			return got, refuse(why)
		}
		total += tarHeaderSize
		if h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeRegA {
			total += h.Size
		}
		if total > limit {
			return got, &TooLargeError{Name: "the unpacked archive", Size: -1, Limit: limit}
		}
		if rel == "." {
			if h.Typeflag == tar.TypeDir {
				continue // the archive's own top folder: the target itself
			}
			return got, refuse("names the target folder itself")
		}
		mode := uint32(h.Mode) & 0o777
		switch h.Typeflag {
		case tar.TypeDir:
			d, err := mkdirBeneath(root, rel)
			if err != nil {
				return got, refuse(entryFailure(err))
			}
			d.Close()
			dirModes[rel] = mode | 0o700
			got.Dirs++
		case tar.TypeReg, tar.TypeRegA:
			if err := writeEntry(root, rel, mode, tr, buf); err != nil {
				return got, refuse(entryFailure(err))
			}
			got.Files++
			got.Bytes += h.Size
		case tar.TypeSymlink:
			if why := linkTarget(rel, h.Linkname); why != "" {
				return got, refuse(why)
			}
			if err := place(root, rel, func(dir *os.File, base string) error { return unix.Symlinkat(h.Linkname, int(dir.Fd()), base) }); err != nil {
				return got, refuse(entryFailure(err))
			}
			got.Links++
		case tar.TypeLink:
			src, why := entryPath(h.Linkname)
			if why != "" || src == "." {
				return got, refuse("is a hard link to " + h.Linkname + ", outside the archive's folder")
			}
			if err := hardLink(root, src, rel); err != nil {
				return got, refuse(err.Error())
			}
			got.Links++
		case tar.TypeChar, tar.TypeBlock:
			return got, refuse("is a device file; an import holds files, folders and links only")
		case tar.TypeFifo:
			return got, refuse("is a FIFO; an import holds files, folders and links only")
		default:
			return got, refuse(fmt.Sprintf("has type %q, which is not a file, folder or link", h.Typeflag))
		}
	}
	// Folders get their modes last (a read-only one would refuse what goes in it), deepest first.
	dirs := make([]string, 0, len(dirModes))
	for d := range dirModes {
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range dirs {
		fd, err := openDir(root, d)
		if err != nil {
			return got, &ImportError{Entry: d, Reason: entryFailure(err)}
		}
		err = unix.Fchmod(int(fd.Fd()), dirModes[d])
		fd.Close()
		if err != nil {
			return got, &ImportError{Entry: d, Reason: entryFailure(err)}
		}
	}
	return got, nil
}

// entryPath cleans an entry's name into a path beneath the target, or says why it cannot be one.
func entryPath(name string) (rel, why string) {
	switch {
	case name == "":
		return "", "has no name"
	case strings.HasPrefix(name, "/"):
		return "", "is an absolute path; an archive's names must be relative"
	case strings.ContainsRune(name, 0):
		return "", "holds a NUL character"
	}
	rel = path.Clean(name)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", "leaves the target folder (..)"
	}
	return rel, ""
}

// linkTarget says why a symbolic link at rel may not point at target: an absolute target, or one
// that leaves the target folder read from the link's own folder.
func linkTarget(rel, target string) string {
	switch {
	case target == "":
		return "is a link with no target"
	case strings.HasPrefix(target, "/"):
		return "is a link to the absolute path " + target + "; links must stay within the imported folder"
	}
	if to := path.Clean(path.Join(path.Dir(rel), target)); to == ".." || strings.HasPrefix(to, "../") {
		return "is a link to " + target + ", which leaves the imported folder"
	}
	return ""
}

// writeEntry writes one regular file of the archive, replacing an earlier entry of the same name.
func writeEntry(root *os.File, rel string, mode uint32, r io.Reader, buf []byte) error {
	return place(root, rel, func(dir *os.File, base string) error {
		w, err := openBeneath(dir, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = io.CopyBuffer(struct{ io.Writer }{w}, r, buf)
		if err == nil {
			err = unix.Fchmod(int(w.Fd()), mode) // exactly the archive's bits, whatever the umask
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// place makes the folders of rel, removes an earlier entry at rel (never a folder), and calls
// make with rel's folder and name.
func place(root *os.File, rel string, make func(dir *os.File, base string) error) error {
	dir, err := mkdirBeneath(root, path.Dir(rel))
	if err != nil {
		return err
	}
	defer dir.Close()
	base := path.Base(rel)
	if err := unix.Unlinkat(int(dir.Fd()), base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return make(dir, base)
}

// hardLink links rel to src, an earlier regular file of the same archive.
func hardLink(root *os.File, src, rel string) error {
	sdir, err := openDir(root, path.Dir(src))
	if err != nil {
		return fmt.Errorf("is a hard link to %s, which names no earlier file of the archive", src)
	}
	defer sdir.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(int(sdir.Fd()), path.Base(src), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("is a hard link to %s, which names no earlier regular file of the archive", src)
	}
	err = place(root, rel, func(dir *os.File, base string) error {
		return unix.Linkat(int(sdir.Fd()), path.Base(src), int(dir.Fd()), base, 0)
	})
	if err != nil {
		return errors.New(entryFailure(err))
	}
	return nil
}

// entryFailure says why writing an entry failed.
func entryFailure(err error) string {
	switch {
	case errors.Is(err, unix.ELOOP):
		return "passes through a link the archive made; nothing is written through a link"
	case errors.Is(err, unix.ENOTDIR):
		return "is under a name an earlier entry made a file"
	case errors.Is(err, unix.EISDIR), errors.Is(err, unix.EEXIST):
		return "replaces a folder an earlier entry made"
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return "does not fit: the agent's workspace is full"
	}
	return "could not be written: " + err.Error()
}

// removeTree removes name beneath parent and what it holds, never following a link.
func removeTree(parent *os.File, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(int(parent.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(int(parent.Fd()), name, 0)
	}
	d, err := openDir(parent, name)
	if err != nil {
		return err
	}
	_ = unix.Fchmod(int(d.Fd()), 0o700) // a folder the archive made read-only
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		if err := removeTree(d, n); err != nil {
			d.Close()
			return err
		}
	}
	d.Close()
	return unix.Unlinkat(int(parent.Fd()), name, unix.AT_REMOVEDIR)
}
