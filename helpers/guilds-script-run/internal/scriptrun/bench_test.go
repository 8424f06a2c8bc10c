package scriptrun

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/shared/envelope"
)

// BenchmarkScriptRun measures a whole guilds-script-run process (request decoding, pty, shaping,
// log) running a small script, against python3 running the same script with the same stdin, in
// the same run: 10 runs of each side, medians compared.
func BenchmarkScriptRun(b *testing.B) {
	binDir := os.Getenv("GUILDS_BIN_DIR")
	helper := filepath.Join(binDir, "guilds-script-run")
	if _, err := os.Stat(helper); binDir == "" || err != nil {
		b.Skip("GUILDS_BIN_DIR is unset or holds no guilds-script-run; run `make build` and `make bench`")
	}
	home, run := b.TempDir(), b.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "scripts"), 0o755); err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(home, "scripts", "sum.py")
	src := "import json, sys\na = json.load(sys.stdin)\nprint(sum(a['n']))\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	stdin := `{"n":[1,2,3,4]}`
	enc, err := envelope.EncodeRequest(envelope.Request{Tool: "script_run", Args: json.RawMessage(`{"name":"sum","arguments":` + stdin + `}`), RunID: "r1", CallID: "c1", Seq: 1})
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "GUILDS_HOME="+home, "GUILDS_RUN_DIR="+run)
	median := func(name string, args ...string) float64 {
		var ds []float64
		for i := 0; i < 10; i++ {
			cmd := exec.Command(name, args...)
			cmd.Env, cmd.Dir, cmd.Stdin = env, home, strings.NewReader(stdin)
			var out bytes.Buffer
			cmd.Stdout = &out
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			ds = append(ds, float64(time.Since(start).Microseconds())/1000)
		}
		sort.Float64s(ds)
		return ds[len(ds)/2]
	}
	for i := 0; i < b.N; i++ {
		helperMS := median(helper, enc)
		rawMS := median("python3", script)
		b.ReportMetric(helperMS, "helper_median_ms")
		b.ReportMetric(rawMS, "python3_median_ms")
		b.ReportMetric(helperMS/rawMS, "x_vs_python3")
		b.Logf("script_run through guilds-script-run %.1f ms, python3 alone %.1f ms (%.2fx)", helperMS, rawMS, helperMS/rawMS)
	}
}
