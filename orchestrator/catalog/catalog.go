// Package catalog holds what exists for bindings to turn on: the manifests of the remote MCP
// servers, local adapters and GitHub (TOML files embedded from manifests/), the platform seed
// bindings, and which native tool families are bindings.
package catalog

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

//go:embed manifests/*.toml
var manifestFS embed.FS

// PlatformSeed names the native tools the platform binding rows enable, so new agents inherit them.
var PlatformSeed = []string{
	"note_find", "note_get", "note_write", "note_delete",
	"record_search", "record_list", "record_add", "record_update", "record_remove",
	"memory_write",
	"script_create", "script_list", "script_read", "script_run", "script_delete",
	"schedule_create_cron", "schedule_create_window", "schedule_list", "schedule_pause", "schedule_resume", "schedule_delete",
	"tavily_search",
	"secret_store", "secret_request",
	"group_post",
}

// seedFamilies is the family of each platform seed tool, for views of tools this box has not wired.
var seedFamilies = map[string]string{
	"note": orchestrator.FamilyNotes, "record": orchestrator.FamilyRecords, "memory": orchestrator.FamilyMemory,
	"script": orchestrator.FamilyScripts, "schedule": orchestrator.FamilySchedules, "tavily": orchestrator.FamilySearch,
	"secret": orchestrator.FamilySecrets, "group": orchestrator.FamilyGroup,
}

// SeedFamily returns the family of a platform seed tool ("" for any other name).
func SeedFamily(name string) string {
	if !slices.Contains(PlatformSeed, name) {
		return ""
	}
	prefix, _, _ := strings.Cut(name, "_")
	return seedFamilies[prefix]
}

// groups are the Tools view's names for the families; the two secret tools show as Secrets.
var groups = map[string]string{
	orchestrator.FamilyAlways: "Always offered", orchestrator.FamilyBrowser: "Browser", orchestrator.FamilyCode: "Code",
	orchestrator.FamilyScripts: "Scripts", orchestrator.FamilyMemory: "Memory", orchestrator.FamilySchedules: "Schedules",
	orchestrator.FamilySecrets: "Secrets", orchestrator.FamilyNotes: "Notes", orchestrator.FamilyRecords: "Records",
	orchestrator.FamilySearch: "Web search", orchestrator.FamilyGroup: "Group chat",
}

// Group returns the Tools view group of a family ("Other" for an unknown one).
func Group(family string) string {
	if g, ok := groups[family]; ok {
		return g
	}
	return "Other"
}

// bindingFamilies are the native tool families decided by bindings. The others (always, browser,
// code) are never bindings: they follow the run's flags or are always offered.
var bindingFamilies = map[string]bool{
	orchestrator.FamilyNotes: true, orchestrator.FamilyRecords: true, orchestrator.FamilyMemory: true,
	orchestrator.FamilyScripts: true, orchestrator.FamilySchedules: true, orchestrator.FamilySecrets: true,
	orchestrator.FamilySearch: true, orchestrator.FamilyGroup: true,
}

// IsBindingFamily reports whether native tools of family are turned on and off by bindings.
func IsBindingFamily(family string) bool { return bindingFamilies[family] }

// manifest is one TOML file.
type manifest struct {
	Slug        string `toml:"slug"`
	Name        string `toml:"name"`
	Kind        string `toml:"kind"`
	Transport   string `toml:"transport"`
	URL         string `toml:"url"`
	Auth        string `toml:"auth"`
	SeedsTools  bool   `toml:"seeds_tools"`
	Description string `toml:"description"`
	Limitations string `toml:"limitations"`
	SetupHint   string `toml:"setup_hint"`
	Config      struct {
		Fields []struct {
			Name     string `toml:"name"`
			Label    string `toml:"label"`
			Required bool   `toml:"required"`
			Help     string `toml:"help"`
		} `toml:"fields"`
		DefaultOff      []string `toml:"default_off"`
		DefaultOffMatch string   `toml:"default_off_match"`
		MaxCoins        int      `toml:"max_coins"`
		Header          string   `toml:"header"`
		Scheme          string   `toml:"scheme"`
		RejectEmpty     bool     `toml:"reject_empty"`
		RejectOnly      []string `toml:"reject_only"`
	} `toml:"config"`
	Endpoints map[string]string `toml:"endpoints"`
	Tools     []struct {
		Name        string `toml:"name"`
		Description string `toml:"description"`
		InputSchema string `toml:"input_schema"`
		DefaultOff  bool   `toml:"default_off"`
		Requires    string `toml:"requires"`
	} `toml:"tools"`
}

