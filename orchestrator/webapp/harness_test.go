package webapp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/mxschmitt/playwright-go"
)

// -update rewrites the screenshots of the views in docs/screenshots. adapterstest (whose loopback
// CoinGecko the picker tests use) defines the same flag for its golden files: one flag serves both.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the screenshots of the views in docs/screenshots")
	}
}

// updating reports whether -update was given.
func updating() bool { return flag.Lookup("update").Value.String() == "true" }

// repoRoot is the checkout's root, two levels above this package.
var repoRoot, _ = filepath.Abs(filepath.Join("..", ".."))

// password is every test account's.
const password = "a long test password for the app"

// browser is the Playwright driver and the headless Chromium the tests share, started by the first
// test that needs it and stopped after the last.
var browser struct {
	once sync.Once
	pw   *playwright.Playwright
	b    playwright.Browser
	axe  string // axe-core's axe.min.js
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if browser.b != nil {
		_ = browser.b.Close()
		_ = browser.pw.Stop()
	}
	os.Exit(code)
}

// missing skips the test when a real part the browser tests run on is not installed, or fails it
// under CI=1, where every part must be there.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + " (make setup installs it)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// chromiumPath is Debian's Chromium.
func chromiumPath() string {
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return "/usr/bin/chromium"
}

// startBrowser starts Playwright over tools/node_modules/playwright-core with the system node,
// and a headless Chromium with the flags this machine's closed network needs.
func startBrowser(t testing.TB) playwright.Browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath()); err != nil {
		missing(t, "chromium is not installed")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not installed")
	}
	dir := filepath.Join(repoRoot, "tools", "node_modules", "playwright-core")
	if _, err := os.Stat(filepath.Join(dir, "cli.js")); err != nil {
		missing(t, "playwright-core is not installed in %s", dir)
	}
	axePath := filepath.Join(repoRoot, "tools", "axe", "node_modules", "axe-core", "axe.min.js")
	axe, err := os.ReadFile(axePath)
	if err != nil {
		missing(t, "axe-core is not installed in tools/axe")
	}
	browser.once.Do(func() {
		browser.axe = string(axe)
		if os.Getenv("PLAYWRIGHT_NODEJS_PATH") == "" {
			os.Setenv("PLAYWRIGHT_NODEJS_PATH", node)
		}
		os.Setenv("PLAYWRIGHT_CLI_PATH", filepath.Join(dir, "cli.js"))
		os.Setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
		browser.pw, browser.err = playwright.Run(&playwright.RunOptions{DriverDirectory: dir, SkipInstallBrowsers: true, Stdout: io.Discard, Stderr: os.Stderr})
		if browser.err != nil {
			return
		}
		browser.b, browser.err = browser.pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
			ExecutablePath:  playwright.String(chromiumPath()),
			Headless:        playwright.Bool(true),
			ChromiumSandbox: playwright.Bool(false),
			Args: []string{"--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
				"--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"},
		})
	})
	if browser.err != nil {
		t.Fatalf("start Chromium under Playwright: %v", browser.err)
	}
	return browser.b
}

// app is one orchestrator, as `orchestrator serve` builds it, with its operator app.
type app struct {
	t   testing.TB
	url string
	// anyCert: the app's tabs accept any certificate (a loopback fake's own, as the fake GitHub's).
	anyCert bool
}

// newApp serves an orchestrator with its app on a test database (its log shown when the test fails).
func newApp(t testing.TB, env map[string]string) *app {
	t.Helper()
	e := map[string]string{"GUILDS_SECRET_KEY": wiretest.SecretKey, "GUILDS_SANDBOX": "local", "GUILDS_SANDBOX_NETWORK": "none"}
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		e["GUILDS_BIN_DIR"] = d
	}
	for k, v := range env {
		e[k] = v
	}
	s := wiretest.Serve(t, e)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the orchestrator's log:\n%s", s.Log.String())
		}
	})
	return &app{t: t, url: s.API}
}

// api calls the API with the bootstrap token and fails the test unless it answers want.
func (a *app) api(want int, method, path string, body any) map[string]any {
	a.t.Helper()
	return wiretest.Must(a.t, want, method, a.url+path, body)
}

// account makes an account that signs in with password (an instance admin when admin is set).
func (a *app) account(email, name string, admin bool) string {
	a.t.Helper()
	out := a.api(201, "POST", "/api/accounts", map[string]any{"email": email, "name": name, "password": password, "instance_admin": admin})
	return out["id"].(string)
}

