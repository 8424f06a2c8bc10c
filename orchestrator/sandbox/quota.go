package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// How an agent's workspace quota is enforced (GET /api/instance's sandbox.disk_quota).
const (
	DiskQuotaImage = "image" // an ext4 image file of the quota's size, loop-mounted over the agent's folder
	DiskQuotaNone  = "none"  // not enforced on this host (said in missing)
)

// DefaultDisk is the workspace quota cmd gives an agent when GUILDS_SANDBOX_DISK is unset.
const DefaultDisk = 10 << 30

// MinDisk is the smallest workspace quota (an ext4 image smaller than this holds little but its
// own metadata).
const MinDisk = 16 << 20

// imageName is an agent's workspace image, beside its home folder.
const imageName = "home.img"

// diskImages bounds each agent's /home/agent with an ext4 image file of the quota's size (sparse:
// it takes host disk only as the agent writes), loop-mounted over the agent's host folder with
// nosuid, nodev and discard, so a write past the quota fails in the sandbox with "No space left on
// device" and never fills the host's disk. A folder with files from before the quota has them
// copied into its image once.
type diskImages struct {
	size int64
	log  *slog.Logger

	attachMu sync.Mutex // one attach at a time: two calls of one agent must not mount it twice
	mu       sync.Mutex
	mounted  map[string]bool // homes this process mounted
}

// probeDiskImages checks this host lets the orchestrator make and loop-mount an ext4 image (root,
// mkfs.ext4 and mount, a loop device): it mounts a small one under root and removes it.
func probeDiskImages(root string, size int64, log *slog.Logger) (*diskImages, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the orchestrator does not run as root, so it cannot mount a workspace image")
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is not installed (apt-get install e2fsprogs mount)", tool)
		}
	}
	d := &diskImages{size: size, log: log, mounted: map[string]bool{}}
	probe, err := os.MkdirTemp(root, ".quota-probe-")
	if err != nil {
		return nil, fmt.Errorf("probe folder: %w", err)
	}
	defer os.RemoveAll(probe)
	img, mnt := filepath.Join(probe, imageName), filepath.Join(probe, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return nil, err
	}
	if err := makeImage(img, MinDisk, noOwner); err != nil {
		return nil, err
	}
	if err := mountImage(img, mnt); err != nil {
		return nil, err
	}
	if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
		return nil, fmt.Errorf("unmount the probe image: %w", err)
	}
	return d, nil
}

// attach mounts the agent's image over home (making it, and moving home's files into it, first);
// a home already mounted (by an earlier run of the orchestrator) is left as it is.
func (d *diskImages) attach(home string, o owner) error {
	d.attachMu.Lock()
	defer d.attachMu.Unlock()
	if isMountpoint(home) {
		d.remember(home)
		return nil
	}
	img := filepath.Join(filepath.Dir(home), imageName)
	if _, err := os.Stat(img); errors.Is(err, fs.ErrNotExist) {
		if err := makeImage(img, d.size, o); err != nil {
			return err
		}
		d.log.Info("sandbox workspace image made", "image", img, "bytes", d.size)
	} else if err != nil {
		return fmt.Errorf("workspace image: %w", err)
	}
	if err := d.moveIn(img, home); err != nil {
		return err
	}
	if err := mountImage(img, home); err != nil {
		return err
	}
	d.remember(home)
	// The image's root is home: the agent's, private, without ext4's lost+found.
	_ = os.Remove(filepath.Join(home, "lost+found"))
	if err := os.Chmod(home, 0o700); err != nil {
		return fmt.Errorf("workspace image: %w", err)
	}
	if o.set() {
		if err := os.Chown(home, o.uid, o.gid); err != nil {
			return fmt.Errorf("workspace image: %w", err)
		}
	}
	return nil
}

