package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// BenchmarkNULPath: the check every request body passes. A body without a NUL costs one scan; one
// with a NUL deep inside is walked token by token. Both are compared, in the same run, with
// decoding the same body into a map (what a handler does with it anyway), and the ratios printed.
func BenchmarkNULPath(b *testing.B) {
	args := map[string]any{"command": strings.Repeat("echo hello world; ", 2000)}
	for i := range 200 {
		args["k"+strings.Repeat("x", i%7)+string(rune('a'+i%26))] = []any{1, "two", map[string]any{"three": 3.0}}
	}
	clean, _ := json.Marshal(map[string]any{"name": "shell", "arguments": args})
	args["deep"] = []any{map[string]any{"z": "nul\x00here"}}
	dirty, _ := json.Marshal(map[string]any{"name": "shell", "arguments": args})
	median := func(f func()) time.Duration {
		ds := make([]time.Duration, 31)
		for i := range ds {
			start := time.Now()
			f()
			ds[i] = time.Since(start)
		}
		for i := range ds { // insertion sort: 31 values
			for j := i; j > 0 && ds[j] < ds[j-1]; j-- {
				ds[j], ds[j-1] = ds[j-1], ds[j]
			}
		}
		return ds[len(ds)/2]
	}
	for i := 0; i < b.N; i++ {
		if _, ok := NULPath(clean); ok {
			b.Fatal("a NUL found in the clean body")
		}
		if p, ok := NULPath(dirty); !ok || p != "arguments.deep[0].z" {
			b.Fatalf("NULPath(dirty) = %q, %v", p, ok)
		}
	}
	decode := func(doc []byte) func() {
		return func() {
			var m map[string]any
			_ = json.Unmarshal(doc, &m)
		}
	}
	cleanCheck, dirtyCheck := median(func() { NULPath(clean) }), median(func() { NULPath(dirty) })
	cleanDecode, dirtyDecode := median(decode(clean)), median(decode(dirty))
	b.ReportMetric(float64(cleanCheck)/float64(cleanDecode), "clean_check_x_decode")
	b.ReportMetric(float64(dirtyCheck)/float64(dirtyDecode), "nul_walk_x_decode")
	b.Logf("%d-byte body: check %v vs decode %v (clean); walk %v vs decode %v (with a NUL)", len(clean), cleanCheck, cleanDecode, dirtyCheck, dirtyDecode)
}
