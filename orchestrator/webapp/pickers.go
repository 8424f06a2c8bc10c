package webapp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
)

// pickerRoutes registers the pickers Connect and a login's page use: Pinned prices' coin search
// (before Connect, with the key as typed; after, with the login's), its coins, Drive's folder,
// GitHub's repositories and installation, and the page a provider callback that did not
// connect lands on.
func (a *App) pickerRoutes(r fiber.Router) {
	for _, s := range []struct{ coll, scope string }{{"orgs", orchestrator.ScopeOrg}, {"guilds", orchestrator.ScopeGuild}, {"agents", orchestrator.ScopeAgent}} {
		r.Post("/"+s.coll+"/:id/connect/:slug/coins", a.action(a.searchCoinsBefore))
	}
	r.Get("/connections/:id/coins", a.page(a.searchCoinsOf))
	r.Post("/connections/:id/coins", a.action(a.pinCoins))
	r.Post("/connections/:id/folder", a.action(a.pickFolder))
	r.Post("/connections/:id/repositories", a.action(a.pickRepositories))
	r.Get("/github/installations", a.page(a.installationPage))
	r.Post("/github/installations", a.action(a.pickInstallation))
	r.Get("/connect/result", a.page(a.showCallbackResult))
}

// coinPicker is Pinned prices' coin picker: the coins chosen (kept through a refusal), the last
// search's results, and where the search box asks.
type coinPicker struct {
	Chosen      []orchestrator.Coin
	Results     []orchestrator.Coin
	Query       string
	Searched    bool   // a search ran (no results: none matched)
	SearchError string // why the search was refused (the key, the query)
	Error       string // the API's message about the coins, beside the field
	Max         int
	Search      string // the search's path: POST with the key before Connect, GET after
	Before      bool   // before Connect: the search sends the key as typed
}

// coinValue is a coin as its checkbox carries it (id, symbol and name, as JSON).
func coinValue(c orchestrator.Coin) string {
	b, _ := json.Marshal(c) // a struct of strings always encodes
	return string(b)
}

// Value is the coin's checkbox value.
func (p *coinPicker) Value(c orchestrator.Coin) string { return coinValue(c) }

// Label names a coin for people: its name and symbol.
func (p *coinPicker) Label(c orchestrator.Coin) string {
	return c.Name + " (" + strings.ToUpper(c.Symbol) + ")"
}

// coinsOf reads the chosen coins a form or query sent (each checkbox's JSON value), in order,
// once each.
func coinsOf(vals [][]byte) ([]orchestrator.Coin, error) {
	out := []orchestrator.Coin{}
	for _, v := range vals {
		var c orchestrator.Coin
		if err := json.Unmarshal(v, &c); err != nil || c.ID == "" {
			return nil, &apiError{Status: http.StatusUnprocessableEntity, Code: orchestrator.EINVALID,
				Message: "coins: each chosen coin is sent as {\"id\", \"symbol\", \"name\"} JSON, as the picker's checkboxes send it; pick the coins again from the search"}
		}
		if !slices.ContainsFunc(out, func(o orchestrator.Coin) bool { return o.ID == c.ID }) {
			out = append(out, c)
		}
	}
	return out, nil
}

// formCoins are the coins a posted form chose.
func formCoins(c *fiber.Ctx) ([]orchestrator.Coin, error) {
	return coinsOf(c.Context().PostArgs().PeekMulti("coin"))
}

// without drops the coins already chosen from a search's results.
func without(results, chosen []orchestrator.Coin) []orchestrator.Coin {
	out := []orchestrator.Coin{}
	for _, r := range results {
		if !slices.ContainsFunc(chosen, func(c orchestrator.Coin) bool { return c.ID == r.ID }) {
			out = append(out, r)
		}
	}
	return out
}

// searchResults answers the search box with its results fragment: a refused search (a wrong key,
// an empty query) says why in the fragment, beside the box.
func (a *App) searchResults(v *view, p *coinPicker, search func(q string) ([]orchestrator.Coin, error)) error {
	p.Query = strings.TrimSpace(p.Query)
	if p.Query != "" {
		found, err := search(p.Query)
		switch {
		case err == nil:
			p.Results, p.Searched = without(found, p.Chosen), true
		case statusOf(err) < 500:
			p.SearchError = messageOf(err)
		default:
			return err
		}
	}
	return a.fragment(v.c, http.StatusOK, "connect", "coinresults", p)
}

