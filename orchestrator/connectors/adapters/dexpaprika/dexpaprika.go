// Package dexpaprika is the DexPaprika adapter: REST with the key as the whole Authorization
// header (a 403 retried once on the pro endpoint), answered as compact TSV.
package dexpaprika

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Slug is the catalog slug of the adapter.
const Slug = "dexpaprika"

// provider names DexPaprika in errors.
const provider = "DexPaprika"

// Batch is the most addresses one prices call takes.
const Batch = 10

// maxCandles is the most OHLCV candles DexPaprika returns for one request.
const maxCandles = 366

func init() { adapters.Register(Adapter{}) }

// Adapter is the DexPaprika adapter.
type Adapter struct{}

// Slug returns "dexpaprika".
func (Adapter) Slug() string { return Slug }

// client is the login's HTTP with the raw key as Authorization.
func client(l adapters.Login) adapters.HTTP {
	key := l.Credential("api_key")
	return adapters.HTTP{Provider: provider, Login: l, Auth: func(h http.Header) { h.Set("Authorization", key) }}
}

// Verify checks /usage: 401, 403 (no retry elsewhere) or a keyless plan is a rejected key.
func (Adapter) Verify(ctx context.Context, l adapters.Login) (connections.Verification, error) {
	var out map[string]any
	if err := client(l).JSON(ctx, adapters.Get(l.URL, "/usage", nil, "the /usage endpoint"), &out); err != nil {
		return connections.Verification{}, err
	}
	plan := planOf(out)
	if keyless(out, 0) {
		return connections.Verification{}, &adapters.Error{Kind: adapters.KindRejected, KeyInvalid: true, Provider: provider,
			Msg: "answered /usage with a keyless plan: the key was not recognised; paste a DexPaprika API key"}
	}
	if plan == "" {
		return connections.Verification{}, nil
	}
	return connections.Verification{AccountHint: plan + " plan"}, nil
}

// keyless reports whether a /usage answer says the request ran on the keyless plan: a string
// value of a plan, tier, type or name field naming it (keyless, anonymous, public), or keyless
// true / authenticated false.
func keyless(v any, depth int) bool {
	if depth > 2 {
		return false
	}
	switch x := v.(type) {
	case string:
		s := strings.ToLower(strings.TrimSpace(x))
		return s == "keyless" || s == "anonymous" || s == "public" || strings.Contains(s, "keyless")
	case map[string]any:
		if b, ok := x["keyless"].(bool); ok && b {
			return true
		}
		if b, ok := x["authenticated"].(bool); ok && !b {
			return true
		}
		for k, f := range x {
			if _, isStr := f.(string); isStr && k != "plan" && k != "tier" && k != "plan_name" && k != "key_type" && k != "type" && k != "name" {
				continue
			}
			if keyless(f, depth+1) {
				return true
			}
		}
	}
	return false
}

// planOf finds the plan's name in a /usage answer: plan (a string, or an object's name, tier or
// id), or tier.
func planOf(m map[string]any) string {
	for _, k := range []string{"plan", "tier", "plan_name"} {
		switch x := m[k].(type) {
		case string:
			return strings.TrimSpace(x)
		case map[string]any:
			for _, f := range []string{"name", "tier", "id"} {
				if s, ok := x[f].(string); ok && strings.TrimSpace(s) != "" {
					return strings.TrimSpace(s)
				}
			}
		}
	}
	return ""
}

// get sends a GET of path on the login's URL, retried once on the pro endpoint when answered 403.
func get(ctx context.Context, l adapters.Login, path string, q url.Values, what string, out any) error {
	c := client(l)
	err := c.JSON(ctx, adapters.Get(l.URL, path, q, what), out)
	if adapters.StatusOf(err) != http.StatusForbidden {
		return err
	}
	pro, perr := l.Endpoint(provider, "pro")
	if perr != nil {
		return err
	}
	return c.JSON(ctx, adapters.Get(pro, path, q, what), out)
}

