package browse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/jpeg"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-browser/internal/ariatree"
	"github.com/guildsai/guilds/helpers/guilds-browser/internal/daemon"
	"github.com/guildsai/guilds/shared/atomicfile"
	"github.com/guildsai/guilds/shared/envelope"
	"github.com/guildsai/guilds/shared/shape"
	"github.com/guildsai/guilds/shared/toolspec"
	"github.com/mxschmitt/playwright-go"
)

// tool is one browser tool: parse checks its arguments before the page is touched, run acts.
type tool struct {
	parse    func(raw json.RawMessage) (any, error)
	run      func(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error)
	readOnly bool // the tool only reads the page, so it can be rerun on another tab
}

var tools = map[string]tool{
	"browser_navigate":   {parse: parseArgs[navigateArgs], run: navigate},
	"browser_snapshot":   {parse: parseArgs[toolspec.BrowserSnapshotArgs], run: snapshot, readOnly: true},
	"browser_click":      {parse: parseArgs[locatorArgs], run: click},
	"browser_type":       {parse: parseArgs[typeArgs], run: typeText},
	"browser_fill":       {parse: parseArgs[fillArgs], run: fill},
	"browser_scroll":     {parse: parseArgs[scrollArgs], run: scroll},
	"browser_screenshot": {parse: parseArgs[toolspec.BrowserScreenshotArgs], run: screenshot, readOnly: true},
	"browser_eval":       {parse: parseArgs[evalArgs], run: eval},
}

// Names lists the browser tools, sorted.
func Names() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type checker interface{ check() error }

func parseArgs[T any](raw json.RawMessage) (any, error) {
	var a T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("bad arguments: %v", err)
	}
	if c, ok := any(&a).(checker); ok {
		if err := c.check(); err != nil {
			return nil, err
		}
	}
	return &a, nil
}

// The argument types below decode a call's args into toolspec's struct, which each embeds, and
// keep what check parsed from it.

type navigateArgs struct{ toolspec.BrowserNavigateArgs }

func (a *navigateArgs) check() error {
	a.URL = strings.TrimSpace(a.URL)
	if a.URL == "" {
		return errors.New("url is required, e.g. https://example.com")
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return fmt.Errorf("url %q does not parse: %v", a.URL, err)
	}
	switch u.Scheme {
	case "http", "https", "file", "about", "data":
		return nil
	case "":
		return fmt.Errorf("url %q has no scheme; pass a full URL such as https://%s", a.URL, a.URL)
	}
	return fmt.Errorf("url scheme %q is not supported; use http, https, file, about or data", u.Scheme)
}

type locatorArgs struct {
	toolspec.BrowserClickArgs
	loc ariatree.Locator
}

func (a *locatorArgs) check() (err error) { a.loc, err = ariatree.ParseLocator(a.Locator); return err }

type typeArgs struct {
	toolspec.BrowserTypeArgs
	loc ariatree.Locator
}

func (a *typeArgs) check() (err error) {
	if a.Text == "" {
		return errors.New("text is required: the keys to type at the end of the field")
	}
	a.loc, err = ariatree.ParseLocator(a.Locator)
	return err
}

type fillArgs struct {
	toolspec.BrowserFillArgs
	loc ariatree.Locator
}

func (a *fillArgs) check() (err error) {
	if a.Value == nil {
		return errors.New(`value is required: what the field should hold ("" empties it)`)
	}
	a.loc, err = ariatree.ParseLocator(a.Locator)
	return err
}

type scrollArgs struct {
	toolspec.BrowserScrollArgs
	loc *ariatree.Locator
}

func (a *scrollArgs) check() error {
	a.Direction = strings.ToLower(strings.TrimSpace(a.Direction))
	switch a.Direction {
	case "up", "down", "left", "right":
	case "":
		return errors.New("direction is required: up, down, left or right")
	default:
		return fmt.Errorf("direction %q does not exist; use up, down, left or right", a.Direction)
	}
	if strings.TrimSpace(a.Target) != "" {
		l, err := ariatree.ParseLocator(a.Target)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		a.loc = &l
	}
	return nil
}

