// Package coingecko is the CoinGecko adapter: Pro REST with x-cg-pro-api-key, answered as
// compact TSV (search, coin, prices, new, movers, supply, chart, trending).
package coingecko

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "coingecko"

// provider names CoinGecko in errors.
const provider = "CoinGecko"

// planCode is CoinGecko's error_code for an endpoint the key's plan does not include.
const planCode = 10005

// analyst lists the tools that need the Analyst plan or above.
var analyst = map[string]bool{"new": true, "movers": true, "supply": true}

func init() { adapters.Register(Adapter{}) }

// Adapter is the CoinGecko adapter.
type Adapter struct{}

// Slug returns "coingecko".
func (Adapter) Slug() string { return Slug }

// Client returns the login's HTTP with CoinGecko's key header and plan-error reading; tool names
// the call for a plan error ("" outside a tool).
func Client(l adapters.Login, tool string) adapters.HTTP {
	key := l.Credential("api_key")
	return adapters.HTTP{Provider: provider, Login: l,
		Auth:     func(h http.Header) { h.Set("x-cg-pro-api-key", key) },
		Classify: func(status int, body []byte) error { return classify(tool, status, body) }}
}

// classify reads CoinGecko's {"status":{"error_code","error_message"}} refusals: 10005 (or a
// refusal of an Analyst tool that speaks of a plan) is a plan error that names the plan.
func classify(tool string, status int, body []byte) error {
	var e struct {
		Status struct {
			Code int    `json:"error_code"`
			Msg  string `json:"error_message"`
		} `json:"status"`
	}
	_ = json.Unmarshal(body, &e)
	msg := strings.ToLower(e.Status.Msg)
	refused := status == http.StatusUnauthorized || status == http.StatusForbidden
	if e.Status.Code != planCode && !(refused && analyst[tool] && (strings.Contains(msg, "plan") || strings.Contains(msg, "upgrade"))) {
		return nil
	}
	if analyst[tool] {
		return &adapters.Error{Kind: adapters.KindPlan, Provider: provider, Msg: tool + " needs the CoinGecko Analyst plan or above; this key's plan does not include it"}
	}
	return &adapters.Error{Kind: adapters.KindPlan, Provider: provider, Msg: "this key's plan does not include " + tool + "; it needs a paid CoinGecko plan"}
}

// Verify pings /ping with the key.
func (Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	var out struct {
		Says string `json:"gecko_says"`
	}
	if err := Client(l, "").JSON(ctx, adapters.Get(l.URL, "/ping", nil, "the /ping endpoint"), &out); err != nil {
		return connections.Verification{}, err
	}
	return connections.Verification{}, nil
}

// Call runs one CoinGecko tool.
func (Adapter) Call(ctx context.Context, l adapters.Login, tool string, args map[string]any) (string, error) {
	c := Client(l, tool)
	switch tool {
	case "search":
		return search(ctx, c, args)
	case "coin":
		return coin(ctx, c, args)
	case "prices":
		return prices(ctx, c, args)
	case "new":
		return listNew(ctx, c, args)
	case "movers":
		return movers(ctx, c, args)
	case "supply":
		return supply(ctx, c, args)
	case "chart":
		return chart(ctx, c, args)
	case "trending":
		return trending(ctx, c)
	}
	return "", adapters.UnknownTool(provider, tool)
}