// Call runs one DexPaprika tool.
func (Adapter) Call(ctx context.Context, l adapters.Login, tool string, args map[string]any) (string, error) {
	switch tool {
	case "search":
		return search(ctx, l, args)
	case "token":
		return token(ctx, l, args)
	case "prices":
		return prices(ctx, l, args)
	case "pool":
		return pool(ctx, l, args)
	case "pools":
		return pools(ctx, l, args)
	case "ohlcv":
		return ohlcv(ctx, l, args)
	case "swaps":
		return swaps(ctx, l, args)
	}
	return "", adapters.UnknownTool(provider, tool)
}

// need returns required string arguments in order, or an argument error naming the first missing.
func need(args map[string]any, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		var err error
		if out[i], err = adapters.Need(provider, args, n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// metrics is one time window of a token or pool summary.
type metrics struct {
	Volume *float64 `json:"volume_usd"`
	Change *float64 `json:"last_price_usd_change"`
	Txns   *float64 `json:"txns"`
}

// tok is a token as DexPaprika lists it.
type tok struct {
	ID, Name, Symbol, Chain string
	Decimals                *float64 `json:"decimals"`
	PriceUSD                *float64 `json:"price_usd"`
	Volume                  *float64 `json:"volume_usd"`
	Liquidity               *float64 `json:"liquidity_usd"`
	FDV                     *float64 `json:"fdv"`
	TotalSupply             *float64 `json:"total_supply"`
	AddedAt                 string   `json:"added_at"`
	Updated                 string   `json:"last_updated"`
	Summary                 *struct {
		PriceUSD  *float64 `json:"price_usd"`
		FDV       *float64 `json:"fdv"`
		Liquidity *float64 `json:"liquidity_usd"`
		Pools     *float64 `json:"pools"`
		H24       metrics  `json:"24h"`
		H1        metrics  `json:"1h"`
	} `json:"summary"`
}

// pl is a pool as DexPaprika lists it.
type pl struct {
	ID, Chain    string
	DexName      string   `json:"dex_name"`
	DexID        string   `json:"dex_id"`
	Volume       *float64 `json:"volume_usd"`
	Transactions *float64 `json:"transactions"`
	PriceUSD     *float64 `json:"price_usd"`
	LastPriceUSD *float64 `json:"last_price_usd"`
	Change24h    *float64 `json:"last_price_change_usd_24h"`
	Fee          *float64 `json:"fee"`
	Liquidity    *float64 `json:"liquidity_usd"`
	CreatedAt    string   `json:"created_at"`
	Tokens       []tok    `json:"tokens"`
	H24          *metrics `json:"24h"`
}

// pair names a pool's tokens by symbol, e.g. WETH/USDC.
func (p pl) pair() string {
	var s []string
	for _, t := range p.Tokens {
		s = append(s, t.Symbol)
	}
	return strings.Join(s, "/")
}

func (p pl) dex() string {
	if p.DexName != "" {
		return p.DexName
	}
	return p.DexID
}

func search(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	v, err := need(args, "query")
	if err != nil {
		return "", err
	}
	var out struct {
		Tokens []tok `json:"tokens"`
		Pools  []pl  `json:"pools"`
		Dexes  []struct {
			ID, Chain string
			DexID     string   `json:"dex_id"`
			DexName   string   `json:"dex_name"`
			Volume    *float64 `json:"volume_usd_24h"`
		} `json:"dexes"`
	}
	if err := get(ctx, l, "/search", url.Values{"query": {v[0]}}, "search "+v[0], &out); err != nil {
		return "", err
	}
	t := adapters.NewTable("kind", "network", "id", "name", "symbol", "price_usd", "volume_usd")
	for _, x := range out.Tokens {
		t.Add("token", x.Chain, x.ID, x.Name, x.Symbol, x.PriceUSD, x.Volume)
	}
	for _, x := range out.Pools {
		t.Add("pool", x.Chain, x.ID, x.dex()+" "+x.pair(), "", x.PriceUSD, x.Volume)
	}
	for _, x := range out.Dexes {
		id := x.DexID
		if id == "" {
			id = x.ID
		}
		t.Add("dex", x.Chain, id, x.DexName, "", nil, x.Volume)
	}
	t.Cap(adapters.Limit(args))
	return t.String(), nil
}

func token(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	v, err := need(args, "network", "address")
	if err != nil {
		return "", err
	}
	var x tok
	if err := get(ctx, l, "/networks/"+seg(v[0])+"/tokens/"+seg(v[1]), nil, "token "+v[1]+" on "+v[0], &x); err != nil {
		return "", err
	}
	t := adapters.NewTable("network", "id", "name", "symbol", "decimals", "price_usd", "fdv", "liquidity_usd", "pools", "volume_24h_usd", "change_1h_pct", "change_24h_pct", "txns_24h", "total_supply", "added_at", "last_updated")
	if s := x.Summary; s != nil {
		t.Add(x.Chain, x.ID, x.Name, x.Symbol, x.Decimals, s.PriceUSD, s.FDV, s.Liquidity, s.Pools, s.H24.Volume, s.H1.Change, s.H24.Change, s.H24.Txns, x.TotalSupply, x.AddedAt, x.Updated)
	} else {
		t.Add(x.Chain, x.ID, x.Name, x.Symbol, x.Decimals, x.PriceUSD, x.FDV, x.Liquidity, nil, x.Volume, nil, nil, nil, x.TotalSupply, x.AddedAt, x.Updated)
	}
	return t.String(), nil
}

func prices(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	network := adapters.Str(args, "network")
	addrs := adapters.Strs(args, "addresses")
	if network == "" || len(addrs) == 0 {
		return "", adapters.Invalid(provider, "network and at least one address are required")
	}
	if len(addrs) > Batch {
		return "", adapters.Invalid(provider, fmt.Sprintf("prices takes at most %d addresses per call, got %d", Batch, len(addrs)))
	}
	var raw any
	if err := get(ctx, l, "/networks/"+seg(network)+"/multi/prices", url.Values{"tokens": {strings.Join(addrs, ",")}}, "prices on "+network, &raw); err != nil {
		return "", err
	}
	// Two revisions: a bare array, or {"prices": [...], "missing_tokens": [...]}.
	list, _ := raw.([]any)
	if m, ok := raw.(map[string]any); ok {
		list, _ = m["prices"].([]any)
	}
	got := map[string]map[string]any{}
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			if id, ok := m["id"].(string); ok {
				got[strings.ToLower(id)] = m
			} else if id, ok := m["address"].(string); ok {
				got[strings.ToLower(id)] = m
			}
		}
	}
	t := adapters.NewTable("address", "price_usd")
	var missing []string
	for _, a := range addrs {
		m, ok := got[strings.ToLower(a)]
		if !ok {
			missing = append(missing, a)
			continue
		}
		p, _ := adapters.Num(m["price_usd"])
		t.Add(a, p)
	}
	if len(missing) > 0 {
		t.Note("not priced on " + network + ": " + strings.Join(missing, ", "))
	}
	return t.String(), nil
}