// searchCoinsBefore is the coin picker's search on the Connect page (POST
// /api/mcp/pinned-prices/search with the key as typed; nothing is stored).
func (a *App) searchCoinsBefore(v *view) error {
	chosen, err := formCoins(v.c)
	if err != nil {
		return err
	}
	p := &coinPicker{Chosen: chosen, Query: v.c.FormValue("q")}
	return a.searchResults(v, p, func(q string) ([]orchestrator.Coin, error) {
		var out struct {
			Coins []orchestrator.Coin `json:"coins"`
		}
		err := v.send(fiber.MethodPost, "/api/mcp/pinned-prices/search", map[string]string{"api_key": v.c.FormValue("api_key"), "q": q}, &out)
		return out.Coins, err
	})
}

// searchCoinsOf is the coin picker's search on a Pinned prices login's page, with its stored key.
func (a *App) searchCoinsOf(v *view) error {
	chosen, err := coinsOf(v.c.Context().QueryArgs().PeekMulti("coin"))
	if err != nil {
		return err
	}
	p := &coinPicker{Chosen: chosen, Query: v.c.Query("q")}
	return a.searchResults(v, p, func(q string) ([]orchestrator.Coin, error) {
		var out struct {
			Coins []orchestrator.Coin `json:"coins"`
		}
		err := v.get(apiPath("mcp", "connections", v.c.Params("id"), "pinned-prices", "search")+"?"+queryOf("q", q), &out)
		return out.Coins, err
	})
}

// pinnedCoins reads the coins a Pinned prices login's settings hold.
func pinnedCoins(conn orchestrator.Connection) []orchestrator.Coin {
	var s connections.PinnedPrices
	_ = json.Unmarshal(conn.Settings, &s) // a login of another server holds none
	return s.Coins
}

// pinCoins replaces a Pinned prices login's coins (PUT /api/mcp/connections/{id}/pinned-prices):
// a refusal (too many, none, one CoinGecko does not quote) is shown beside the coins, which stay
// chosen.
func (a *App) pinCoins(v *view) error {
	id := v.c.Params("id")
	coins, err := formCoins(v.c)
	if err != nil {
		return err
	}
	var conn orchestrator.Connection
	if err := v.send(fiber.MethodPut, apiPath("mcp", "connections", id, "pinned-prices"), map[string]any{"coins": coins}, &conn); err != nil {
		if s := statusOf(err); s == http.StatusUnprocessableEntity || s == http.StatusBadGateway || s == http.StatusConflict {
			return a.showConnection(v, s, nil, "", "", &connectionForm{Coins: coins, CoinsError: messageOf(err)})
		}
		return err
	}
	return v.seeOther("/connections/" + url.PathEscape(conn.ID) + "?" + queryOf("pinned", strconv.Itoa(len(pinnedCoins(conn)))))
}

// connectionForm is what a refused picker on a login's page sent, shown again with the API's message.
type connectionForm struct {
	Coins       []orchestrator.Coin
	CoinsError  string
	Repos       []string // the repositories' URLs
	ReposError  string
	Folder      string
	FolderError string
}

// folderPicker is Drive's folder picker on a pending Drive login's page: the folders under the
// one opened (the roots: My Drive, Shared with me, the shared drives), each picked or opened.
type folderPicker struct {
	Parent, ParentName string
	Folders            []connections.DriveFolder
	Chosen             string
	Error              string
}

// Open is the link that opens a folder in the picker.
func (p *folderPicker) Open(conn string, f connections.DriveFolder) string {
	return "/connections/" + url.PathEscape(conn) + "?" + queryOf("parent", f.ID) + "&" + queryOf("in", f.Name)
}

// pickFolder confines a pending Drive login to one folder (PUT /api/mcp/connections/{id}/drive/folder),
// which connects it; a refusal is shown beside the picker.
func (a *App) pickFolder(v *view) error {
	id, folder := v.c.Params("id"), v.c.FormValue("folder")
	var conn orchestrator.Connection
	if err := v.send(fiber.MethodPut, apiPath("mcp", "connections", id, "drive", "folder"), map[string]string{"id": folder}, &conn); err != nil {
		if s := statusOf(err); s == http.StatusUnprocessableEntity || s == http.StatusBadGateway || s == http.StatusConflict {
			return a.showConnection(v, s, nil, "", "", &connectionForm{Folder: folder, FolderError: messageOf(err)})
		}
		return err
	}
	return v.seeOther("/connections/" + url.PathEscape(conn.ID) + "?" + queryOf("folder", conn.AccountHint))
}

// repoPicker is a GitHub login's repository picker: what its installation reaches, the selection
// checked.
type repoPicker struct {
	Repos    []orchestrator.GitHubRepository
	Selected map[string]bool // by URL
	Error    string
}