type evalArgs struct{ toolspec.BrowserEvalArgs }

func (a *evalArgs) check() error {
	if strings.TrimSpace(a.Script) == "" {
		return errors.New("script is required: the body of an async function, e.g. return document.title")
	}
	return nil
}

func navigate(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error) {
	a := args.(*navigateArgs)
	p := s.page
	prev := p.URL()
	resp, err := p.Goto(a.URL, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad, Timeout: playwright.Float(45000)})
	if err != nil {
		s.restore(prev)
		return envelope.Reply{}, fmt.Errorf("could not load %s: %s; the page stays at %s", a.URL, playwrightMessage(err), orBlank(prev))
	}
	status := ""
	if resp != nil {
		status = fmt.Sprintf(" (%d %s)", resp.Status(), resp.StatusText())
		if resp.Status() >= 400 {
			s.restore(prev)
			return envelope.Reply{}, fmt.Errorf("could not load %s: the server answered %d %s; the page stays at %s", a.URL, resp.Status(), resp.StatusText(), orBlank(prev))
		}
	}
	return envelope.Reply{Text: fmt.Sprintf("Navigated to %s%s. Take a snapshot to see the page.", pageLabel(p), status)}, nil
}

func orBlank(u string) string {
	if u == "" {
		return "about:blank"
	}
	return u
}

// restore brings the page back to prev after a failed navigation. Chromium commits its error
// page just after the failure is reported, so wait briefly for that before going back.
func (s *Session) restore(prev string) {
	p := s.page
	for i := 0; i < 40 && p.URL() == prev; i++ {
		time.Sleep(25 * time.Millisecond)
	}
	if p.URL() == prev {
		return
	}
	if prev == "" || prev == "about:blank" {
		p.Goto("about:blank", playwright.PageGotoOptions{Timeout: playwright.Float(5000)})
		return
	}
	if _, err := p.GoBack(playwright.PageGoBackOptions{Timeout: playwright.Float(5000), WaitUntil: playwright.WaitUntilStateCommit}); err != nil || p.URL() != prev {
		p.Goto(prev, playwright.PageGotoOptions{Timeout: playwright.Float(5000)})
	}
}

var callLogRE = regexp.MustCompile(`(?s)\s*Call log:(.*)$`)

// playwrightMessage trims Playwright's error to its message, keeping the call log's last step
// (it says why an action waited: not visible, covered by another element, disabled).
func playwrightMessage(err error) string {
	msg := err.Error()
	last := ""
	if m := callLogRE.FindStringSubmatch(msg); m != nil {
		msg = msg[:len(msg)-len(m[0])]
		last = telling(strings.Split(strings.TrimSpace(m[1]), "\n"))
	}
	if i := strings.LastIndex(msg, "playwright: "); i >= 0 {
		msg = msg[i+len("playwright: "):]
	}
	msg = strings.TrimSpace(msg)
	if last != "" && strings.Contains(msg, "Timeout") {
		msg += " (last step: " + last + ")"
	}
	return msg
}

var retryNoiseRE = regexp.MustCompile(`^(waiting \d+ms|retrying .*|\d+ × .*)$`)

// telling picks the call-log line that says why Playwright kept waiting: the last "element is …"
// line, else the last one that is not retry noise.
func telling(lines []string) string {
	fallback := ""
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "- "))
		if strings.HasPrefix(l, "element ") || strings.Contains(l, "intercepts pointer events") {
			return l
		}
		if fallback == "" && l != "" && !retryNoiseRE.MatchString(l) {
			fallback = l
		}
	}
	return fallback
}

// actTimeout bounds waiting for an element to become actionable (visible, enabled, stable).
var actTimeout = playwright.Float(15000)

