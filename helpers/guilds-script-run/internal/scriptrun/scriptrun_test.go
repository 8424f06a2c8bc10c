package scriptrun_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-script-run/internal/scriptrun"
	"github.com/guildsai/guilds/shared/envelope"
)

// setup makes a workspace holding the scripts and points the helper at it.
func setup(t *testing.T, scripts map[string]string) string {
	t.Helper()
	home, run := t.TempDir(), t.TempDir()
	t.Setenv("GUILDS_HOME", home)
	t.Setenv("GUILDS_RUN_DIR", run)
	must(t, os.MkdirAll(filepath.Join(home, "scripts"), 0o755))
	for name, src := range scripts {
		must(t, os.WriteFile(filepath.Join(home, "scripts", name+".py"), []byte(src), 0o644))
	}
	return home
}

// call runs the helper's Main on a request and decodes its envelope.
func call(t *testing.T, args string) envelope.Reply {
	t.Helper()
	enc, err := envelope.EncodeRequest(envelope.Request{Tool: "script_run", Args: json.RawMessage(args), RunID: "run_1", CallID: "call_1", Seq: 1})
	must(t, err)
	var out, errOut bytes.Buffer
	if code := scriptrun.Main([]string{enc}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	r, err := envelope.DecodeReply(out.Bytes())
	must(t, err)
	return r
}

func TestScriptRun(t *testing.T) {
	home := setup(t, map[string]string{
		"echo":   "import json, sys\nargs = json.load(sys.stdin)\nprint('got', json.dumps(args, sort_keys=True))\nprint('cwd', __import__('os').getcwd())\n",
		"fail":   "import sys\nprint('bad input', file=sys.stderr)\nsys.exit(3)\n",
		"binary": "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')\n",
		"big":    "for i in range(5000):\n    print('line', i)\n",
		"quiet":  "pass\n",
	})
	for _, tc := range []struct {
		name, args string
		want       []string
		err        string
		exit       float64
	}{
		{"arguments reach stdin", `{"name":"echo","arguments":{"b":2,"a":"x"}}`, []string{`got {"a": "x", "b": 2}`, "cwd " + home}, "", 0},
		{"no arguments is {}", `{"name":"echo"}`, []string{"got {}"}, "", 0},
		{"exit code", `{"name":"fail"}`, []string{"bad input", "exit_code: 3"}, "", 3},
		{"not utf-8", `{"name":"binary"}`, []string{"ok \uFFFD", "not valid UTF-8"}, "", 0},
		{"elided with the log path", `{"name":"big"}`, []string{"line 0\n", "line 4999", "bytes elided; full log: " + filepath.Join(home, ".runs/run_1/call_1.log")}, "", 0},
		{"no output", `{"name":"quiet"}`, []string{"(no output)"}, "", 0},
		{"missing script", `{"name":"nope"}`, nil, "script nope is not in the workspace", 0},
		{"capital letters", `{"name":"Echo"}`, nil, "must match", 0},
		{"manifest reserved", `{"name":"manifest"}`, nil, "not manifest", 0},
		{"arguments not an object", `{"name":"echo","arguments":[1]}`, nil, "must be a JSON object", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.args)
			if tc.err != "" {
				if !strings.Contains(r.Error, tc.err) {
					t.Fatalf("error %q, want %q (text %q)", r.Error, tc.err, r.Text)
				}
				return
			}
			if r.Error != "" {
				t.Fatalf("error %q", r.Error)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Text, w) {
					t.Fatalf("text %q lacks %q", r.Text, w)
				}
			}
			if len(r.Text) > 8192 {
				t.Fatalf("text is %d bytes, over the cap", len(r.Text))
			}
			if r.Meta["exit_code"] != tc.exit {
				t.Fatalf("meta %v", r.Meta)
			}
		})
	}
	// The full log keeps everything the elided result left out.
	call(t, `{"name":"big"}`)
	log, err := os.ReadFile(filepath.Join(home, ".runs/run_1/call_1.log"))
	must(t, err)
	if !strings.Contains(string(log), "line 2500\n") {
		t.Fatalf("log lacks the middle: %d bytes", len(log))
	}
}

// TestScriptTimeout: a script that loops forever is stopped with exit_code 124 (the 120 s limit,
// shortened here through GUILDS_SCRIPT_TIMEOUT_SECONDS), its children too, and what it printed is
// kept. The 10 s leave room for Python's start on a loaded machine (3 s were not always enough for
// it to print its line).
func TestScriptTimeout(t *testing.T) {
	setup(t, map[string]string{"loop": "print('looping', flush=True)\nimport subprocess, time\nsubprocess.Popen(['sleep', '300'])\nwhile True:\n    time.sleep(0.1)\n"})
	t.Setenv(scriptrun.TimeoutEnv, "10")
	start := time.Now()
	r := call(t, `{"name":"loop"}`)
	if r.Meta["exit_code"] != float64(124) || r.Meta["timed_out"] != true || !strings.Contains(r.Text, "looping") || !strings.Contains(r.Text, "exit_code: 124") {
		t.Fatalf("reply %+v", r)
	}
	if d := time.Since(start); d > 2*time.Minute { // a hang guard: the script never ends by itself
		t.Fatalf("took %s", d)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
