package scriptrun

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/guildsai/guilds/shared/envelope"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/script/*.txtar")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"guilds-script-run": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestCLI runs the helper's scenarios: each .txtar drives guilds-script-run through its CLI with
// a workspace at $WORK/home and a run folder at $WORK/run.
func TestCLI(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			home, run := filepath.Join(env.WorkDir, "home"), filepath.Join(env.WorkDir, "run")
			for _, d := range []string{filepath.Join(home, "scripts"), filepath.Join(run, "requests")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			env.Setenv("GUILDS_HOME", home)
			env.Setenv("GUILDS_RUN_DIR", run)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"call": cmdCall, "replyerror": cmdReplyError},
	})
}

// cmdCall: call [-reqfile] ARGS_JSON
// Runs guilds-script-run with a script_run request (inline base64, or with -reqfile a request
// file under $GUILDS_RUN_DIR/requests) and prints the envelope as indented JSON, $WORK for the
// work folder. With !, the envelope must carry an error.
func cmdCall(ts *testscript.TestScript, neg bool, args []string) {
	reqFile := len(args) > 0 && args[0] == "-reqfile"
	if reqFile {
		args = args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: call [-reqfile] ARGS_JSON")
	}
	req := envelope.Request{Tool: "script_run", Args: json.RawMessage(args[0]), RunID: "r1", CallID: "c1", Seq: 1}
	var argv []string
	if reqFile {
		raw, _ := json.Marshal(req)
		file := filepath.Join(ts.Getenv("GUILDS_RUN_DIR"), "requests", "c1.json")
		ts.Check(os.WriteFile(file, raw, 0o600))
		argv = []string{"--request-file", file}
	} else {
		enc, err := envelope.EncodeRequest(req)
		ts.Check(err)
		argv = []string{enc}
	}
	err := ts.Exec("guilds-script-run", argv...)
	if err != nil {
		ts.Fatalf("guilds-script-run: %v", err)
	}
	reply, err := envelope.DecodeReply([]byte(ts.ReadFile("stdout")))
	ts.Check(err)
	if neg != (reply.Error != "") {
		ts.Fatalf("error %q, want error: %v", reply.Error, neg)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	ts.Check(enc.Encode(reply))
	out := strings.ReplaceAll(b.String(), ts.Getenv("WORK"), "$WORK")
	ts.Check(os.WriteFile(filepath.Join(ts.Getenv("WORK"), ".stdout"), []byte(out), 0o644))
	ts.Logf("%s", out)
	ts.Exec("cat", filepath.Join(ts.Getenv("WORK"), ".stdout"))
}

// cmdReplyError: replyerror PATTERN
// Decodes the last command's stdout as one envelope and fails unless its error matches PATTERN.
func cmdReplyError(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: replyerror PATTERN")
	}
	reply, err := envelope.DecodeReply([]byte(ts.ReadFile("stdout")))
	ts.Check(err)
	if !regexp.MustCompile(args[0]).MatchString(reply.Error) {
		ts.Fatalf("envelope error %q does not match %q", reply.Error, args[0])
	}
}