func search(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	q, err := adapters.Need(provider, args, "query")
	if err != nil {
		return "", err
	}
	var out struct {
		Coins []struct {
			ID     string   `json:"id"`
			Name   string   `json:"name"`
			Symbol string   `json:"symbol"`
			Rank   *float64 `json:"market_cap_rank"`
		} `json:"coins"`
		Exchanges []struct {
			ID, Name string
			Type     string `json:"market_type"`
		} `json:"exchanges"`
		Categories []struct {
			ID   any    `json:"id"`
			Name string `json:"name"`
		} `json:"categories"`
	}
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/search", url.Values{"query": {q}}, "search "+q), &out); err != nil {
		return "", err
	}
	t := adapters.NewTable("kind", "id", "name", "symbol", "market_cap_rank")
	for _, x := range out.Coins {
		t.Add("coin", x.ID, x.Name, x.Symbol, x.Rank)
	}
	for _, x := range out.Exchanges {
		t.Add("exchange", x.ID, x.Name, "", nil)
	}
	for _, x := range out.Categories {
		t.Add("category", x.ID, x.Name, "", nil)
	}
	t.Cap(adapters.Limit(args))
	return t.String(), nil
}

// market is CoinGecko's per-currency maps of /coins/{id}.
type market map[string]float64

func coin(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	id, err := adapters.Need(provider, args, "id")
	if err != nil {
		return "", err
	}
	vs := strings.ToLower(adapters.StrOr(args, "vs_currency", "usd"))
	q := url.Values{"localization": {"false"}, "tickers": {"false"}, "market_data": {"true"}, "community_data": {"false"}, "developer_data": {"false"}, "sparkline": {"false"}}
	var out struct {
		ID, Symbol, Name string
		Rank             *float64 `json:"market_cap_rank"`
		Updated          string   `json:"last_updated"`
		M                struct {
			Price    market            `json:"current_price"`
			Cap      market            `json:"market_cap"`
			FDV      market            `json:"fully_diluted_valuation"`
			Volume   market            `json:"total_volume"`
			High     market            `json:"high_24h"`
			Low      market            `json:"low_24h"`
			ATH      market            `json:"ath"`
			ATHDate  map[string]string `json:"ath_date"`
			ATL      market            `json:"atl"`
			ATLDate  map[string]string `json:"atl_date"`
			Ch24     market            `json:"price_change_percentage_24h_in_currency"`
			Ch7      market            `json:"price_change_percentage_7d_in_currency"`
			Ch30     market            `json:"price_change_percentage_30d_in_currency"`
			Circ     *float64          `json:"circulating_supply"`
			Total    *float64          `json:"total_supply"`
			MaxSuply *float64          `json:"max_supply"`
		} `json:"market_data"`
	}
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/coins/"+url.PathEscape(id), q, "coin "+id+" (search gives coin ids)"), &out); err != nil {
		return "", err
	}
	at := func(m market) any {
		if v, ok := m[vs]; ok {
			return v
		}
		return nil
	}
	t := adapters.NewTable("id", "symbol", "name", "rank", "price_"+vs, "market_cap", "fdv", "volume_24h", "high_24h", "low_24h",
		"change_24h_pct", "change_7d_pct", "change_30d_pct", "circulating_supply", "total_supply", "max_supply", "ath", "ath_date", "atl", "atl_date", "last_updated")
	t.Add(out.ID, out.Symbol, out.Name, out.Rank, at(out.M.Price), at(out.M.Cap), at(out.M.FDV), at(out.M.Volume), at(out.M.High), at(out.M.Low),
		at(out.M.Ch24), at(out.M.Ch7), at(out.M.Ch30), out.M.Circ, out.M.Total, out.M.MaxSuply, at(out.M.ATH), out.M.ATHDate[vs], at(out.M.ATL), out.M.ATLDate[vs], out.Updated)
	if _, ok := out.M.Price[vs]; !ok && len(out.M.Price) > 0 {
		t.Note("no " + vs + " quote for " + out.ID + "; pass another vs_currency")
	}
	return t.String(), nil
}

// Quote is one row of /simple/price.
type Quote struct {
	ID        string
	Price     *float64
	Change24h *float64
	MarketCap *float64
	Updated   int64
}

