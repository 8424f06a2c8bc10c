package app

import (
	"bytes"
	"image/jpeg"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-browser/internal/daemon"
	"github.com/guildsai/guilds/shared/envelope"
)

// evalText runs a browser_eval that must succeed.
func (s *sandbox) eval(t testing.TB, script string) string {
	t.Helper()
	return s.ok(t, "browser_eval", map[string]string{"script": script})
}

// TestTools drives the eight tools through the real binary, daemon, Playwright and Chromium.
func TestTools(t *testing.T) {
	t.Parallel()
	cdp := needBrowser(t)
	pages := pagesServer(t)
	sb := newSandbox(t, cdp)
	nav := func(t *testing.T, page string) {
		t.Helper()
		if text := sb.ok(t, "browser_navigate", map[string]string{"url": pages.URL + "/" + page}); !strings.Contains(text, "200 OK") {
			t.Fatalf("navigate %s: %q does not report 200 OK", page, text)
		}
	}

	t.Run("form fill type click", func(t *testing.T) {
		nav(t, "form.html")
		snap := sb.ok(t, "browser_snapshot", nil)
		if !strings.Contains(snap, `"Sign-up form"`) || !strings.Contains(snap, "Nothing saved yet") {
			t.Fatalf("snapshot lacks the title or text:\n%s", snap)
		}
		name := ref(t, snap, "textbox", "Full name")
		email := ref(t, snap, "textbox", "Email")
		if got := sb.ok(t, "browser_fill", map[string]string{"locator": email, "value": "ada@example.com"}); !strings.Contains(got, `"ada@example.com"`) {
			t.Fatalf("fill: %q", got)
		}
		if got := sb.ok(t, "browser_type", map[string]string{"locator": name, "text": " Lovelace"}); !strings.Contains(got, `"Ada Lovelace"`) {
			t.Fatalf("type did not append: %q", got)
		}
		sb.ok(t, "browser_click", map[string]string{"locator": `button "Save"`})
		snap = sb.ok(t, "browser_snapshot", nil)
		if !strings.Contains(snap, "Saved: Ada Lovelace <ada@example.com>") {
			t.Fatalf("the next snapshot does not show the saved text:\n%s", snap)
		}
		// The same refs keep working while the page is unchanged.
		if again := ref(t, snap, "textbox", "Full name"); again != name {
			t.Fatalf("ref of the name field changed from %s to %s", name, again)
		}
		sb.ok(t, "browser_fill", map[string]string{"locator": name, "value": ""})
		if got := sb.eval(t, "return document.getElementById('name').value"); got != `""` {
			t.Fatalf("fill with empty value left %s", got)
		}
	})

	t.Run("bad locators", func(t *testing.T) {
		nav(t, "form.html")
		sb.ok(t, "browser_snapshot", nil)
		sb.fails(t, "browser_click", map[string]string{"locator": "e999"}, "unknown", "take a new snapshot")
		sb.fails(t, "browser_click", map[string]string{"locator": `button "No such button"`}, "no element", "take a new snapshot")
		sb.fails(t, "browser_click", map[string]string{"locator": "textbox"}, "2 elements match")
		sb.fails(t, "browser_click", map[string]string{"locator": "#css > selector"}, "neither a ref")
		sb.fails(t, "browser_fill", map[string]string{"locator": "textbox \"Email\""}, "value is required")
		sb.fails(t, "browser_type", map[string]string{"locator": "e1", "text": "x", "bogus": "y"}, "bogus")
		// A disabled button: TestClickDisabledTimesOut.
	})

	t.Run("stale ref refused", func(t *testing.T) {
		nav(t, "changes.html")
		snap := sb.ok(t, "browser_snapshot", nil)
		del := ref(t, snap, "button", "Delete")
		save := ref(t, snap, "button", "Save")
		steady := ref(t, snap, "button", "Steady")
		sb.ok(t, "browser_click", map[string]string{"locator": ref(t, snap, "button", "Change the page")})
		// The Delete button was replaced by a look-alike, and Save was renamed: both refs are refused.
		sb.fails(t, "browser_click", map[string]string{"locator": del}, "take a new snapshot")
		sb.fails(t, "browser_click", map[string]string{"locator": save}, "take a new snapshot")
		if title := sb.eval(t, "return document.title"); title != `"Changing page"` {
			t.Fatalf("a refused click still acted: title %s", title)
		}
		// An element that did not change keeps its ref across calls.
		sb.ok(t, "browser_click", map[string]string{"locator": steady})
		if title := sb.eval(t, "return document.title"); title != `"steady clicked"` {
			t.Fatalf("steady click: title %s", title)
		}
		snap = sb.ok(t, "browser_snapshot", nil)
		sb.ok(t, "browser_click", map[string]string{"locator": ref(t, snap, "button", "Delete")})
		if title := sb.eval(t, "return document.title"); title != `"new delete"` {
			t.Fatalf("fresh ref click: title %s", title)
		}
		// A ref from a page that has since been replaced by another document is refused too.
		nav(t, "form.html")
		sb.fails(t, "browser_click", map[string]string{"locator": steady}, "take a new snapshot")
	})

	t.Run("scroll panel then window", func(t *testing.T) {
		nav(t, "scroll.html")
		pos := func() string {
			return sb.eval(t, "return [document.getElementById('panel').scrollTop, document.getElementById('wide').scrollLeft, scrollY].join(',')")
		}
		got := sb.ok(t, "browser_scroll", map[string]string{"direction": "down"})
		if !strings.Contains(got, `div#panel "Messages"`) || pos() != `"200,0,0"` {
			t.Fatalf("scroll down: %q, positions %s", got, pos())
		}
		for i := 0; i < 5; i++ { // to the panel's end (800 px), then the window moves
			sb.ok(t, "browser_scroll", map[string]string{"direction": "down"})
		}
		if p := pos(); !strings.HasPrefix(p, `"800,0,`) || strings.HasSuffix(p, `,0"`) {
			t.Fatalf("after the panel's end the window should scroll: positions %s", p)
		}
		snap := sb.ok(t, "browser_snapshot", nil)
		target := ref(t, snap, "button", "In the timeline")
		got = sb.ok(t, "browser_scroll", map[string]string{"direction": "right", "target": target})
		if !strings.Contains(got, "div#wide") || !strings.Contains(got, "right by 300 px") {
			t.Fatalf("scroll right in the target panel: %q", got)
		}
		sb.fails(t, "browser_scroll", map[string]string{"direction": "sideways"}, `direction "sideways" does not exist`, "up, down, left or right")
		sb.fails(t, "browser_scroll", map[string]string{"direction": "down", "target": ref(t, snap, "heading", "Scrolling")}, "not inside a panel")
		nav(t, "form.html")
		if got := sb.ok(t, "browser_scroll", map[string]string{"direction": "up"}); !strings.Contains(got, "already at its top") {
			t.Fatalf("scroll up at the top: %q", got)
		}
	})

	t.Run("popup becomes current", func(t *testing.T) {
		nav(t, "popup.html")
		snap := sb.ok(t, "browser_snapshot", nil)
		got := sb.ok(t, "browser_click", map[string]string{"locator": ref(t, snap, "link", "Open the form in a new tab")})
		if !strings.Contains(got, "new tab") || !strings.Contains(got, "/form.html") {
			t.Fatalf("the click's result does not say the new tab became current: %q", got)
		}
		if got = sb.ok(t, "browser_snapshot", nil); !strings.Contains(got, "Sign up") {
			t.Fatalf("the snapshot is not of the new tab:\n%s", got)
		}
		if title := sb.eval(t, "return document.title"); title != `"Sign-up form"` {
			t.Fatalf("current page title %s", title)
		}
		sb.eval(t, "window.close(); return 1")
		// The tab closes asynchronously; a snapshot racing it may still read it.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if got = sb.ok(t, "browser_snapshot", nil); strings.Contains(got, "Opener") {
				break
			}
		}
		if !strings.Contains(got, "closed") || !strings.Contains(got, "Opener") {
			t.Fatalf("after the tab closed, the opener should be current again:\n%s", got)
		}
		// A window.open from a click handler is followed the same way.
		got = sb.ok(t, "browser_click", map[string]string{"locator": ref(t, got, "button", "Open a popup")})
		if !strings.Contains(got, "new tab") || !strings.Contains(got, "/scroll.html") {
			t.Fatalf("the window.open popup did not become current: %q", got)
		}
		sb.eval(t, "window.close(); return 1")
		// A plain click opens nothing and says nothing about tabs.
		nav(t, "form.html")
		if got = sb.ok(t, "browser_click", map[string]string{"locator": `button "Save"`}); strings.Contains(got, "tab") {
			t.Fatalf("a plain click reported a tab: %q", got)
		}
	})

	t.Run("eval", func(t *testing.T) {
		nav(t, "form.html")
		if got := sb.eval(t, "const r = await Promise.resolve({title: document.title, n: [1, 2.5, null], ok: true}); return r"); !strings.Contains(got, `"title": "Sign-up form"`) || !strings.Contains(got, `2.5`) {
			t.Fatalf("eval object: %s", got)
		}
		if got := sb.eval(t, "document.title = 'x'"); !strings.Contains(got, "undefined") {
			t.Fatalf("eval without return: %q", got)
		}
		sb.fails(t, "browser_eval", map[string]string{"script": "return {el: document.body}"}, "cannot be returned as JSON", "the value.el is a HTMLBodyElement")
		sb.fails(t, "browser_eval", map[string]string{"script": "return () => 1"}, "the value is a function")
		sb.fails(t, "browser_eval", map[string]string{"script": "const a = {}; a.self = a; return a"}, "cycle")
		sb.fails(t, "browser_eval", map[string]string{"script": "const x = 1;\n\n  throw new TypeError('no good');"}, "TypeError: no good", "line 3")
		sb.fails(t, "browser_eval", map[string]string{"script": "return ((("}, "does not parse")
		if title := sb.eval(t, "return document.title"); title != `"x"` {
			t.Fatalf("page changed by a failed script: %s", title)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		nav(t, "form.html")
		r := sb.call(t, "browser_screenshot", nil)
		want := filepath.Join(sb.home, "screenshots", "latest.jpg")
		if r.Failed() || !strings.Contains(r.Text, want) || r.Meta["path"] != want {
			t.Fatalf("screenshot reply: %+v", r)
		}
		b, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("latest.jpg does not decode as JPEG: %v", err)
		}
		if img.Bounds().Dx() < 100 || img.Bounds().Dy() < 100 {
			t.Fatalf("screenshot is only %v", img.Bounds())
		}
	})

	t.Run("navigation failures leave the page", func(t *testing.T) {
		nav(t, "form.html")
		before := sb.eval(t, "return location.href")
		sb.fails(t, "browser_navigate", map[string]string{"url": pages.URL + "/missing.html"}, "404 Not Found")
		if after := sb.eval(t, "return location.href"); after != before {
			t.Fatalf("after a 404 the page is %s, want %s", after, before)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + l.Addr().String() + "/"
		l.Close()
		sb.fails(t, "browser_navigate", map[string]string{"url": closed}, "ERR_CONNECTION_REFUSED")
		if after := sb.eval(t, "return location.href"); after != before {
			t.Fatalf("after a refused connection the page is %s, want %s", after, before)
		}
		sb.fails(t, "browser_navigate", map[string]string{"url": "example.com"}, "has no scheme")
		sb.fails(t, "browser_navigate", map[string]string{}, "url is required")
	})

	t.Run("large snapshot is capped and saved", func(t *testing.T) {
		nav(t, "big.html")
		r := sb.call(t, "browser_snapshot", nil)
		if r.Failed() {
			t.Fatal(r.Error)
		}
		path, _ := r.Meta["path"].(string)
		if len(r.Text) > 8192 || path == "" || !strings.Contains(r.Text, path) {
			t.Fatalf("capped snapshot: %d bytes, path %q, tail %q", len(r.Text), path, r.Text[max(0, len(r.Text)-300):])
		}
		full, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(full), `button "Item number 600"`) || !strings.HasPrefix(path, sb.home) {
			t.Fatalf("the full tree file %s lacks the last item", path)
		}
		// A ref past the cap still works: refs come from the full tree.
		sb.ok(t, "browser_click", map[string]string{"locator": ref(t, string(full), "button", "Item number 600")})
	})

	t.Run("refs inside an iframe", func(t *testing.T) {
		nav(t, "frame.html")
		snap := sb.ok(t, "browser_snapshot", nil)
		sb.ok(t, "browser_fill", map[string]string{"locator": ref(t, snap, "textbox", "Full name"), "value": "Grace Hopper"})
		sb.ok(t, "browser_click", map[string]string{"locator": ref(t, snap, "button", "Save")})
		if snap = sb.ok(t, "browser_snapshot", nil); !strings.Contains(snap, "Saved: Grace Hopper <old@example.com>") {
			t.Fatalf("the iframe's form was not submitted:\n%s", snap)
		}
		// The iframe element's own ref (a role getByRole does not know) is usable too.
		m := regexp.MustCompile(`- iframe[^\n]*\[ref=(\w+)\]`).FindStringSubmatch(snap)
		if m == nil {
			t.Fatalf("no iframe ref in:\n%s", snap)
		}
		sb.ok(t, "browser_click", map[string]string{"locator": m[1]})
	})

	t.Run("unknown tool", func(t *testing.T) {
		sb.fails(t, "browser_fly", nil, `unknown tool "browser_fly"`, "browser_snapshot")
	})
}

