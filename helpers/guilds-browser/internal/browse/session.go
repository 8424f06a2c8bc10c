// Package browse holds the daemon's Playwright session over the live Chromium and runs the eight
// browser tools against its current page.
package browse

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-browser/internal/ariatree"
	"github.com/guildsai/guilds/helpers/guilds-browser/internal/daemon"
	"github.com/guildsai/guilds/helpers/guilds-browser/internal/driver"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/mxschmitt/playwright-go"
)

// actionTimeout is Playwright's own limit per step, under the call's 60 s.
const actionTimeout = 55 * time.Second

// Session is one Playwright driver attached to one Chromium, with the current page and its refs.
type Session struct {
	exe      string
	stateDir string
	log      *os.File

	mu      sync.Mutex // one call at a time
	pw      *playwright.Playwright
	cdpURL  string
	browser playwright.Browser
	bctx    playwright.BrowserContext
	page    playwright.Page

	openedMu sync.Mutex
	opened   []playwright.Page
	openedCh chan struct{}

	expectOpen bool // the current call's action opened a tab that has not appeared yet

	refs    map[string]ariatree.Node // from the last snapshot of refPage
	refPage playwright.Page
	refDoc  string
}

// New returns a session that starts Playwright on its first call; exe locates the driver,
// stateDir holds the daemon's files, log takes the driver's output.
func New(exe, stateDir string, log *os.File) *Session {
	return &Session{exe: exe, stateDir: stateDir, log: log, openedCh: make(chan struct{}, 1)}
}

// Close stops the Playwright driver; Chromium keeps running.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pw != nil {
		s.pw.Stop()
		s.pw = nil
	}
}

// Check validates a call's tool name and arguments without touching any browser, so the client
// can refuse bad input before it starts or wakes the daemon.
func Check(tool string, raw json.RawMessage) error {
	t, ok := tools[tool]
	if !ok {
		return fmt.Errorf("unknown tool %q; guilds-browser runs %s", tool, strings.Join(Names(), ", "))
	}
	if _, err := t.parse(raw); err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	return nil
}

// Handle runs one call; it is the daemon's handler.
func (s *Session) Handle(ctx context.Context, c daemon.Call) (reply envelope.Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			reply = envelope.Errorf(nil, "%s failed unexpectedly: %v", c.Req.Tool, p)
		}
	}()
	t, ok := tools[c.Req.Tool]
	if !ok {
		return envelope.Errorf(nil, "unknown tool %q; guilds-browser runs %s", c.Req.Tool, strings.Join(Names(), ", "))
	}
	args, err := t.parse(c.Req.Args)
	if err != nil {
		return envelope.Errorf(nil, "%s: %v", c.Req.Tool, err)
	}
	if err := s.attach(ctx, c.CDPURL); err != nil {
		return envelope.Errorf(nil, "%v", err)
	}
	note := s.follow()
	page := s.page
	res, err := t.run(ctx, s, &c, args)
	if err != nil && t.readOnly && page.IsClosed() {
		// The tab closed as the call began (window.close() lands asynchronously): read the new current one.
		note = joinNotes(note, s.follow())
		res, err = t.run(ctx, s, &c, args)
	}
	if after := s.followAfter(); after != "" {
		note = joinNotes(note, after)
	}
	if err != nil {
		return envelope.Errorf(res.Meta, "%s", joinNotes(err.Error(), note))
	}
	if note != "" {
		res.Text = note + "\n" + res.Text
	}
	if res.Meta == nil {
		res.Meta = map[string]any{}
	}
	return res
}

