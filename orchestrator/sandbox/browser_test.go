package sandbox

import (
	"context"
	"net/http"
	"os/exec"
	"sync"
	"testing"
)

func TestBrowsersOnePerAgent(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium is not installed: run `make setup`")
	}
	ctx := context.Background()
	b := &Browsers{Provider: &Local{Root: t.TempDir(), BinDir: t.TempDir()}}
	defer b.Close()
	urls := make([]string, 3)
	var wg sync.WaitGroup
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := b.CDPURL(ctx, "agt_1")
			if err != nil {
				t.Error(err)
			}
			urls[i] = u
		}()
	}
	wg.Wait()
	if urls[0] == "" || urls[0] != urls[1] || urls[1] != urls[2] {
		t.Fatalf("concurrent calls of one agent started more than one browser: %v", urls)
	}
	resp, err := http.Get(urls[0] + "/json/version")
	if err != nil {
		t.Fatalf("CDP endpoint: %v", err)
	}
	resp.Body.Close()
	b.Stop("agt_1")
	if _, err := http.Get(urls[0] + "/json/version"); err == nil {
		t.Fatal("the browser still answers after Stop")
	}
	again, err := b.CDPURL(ctx, "agt_1")
	if err != nil || again == "" {
		t.Fatalf("restart after Stop: %q %v", again, err)
	}
}
