package adapterstest

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// Compare runs call and a plain GET of rawURL alternately b.N times and reports both medians
// (in µs) and their ratio under the name prefix, so a benchmark states its overhead against the
// fake's own response time measured in the same run.
func Compare(b *testing.B, name, rawURL string, header http.Header, call func() error) {
	b.Helper()
	client := &http.Client{}
	raw := func() error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, rawURL, nil)
		if err != nil {
			return err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	var raws, calls []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := raw(); err != nil {
			b.Fatalf("raw GET: %v", err)
		}
		t1 := time.Now()
		if err := call(); err != nil {
			b.Fatalf("adapter call: %v", err)
		}
		raws, calls = append(raws, t1.Sub(t0)), append(calls, time.Since(t1))
	}
	mr, mc := median(raws), median(calls)
	b.ReportMetric(float64(mr.Microseconds()), name+"-raw-µs")
	b.ReportMetric(float64(mc.Microseconds()), name+"-call-µs")
	if mr > 0 {
		b.ReportMetric(float64(mc)/float64(mr), name+"-ratio")
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
