package app

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/guildsai/guilds/shared/envelope"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/script/*.txtar")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"guilds-code": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the helper's scenarios: each .txtar drives guilds-code through its CLI.
func TestScripts(t *testing.T) {
	testscript.Run(t, ScriptParams("testdata/script", *update))
}

// ScriptParams is the testscript setup every guilds-code scenario shares: a workspace at
// $WORK/home (GUILDS_HOME), a run folder at $WORK/run (GUILDS_RUN_DIR), and the commands
// call (one tool call, envelope printed as indented JSON) and decode (decode stdout's envelope).
func ScriptParams(dir string, update bool) testscript.Params {
	return testscript.Params{
		Dir:           dir,
		UpdateScripts: update,
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			run := filepath.Join(env.WorkDir, "run")
			for _, d := range []string{home, run} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			env.Setenv("GUILDS_HOME", home)
			env.Setenv("GUILDS_RUN_DIR", run)
			env.Setenv("RUN_ID", "r1")
			env.Setenv("HOME", home)
			for _, k := range []string{"GUILDS_TOOLS_DIR", "GUILDS_BIN_DIR"} {
				if v := os.Getenv(k); v != "" {
					env.Setenv(k, v)
				}
			}
			env.Values[seqKey{}] = new(int64)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"call":    cmdCall,
			"decode":  cmdDecode,
			"fixture": cmdFixture, // fixture_test.go: copy testdata/repos/NAME into the workspace
		},
	}
}

type seqKey struct{}

// cmdCall: call [-run ID] [-seq N] [-reqfile] TOOL [ARGS_JSON | @FILE]
// Runs guilds-code with the request and prints the decoded envelope as indented JSON with
// $WORK in place of the work folder. With !, the envelope must carry an error.
func cmdCall(ts *testscript.TestScript, neg bool, args []string) {
	runID := ts.Getenv("RUN_ID")
	reqFile := false
	seqp := ts.Value(seqKey{}).(*int64)
	*seqp++
	seq := *seqp
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-run":
			runID, args = args[1], args[2:]
		case "-seq":
			n, err := strconv.ParseInt(args[1], 10, 64)
			ts.Check(err)
			seq, *seqp, args = n, n, args[2:]
		case "-reqfile":
			reqFile, args = true, args[1:]
		default:
			ts.Fatalf("call: unknown flag %s", args[0])
		}
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: call [-run ID] [-seq N] [-reqfile] TOOL [ARGS_JSON | @FILE]")
	}
	raw := "{}"
	if len(args) == 2 {
		raw = args[1]
		if strings.HasPrefix(raw, "@") {
			raw = ts.ReadFile(raw[1:])
		}
	}
	req := envelope.Request{Tool: args[0], Args: json.RawMessage(raw), RunID: runID, CallID: fmt.Sprintf("c%d", seq), Seq: seq}
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
	out := runHelper(ts, argv)
	reply, err := envelope.DecodeReply(out)
	if err != nil {
		ts.Fatalf("call %s: %v (stdout %q)", args[0], err, out)
	}
	printReply(ts, reply)
	if neg != reply.Failed() {
		if neg {
			ts.Fatalf("call %s: want an error, got text %q", args[0], reply.Text)
		}
		ts.Fatalf("call %s: unexpected error: %s", args[0], reply.Error)
	}
}

// cmdDecode decodes the envelope in the last command's stdout and prints it as indented JSON.
func cmdDecode(ts *testscript.TestScript, neg bool, args []string) {
	reply, err := envelope.DecodeReply([]byte(ts.ReadFile("stdout")))
	if err != nil {
		ts.Fatalf("decode: %v", err)
	}
	printReply(ts, reply)
}

func runHelper(ts *testscript.TestScript, argv []string) []byte {
	cmd := exec.Command("guilds-code", argv...)
	cmd.Dir = ts.Getenv("WORK")
	var env []string
	for _, k := range []string{"PATH", "HOME", "GUILDS_HOME", "GUILDS_RUN_DIR", "CODE_RESULT_MAX_BYTES",
		"GUILDS_TOOLS_DIR", "GUILDS_CDP_URL", "GUILD_AGENT_ID", "TMPDIR"} {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	// The registered command re-executes this test binary; keep its marker variables.
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TESTSCRIPT_") || strings.HasPrefix(kv, "GO") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("guilds-code: %v\n%s", err, stderr.String())
	}
	return out
}

func printReply(ts *testscript.TestScript, r envelope.Reply) {
	if r.Meta == nil {
		r.Meta = map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	ts.Check(enc.Encode(r))
	fmt.Fprint(ts.Stdout(), strings.ReplaceAll(buf.String(), ts.Getenv("WORK"), "$WORK"))
}