func snapshot(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error) {
	p := s.page
	tree, err := p.AriaSnapshot(playwright.PageAriaSnapshotOptions{Mode: playwright.AriaSnapshotModeAi})
	if err != nil {
		return envelope.Reply{}, fmt.Errorf("snapshot: %s", playwrightMessage(err))
	}
	doc, err := s.docToken()
	if err != nil {
		return envelope.Reply{}, err
	}
	s.refs, s.refPage, s.refDoc = ariatree.Refs(tree), p, doc
	header := fmt.Sprintf("Page: %s\n", pageLabel(p))
	if len(header)+len(tree) <= c.Max {
		return envelope.Reply{Text: header + tree}, nil
	}
	path := filepath.Join(c.Home, ".runs", c.Req.RunID, c.Req.CallID+"-snapshot.yaml")
	if err := writeAtomic(path, []byte(header+tree)); err != nil {
		return envelope.Reply{}, err
	}
	lines := strings.Split(strings.TrimSuffix(tree, "\n"), "\n")
	text, _ := shape.FitLines(header, lines, c.Max, func(n int) string {
		return fmt.Sprintf("… %d more lines; the full tree (%d lines) is in %s (read it with file_read)", n, len(lines), path)
	})
	return envelope.Reply{Text: text, Meta: map[string]any{"path": path}}, nil
}

func (s *Session) docToken() (string, error) {
	v, err := s.page.Evaluate(docTokenJS)
	if err != nil {
		return "", fmt.Errorf("read the page: %s", playwrightMessage(err))
	}
	tok, _ := v.(string)
	return tok, nil
}

// resolve turns a locator into a Playwright locator for exactly one element, refusing a ref that
// no longer names the element it named in the snapshot.
func (s *Session) resolve(l ariatree.Locator) (playwright.Locator, string, error) {
	p := s.page
	if l.Ref == "" {
		opts := playwright.PageGetByRoleOptions{Exact: playwright.Bool(true)}
		if l.Named {
			opts.Name = l.Name
		}
		loc := p.GetByRole(playwright.AriaRole(l.Role), opts)
		n, err := loc.Count()
		if err != nil {
			return nil, "", fmt.Errorf("locator %s: %s", l, playwrightMessage(err))
		}
		switch {
		case n == 0:
			return nil, "", fmt.Errorf("no element on the page has role %s; take a new snapshot and use a ref from it", l)
		case n > 1:
			return nil, "", fmt.Errorf("%d elements match %s; take a new snapshot and use the ref of the one you mean", n, l)
		}
		return loc, l.String(), nil
	}
	stale := fmt.Errorf("ref %s is from an earlier state of the page and no longer points at the element it named; take a new snapshot", l.Ref)
	if s.refs == nil || s.refPage != p {
		return nil, "", fmt.Errorf("ref %s is unknown: there is no snapshot of the current page yet; take a new snapshot", l.Ref)
	}
	node, ok := s.refs[l.Ref]
	if !ok {
		return nil, "", fmt.Errorf("ref %s is unknown: the last snapshot has no such ref; take a new snapshot", l.Ref)
	}
	if doc, err := s.docToken(); err != nil {
		return nil, "", err
	} else if doc != s.refDoc {
		return nil, "", stale
	}
	loc := p.Locator("aria-ref=" + l.Ref)
	check := loc
	// The role check needs a role getByRole knows and can match ("generic" and "iframe" it cannot).
	if ariatree.IsARIARole(node.Role) && node.Role != "generic" {
		opts := playwright.PageGetByRoleOptions{Exact: playwright.Bool(true), IncludeHidden: playwright.Bool(true)}
		if node.Named {
			opts.Name = node.Name
		}
		check = loc.And(p.GetByRole(playwright.AriaRole(node.Role), opts))
	}
	n, err := check.Count()
	if err != nil || n != 1 {
		return nil, "", stale
	}
	label := node.Role
	if node.Named {
		b, _ := json.Marshal(node.Name)
		label += " " + string(b)
	}
	return loc, label + " [" + l.Ref + "]", nil
}