// raw sends a request with the bootstrap token and returns the status and body.
func (a *app) raw(method, path string, body any) (int, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, a.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+wiretest.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// refusedForm is Chromium's note on a page answered with the status of a form the API refused
// (the page shows why): not an error of the page.
var refusedForm = regexp.MustCompile(`^Failed to load resource: the server responded with a status of (400|403|409|422|429|502) `)

// screenshotHeight is the most of a page a screenshot holds.
const screenshotHeight = 1300

// tab is one browser context (its own cookies) with one page, driven by role and name.
type tab struct {
	t      testing.TB
	a      *app
	ctx    playwright.BrowserContext
	page   playwright.Page
	mu     sync.Mutex
	errors []string // console errors and page errors (a Content-Security-Policy violation is one)
}

// open opens a new browser context on the app, signed out.
func (a *app) open() *tab {
	a.t.Helper()
	b := startBrowser(a.t)
	ctx, err := b.NewContext(playwright.BrowserNewContextOptions{
		BaseURL:  playwright.String(a.url),
		Viewport: &playwright.Size{Width: 1280, Height: 800},
		Locale:   playwright.String("en-GB"),

		IgnoreHttpsErrors: playwright.Bool(a.anyCert),
	})
	if err != nil {
		a.t.Fatal(err)
	}
	ctx.SetDefaultTimeout(15000)
	a.t.Cleanup(func() { _ = ctx.Close() })
	page, err := ctx.NewPage()
	if err != nil {
		a.t.Fatal(err)
	}
	tb := &tab{t: a.t, a: a, ctx: ctx, page: page}
	a.t.Cleanup(func() {
		if !a.t.Failed() {
			return
		}
		dir := filepath.Join(os.TempDir(), "webapp-failures", strings.ReplaceAll(a.t.Name(), "/", "_"))
		_ = os.MkdirAll(dir, 0o755)
		n := fmt.Sprintf("%p", page)
		_, _ = page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join(dir, n+".png")), FullPage: playwright.Bool(true)})
		if html, err := page.Content(); err == nil {
			_ = os.WriteFile(filepath.Join(dir, n+".html"), []byte(html), 0o644)
		}
		a.t.Logf("the failed page %s is in %s (%s.png, .html)", page.URL(), dir, n)
	})
	page.OnConsole(func(m playwright.ConsoleMessage) {
		if m.Type() == "error" && !refusedForm.MatchString(m.Text()) {
			tb.mu.Lock()
			tb.errors = append(tb.errors, m.Text())
			tb.mu.Unlock()
		}
	})
	page.OnPageError(func(err error) {
		tb.mu.Lock()
		tb.errors = append(tb.errors, err.Error())
		tb.mu.Unlock()
	})
	return tb
}

// signIn opens a tab signed in as email, through the sign-in page.
func (a *app) signIn(email string) *tab {
	a.t.Helper()
	tb := a.open()
	tb.go_("/signin")
	tb.fill("Email", email)
	tb.fill("Password", password)
	tb.click("Sign in")
	tb.waitPath("/orgs")
	return tb
}

// go_ opens a path of the app.
func (tb *tab) go_(path string) {
	tb.t.Helper()
	if _, err := tb.page.Goto(path); err != nil {
		tb.t.Fatalf("open %s: %v", path, err)
	}
}

// role finds elements by role and accessible name (exact).
func (tb *tab) role(role string, name string) playwright.Locator {
	return tb.page.GetByRole(playwright.AriaRole(role), playwright.PageGetByRoleOptions{Name: name, Exact: playwright.Bool(true)})
}

// fill types into the text box named name.
func (tb *tab) fill(name, value string) {
	tb.t.Helper()
	if err := tb.role("textbox", name).Fill(value); err != nil {
		tb.t.Fatalf("fill %q: %v", name, err)
	}
}

// click presses the button named name.
func (tb *tab) click(name string) {
	tb.t.Helper()
	if err := tb.role("button", name).Click(); err != nil {
		tb.t.Fatalf("click %q: %v", name, err)
	}
}

// follow opens the link named name.
func (tb *tab) follow(name string) {
	tb.t.Helper()
	if err := tb.role("link", name).First().Click(); err != nil {
		tb.t.Fatalf("follow %q: %v", name, err)
	}
}