// TestClickDisabledTimesOut: a click on a disabled button is refused after the 15 s action timeout,
// saying why (part of TestTools/bad_locators before: alone, on its own Chromium, its wait runs
// beside the other tests).
func TestClickDisabledTimesOut(t *testing.T) {
	t.Parallel()
	cdp := ownBrowser(t)
	pages := pagesServer(t)
	sb := newSandbox(t, cdp)
	if text := sb.ok(t, "browser_navigate", map[string]string{"url": pages.URL + "/form.html"}); !strings.Contains(text, "200 OK") {
		t.Fatalf("navigate form.html: %q does not report 200 OK", text)
	}
	sb.ok(t, "browser_snapshot", nil)
	sb.fails(t, "browser_click", map[string]string{"locator": `button "Locked"`}, "Timeout 15000ms exceeded", "not enabled")
}

// TestUnreachableCDP: a call with no Chromium at the endpoint says how to start one.
func TestUnreachableCDP(t *testing.T) {
	t.Parallel()
	browserInstalled(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	sb := newSandbox(t, url)
	sb.fails(t, "browser_snapshot", nil, "cannot reach Chromium", url, "--remote-debugging-port=", "GUILDS_CDP_URL")
}

// TestDaemonLifecycle: racing first calls start one daemon; it exits when quiet; the next call starts a new one.
func TestDaemonLifecycle(t *testing.T) {
	t.Parallel()
	cdp := ownBrowser(t)
	sb := newSandbox(t, cdp, "GUILDS_BROWSER_IDLE=3s")
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := sb.call(t, "browser_eval", map[string]string{"script": "return 1"})
			if r.Failed() || r.Text != "1" {
				errs <- r.Error + r.Text
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("racing call: %s", e)
	}
	log, err := os.ReadFile(daemon.PathsFor(sb.run).Log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "listening on"); n != 1 {
		t.Fatalf("%d daemons started for 4 racing calls:\n%s", n, log)
	}
	first := daemonPID(sb.run)
	if first == 0 || !alive(first) {
		t.Fatalf("no daemon running after the calls (pid %d)", first)
	}
	deadline := time.Now().Add(time.Minute) // a hang guard over the 3 s quiet period
	for alive(first) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(first) {
		t.Fatalf("daemon %d still running after its quiet period", first)
	}
	if _, err := os.Stat(daemon.PathsFor(sb.run).Socket); err == nil {
		t.Fatalf("the quiet daemon left its socket behind")
	}
	if got := sb.ok(t, "browser_eval", map[string]string{"script": "return 2"}); got != "2" {
		t.Fatalf("call after the daemon exited: %q", got)
	}
	if second := daemonPID(sb.run); second == first || second == 0 {
		t.Fatalf("want a new daemon, pid %d (was %d)", second, first)
	}
}

// TestInvocation covers the envelope contract without a browser.
func TestInvocation(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, "http://127.0.0.1:9")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"not-base64!"}, "request is not standard base64"},
		{[]string{}, "usage: <base64 request JSON> | --request-file <path>"},
		{[]string{"--request-file", filepath.Join(sb.home, "req.json")}, "is outside"},
	} {
		var out strings.Builder
		if code := Main(tt.args, &out, &out); code != 0 {
			t.Fatalf("Main(%q) exit %d", tt.args, code)
		}
		r, err := envelope.DecodeReply([]byte(out.String()))
		if err != nil || !strings.Contains(r.Error, tt.want) {
			t.Fatalf("Main(%q) = %+v, %v; want error %q", tt.args, r, err, tt.want)
		}
	}
}