func pool(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	v, err := need(args, "network", "address")
	if err != nil {
		return "", err
	}
	var x pl
	if err := get(ctx, l, "/networks/"+seg(v[0])+"/pools/"+seg(v[1]), nil, "pool "+v[1]+" on "+v[0], &x); err != nil {
		return "", err
	}
	price := x.LastPriceUSD
	if price == nil {
		price = x.PriceUSD
	}
	var vol, txns, change any
	if x.H24 != nil {
		vol, txns, change = x.H24.Volume, x.H24.Txns, x.H24.Change
	}
	t := adapters.NewTable("network", "id", "dex", "pair", "tokens", "price_usd", "liquidity_usd", "volume_24h_usd", "txns_24h", "change_24h_pct", "fee", "created_at")
	var ids []string
	for _, tk := range x.Tokens {
		ids = append(ids, tk.ID)
	}
	t.Add(x.Chain, x.ID, x.dex(), x.pair(), strings.Join(ids, ","), price, x.Liquidity, vol, txns, change, x.Fee, x.CreatedAt)
	return t.String(), nil
}

func pools(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	v, err := need(args, "network")
	if err != nil {
		return "", err
	}
	limit := adapters.Limit(args)
	order := adapters.StrOr(args, "order_by", "volume_usd")
	q := url.Values{"page": {"0"}, "limit": {strconv.Itoa(limit)}, "order_by": {order}, "sort": {"desc"}}
	path, what := "/networks/"+seg(v[0])+"/pools", "network "+v[0]
	if tk := adapters.Str(args, "token"); tk != "" {
		path, what = "/networks/"+seg(v[0])+"/tokens/"+seg(tk)+"/pools", "token "+tk+" on "+v[0]
	}
	var out struct {
		Pools    []pl `json:"pools"`
		PageInfo struct {
			Total *float64 `json:"total_items"`
		} `json:"page_info"`
	}
	if err := get(ctx, l, path, q, what, &out); err != nil {
		return "", err
	}
	t := adapters.NewTable("id", "dex", "pair", "price_usd", "volume_usd", "transactions", "change_24h_pct", "fee", "created_at")
	for i, x := range out.Pools {
		if i == limit {
			break
		}
		t.Add(x.ID, x.dex(), x.pair(), x.PriceUSD, x.Volume, x.Transactions, x.Change24h, x.Fee, x.CreatedAt)
	}
	total := len(out.Pools)
	if out.PageInfo.Total != nil {
		total = max(total, int(*out.PageInfo.Total))
	}
	if total > t.Len() {
		t.Note(adapters.MoreRows(total-t.Len(), limit))
	}
	return t.String(), nil
}