var (
	slugPattern  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}$`)
	fieldPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)
	toolPattern  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	// endpointPattern is the form of an [endpoints] name.
	endpointPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)
	// headerPattern is an HTTP header name (RFC 9110 token), or empty for the default.
	headerPattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{0,100}$")
	// customSlug is the form of an admin-added server's slug.
	customSlug = regexp.MustCompile(`^[a-z][a-z0-9-]{1,39}$`)
)

// CustomRequest is an instance admin's new remote MCP server.
type CustomRequest struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	URL         string `json:"url"`
	Auth        string `json:"auth"`   // none, token or oauth (a browser login with dynamic registration)
	Header      string `json:"header"` // token: the header carrying the key; "" is Authorization
	Scheme      string `json:"scheme"` // token: the word before the key; "" is Bearer on Authorization
	Description string `json:"description"`
}

// Custom checks an admin's new server and returns its catalog row: a remote MCP server over
// http(s) whose tools publish as listed; a token server's login is one field, api_key.
func Custom(r CustomRequest) (orchestrator.MCPServer, error) {
	r.Name, r.Description, r.URL = strings.TrimSpace(r.Name), strings.TrimSpace(r.Description), strings.TrimSpace(r.URL)
	var problems []string
	bad := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	if !customSlug.MatchString(r.Slug) {
		bad("slug %q must match %s", r.Slug, customSlug)
	}
	if r.Name == "" || len(r.Name) > 100 {
		bad("name is required (at most 100 bytes)")
	}
	if len(r.Description) > 4000 {
		bad("description is at most 4000 bytes")
	}
	if err := CheckURL(r.URL); err != nil {
		bad("url: %v", err)
	}
	if !oneOf(r.Auth, orchestrator.AuthNone, orchestrator.AuthToken, orchestrator.AuthOAuth) {
		bad("auth must be none, token or oauth, got %q", r.Auth)
	}
	if !headerPattern.MatchString(r.Header) || strings.ContainsAny(r.Scheme, " \t\r\n") || len(r.Scheme) > 40 {
		bad("header %q must be an HTTP header name and scheme %q one word", r.Header, r.Scheme)
	}
	if r.Auth != orchestrator.AuthToken && (r.Header != "" || r.Scheme != "") {
		bad("header and scheme are for auth token")
	}
	if len(problems) > 0 {
		return orchestrator.MCPServer{}, orchestrator.Errorf(orchestrator.EINVALID, "%s", strings.Join(problems, "; "))
	}
	if r.Description == "" {
		r.Description = r.Name + " (a custom MCP server at " + r.URL + ")"
	}
	s := orchestrator.MCPServer{Slug: r.Slug, Name: r.Name, Kind: orchestrator.ServerRemote, Transport: "http", URL: r.URL, Auth: r.Auth,
		Description: r.Description, Published: true, CopySource: orchestrator.CopyAdmin, Custom: true, Endpoints: orchestrator.Endpoints{},
		Config: orchestrator.ServerConfig{Fields: []orchestrator.CredentialField{}}, Tools: []orchestrator.CatalogTool{}}
	if r.Auth == orchestrator.AuthToken {
		s.Config.Header, s.Config.Scheme = r.Header, r.Scheme
		s.Config.Fields = []orchestrator.CredentialField{{Name: "api_key", Label: r.Name + " API key", Required: true}}
	}
	return s, nil
}

// CheckURL accepts an absolute http or https URL with a host: what an admin may point a server or
// an endpoint at (a self-hosted deployment, a staging account, a loopback fake).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > 2000 {
		return fmt.Errorf("%q is not an http(s) URL with a host", raw)
	}
	return nil
}

// Load reads and checks the embedded manifests, sorted by slug.
func Load() ([]orchestrator.MCPServer, error) {
	sub, err := fs.Sub(manifestFS, "manifests")
	if err != nil {
		return nil, fmt.Errorf("catalog manifests: %w", err)
	}
	return LoadFS(sub)
}

// LoadFS reads every *.toml file of fsys as a manifest and checks it: a bad file is an error
// naming the file and the problem.
func LoadFS(fsys fs.FS) ([]orchestrator.MCPServer, error) {
	names, err := fs.Glob(fsys, "*.toml")
	if err != nil {
		return nil, fmt.Errorf("catalog manifests: %w", err)
	}
	seen := map[string]string{}
	var out []orchestrator.MCPServer
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("catalog manifest %s: %w", name, err)
		}
		s, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("catalog manifest %s: %w", name, err)
		}
		if prev, dup := seen[s.Slug]; dup {
			return nil, fmt.Errorf("catalog manifest %s: slug %q is already used by %s", name, s.Slug, prev)
		}
		seen[s.Slug] = name
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

// Parse decodes one manifest and checks it.
func Parse(data []byte) (orchestrator.MCPServer, error) {
	var m manifest
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&m)
	if err != nil {
		return orchestrator.MCPServer{}, fmt.Errorf("TOML: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return orchestrator.MCPServer{}, fmt.Errorf("unknown keys %s", strings.Join(keys, ", "))
	}
	s := orchestrator.MCPServer{
		Slug: m.Slug, Name: m.Name, Kind: m.Kind, Transport: m.Transport, URL: m.URL, Auth: m.Auth,
		Description: m.Description, Limitations: m.Limitations, SetupHint: m.SetupHint, SeedsTools: m.SeedsTools,
		Published: true, CopySource: orchestrator.CopySeed,
		Config: orchestrator.ServerConfig{DefaultOff: m.Config.DefaultOff, DefaultOffMatch: m.Config.DefaultOffMatch, MaxCoins: m.Config.MaxCoins,
			Header: m.Config.Header, Scheme: m.Config.Scheme, RejectEmpty: m.Config.RejectEmpty, RejectOnly: m.Config.RejectOnly,
			Fields: []orchestrator.CredentialField{}},
		Endpoints: orchestrator.Endpoints{},
		Tools:     []orchestrator.CatalogTool{},
	}
	var problems []string
	bad := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	if !slugPattern.MatchString(s.Slug) {
		bad("slug %q must match %s", s.Slug, slugPattern)
	}
	if strings.TrimSpace(s.Name) == "" || strings.TrimSpace(s.Description) == "" {
		bad("name and description are required")
	}
	if !oneOf(s.Kind, orchestrator.ServerRemote, orchestrator.ServerLocal, orchestrator.ServerGitHub) {
		bad("kind %q must be remote, local or github", s.Kind)
	}
	if s.Transport != "http" {
		bad("transport %q must be http", s.Transport)
	}
	if !oneOf(s.Auth, orchestrator.AuthNone, orchestrator.AuthToken, orchestrator.AuthOAuth) {
		bad("auth %q must be none, token or oauth", s.Auth)
	}
	if u, err := url.Parse(s.URL); err != nil || u.Scheme != "https" || u.Host == "" {
		bad("url %q must be an https URL", s.URL)
	}
	for name, e := range m.Endpoints {
		if u, err := url.Parse(e); !endpointPattern.MatchString(name) || err != nil || u.Scheme != "https" || u.Host == "" {
			bad("endpoint %q = %q: needs a name matching %s and an https URL", name, e, endpointPattern)
		}
		s.Endpoints[name] = e
	}
	if !headerPattern.MatchString(s.Config.Header) || strings.ContainsAny(s.Config.Scheme, " \t\r\n") {
		bad("config.header %q must be an HTTP header name and config.scheme %q one word", s.Config.Header, s.Config.Scheme)
	}
	if (s.Config.Header != "" || s.Config.Scheme != "") && s.Auth != orchestrator.AuthToken {
		bad("config.header and config.scheme are for token servers")
	}
	fields := map[string]bool{}
	for _, f := range m.Config.Fields {
		if !fieldPattern.MatchString(f.Name) || fields[f.Name] || f.Label == "" {
			bad("credential field %q: needs a unique name matching %s and a label", f.Name, fieldPattern)
		}
		fields[f.Name] = true
		s.Config.Fields = append(s.Config.Fields, orchestrator.CredentialField{Name: f.Name, Label: f.Label, Required: f.Required, Help: f.Help})
	}
	if s.Auth == orchestrator.AuthToken && len(fields) == 0 {
		bad("a token server needs at least one [[config.fields]]")
	}
	if s.Auth != orchestrator.AuthToken && len(fields) > 0 {
		bad("only token servers collect credential fields")
	}
	if s.SeedsTools != (len(m.Tools) > 0) {
		bad("seeds_tools must be true exactly when the manifest lists [[tools]] (it lists %d)", len(m.Tools))
	}
	tools := map[string]bool{}
	for _, t := range m.Tools {
		if !toolPattern.MatchString(s.Slug+"_"+t.Name) || tools[t.Name] {
			bad("tool %q: needs a unique name whose namespaced form %s_%s is a valid tool name", t.Name, s.Slug, t.Name)
		}
		tools[t.Name] = true
		if strings.TrimSpace(t.Description) == "" {
			bad("tool %s: description is required", t.Name)
		}
		if t.Requires != "" && !fields[t.Requires] {
			bad("tool %s: requires unknown credential field %q", t.Name, t.Requires)
		}
		schema := json.RawMessage(strings.TrimSpace(t.InputSchema))
		if err := CheckSchema(schema); err != nil {
			bad("tool %s: input_schema: %v", t.Name, err)
		}
		s.Tools = append(s.Tools, orchestrator.CatalogTool{Name: t.Name, Description: t.Description, InputSchema: schema,
			DefaultOff: t.DefaultOff || s.Config.IsDefaultOff(t.Name), Published: true, CopySource: orchestrator.CopySeed, Requires: t.Requires})
	}
	if len(problems) > 0 {
		return orchestrator.MCPServer{}, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return s, nil
}

// CheckSchema checks an input schema: a JSON object with "type": "object" that the registry can
// shape for a model.
func CheckSchema(schema json.RawMessage) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(schema, &top); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if string(top["type"]) != `"object"` {
		return fmt.Errorf(`type must be "object"`)
	}
	if _, err := registry.ShapeSchema(schema); err != nil {
		return err
	}
	return nil
}

func oneOf(v string, set ...string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}