// waitPath waits until the page is at a path starting with prefix.
func (tb *tab) waitPath(prefix string) {
	tb.t.Helper()
	err := tb.page.WaitForURL(func(u string) bool {
		i := strings.Index(u, "://")
		rest := u[i+3:]
		if j := strings.Index(rest, "/"); j >= 0 {
			rest = rest[j:]
		}
		return strings.HasPrefix(rest, prefix)
	})
	if err != nil {
		tb.t.Fatalf("wait for %s: at %s: %v", prefix, tb.page.URL(), err)
	}
}

// path is the page's path and query.
func (tb *tab) path() string {
	u := tb.page.URL()
	i := strings.Index(u, "://")
	rest := u[i+3:]
	if j := strings.Index(rest, "/"); j >= 0 {
		return rest[j:]
	}
	return "/"
}

// see waits until an element with role and name is visible.
func (tb *tab) see(role, name string) playwright.Locator {
	tb.t.Helper()
	l := tb.role(role, name)
	if err := playwright.NewPlaywrightAssertions(15000).Locator(l.First()).ToBeVisible(); err != nil {
		tb.t.Fatalf("no %s named %q on %s: %v", role, name, tb.path(), err)
	}
	return l
}

// none checks that no element with role and name is on the page.
func (tb *tab) none(role, name string) {
	tb.t.Helper()
	n, err := tb.role(role, name).Count()
	if err != nil {
		tb.t.Fatal(err)
	}
	if n != 0 {
		tb.t.Fatalf("%s: %d %s named %q, want none", tb.path(), n, role, name)
	}
}

// text is the visible text of the first element a locator finds.
func text(t *testing.T, l playwright.Locator) string {
	t.Helper()
	s, err := l.First().InnerText()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// contains waits until the page's text holds want.
func (tb *tab) contains(want string) {
	tb.t.Helper()
	if err := playwright.NewPlaywrightAssertions(15000).Locator(tb.page.Locator("main")).ToContainText(want); err != nil {
		tb.t.Fatalf("%s does not say %q: %v", tb.path(), want, err)
	}
}

// check runs axe-core in the page and fails on a serious or critical violation, fails on any
// console error seen so far (a Content-Security-Policy violation is one), and, with -update,
// writes the page's screenshot to docs/screenshots/<name>.png.
func (tb *tab) check(name string) {
	tb.t.Helper()
	if err := tb.page.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateNetworkidle}); err != nil {
		tb.t.Fatal(err)
	}
	if _, err := tb.page.Evaluate(browser.axe); err != nil {
		tb.t.Fatalf("load axe-core: %v", err)
	}
	res, err := tb.page.Evaluate(`async () => {
		const r = await axe.run(document, {resultTypes: ["violations"]});
		return r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
			.map(v => v.impact + " " + v.id + ": " + v.help + " at " + v.nodes.slice(0, 4).map(n => n.target.join(" ")).join(", "));
	}`)
	if err != nil {
		tb.t.Fatalf("axe.run: %v", err)
	}
	if l, ok := res.([]any); ok && len(l) > 0 {
		for _, v := range l {
			tb.t.Errorf("%s (%s): %v", name, tb.path(), v)
		}
	}
	tb.mu.Lock()
	errs := append([]string(nil), tb.errors...)
	tb.errors = nil
	tb.mu.Unlock()
	for _, e := range errs {
		tb.t.Errorf("%s (%s): console error: %s", name, tb.path(), e)
	}
	path := filepath.Join(tb.t.TempDir(), name+".png")
	if updating() {
		path = filepath.Join(repoRoot, "docs", "screenshots", name+".png")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.t.Fatal(err)
		}
	}
	// The page from its top, at most screenshotHeight tall (a long Tools view is cut: the README
	// shows its head).
	h, err := tb.page.Evaluate(`() => document.documentElement.scrollHeight`)
	if err != nil {
		tb.t.Fatal(err)
	}
	height := screenshotHeight
	if n, ok := h.(int); ok && n < height {
		height = n
	}
	clip := &playwright.Rect{X: 0, Y: 0, Width: 1280, Height: float64(height)}
	if _, err := tb.page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(path), FullPage: playwright.Bool(true), Clip: clip}); err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
}

// shotOf writes, with -update, a screenshot of one element (a section of a long view) to
// docs/screenshots/<name>.png; check has already run on its page.
func (tb *tab) shotOf(name string, l playwright.Locator) {
	tb.t.Helper()
	path := filepath.Join(tb.t.TempDir(), name+".png")
	if updating() {
		path = filepath.Join(repoRoot, "docs", "screenshots", name+".png")
	}
	if _, err := l.Screenshot(playwright.LocatorScreenshotOptions{Path: playwright.String(path)}); err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
}
