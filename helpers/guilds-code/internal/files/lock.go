package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
	"golang.org/x/sys/unix"
)

// lockWait bounds how long an edit waits for another edit of the same file.
const lockWait = 30 * time.Second

// lockFile serializes read-modify-write of one file across helper processes with flock on a
// lock file named for the file's resolved path. The lock files live in GUILDS_RUN_DIR/locks,
// outside the workspace so git never sees them (the run's folder when that is not writable),
// and stay in place: removing them would let two writers hold different locks.
func lockFile(ctx context.Context, c *runs.Call, real string) (unlock func(), err error) {
	sum := sha256.Sum256([]byte(real))
	name := hex.EncodeToString(sum[:16]) + ".lock"
	dir := filepath.Join(c.RunDir, "locks")
	if os.MkdirAll(dir, 0o755) != nil {
		if err := c.Open(); err != nil {
			return nil, err
		}
		dir = filepath.Join(c.Dir(), "locks")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create lock folder: %w", err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", real, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another edit of %s held its lock for over %s; try again", real, lockWait)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another edit of %s: %w", real, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