func click(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error) {
	a := args.(*locatorArgs)
	loc, label, err := s.resolve(a.loc)
	if err != nil {
		return envelope.Reply{}, err
	}
	before := s.page.URL()
	probe, _ := loc.Evaluate(openProbeJS, nil)
	pm, _ := probe.(map[string]any)
	if err := loc.Click(playwright.LocatorClickOptions{Timeout: actTimeout}); err != nil {
		return envelope.Reply{}, fmt.Errorf("click %s: %s", label, playwrightMessage(err))
	}
	if pm["target"] == true {
		s.expectOpen = true
	} else if pm != nil {
		if n, err := s.page.Evaluate(opensJS); err == nil && num(n) > num(pm["opens"]) {
			s.expectOpen = true
		}
	}
	text := "Clicked " + label + "."
	if after := s.page.URL(); after != before {
		text += " The page is now " + pageLabel(s.page) + "."
	}
	return envelope.Reply{Text: text}, nil
}

func typeText(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error) {
	a := args.(*typeArgs)
	loc, label, err := s.resolve(a.loc)
	if err != nil {
		return envelope.Reply{}, err
	}
	if err := loc.Focus(playwright.LocatorFocusOptions{Timeout: actTimeout}); err != nil {
		return envelope.Reply{}, fmt.Errorf("focus %s: %s", label, playwrightMessage(err))
	}
	if _, err := loc.Evaluate(caretToEndJS, nil); err != nil {
		return envelope.Reply{}, fmt.Errorf("move to the end of %s: %s", label, playwrightMessage(err))
	}
	if err := s.page.Keyboard().Type(a.Text); err != nil {
		return envelope.Reply{}, fmt.Errorf("type into %s: %s", label, playwrightMessage(err))
	}
	return envelope.Reply{Text: fmt.Sprintf("Typed %d characters at the end of %s.%s", len([]rune(a.Text)), label, fieldValue(loc))}, nil
}

func fill(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error) {
	a := args.(*fillArgs)
	loc, label, err := s.resolve(a.loc)
	if err != nil {
		return envelope.Reply{}, err
	}
	if err := loc.Fill(*a.Value, playwright.LocatorFillOptions{Timeout: actTimeout}); err != nil {
		return envelope.Reply{}, fmt.Errorf("fill %s: %s", label, playwrightMessage(err))
	}
	return envelope.Reply{Text: fmt.Sprintf("Filled %s.%s", label, fieldValue(loc))}, nil
}

// fieldValue reports what a field holds now, shortened.
func fieldValue(loc playwright.Locator) string {
	v, err := loc.Evaluate(`(el) => typeof el.value === 'string' ? el.value : (el.isContentEditable ? el.innerText : null)`, nil)
	s, ok := v.(string)
	if err != nil || !ok {
		return ""
	}
	b, _ := json.Marshal(shape.ClipLine(s, 200))
	return " It now holds " + string(b) + "."
}

func scroll(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error) {
	a := args.(*scrollArgs)
	var v any
	var err error
	if a.loc != nil {
		loc, label, rerr := s.resolve(*a.loc)
		if rerr != nil {
			return envelope.Reply{}, fmt.Errorf("target: %w", rerr)
		}
		v, err = loc.Evaluate(scrollJS, a.Direction)
		if err != nil {
			return envelope.Reply{}, fmt.Errorf("scroll %s: %s", label, playwrightMessage(err))
		}
	} else if v, err = s.page.Evaluate("(dir) => ("+scrollJS+")(null, dir)", a.Direction); err != nil {
		return envelope.Reply{}, fmt.Errorf("scroll: %s", playwrightMessage(err))
	}
	m, _ := v.(map[string]any)
	if e, ok := m["error"].(string); ok {
		return envelope.Reply{}, errors.New(e)
	}
	what, _ := m["what"].(string)
	before, after, max := num(m["before"]), num(m["after"]), num(m["max"])
	if before == after {
		edge := map[string]string{"up": "top", "down": "bottom", "left": "left edge", "right": "right edge"}[a.Direction]
		return envelope.Reply{Text: fmt.Sprintf("%s is already at its %s (%d of %d px); nothing moved.", upperFirst(what), edge, after, max)}, nil
	}
	return envelope.Reply{Text: fmt.Sprintf("Scrolled %s %s by %d px: now at %d of %d px.", what, a.Direction, abs(after-before), after, max)}, nil
}

