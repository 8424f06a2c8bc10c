package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/events"
)

// arrival is a request the benchmark's receiver took: the message text it carried, and when.
type arrival struct {
	text string
	at   time.Time
}

// BenchmarkEventDelivery: the latency from an event's committed transaction (a group message
// posted) to its webhook's receiver on loopback, p50 and p99 over 1,000 events one after another,
// against the direct call: the same signed body POSTed straight to the same receiver.
func BenchmarkEventDelivery(b *testing.B) {
	const n = 1000
	w := newWorld(b)
	arrivals := make(chan arrival, n)
	rcv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		at := time.Now()
		var ev struct {
			Data struct {
				Message struct{ Text string } `json:"message"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		arrivals <- arrival{ev.Data.Message.Text, at}
	}))
	defer rcv.Close()
	ctx := context.Background()
	url := rcv.URL
	if _, err := (&events.Service{Store: w.store, Box: w.box, AllowPrivate: true}).UpdateWebhook(ctx, "org_1", w.hook.ID, orchestrator.WebhookChange{URL: &url}); err != nil {
		b.Fatal(err)
	}
	w.replica(b)
	wait := func(text string) time.Time {
		for {
			select {
			case a := <-arrivals:
				if a.text == text {
					return a.at
				}
			case <-time.After(30 * time.Second):
				b.Fatalf("event %q never arrived", text)
			}
		}
	}
	// Warm the pool, the listener and the receiver's connection.
	w.post(b, "", "warm")
	wait("warm")
	secret := []byte("whsec_counter_0123456789abcdef")
	client := &http.Client{}
	b.ResetTimer()
	for range b.N {
		outbox := make([]time.Duration, 0, n)
		direct := make([]time.Duration, 0, n)
		for i := range n {
			text := fmt.Sprint("o", i)
			if _, err := w.store.PostGroupMessage(ctx, orchestrator.ChatMessage{GuildID: "gld_1", AgentID: "agt_1", Text: text, CreatedAt: w.now}); err != nil {
				b.Fatal(err)
			}
			committed := time.Now()
			outbox = append(outbox, wait(text).Sub(committed))
		}
		for i := range n {
			text := fmt.Sprint("d", i)
			data, _ := json.Marshal(map[string]any{"message": orchestrator.ChatMessage{GuildID: "gld_1", AgentID: "agt_1", Text: text, CreatedAt: w.now}})
			body, _ := json.Marshal(orchestrator.Event{ID: orchestrator.NewID(orchestrator.PrefixEvent), Type: orchestrator.EventGroupPosted, CreatedAt: w.now, OrgID: "org_1", Data: data})
			start := time.Now()
			req, _ := http.NewRequest(http.MethodPost, rcv.URL, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(events.SignatureHeader, events.Signature(secret, start, body))
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			direct = append(direct, wait(text).Sub(start))
		}
		op50, op99 := percentile(outbox, 50), percentile(outbox, 99)
		dp50, dp99 := percentile(direct, 50), percentile(direct, 99)
		b.ReportMetric(ms(op50), "outbox-p50-ms")
		b.ReportMetric(ms(op99), "outbox-p99-ms")
		b.ReportMetric(ms(dp50), "direct-p50-ms")
		b.ReportMetric(float64(op50)/float64(dp50), "p50-ratio")
		b.Logf("event delivery over %d events: outbox (commit → receiver) p50 %.2f ms, p99 %.2f ms; direct POST p50 %.2f ms, p99 %.2f ms; ratio p50 %.1f×, p99 %.1f×",
			n, ms(op50), ms(op99), ms(dp50), ms(dp99), float64(op50)/float64(dp50), float64(op99)/float64(dp99))
	}
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
