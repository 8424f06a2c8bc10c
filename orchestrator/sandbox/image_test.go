package sandbox

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guildsai/guilds/shared/envelope"
)

// TestImageRootfs stages the sandbox image's layout (image/stage.sh, what `make image-rootfs` runs)
// and checks that every staged helper is a static executable that answers a protocol call.
func TestImageRootfs(t *testing.T) {
	bin := os.Getenv("GUILDS_BIN_DIR")
	if bin == "" {
		t.Skip("GUILDS_BIN_DIR is unset: run through `make test`, which builds the static helpers first")
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	out, err := exec.Command(filepath.Join("..", "..", "image", "stage.sh"), root).CombinedOutput()
	if err != nil {
		t.Fatalf("stage: %v\n%s", err, out)
	}
	for _, p := range []string{"etc/gitconfig", "home/agent", "run/guilds/requests",
		"opt/guilds/tools/node_modules/playwright-core/cli.js", "opt/guilds/tools/node_modules/.bin/ast-grep"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("staged layout lacks /%s: %v", p, err)
		}
	}
	helpers, _ := filepath.Glob(filepath.Join(root, "usr", "local", "bin", "guilds-*"))
	names := map[string]bool{}
	for _, h := range helpers {
		names[filepath.Base(h)] = true
	}
	for _, want := range []string{"guilds-code", "guilds-browser", "guilds-git-credential"} {
		if !names[want] {
			t.Fatalf("staged helpers %v lack %s", names, want)
		}
	}
	if names[ServerName] {
		t.Errorf("the image carries %s, the bubblewrap sandbox's exec server (a container's own exec replaces it)", ServerName)
	}
	for _, h := range helpers {
		name := filepath.Base(h)
		t.Run(name, func(t *testing.T) {
			f, err := elf.Open(h)
			if err != nil {
				t.Fatalf("not an ELF executable: %v", err)
			}
			defer f.Close()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Fatalf("%s is dynamically linked (program header %v): build it static (`make build`)", name, p.Type)
				}
			}
			home, run := t.TempDir(), t.TempDir()
			cmd := exec.Command(h)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "GUILDS_HOME=" + home, "GUILDS_RUN_DIR=" + run}
			if name == "guilds-code-parse" {
				// guilds-code's tree-sitter companion reads a binary parse request on stdin: an
				// empty one gets its own refusal, which shows it runs.
				cmd.Stdin = strings.NewReader("")
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), "not a parse request") {
					t.Fatalf("empty parse request: %v %q", err, out)
				}
				return
			}
			if name == "guilds-git-credential" {
				// git's credential protocol: a host it holds no token for gets an empty answer.
				cmd.Args = append(cmd.Args, "get")
				cmd.Stdin = strings.NewReader("protocol=https\nhost=github.com\npath=o/r\n\n")
				if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
					t.Fatalf("credential get: %v %q", err, out)
				}
				return
			}
			// A tool it does not run: the helper must still answer with an envelope naming the problem.
			req, _ := envelope.EncodeRequest(envelope.Request{Tool: "no_such_tool", Args: []byte("{}"), RunID: "r1", CallID: "c1", Seq: 1})
			cmd.Args = append(cmd.Args, req)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.Output()
			if err != nil {
				t.Fatalf("protocol call: %v\n%s", err, stderr.String())
			}
			reply, err := envelope.DecodeReply(stdout)
			if err != nil || reply.Error == "" {
				t.Fatalf("reply %+v, %v (stdout %q)", reply, err, stdout)
			}
		})
	}
}