func num(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n + 0.5)
	case int:
		return n
	case int64:
		return int(n)
	}
	return 0
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func screenshot(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error) {
	b, err := s.page.Screenshot(playwright.PageScreenshotOptions{Type: playwright.ScreenshotTypeJpeg, Quality: playwright.Int(80)})
	if err != nil {
		return envelope.Reply{}, fmt.Errorf("screenshot: %s", playwrightMessage(err))
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return envelope.Reply{}, fmt.Errorf("screenshot is not a JPEG: %w", err)
	}
	path := filepath.Join(c.Home, "screenshots", "latest.jpg")
	if err := writeAtomic(path, b); err != nil {
		return envelope.Reply{}, err
	}
	return envelope.Reply{
		Text:  fmt.Sprintf("Saved a screenshot of %s to %s (JPEG, %dx%d, %d KB).", pageLabel(s.page), path, cfg.Width, cfg.Height, (len(b)+1023)/1024),
		Meta:  map[string]any{"path": path},
		Image: &envelope.Image{MIMEType: "image/jpeg", Data: b},
	}, nil
}

var stackLineRE = regexp.MustCompile(`<anonymous>:(\d+):(\d+)`)

func eval(ctx context.Context, s *Session, c *daemon.Call, args any) (envelope.Reply, error) {
	a := args.(*evalArgs)
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	p := s.page
	go func() {
		v, err := p.Evaluate(evalPrefix + a.Script + evalSuffix)
		done <- result{v, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		return envelope.Reply{}, fmt.Errorf("browser_eval did not finish within %s; the script may still be running in the page", daemon.CallTimeout)
	}
	if r.err != nil {
		msg := playwrightMessage(r.err)
		if strings.Contains(msg, "SyntaxError") {
			return envelope.Reply{}, fmt.Errorf("the script does not parse as an async function body: %s", msg)
		}
		if strings.Contains(msg, "Execution context was destroyed") {
			return envelope.Reply{Text: "The script started a navigation; it returned no value. Take a snapshot to see the new page."}, nil
		}
		return envelope.Reply{}, fmt.Errorf("browser_eval: %s", msg)
	}
	m, _ := r.v.(map[string]any)
	switch {
	case m["threw"] == true:
		name, _ := m["name"].(string)
		msg, _ := m["message"].(string)
		stack, _ := m["stack"].(string)
		where := ""
		if sm := stackLineRE.FindStringSubmatch(stack); sm != nil {
			if line, err := strconv.Atoi(sm[1]); err == nil && line >= bodyFirstLine {
				where = fmt.Sprintf(" at line %d, column %s of the script", line-bodyFirstLine+1, sm[2])
			}
		}
		return envelope.Reply{}, fmt.Errorf("the script threw %s: %s%s", name, msg, where)
	case m["undef"] == true:
		return envelope.Reply{Text: "undefined (the script returned no value; end it with return …)"}, nil
	case m["unserializable"] != nil:
		return envelope.Reply{}, fmt.Errorf("the script's result cannot be returned as JSON: %v; return plain data (strings, numbers, booleans, arrays, objects), e.g. el.textContent instead of an element", m["unserializable"])
	}
	js, _ := m["json"].(string)
	var out bytes.Buffer
	if len(js) < c.Max && json.Indent(&out, []byte(js), "", "  ") == nil && out.Len() <= c.Max {
		js = out.String()
	}
	if len(js) > c.Max {
		const note = "\n… [JSON cut at the helper's byte cap; return less, e.g. slice the array]"
		js = shape.Prefix(js, c.Max-len(note)) + note
	}
	return envelope.Reply{Text: js}, nil
}

// writeAtomic writes b to path, creating its folder, so readers never see half a file.
func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.WriteFile(path, b, 0o600)
}