// moveIn copies what home holds into the image and empties home, so mounting hides nothing.
func (d *diskImages) moveIn(img, home string) error {
	entries, err := os.ReadDir(home)
	if err != nil || len(entries) == 0 {
		return err
	}
	staging := filepath.Join(filepath.Dir(home), ".home-move")
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return fmt.Errorf("move the workspace into its image: %w", err)
	}
	defer os.Remove(staging)
	if err := mountImage(img, staging); err != nil {
		return err
	}
	out, cerr := exec.Command("cp", "-a", "--", home+"/.", staging+"/").CombinedOutput()
	uerr := syscall.Unmount(staging, 0)
	if cerr != nil {
		return fmt.Errorf("%w: the workspace %s does not fit its %s image (GUILDS_SANDBOX_DISK): %v %s; raise the quota or free space in it", ErrUnavailable, home, sizeLabel(d.size), cerr, strings.TrimSpace(string(out)))
	}
	if uerr != nil {
		return fmt.Errorf("move the workspace into its image: %w", uerr)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(home, e.Name())); err != nil {
			return fmt.Errorf("move the workspace into its image: %w", err)
		}
	}
	d.log.Info("sandbox workspace moved into its image", "home", home, "entries", len(entries))
	return nil
}

// remember notes a home this process holds mounted.
func (d *diskImages) remember(home string) {
	d.mu.Lock()
	d.mounted[home] = true
	d.mu.Unlock()
}

// detachAll unmounts every home this process mounted (lazily: a process still inside lets go later).
func (d *diskImages) detachAll() {
	d.mu.Lock()
	homes := d.mounted
	d.mounted = map[string]bool{}
	d.mu.Unlock()
	for home := range homes {
		if err := syscall.Unmount(home, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			d.log.Warn("sandbox workspace image not unmounted", "home", home, "err", err.Error())
		}
	}
}

// makeImage writes a sparse ext4 image of size bytes whose root belongs to o.
func makeImage(img string, size int64, o owner) error {
	tmp := img + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("workspace image: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("workspace image: %w", err)
	}
	ext := "lazy_itable_init=1,lazy_journal_init=1"
	if o.set() {
		ext += ",root_owner=" + strconv.Itoa(o.uid) + ":" + strconv.Itoa(o.gid)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", "-L", "guilds-home", "-E", ext, tmp).CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mkfs.ext4 %s: %v %s", tmp, err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("workspace image: %w", err)
	}
	return nil
}

// mountImage loop-mounts img at dir.
func mountImage(img, dir string) error {
	if out, err := exec.Command("mount", "-t", "ext4", "-o", "loop,nosuid,nodev,discard", img, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: mount the workspace image %s: %v %s", ErrUnavailable, img, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// isMountpoint reports whether dir is on another device than its parent.
func isMountpoint(dir string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// sizeLabel writes n bytes in GiB or MiB when whole.
func sizeLabel(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// DiskSpace is what the agents' workspace images may claim of the host's disk, found at start:
// each image is sparse and takes disk only as its agent writes, so together they may promise more
// than the disk holds.
type DiskSpace struct {
	Quota  int64 `json:"quota"`  // bytes a new agent's image holds (GUILDS_SANDBOX_DISK)
	Images int   `json:"images"` // the agents' images under the sandbox folder
	Growth int64 `json:"growth"` // bytes those images may still take, each up to the size it was made with
	Free   int64 `json:"free"`   // bytes free on the sandbox folder's filesystem
	// Oversubscribed: Growth and one more agent's Quota pass Free, so a workspace may meet a full
	// host disk before its quota.
	Oversubscribed bool `json:"oversubscribed"`
}

// diskSpace adds up the images under root against the free space of root's filesystem.
func diskSpace(root string, quota int64) (DiskSpace, error) {
	d := DiskSpace{Quota: quota}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(root, &fs); err != nil {
		return d, fmt.Errorf("free space of %s: %w", root, err)
	}
	d.Free = int64(fs.Bavail) * fs.Bsize
	images, err := filepath.Glob(filepath.Join(root, "*", imageName))
	if err != nil {
		return d, err
	}
	for _, img := range images {
		var st syscall.Stat_t
		if err := syscall.Stat(img, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		d.Images++
		d.Growth += max(0, st.Size-st.Blocks*512)
	}
	d.Oversubscribed = d.Growth+quota > d.Free
	return d, nil
}
