package registry

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"testing"
	"time"
)

func medianOf(n int, f func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		f()
		ds[i] = time.Since(start)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2]
}

// BenchmarkInvokeValidation measures Invoke on record_list-shaped arguments, whose schema was
// compiled once at Register, against compiling the schema and validating on every call (the
// alternative the cache avoids), in the same run.
func BenchmarkInvokeValidation(b *testing.B) {
	schema, err := os.ReadFile("testdata/shape/record_list.in.json")
	if err != nil {
		b.Fatal(err)
	}
	r := New()
	r.MustRegister(Tool{Name: "record_list", Schema: schema, Handler: func(context.Context, *Call) (string, error) { return "{}", nil }})
	args := json.RawMessage(`{"collection":"leads","where":{"stage":"won","amount":{"gte":"2026-01-01T00:00:00Z"}},"order":{"column":"updated_at","direction":"desc"},"limit":50}`)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		cachedRun := medianOf(200, func() {
			if _, err := r.Invoke(ctx, "record_list", &Call{Args: args}); err != nil {
				b.Fatal(err)
			}
		})
		compileRun := medianOf(100, func() {
			sch, err := compile(schema)
			if err != nil {
				b.Fatal(err)
			}
			if err := validate(sch, args); err != nil {
				b.Fatal(err)
			}
		})
		shapeRun := medianOf(100, func() { _, _ = ShapeSchema(schema) })
		ratio := float64(compileRun) / float64(cachedRun)
		b.ReportMetric(float64(cachedRun.Nanoseconds())/1e3, "invoke_median_us")
		b.ReportMetric(ratio, "x_vs_compile_each_call")
		b.ReportMetric(float64(shapeRun.Nanoseconds())/1e3, "shape_median_us")
		b.Logf("Invoke with the schema compiled at Register: median %.1f µs; compiling on every call: %.1f µs (%.1fx); ShapeSchema of record_list: %.1f µs",
			float64(cachedRun.Nanoseconds())/1e3, float64(compileRun.Nanoseconds())/1e3, ratio, float64(shapeRun.Nanoseconds())/1e3)
	}
}
