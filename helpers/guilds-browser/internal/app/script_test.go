package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guildsai/guilds/shared/envelope"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the CLI scenarios in testdata/script: each drives guilds-browser through its
// command line, with $WORK/home as GUILDS_HOME and $WORK/run as GUILDS_RUN_DIR; a daemon a
// scenario starts is stopped by PID when it ends.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			home, run := filepath.Join(env.WorkDir, "home"), filepath.Join(env.WorkDir, "run")
			for _, d := range []string{home, run} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			env.Setenv("GUILDS_HOME", home)
			env.Setenv("GUILDS_RUN_DIR", run)
			env.Setenv("GUILDS_CDP_URL", "http://127.0.0.1:9")
			env.Defer(func() { stopDaemon(t, run) })
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"call": cmdCall},
	})
}

// cmdCall: call [-reqfile] TOOL [ARGS_JSON]. Runs guilds-browser with the request and prints the
// envelope as indented JSON with $WORK for the work folder. With !, the envelope must carry an error.
func cmdCall(ts *testscript.TestScript, neg bool, args []string) {
	reqFile := len(args) > 0 && args[0] == "-reqfile"
	if reqFile {
		args = args[1:]
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: call [-reqfile] TOOL [ARGS_JSON]")
	}
	raw := "{}"
	if len(args) == 2 {
		raw = args[1]
	}
	req := envelope.Request{Tool: args[0], Args: json.RawMessage(raw), RunID: "r1", CallID: "c1", Seq: 1}
	var argv []string
	if reqFile {
		b, err := json.Marshal(req)
		ts.Check(err)
		dir := envelope.RequestsDir(ts.Getenv("GUILDS_RUN_DIR"))
		ts.Check(os.MkdirAll(dir, 0o755))
		path := filepath.Join(dir, req.CallID+".json")
		ts.Check(os.WriteFile(path, b, 0o644))
		argv = []string{"--request-file", path}
	} else {
		enc, err := envelope.EncodeRequest(req)
		ts.Check(err)
		argv = []string{enc}
	}
	cmd := exec.Command("guilds-browser", argv...)
	cmd.Env = append(os.Environ(), "GUILDS_HOME="+ts.Getenv("GUILDS_HOME"), "GUILDS_RUN_DIR="+ts.Getenv("GUILDS_RUN_DIR"),
		"GUILDS_CDP_URL="+ts.Getenv("GUILDS_CDP_URL"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("guilds-browser: %v\n%s", err, stderr.String())
	}
	reply, err := envelope.DecodeReply(out)
	if err != nil {
		ts.Fatalf("call %s: %v (stdout %q)", args[0], err, out)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	ts.Check(enc.Encode(reply))
	fmt.Fprint(ts.Stdout(), strings.ReplaceAll(buf.String(), ts.Getenv("WORK"), "$WORK"))
	if neg != reply.Failed() {
		ts.Fatalf("call %s: failed=%v, want %v: %s%s", args[0], reply.Failed(), neg, reply.Error, reply.Text)
	}
}