// pickRepositories stores a GitHub login's selection (PUT /api/mcp/connections/{id}/github/selected).
func (a *App) pickRepositories(v *view) error {
	id := v.c.Params("id")
	var picks []orchestrator.GitHubPick
	var urls []string
	for _, u := range v.c.Context().PostArgs().PeekMulti("repo") {
		urls = append(urls, string(u))
		picks = append(picks, orchestrator.GitHubPick{URL: string(u)})
	}
	if picks == nil {
		picks = []orchestrator.GitHubPick{}
	}
	var out struct {
		Repos []orchestrator.GitHubRepo `json:"github_repositories"`
	}
	if err := v.send(fiber.MethodPut, apiPath("mcp", "connections", id, "github", "selected"), map[string]any{"repositories": picks}, &out); err != nil {
		if s := statusOf(err); s == http.StatusUnprocessableEntity || s == http.StatusBadGateway || s == http.StatusConflict {
			return a.showConnection(v, s, nil, "", "", &connectionForm{Repos: urls, ReposError: messageOf(err)})
		}
		return err
	}
	return v.seeOther("/connections/" + url.PathEscape(id) + "?" + queryOf("repositories", strconv.Itoa(len(out.Repos))))
}

// installationData is the GitHub installation picker's page.
type installationData struct {
	State         string
	Installations []orchestrator.GitHubInstallation
	Error         string
}

// installationPage lists the GitHub accounts that have the App installed when the signed-in
// GitHub user reaches several (GET /api/mcp/oauth/github-installation?state=).
func (a *App) installationPage(v *view) error {
	return a.showInstallations(v, http.StatusOK, "")
}

func (a *App) showInstallations(v *view, status int, fail string) error {
	state := v.c.Query("state")
	if state == "" {
		state = v.c.FormValue("state")
	}
	var out struct {
		Installations []orchestrator.GitHubInstallation `json:"installations"`
	}
	if err := v.get("/api/mcp/oauth/github-installation?"+queryOf("state", state), &out); err != nil {
		return err
	}
	d := installationData{State: state, Installations: out.Installations, Error: fail}
	return a.render(v.c, status, "installations", pageData{Title: "Pick a GitHub account", Me: v.me, Inst: v.inst, Nav: "Organisations", D: d})
}

// pickInstallation finishes a GitHub Connect with the installation picked (POST
// /api/mcp/oauth/github-installation) and opens the login's page.
func (a *App) pickInstallation(v *view) error {
	var conn orchestrator.Connection
	body := map[string]string{"state": v.c.FormValue("state"), "installation_id": v.c.FormValue("installation_id")}
	if err := v.send(fiber.MethodPost, "/api/mcp/oauth/github-installation", body, &conn); err != nil {
		if statusOf(err) == http.StatusUnprocessableEntity {
			return a.showInstallations(v, http.StatusUnprocessableEntity, messageOf(err))
		}
		return err
	}
	return v.seeOther(LoginPage(conn))
}

// GitHubPickerPage is the app's installation picker for a GitHub Connect's state, where the
// callback sends the browser when the GitHub user reaches several installations.
func GitHubPickerPage(state string) string { return "/github/installations?" + queryOf("state", state) }

// callbackResult is a provider callback's result that connected nothing, kept for its page.
type callbackResult struct {
	Title, Message string
	Failed         bool
}

// CallbackPage keeps a provider callback's result that connected nothing (a refusal, a login
// waiting for approval) for the page it answers, and returns that page's path: the reason
// travels in the app's memory, never in the address, and is shown once.
func (a *App) CallbackPage(failed bool, title, msg string) string {
	b, _ := json.Marshal(callbackResult{Title: title, Message: msg, Failed: failed}) // strings and a bool always encode
	return "/connect/result?" + queryOf("r", a.flash.put("", string(b)))
}

// callbackData is the page a provider callback that connected nothing lands on: its result, or
// Gone when it was shown already (or is too old).
type callbackData struct {
	callbackResult
	Gone bool
}

func (a *App) showCallbackResult(v *view) error {
	d := callbackData{callbackResult: callbackResult{Title: "Login result"}, Gone: true}
	if kept := a.flash.take("", v.c.Query("r")); kept != "" && json.Unmarshal([]byte(kept), &d.callbackResult) == nil {
		d.Gone = false
	}
	return a.render(v.c, http.StatusOK, "callback", pageData{Title: d.Title, Me: v.me, Inst: v.inst, Nav: "Organisations", D: d})
}
