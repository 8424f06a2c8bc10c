package catalog

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/guildsai/guilds/orchestrator"
)

// TestManifestsMatchSpec: the seeded catalog holds exactly the spec's servers with their URLs,
// auth kinds, seeded tool lists and default-off tools.
func TestManifestsMatchSpec(t *testing.T) {
	servers, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		slug, name, kind, url, auth string
		tools                       []string // nil: publishes no tools at boot
		off                         []string
	}{
		{"alchemy", "Alchemy", "local", "https://eth-mainnet.g.alchemy.com/nft/v3", "token", []string{"holdings", "nft", "collection"}, nil},
		{"cigale", "Cigale", "remote", "https://api.cigale.ai/api/v1/public/mcp", "token", []string{"search_knowledge_base", "semantic_search", "list_agents", "list_campaigns", "draft_reply_agent", "draft_reply_campaign", "trend_report", "list_trend_reports", "reply_opportunities", "forecast_views"}, nil},
		{"coingecko", "CoinGecko", "local", "https://pro-api.coingecko.com/api/v3", "token", []string{"search", "coin", "prices", "new", "movers", "supply", "chart", "trending"}, nil},
		{"dexpaprika", "DexPaprika", "local", "https://api.dexpaprika.com", "token", []string{"search", "token", "prices", "pool", "pools", "ohlcv", "swaps"}, nil},
		{"drive", "Google Drive", "remote", "https://drivemcp.googleapis.com/mcp/v1", "oauth", nil, nil},
		{"etherscan", "Etherscan", "remote", "https://mcp.etherscan.io/mcp", "token", nil, nil},
		{"github", "GitHub", "github", "https://api.github.com", "oauth", nil, nil},
		{"gmail", "Gmail", "local", "https://gmail.googleapis.com/gmail/v1", "oauth", []string{"search_threads", "get_thread", "get_message", "list_labels", "list_drafts", "create_draft", "send_message"}, []string{"send_message"}},
		{"notion", "Notion", "remote", "https://mcp.notion.com/mcp", "oauth", nil, nil},
		{"opensea", "OpenSea", "remote", "https://mcp.opensea.io/mcp", "token", nil, nil},
		{"pinned_prices", "Pinned prices", "local", "https://pro-api.coingecko.com/api/v3", "token", nil, nil},
		{"qonto", "Qonto", "local", "https://thirdparty.qonto.com", "token", []string{"list_bank_accounts", "list_missing_invoices", "get_transaction", "upload_invoice"}, nil},
		{"sentry", "Sentry", "remote", "https://mcp.sentry.dev/mcp", "oauth", nil, nil},
		{"twitterapi", "TwitterAPI.io", "local", "https://api.twitterapi.io", "token", []string{"search", "user", "posts", "post", "followers", "following", "mentions", "replies", "quotes", "trends"}, nil},
		{"wallet", "Wallet", "local", "https://eth-mainnet.g.alchemy.com/v2", "token",
			[]string{"get_address", "get_balance", "send", "call", "submit", "swap", "uniswap_swap", "opensea_buy", "opensea_list", "opensea_accept_offer", "opensea_collection_offer", "opensea_cancel_order"},
			[]string{"send", "call", "submit", "swap", "uniswap_swap", "opensea_buy", "opensea_list", "opensea_accept_offer", "opensea_collection_offer", "opensea_cancel_order"}},
		{"x", "X", "local", "https://api.x.com/2", "token", []string{"search", "user", "posts", "post"}, nil},
	}
	if len(servers) != len(want) {
		t.Fatalf("%d servers, want %d", len(servers), len(want))
	}
	for i, w := range want {
		s := servers[i]
		t.Run(w.slug, func(t *testing.T) {
			if s.Slug != w.slug || s.Name != w.name || s.Kind != w.kind || s.URL != w.url || s.Auth != w.auth || s.Transport != "http" {
				t.Fatalf("got %s %q %s %s %s, want %+v", s.Slug, s.Name, s.Kind, s.URL, s.Auth, w)
			}
			var names, off []string
			for _, tl := range s.Tools {
				names = append(names, tl.Name)
				if tl.DefaultOff {
					off = append(off, tl.Name)
				}
				if len(tl.Description) < 20 {
					t.Errorf("tool %s: description %q is too thin for a model", tl.Name, tl.Description)
				}
			}
			if !slices.Equal(names, w.tools) {
				t.Errorf("tools %v, want %v", names, w.tools)
			}
			if !slices.Equal(off, w.off) {
				t.Errorf("default-off %v, want %v", off, w.off)
			}
			if s.SeedsTools != (w.tools != nil) {
				t.Errorf("seeds_tools %v", s.SeedsTools)
			}
		})
	}
}

