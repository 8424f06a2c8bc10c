package events

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator"
)

// TestRefusedAddresses: this box's addresses and the private, CGNAT, link-local, unique-local and
// multicast ranges are refused (IPv4-mapped ones too); public addresses pass.
func TestRefusedAddresses(t *testing.T) {
	own := map[netip.Addr]bool{netip.MustParseAddr("203.0.113.7"): true}
	for addr, want := range map[string]string{
		"127.0.0.1":       "loopback",
		"::1":             "loopback",
		"0.0.0.0":         "unspecified",
		"0.1.2.3":         "unspecified",
		"::":              "unspecified",
		"203.0.113.7":     "an address of this box",
		"10.0.0.1":        "10.0.0.0/8",
		"172.31.255.255":  "172.16.0.0/12",
		"192.168.0.1":     "192.168.0.0/16",
		"100.100.100.100": "100.64.0.0/10",
		"169.254.169.254": "169.254.0.0/16",
		"224.0.0.251":     "224.0.0.0/4",
		"255.255.255.255": "broadcast",
		"fd12::1":         "fc00::/7",
		"fe80::1":         "fe80::/10",
		"ff02::1":         "ff00::/8",
		"93.184.216.34":   "",
		"2606:4700::1111": "",
		"172.32.0.1":      "",
		"100.128.0.1":     "",
	} {
		got := refused(netip.MustParseAddr(addr).Unmap(), own)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to name %q", addr, got, want)
		}
	}
	if got := refused(netip.MustParseAddr("::ffff:10.9.8.7").Unmap(), own); !strings.Contains(got, "10.0.0.0/8") {
		t.Errorf("an IPv4-mapped private address passed: %q", got)
	}
}

// TestRetryWaits: a failed attempt's wait starts at RetryBase and doubles up to MaxRetryWait
// (plus at most a tenth), and a delivery is given up once its next attempt would fall past the
// retry window.
func TestRetryWaits(t *testing.T) {
	s := &Service{RetryBase: time.Second, RetryWindow: 3 * time.Hour}
	queued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 13: MaxRetryWait, 40: MaxRetryWait} {
		o := orchestrator.DeliveryOutcome{At: queued.Add(time.Minute)}
		s.retry(&o, orchestrator.ClaimedDelivery{Attempts: attempts, CreatedAt: queued})
		wait := o.RetryAt.Sub(o.At)
		if wait < want || wait > want+want/10 || o.GiveUp {
			t.Errorf("attempt %d: wait %v (give up %v), want %v to %v", attempts, wait, o.GiveUp, want, want+want/10)
		}
	}
	o := orchestrator.DeliveryOutcome{At: queued.Add(2*time.Hour + 30*time.Minute)}
	s.retry(&o, orchestrator.ClaimedDelivery{Attempts: 20, CreatedAt: queued})
	if !o.GiveUp {
		t.Errorf("an attempt whose next one would fall past the window was not given up: %+v", o)
	}
}