func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// attach starts the driver and connects to Chromium when not yet connected (or after Chromium went away).
func (s *Session) attach(ctx context.Context, cdpURL string) error {
	if s.pw != nil && s.pw.Pid() > 0 && syscall.Kill(s.pw.Pid(), 0) != nil {
		fmt.Fprintf(s.log, "playwright driver %d is gone; starting a new one\n", s.pw.Pid())
		s.pw, s.browser, s.page = nil, nil, nil
	}
	if s.browser != nil && s.browser.IsConnected() && s.cdpURL == cdpURL && s.page != nil {
		return nil
	}
	if err := probeCDP(ctx, cdpURL); err != nil {
		return err
	}
	if s.pw == nil {
		d, err := driver.Find(s.exe)
		if err != nil {
			return err
		}
		cli, err := d.Shim(s.stateDir)
		if err != nil {
			return err
		}
		t0 := time.Now()
		pw, err := playwright.Run(d.Options(cli, s.log))
		if err != nil {
			return fmt.Errorf("start the Playwright driver (%s with %s): %w", d.Dir, d.Node, err)
		}
		s.pw = pw
		fmt.Fprintf(s.log, "playwright driver %s started in %s\n", d.Dir, time.Since(t0).Round(time.Millisecond))
	}
	t0 := time.Now()
	b, err := s.pw.Chromium.ConnectOverCDP(cdpURL, playwright.BrowserTypeConnectOverCDPOptions{Timeout: playwright.Float(45000)})
	if err != nil {
		return fmt.Errorf("attach to Chromium at %s: %w", cdpURL, err)
	}
	fmt.Fprintf(s.log, "attached to Chromium at %s in %s\n", cdpURL, time.Since(t0).Round(time.Millisecond))
	s.browser, s.cdpURL = b, cdpURL
	s.refs, s.refPage = nil, nil
	var bctx playwright.BrowserContext
	if cs := b.Contexts(); len(cs) > 0 {
		bctx = cs[0]
	} else if bctx, err = b.NewContext(); err != nil {
		return fmt.Errorf("open a browser context: %w", err)
	}
	s.bctx = bctx
	bctx.OnPage(func(p playwright.Page) {
		s.openedMu.Lock()
		s.opened = append(s.opened, p)
		s.openedMu.Unlock()
		select {
		case s.openedCh <- struct{}{}:
		default:
		}
	})
	var page playwright.Page
	for _, p := range bctx.Pages() {
		if !p.IsClosed() {
			page = p
		}
	}
	if page == nil {
		if page, err = bctx.NewPage(); err != nil {
			return fmt.Errorf("open a tab: %w", err)
		}
		s.drainOpened()
	}
	s.setPage(page)
	return nil
}

// probeCDP checks the DevTools endpoint answers, so an unreachable one gets a fast, clear error (a
// refused connection fails at once; a Chromium that listens but is slow on a loaded machine gets 20 s).
func probeCDP(ctx context.Context, cdpURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	u := strings.TrimSuffix(cdpURL, "/") + "/json/version"
	if strings.HasPrefix(cdpURL, "ws") {
		return nil // a websocket endpoint is dialled directly
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GUILDS_CDP_URL %q is not a URL: %w", cdpURL, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		err = fmt.Errorf("%s answered %s", u, resp.Status)
	}
	return fmt.Errorf("cannot reach Chromium's DevTools endpoint at %s (%v). Start Chromium with remote debugging, e.g.\n"+
		"  chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=/tmp/chromium-profile --remote-debugging-address=127.0.0.1 --remote-debugging-port=9222 about:blank &\n"+
		"or point GUILDS_CDP_URL at the running one", cdpURL, err)
}

func (s *Session) setPage(p playwright.Page) {
	s.page = p
	p.SetDefaultTimeout(float64(actionTimeout.Milliseconds()))
	p.SetDefaultNavigationTimeout(float64(actionTimeout.Milliseconds()))
}

func (s *Session) drainOpened() []playwright.Page {
	s.openedMu.Lock()
	defer s.openedMu.Unlock()
	select {
	case <-s.openedCh:
	default:
	}
	ps := s.opened
	s.opened = nil
	return ps
}

// follow makes the newest page opened since the last call current (a popup or new tab), or
// moves off a closed page, and says so.
func (s *Session) follow() string {
	var newest playwright.Page
	for _, p := range s.drainOpened() {
		if !p.IsClosed() && p != s.page {
			newest = p
		}
	}
	if newest != nil {
		newest.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateDomcontentloaded, Timeout: playwright.Float(5000)})
		s.setPage(newest)
		return fmt.Sprintf("The page opened a new tab; it is now the current page: %s", pageLabel(newest))
	}
	if s.page.IsClosed() {
		var last playwright.Page
		for _, p := range s.bctx.Pages() {
			if !p.IsClosed() {
				last = p
			}
		}
		if last == nil {
			p, err := s.bctx.NewPage()
			if err != nil {
				return "The current tab closed and a new one could not be opened: " + err.Error()
			}
			s.drainOpened()
			last = p
		}
		s.setPage(last)
		return fmt.Sprintf("The current tab closed; now on %s", pageLabel(last))
	}
	return ""
}

// followAfter adopts a tab opened during the call; when the action is known to have opened one
// (expectOpen), it waits up to popupWait for the tab to appear.
func (s *Session) followAfter() string {
	if s.expectOpen {
		s.expectOpen = false
		select {
		case <-s.openedCh:
		case <-time.After(popupWait):
		}
	}
	s.openedMu.Lock()
	n := len(s.opened)
	s.openedMu.Unlock()
	if n == 0 && !s.page.IsClosed() {
		return ""
	}
	return s.follow()
}

// popupWait bounds the wait for a tab a click opened (a target=_blank link, or window.open).
const popupWait = 5 * time.Second

func pageLabel(p playwright.Page) string {
	title, _ := p.Title()
	if title == "" {
		return p.URL()
	}
	b, _ := json.Marshal(title)
	return fmt.Sprintf("%s %s", p.URL(), b)
}