// TestDefaultOffRules: the remote servers' default-off rules apply to names listed later.
func TestDefaultOffRules(t *testing.T) {
	servers, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]orchestrator.MCPServer{}
	for _, s := range servers {
		by[s.Slug] = s
	}
	tests := []struct {
		slug, name string
		off        bool
	}{
		{"opensea", "get_instant_api_key", true},
		{"opensea", "cancel_orders", true},
		{"opensea", "check_drop_eligibility", true},
		{"opensea", "search_collections", false},
		{"drive", "create_file", true},
		{"drive", "copy_file", true},
		{"drive", "search_files", false},
		{"gmail", "Send_Message", true},
		{"gmail", "resend_draft", true},
		{"gmail", "get_thread", false},
		{"notion", "notion-create-pages", false},
	}
	for _, tt := range tests {
		if got := by[tt.slug].Config.IsDefaultOff(tt.name); got != tt.off {
			t.Errorf("%s %s: default off %v, want %v", tt.slug, tt.name, got, tt.off)
		}
	}
}

func TestTokenServersCollectFields(t *testing.T) {
	servers, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if s.Auth == orchestrator.AuthToken && len(s.Config.Fields) == 0 {
			t.Errorf("%s: token server without fields", s.Slug)
		}
	}
}

func TestParseRefusesBadManifests(t *testing.T) {
	base := "slug = \"demo\"\nname = \"Demo\"\nkind = \"local\"\ntransport = \"http\"\nurl = \"https://api.example.com\"\nauth = \"token\"\ndescription = \"d\"\n"
	field := "[[config.fields]]\nname = \"api_key\"\nlabel = \"Key\"\nrequired = true\n"
	tool := func(name, schema string) string {
		return "[[tools]]\nname = \"" + name + "\"\ndescription = \"Does a thing for the test.\"\ninput_schema = '''" + schema + "'''\n"
	}
	tests := []struct {
		name, doc, want string
	}{
		{"bad TOML", base + "oops", "TOML"},
		{"unknown key", "colour = \"red\"\n" + base + field, "unknown keys colour"},
		{"bad slug", strings.Replace(base, `"demo"`, `"Demo-1"`, 1) + field, "slug"},
		{"bad kind", strings.Replace(base, `"local"`, `"cloud"`, 1) + field, "kind"},
		{"http url", strings.Replace(base, "https://", "http://", 1) + field, "https URL"},
		{"token without fields", base, "token server needs"},
		{"tools without seeds_tools", base + field + tool("a", `{"type":"object"}`), "seeds_tools"},
		{"schema not object", base + "seeds_tools = true\n" + field + tool("a", `{"type":"string"}`), `type must be "object"`},
		{"schema not JSON", base + "seeds_tools = true\n" + field + tool("a", `{`), "not a JSON object"},
		{"duplicate tool", base + "seeds_tools = true\n" + field + tool("a", `{"type":"object"}`) + tool("a", `{"type":"object"}`), "unique name"},
		{"bad tool name", base + "seeds_tools = true\n" + field + tool("Bad Name", `{"type":"object"}`), "valid tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
	if _, err := Parse([]byte(base + "seeds_tools = true\n" + field + tool("a", `{"type":"object"}`))); err != nil {
		t.Fatalf("good manifest: %v", err)
	}
}

func TestLoadFSRefusesDuplicateSlugs(t *testing.T) {
	doc := "slug = \"demo\"\nname = \"Demo\"\nkind = \"remote\"\ntransport = \"http\"\nurl = \"https://x.example\"\nauth = \"oauth\"\ndescription = \"d\"\n"
	_, err := LoadFS(fstest.MapFS{"a.toml": {Data: []byte(doc)}, "b.toml": {Data: []byte(doc)}})
	if err == nil || !strings.Contains(err.Error(), `slug "demo" is already used by a.toml`) {
		t.Fatalf("got %v", err)
	}
}

// FuzzParse: any manifest text parses into a checked server or fails cleanly.
func FuzzParse(f *testing.F) {
	data, _ := manifestFS.ReadFile("manifests/coingecko.toml")
	f.Add(string(data))
	f.Add("slug = 1")
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := Parse([]byte(doc))
		if err == nil && !slugPattern.MatchString(s.Slug) {
			t.Fatalf("accepted bad slug %q", s.Slug)
		}
	})
}