// SimplePrice quotes ids in vs in one /simple/price request, in the order asked; an id CoinGecko
// does not quote has a nil Price.
func SimplePrice(ctx context.Context, c adapters.HTTP, ids []string, vs string) ([]Quote, error) {
	q := url.Values{"ids": {strings.Join(ids, ",")}, "vs_currencies": {vs}, "include_market_cap": {"true"}, "include_24hr_change": {"true"}, "include_last_updated_at": {"true"}}
	var out map[string]map[string]float64
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/simple/price", q, "prices of "+strings.Join(ids, ",")), &out); err != nil {
		return nil, err
	}
	res := make([]Quote, 0, len(ids))
	for _, id := range ids {
		m, ok := out[id]
		r := Quote{ID: id}
		if ok {
			get := func(k string) *float64 {
				if v, ok := m[k]; ok {
					return &v
				}
				return nil
			}
			r.Price, r.Change24h, r.MarketCap = get(vs), get(vs+"_24h_change"), get(vs+"_market_cap")
			r.Updated = int64(m["last_updated_at"])
		}
		res = append(res, r)
	}
	return res, nil
}

func prices(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	ids := adapters.Strs(args, "ids")
	if len(ids) == 0 {
		return "", adapters.Invalid(provider, "ids needs at least one coin id")
	}
	if len(ids) > 50 {
		return "", adapters.Invalid(provider, "ids takes at most 50 coin ids")
	}
	vs := strings.ToLower(adapters.StrOr(args, "vs_currency", "usd"))
	qs, err := SimplePrice(ctx, c, ids, vs)
	if err != nil {
		return "", err
	}
	t := adapters.NewTable("id", "price_"+vs, "change_24h_pct", "market_cap", "last_updated")
	var missing []string
	for _, q := range qs {
		if q.Price == nil {
			missing = append(missing, q.ID)
			continue
		}
		t.Add(q.ID, q.Price, q.Change24h, q.MarketCap, adapters.Unix(q.Updated))
	}
	if len(missing) > 0 {
		t.Note("not quoted (not CoinGecko coin ids; search finds them): " + strings.Join(missing, ", "))
	}
	return t.String(), nil
}

func listNew(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	var out []struct {
		ID, Symbol, Name string
		Activated        int64 `json:"activated_at"`
	}
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/coins/list/new", nil, "new listings"), &out); err != nil {
		return "", err
	}
	t := adapters.NewTable("id", "symbol", "name", "listed_at")
	for _, x := range out {
		t.Add(x.ID, x.Symbol, x.Name, adapters.Unix(x.Activated))
	}
	t.Cap(adapters.Limit(args))
	return t.String(), nil
}

func movers(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	dur := adapters.StrOr(args, "duration", "24h")
	vs := strings.ToLower(adapters.StrOr(args, "vs_currency", "usd"))
	var out struct {
		Gainers []map[string]any `json:"top_gainers"`
		Losers  []map[string]any `json:"top_losers"`
	}
	q := url.Values{"vs_currency": {vs}, "duration": {dur}}
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/coins/top_gainers_losers", q, "movers"), &out); err != nil {
		return "", err
	}
	limit := adapters.Limit(args)
	t := adapters.NewTable("side", "id", "symbol", "name", "rank", "price_"+vs, "volume_24h", "change_"+dur+"_pct")
	more := 0
	for _, side := range []struct {
		name string
		rows []map[string]any
	}{{"gainer", out.Gainers}, {"loser", out.Losers}} {
		for i, x := range side.rows {
			if i >= limit {
				more += len(side.rows) - limit
				break
			}
			t.Add(side.name, x["id"], x["symbol"], x["name"], x["market_cap_rank"], x[vs], x[vs+"_24h_vol"], x[vs+"_"+dur+"_change"])
		}
	}
	if more > 0 {
		t.Note(adapters.MoreRows(more, limit))
	}
	return t.String(), nil
}

