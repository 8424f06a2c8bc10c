package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	serverOnce sync.Once
	serverBin  string
	serverErr  error
)

// withServer puts guilds-sandboxd into the test's bin folder: $GUILDS_BIN_DIR's when `make build`
// filled it, else a fresh build.
func withServer(t testing.TB, bin string) {
	t.Helper()
	serverOnce.Do(func() {
		if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
			if _, err := os.Stat(filepath.Join(d, ServerName)); err == nil {
				serverBin = filepath.Join(d, ServerName)
				return
			}
		}
		dir, err := os.MkdirTemp("", "guilds-sandboxd-")
		if err != nil {
			serverErr = err
			return
		}
		serverBin = filepath.Join(dir, ServerName)
		cmd := exec.Command("go", "build", "-trimpath", "-o", serverBin, "../cmd/guilds-sandboxd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			serverErr = fmt.Errorf("build guilds-sandboxd: %v\n%s", err, out)
		}
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	if err := os.Symlink(serverBin, filepath.Join(bin, ServerName)); err != nil {
		t.Fatal(err)
	}
}