// intervals are the OHLCV intervals the schema lists.
var intervals = map[string]time.Duration{"1m": time.Minute, "5m": 5 * time.Minute, "10m": 10 * time.Minute, "15m": 15 * time.Minute,
	"30m": 30 * time.Minute, "1h": time.Hour, "6h": 6 * time.Hour, "12h": 12 * time.Hour, "24h": 24 * time.Hour}

func ohlcv(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	v, err := need(args, "network", "pool")
	if err != nil {
		return "", err
	}
	interval := adapters.StrOr(args, "interval", "1h")
	step, ok := intervals[interval]
	if !ok {
		return "", adapters.Invalid(provider, "interval is one of 1m, 5m, 10m, 15m, 30m, 1h, 6h, 12h, 24h")
	}
	end := l.Clock().UTC()
	if s := adapters.Str(args, "end"); s != "" {
		if end, err = time.Parse(time.RFC3339, s); err != nil {
			return "", adapters.Invalid(provider, "end is an RFC 3339 date-time, e.g. 2025-01-02T15:04:05Z")
		}
	}
	start := end.Add(-24 * time.Hour)
	if s := adapters.Str(args, "start"); s != "" {
		if start, err = time.Parse(time.RFC3339, s); err != nil {
			return "", adapters.Invalid(provider, "start is an RFC 3339 date-time, e.g. 2025-01-01T15:04:05Z")
		}
	}
	if !start.Before(end) {
		return "", adapters.Invalid(provider, "start must be before end")
	}
	want := int(math.Ceil(float64(end.Sub(start)) / float64(step)))
	q := url.Values{"start": {start.UTC().Format(time.RFC3339)}, "end": {end.UTC().Format(time.RFC3339)}, "interval": {interval}, "limit": {strconv.Itoa(min(want, maxCandles))}}
	var out []struct {
		TimeOpen  string `json:"time_open"`
		TimeClose string `json:"time_close"`
		Open      any    `json:"open"`
		High      any    `json:"high"`
		Low       any    `json:"low"`
		Close     any    `json:"close"`
		Volume    any    `json:"volume"`
	}
	if err := get(ctx, l, "/networks/"+seg(v[0])+"/pools/"+seg(v[1])+"/ohlcv", q, "pool "+v[1]+" on "+v[0], &out); err != nil {
		return "", err
	}
	cs := make([]adapters.Candle, 0, len(out))
	for _, x := range out {
		c := adapters.Candle{Open: x.TimeOpen, Close: x.TimeClose}
		c.O, _ = adapters.Num(x.Open)
		c.H, _ = adapters.Num(x.High)
		c.L, _ = adapters.Num(x.Low)
		c.C, _ = adapters.Num(x.Close)
		c.V, _ = adapters.Num(x.Volume)
		cs = append(cs, c)
	}
	agg := adapters.Aggregate(cs, adapters.Candles)
	t := adapters.NewTable("time_open", "time_close", "open", "high", "low", "close", "volume")
	for _, c := range agg {
		t.Add(c.Open, c.Close, c.O, c.H, c.L, c.C, c.V)
	}
	if len(agg) < len(cs) {
		t.Note(fmt.Sprintf("aggregated %d %s candles into %d", len(cs), interval, len(agg)))
	}
	if want > maxCandles {
		t.Note(fmt.Sprintf("… DexPaprika returns at most %d candles per call: pass a later start or a wider interval for the rest", maxCandles))
	}
	return t.String(), nil
}