func supply(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	id, err := adapters.Need(provider, args, "id")
	if err != nil {
		return "", err
	}
	kind := adapters.StrOr(args, "kind", "circulating")
	if kind != "circulating" && kind != "total" {
		return "", adapters.Invalid(provider, "kind is circulating or total")
	}
	days, ok := adapters.Int(args, "days")
	if !ok || days < 1 {
		days = 30
	}
	q := url.Values{"days": {strconv.Itoa(min(days, 365))}}
	m, err := c.Series(ctx, adapters.Get(c.Login.URL, "/coins/"+url.PathEscape(id)+"/"+kind+"_supply_chart", q, "coin "+id+" (search gives coin ids)"))
	if err != nil {
		return "", err
	}
	t := adapters.NewTable("time", kind+"_supply")
	for _, p := range adapters.Downsample(m[kind+"_supply"], adapters.ChartPoints) {
		t.Add(adapters.UnixMilli(p.T), p.V)
	}
	return t.String(), nil
}

func chart(ctx context.Context, c adapters.HTTP, args map[string]any) (string, error) {
	id, err := adapters.Need(provider, args, "id")
	if err != nil {
		return "", err
	}
	vs := strings.ToLower(adapters.StrOr(args, "vs_currency", "usd"))
	days, ok := adapters.Int(args, "days")
	if !ok || days < 1 {
		days = 7
	}
	q := url.Values{"vs_currency": {vs}, "days": {strconv.Itoa(min(days, 365))}}
	m, err := c.Series(ctx, adapters.Get(c.Login.URL, "/coins/"+url.PathEscape(id)+"/market_chart", q, "coin "+id+" (search gives coin ids)"))
	if err != nil {
		return "", err
	}
	ps, caps, vols := m["prices"], m["market_caps"], m["total_volumes"]
	t := adapters.NewTable("time", "price_"+vs, "market_cap", "volume_24h")
	capAt, volAt := aligned(ps, caps), aligned(ps, vols)
	for _, i := range adapters.DownsampleIndex(len(ps), adapters.ChartPoints) {
		t.Add(adapters.UnixMilli(ps[i].T), ps[i].V, capAt(i), volAt(i))
	}
	if len(ps) > adapters.ChartPoints {
		t.Note(fmt.Sprintf("downsampled from %d points to %d", len(ps), adapters.ChartPoints))
	}
	return t.String(), nil
}

// aligned returns the value of series at the time of ps[i]: by index when the series share their
// times (CoinGecko's usual answer), else by a lookup of the time.
func aligned(ps, series []adapters.Point) func(i int) any {
	same := len(series) == len(ps)
	for i := 0; same && i < len(ps); i++ {
		same = ps[i].T == series[i].T
	}
	if same {
		return func(i int) any { return series[i].V }
	}
	m := make(map[int64]float64, len(series))
	for _, p := range series {
		m[p.T] = p.V
	}
	return func(i int) any {
		if v, ok := m[ps[i].T]; ok {
			return v
		}
		return nil
	}
}

func trending(ctx context.Context, c adapters.HTTP) (string, error) {
	var out struct {
		Coins []struct {
			Item struct {
				ID, Name, Symbol string
				Rank             *float64 `json:"market_cap_rank"`
				Score            int      `json:"score"`
				Data             struct {
					Price  any                `json:"price"`
					Change map[string]float64 `json:"price_change_percentage_24h"`
				} `json:"data"`
			} `json:"item"`
		} `json:"coins"`
	}
	if err := c.JSON(ctx, adapters.Get(c.Login.URL, "/search/trending", nil, "trending"), &out); err != nil {
		return "", err
	}
	t := adapters.NewTable("trend_rank", "id", "symbol", "name", "market_cap_rank", "price_usd", "change_24h_pct")
	for _, x := range out.Coins {
		it := x.Item
		var ch any
		if v, ok := it.Data.Change["usd"]; ok {
			ch = v
		}
		var price any
		if v, ok := adapters.Num(it.Data.Price); ok {
			price = v
		}
		t.Add(it.Score+1, it.ID, it.Symbol, it.Name, it.Rank, price, ch)
	}
	return t.String(), nil
}
