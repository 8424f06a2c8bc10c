package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/guildsai/guilds/shared/envelope"
)

// echo answers with what the runner handed it.
func echo(ctx context.Context, c Call) envelope.Reply {
	return envelope.Reply{Text: c.Req.Tool + " " + string(c.Req.Args), Meta: map[string]any{
		"home": c.Home, "run": c.RunDir, "max": c.Max, "procs": runtime.GOMAXPROCS(0), "done": ctx.Done() != nil,
	}}
}

func testHelper() Helper {
	return Helper{
		Name: "guilds-test",
		Tools: map[string]Tool{
			"echo":   {Run: echo},
			"quiet":  {Run: echo, Quiet: true},
			"serial": {Run: echo, Serial: true, Quiet: true},
			"fails": {Run: func(context.Context, Call) envelope.Reply {
				return envelope.Errorf(map[string]any{"k": 1}, "it failed")
			}},
			"panics": {Run: func(context.Context, Call) envelope.Reply { panic("index out of range") }},
			"long":   {Run: func(context.Context, Call) envelope.Reply { return envelope.Reply{Text: strings.Repeat("é", 600)} }},
			"nometa": {Run: func(context.Context, Call) envelope.Reply { return envelope.Reply{Text: "x"} }},
		},
		Modes: map[string]Mode{
			"--daemon": {Run: func(args []string, stdout, stderr io.Writer) int { io.WriteString(stdout, "daemon"); return 3 }},
			"--supervise": {Args: 1, Run: func(args []string, stdout, stderr io.Writer) int {
				io.WriteString(stdout, "supervise "+args[0])
				return 0
			}},
		},
	}
}

func request(t *testing.T, tool, args string) string {
	t.Helper()
	enc, err := envelope.EncodeRequest(envelope.Request{Tool: tool, Args: json.RawMessage(args), RunID: "r1", CallID: "c1", Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// TestMainInvocations runs invocations end to end: the arguments in, the exit status and standard output out.
func TestMainInvocations(t *testing.T) {
	home, run := t.TempDir(), t.TempDir()
	t.Setenv("GUILDS_HOME", home)
	t.Setenv("GUILDS_RUN_DIR", run)
	t.Setenv("CODE_RESULT_MAX_BYTES", "600")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	reqFile := filepath.Join(envelope.RequestsDir(run), "c1.json")
	if err := os.MkdirAll(filepath.Dir(reqFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reqFile, []byte(`{"tool":"echo","args":{"a":1},"run_id":"r1","call_id":"c1","seq":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		out    string         // the raw standard output, when it is no envelope
		text   string         // the envelope's text
		err    string         // the envelope's error
		meta   map[string]any // entries the envelope's meta must hold
	}{
		{name: "help", args: []string{"--help"}, out: "usage: guilds-test <base64 request JSON> | --request-file <path>\n"},
		{name: "mode", args: []string{"--daemon"}, status: 3, out: "daemon"},
		{name: "mode with its argument", args: []string{"--supervise", "state.json"}, out: "supervise state.json"},
		{name: "mode without its argument", args: []string{"--supervise"}, err: "usage: <base64 request JSON> | --request-file <path>"},
		{name: "mode with too many", args: []string{"--daemon", "x"}, err: "usage:"},
		{name: "no arguments", args: nil, err: "usage:"},
		{name: "not base64", args: []string{"%%%"}, err: "request is not standard base64"},
		{name: "unknown tool", args: []string{request(t, "nope", `{}`)}, err: `unknown tool "nope"; guilds-test runs echo, fails, long, nometa, panics, quiet, serial`},
		{name: "call", args: []string{request(t, "echo", `{"a":1}`)}, text: `echo {"a":1}`,
			meta: map[string]any{"home": home, "run": run, "max": 600.0, "done": true}},
		{name: "request file", args: []string{"--request-file", reqFile}, text: `echo {"a":1}`},
		{name: "quiet: no signal context", args: []string{request(t, "quiet", `{}`)}, text: "quiet {}", meta: map[string]any{"done": false}},
		{name: "serial: one processor", args: []string{request(t, "serial", `{}`)}, text: "serial {}", meta: map[string]any{"procs": 1.0}},
		{name: "failed tool", args: []string{request(t, "fails", `{}`)}, err: "it failed", meta: map[string]any{"k": 1.0}},
		{name: "panic", args: []string{request(t, "panics", `{}`)}, err: "panics failed unexpectedly: index out of range"},
		{name: "cap", args: []string{request(t, "long", `{}`)}, text: strings.Repeat("é", 279) + "\n… [result cut at the helper's byte cap]"},
		{name: "meta never null", args: []string{request(t, "nometa", `{}`)}, text: "x", meta: map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := testHelper().Main(tc.args, &stdout, &stderr)
			if status != tc.status {
				t.Fatalf("status %d, want %d (stderr %q)", status, tc.status, stderr.String())
			}
			if tc.out != "" {
				if stdout.String() != tc.out {
					t.Fatalf("stdout %q, want %q", stdout.String(), tc.out)
				}
				return
			}
			r, err := envelope.DecodeReply(stdout.Bytes())
			if err != nil {
				t.Fatalf("%v: %q", err, stdout.String())
			}
			if r.Text != tc.text || !strings.HasPrefix(r.Error, tc.err) {
				t.Fatalf("text %q error %q, want %q %q", r.Text, r.Error, tc.text, tc.err)
			}
			for k, v := range tc.meta {
				if r.Meta[k] != v {
					t.Errorf("meta[%s] = %v, want %v", k, r.Meta[k], v)
				}
			}
			if len(r.Text) > 600 {
				t.Errorf("text of %d bytes passed the cap", len(r.Text))
			}
		})
	}
	if _, err := os.Stat(reqFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("request file kept: %v", err)
	}
}

// failingWriter refuses every write, as a closed standard output does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestMainCannotWrite: when the envelope cannot be written the exit status says so, with the
// reason on standard error.
func TestMainCannotWrite(t *testing.T) {
	t.Setenv("GUILDS_RUN_DIR", t.TempDir())
	var stderr bytes.Buffer
	if status := testHelper().Main([]string{request(t, "quiet", `{}`)}, failingWriter{}, &stderr); status != 1 {
		t.Fatalf("status %d", status)
	}
	if got := stderr.String(); got != "guilds-test: write envelope: broken pipe\n" {
		t.Fatalf("stderr %q", got)
	}
}

func TestCap(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 100, "short"},
		{strings.Repeat("a", 100), 100, strings.Repeat("a", 100)},
		{strings.Repeat("a", 101), 60, strings.Repeat("a", 60-len("\n… [result cut at the helper's byte cap]")) + "\n… [result cut at the helper's byte cap]"},
	} {
		if got := Cap(tc.in, tc.max); got != tc.want || len(got) > tc.max {
			t.Errorf("Cap(%d bytes, %d) = %q", len(tc.in), tc.max, got)
		}
	}
}