// first returns the first present field among names of a decoded object.
func first(m map[string]any, names ...string) any {
	for _, n := range names {
		if v, ok := m[n]; ok && v != nil {
			return v
		}
	}
	return nil
}

func swaps(ctx context.Context, l adapters.Login, args map[string]any) (string, error) {
	v, err := need(args, "network", "pool")
	if err != nil {
		return "", err
	}
	limit := adapters.Limit(args)
	var out struct {
		Transactions []map[string]any `json:"transactions"`
		PageInfo     struct {
			Next any `json:"next_cursor"`
		} `json:"page_info"`
	}
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if err := get(ctx, l, "/networks/"+seg(v[0])+"/pools/"+seg(v[1])+"/transactions", q, "pool "+v[1]+" on "+v[0], &out); err != nil {
		return "", err
	}
	// Two doc revisions name the fields differently: decode leniently.
	t := adapters.NewTable("time", "tx", "amount_0", "amount_1", "price_0_usd", "price_1_usd", "trader")
	for _, x := range out.Transactions {
		num := func(names ...string) any {
			if f, ok := adapters.Num(first(x, names...)); ok {
				return f
			}
			return nil
		}
		a0 := num("amount_0", "amount0", "sell_amount", "sells")
		tx, _ := first(x, "id", "tx_id", "transaction_id", "hash").(string)
		trader, _ := first(x, "sender", "trader", "wallet", "maker").(string)
		when, _ := first(x, "created_at", "time", "timestamp").(string)
		if when == "" {
			if f, ok := adapters.Num(first(x, "created_at", "time", "timestamp")); ok {
				when = adapters.Unix(int64(f))
			}
		}
		t.Add(when, tx, a0, num("amount_1", "amount1", "buy_amount", "buys"), num("price_0_usd", "price_0", "sell_price_usd"), num("price_1_usd", "price_1", "buy_price_usd"), trader)
	}
	t.Cap(limit)
	if s, ok := out.PageInfo.Next.(string); ok && s != "" && len(out.Transactions) >= limit {
		if limit < adapters.MaxRows {
			t.Note(fmt.Sprintf("… older swaps exist: pass limit (up to %d)", adapters.MaxRows))
		} else {
			t.Note(fmt.Sprintf("… older swaps exist: %d is the most one call shows", adapters.MaxRows))
		}
	}
	return t.String(), nil
}