func TestSeedFamilies(t *testing.T) {
	for _, name := range PlatformSeed {
		f := SeedFamily(name)
		if !IsBindingFamily(f) {
			t.Errorf("seed tool %s: family %q is not a binding family", name, f)
		}
	}
	if SeedFamily("report_issue") != "" || Group(orchestrator.FamilySecrets) != "Secrets" || Group("nope") != "Other" {
		t.Fatal("families and groups")
	}
}

// TestCustomServer: an admin's server is checked field by field and gets the api_key login.
func TestCustomServer(t *testing.T) {
	ok := CustomRequest{Slug: "my-srv", Name: "Mine", URL: "http://127.0.0.1:9/mcp", Auth: "token", Header: "X-API-KEY"}
	tests := []struct {
		name string
		edit func(*CustomRequest)
		want string // "" accepts
	}{
		{"token over http", func(*CustomRequest) {}, ""},
		{"auth none", func(r *CustomRequest) { r.Auth, r.Header = "none", "" }, ""},
		{"one-letter slug", func(r *CustomRequest) { r.Slug = "a" }, "slug"},
		{"underscore slug", func(r *CustomRequest) { r.Slug = "my_srv" }, "slug"},
		{"41-character slug", func(r *CustomRequest) { r.Slug = "a" + strings.Repeat("b", 40) }, "slug"},
		{"no name", func(r *CustomRequest) { r.Name = " " }, "name"},
		{"not http", func(r *CustomRequest) { r.URL = "ftp://example.com/mcp" }, "url"},
		{"no host", func(r *CustomRequest) { r.URL = "http:///mcp" }, "url"},
		{"oauth", func(r *CustomRequest) { r.Auth = "oauth" }, "auth"},
		{"bad header", func(r *CustomRequest) { r.Header = "X API KEY" }, "header"},
		{"two-word scheme", func(r *CustomRequest) { r.Scheme = "Bearer token" }, "scheme"},
		{"header without a token", func(r *CustomRequest) { r.Auth = "none" }, "header and scheme are for auth token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
			srv, err := Custom(r)
			if tt.want == "" {
				if err != nil || !srv.Custom || srv.Kind != "remote" || !srv.PublishesListed() {
					t.Fatalf("Custom = %+v, %v", srv, err)
				}
				if r.Auth == "token" && (len(srv.Config.Fields) != 1 || srv.Config.Fields[0].Name != "api_key" || srv.Config.Header != "X-API-KEY") {
					t.Fatalf("token login %+v", srv.Config)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestManifestHeadersAndEndpoints: the token servers' headers and the named endpoints come from
// the manifests.
func TestManifestHeadersAndEndpoints(t *testing.T) {
	servers, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]orchestrator.MCPServer{}
	for _, s := range servers {
		by[s.Slug] = s
	}
	for _, tt := range []struct{ slug, header, scheme string }{
		{"cigale", "Authorization", "Bearer"}, {"etherscan", "Authorization", "Bearer"}, {"opensea", "X-API-KEY", ""},
	} {
		if c := by[tt.slug].Config; c.Header != tt.header || c.Scheme != tt.scheme {
			t.Errorf("%s: header %q scheme %q", tt.slug, c.Header, c.Scheme)
		}
	}
	if c := by["opensea"].Config; !c.RejectEmpty || len(c.RejectOnly) != 1 || c.RejectOnly[0] != "get_instant_api_key" {
		t.Errorf("opensea's rejected-key rule %+v", c)
	}
	if by["dexpaprika"].Endpoints["pro"] != "https://api-pro.dexpaprika.com" || by["wallet"].Endpoints["arc"] != "https://rpc.mainnet.arc.io" {
		t.Errorf("endpoints %v %v", by["dexpaprika"].Endpoints, by["wallet"].Endpoints)
	}
	if by["cigale"].PublishesListed() || !by["opensea"].PublishesListed() || !by["notion"].PublishesListed() || by["coingecko"].PublishesListed() {
		t.Error("PublishesListed: Cigale keeps its seeded ten; Notion and OpenSea publish as listed; local adapters seed")
	}
	for _, bad := range []string{
		"[endpoints]\npro = \"http://insecure.example\"\n",
		"[endpoints]\n\"Bad Name\" = \"https://x.example\"\n",
	} {
		if _, err := Parse([]byte(minimalManifest + bad)); err == nil || !strings.Contains(err.Error(), "endpoint") {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

const minimalManifest = `slug = "t"
name = "T"
kind = "remote"
transport = "http"
url = "https://t.example/mcp"
auth = "none"
seeds_tools = false
description = "A test server."
`
