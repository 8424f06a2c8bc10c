package credential

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/script/*.txtar")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"guilds-git-credential": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, time.Now)) },
	})
}

// TestScripts drives the helper through its CLI, and through a real git, in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			run := filepath.Join(env.WorkDir, "run")
			env.Setenv("GUILDS_RUN_DIR", run)
			// A git that reads no configuration but what the test passes and never prompts.
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(env.WorkDir, "gitconfig"))
			env.Setenv("GIT_TERMINAL_PROMPT", "0")
			env.Setenv("GIT_ASKPASS", "")
			env.Setenv("SSH_ASKPASS", "")
			env.Setenv("HOME", env.WorkDir)
			return os.MkdirAll(run, 0o755)
		},
	})
}
