// Package config reads the orchestrator's configuration from the environment and an optional .env
// file; a variable set in the environment wins over the file.
package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/integrations"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// Defaults.
const (
	DefaultListen  = "127.0.0.1:8080"
	DefaultDataDir = ".data"
)

// Config is what the orchestrator needs to start: every variable it reads, parsed into its type.
// A duration or size left unset is 0, which each part reads as its own default (a sandbox's
// workspace quota excepted: unset is sandbox.DefaultDisk, none is 0).
type Config struct {
	Listen      string // GUILDS_LISTEN
	DatabaseURL string // DATABASE_URL; empty means the embedded local cluster under DataDir
	DataDir     string // GUILDS_DATA_DIR
	AdminToken  string // GUILDS_ADMIN_TOKEN: the operator API's bearer token
	LogLevel    string // GUILDS_LOG_LEVEL: debug, info, warn or error
	// SecretKey is GUILDS_SECRET_KEY: the AES-256-GCM key (sealed package) that encrypts stored
	// credentials; empty means connections and stored secrets are unavailable.
	SecretKey     string
	PublicBaseURL string // PUBLIC_BASE_URL without its trailing slash; "": the address a request came to
	MetricsListen string // GUILDS_METRICS_LISTEN: a second address serving /metrics; "": none
	// OIDC is single sign-on (GUILDS_OIDC_ISSUER, GUILDS_OIDC_CLIENT_ID, GUILDS_OIDC_CLIENT_SECRET):
	// all three set, or none (off).
	OIDC orchestrator.OIDCConfig

	MCPIdle    time.Duration // GUILDS_MCP_IDLE: an MCP session unused this long is closed
	MCPListTTL time.Duration // GUILDS_MCP_LIST_TTL: a run start relists a login's tools older than this
	// MCPCallTimeout is GUILDS_MCP_CALL_TIMEOUT: how long an MCP tool call waits for its answer
	// without a progress notice; MCPCallMax is GUILDS_MCP_CALL_MAX: the longest it runs while its
	// server keeps reporting progress (not under MCPCallTimeout when both are set).
	MCPCallTimeout, MCPCallMax time.Duration
	// MCPSessionIdle is GUILDS_MCP_SESSION_IDLE: a session of the MCP front door (/mcp,
	// /api/runs/{id}/mcp) without a request or an open stream this long ends; a /mcp session
	// closes its run with it.
	MCPSessionIdle time.Duration

	ApprovalWait time.Duration // GUILDS_APPROVAL_WAIT: how long a call of an Ask tool waits for an operator's decision (0: approvals' default, 5m)

	SessionIdle time.Duration // GUILDS_SESSION_IDLE: a sign-in session unused this long ends (0: identity's default, 12h)
	SessionMax  time.Duration // GUILDS_SESSION_MAX: a sign-in session ends this long after it began (0: 7 days)

	Sandbox Sandbox // GUILDS_SANDBOX and GUILDS_SANDBOX_*, GUILDS_CHROMIUM_IDLE, GUILDS_BIN_DIR, GUILDS_TOOLS_DIR

	UploadMax int64 // GUILDS_UPLOAD_MAX: the largest file upload, or archive as sent, to a workspace (0: sandbox.DefaultUploadMax)
	ImportMax int64 // GUILDS_IMPORT_MAX: what one imported archive may unpack to (0: sandbox.DefaultImportMax)

	TavilyKey     string // TAVILY_API_KEY: tavily_search's key
	TavilyBaseURL string // TAVILY_BASE_URL: where Tavily is ("": its API)

	GitHub             orchestrator.GitHubAppEnv // GITHUB_APP_*, GITHUB_API_URL, GITHUB_WEB_URL, GITHUB_CA_FILE
	GoogleClientID     string                    // GMAIL_OAUTH_CLIENT_ID: the box's Google Cloud Web client, for Gmail and Drive
	GoogleClientSecret string                    // GMAIL_OAUTH_CLIENT_SECRET

	// Integrations is which of the integrations' variables are set (not blank).
	Integrations integrations.Set

	// RunIdle closes a run with no call for this long (GUILDS_RUN_IDLE); RunPickup closes a
	// schedule-fired run nobody called within it as missed (GUILDS_RUN_PICKUP).
	RunIdle, RunPickup time.Duration
	// WebhookAllowPrivate lets webhook URLs reach this box and private, link-local and CGNAT
	// ranges (GUILDS_WEBHOOK_ALLOW_PRIVATE=true).
	WebhookAllowPrivate bool
}

// Sandbox is how the agents' sandboxes run.
type Sandbox struct {
	Kind         string         // GUILDS_SANDBOX: bubblewrap, local, or "" for bubblewrap where bwrap exists
	BinDir       string         // GUILDS_BIN_DIR: the helpers; "": the folder holding the binary
	ToolsDir     string         // GUILDS_TOOLS_DIR: the pinned engines
	Network      string         // GUILDS_SANDBOX_NETWORK: user, none, or "" (user)
	AllowNets    []netip.Prefix // GUILDS_SANDBOX_ALLOW_NETS: ranges the user-mode network may reach although private
	Idle         time.Duration  // GUILDS_SANDBOX_IDLE: a bubblewrap sandbox without a call this long stops
	ChromiumIdle time.Duration  // GUILDS_CHROMIUM_IDLE: an agent's Chromium without a browser call this long stops
	Limits       sandbox.Limits // GUILDS_SANDBOX_PIDS, _CPU, _MEMORY, _TMP, _RUN and _DISK
	UIDBase      uint32         // GUILDS_SANDBOX_UID_BASE: the first host id of the agents' range
	Bind         []string       // GUILDS_SANDBOX_BIND: host folders bound read-only into every sandbox (toolchains)
}

// Load reads the configuration. envFile is read when it exists ("" skips it); lookup is the
// process environment (os.LookupEnv in production), which wins over the file. A value that does
// not parse is an error naming its variable.
func Load(lookup func(string) (string, bool), envFile string) (Config, error) {
	file := map[string]string{}
	if envFile != "" {
		data, err := os.ReadFile(envFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return Config{}, fmt.Errorf("read %s: %w", envFile, err)
		default:
			if file, err = ParseDotenv(data); err != nil {
				return Config{}, fmt.Errorf("%s: %w", envFile, err)
			}
		}
	}
	get := func(k string) string {
		if v, ok := lookup(k); ok {
			return v
		}
		return file[k]
	}
	trimmed := func(k string) string { return strings.TrimSpace(get(k)) }
	c := Config{
		Listen:        or(get("GUILDS_LISTEN"), DefaultListen),
		DatabaseURL:   get("DATABASE_URL"),
		DataDir:       or(get("GUILDS_DATA_DIR"), DefaultDataDir),
		AdminToken:    get("GUILDS_ADMIN_TOKEN"),
		LogLevel:      or(get("GUILDS_LOG_LEVEL"), "info"),
		SecretKey:     get(sealed.KeyVar),
		PublicBaseURL: strings.TrimRight(trimmed("PUBLIC_BASE_URL"), "/"),
		MetricsListen: get("GUILDS_METRICS_LISTEN"),
		OIDC: orchestrator.OIDCConfig{Issuer: trimmed("GUILDS_OIDC_ISSUER"), ClientID: trimmed("GUILDS_OIDC_CLIENT_ID"),
			ClientSecret: get("GUILDS_OIDC_CLIENT_SECRET")},
		TavilyKey:     trimmed("TAVILY_API_KEY"),
		TavilyBaseURL: trimmed("TAVILY_BASE_URL"),
		GitHub: orchestrator.GitHubAppEnv{AppID: get("GITHUB_APP_ID"), Slug: get("GITHUB_APP_SLUG"), PrivateKey: get("GITHUB_APP_PRIVATE_KEY"),
			ClientID: get("GITHUB_APP_CLIENT_ID"), ClientSecret: get("GITHUB_APP_CLIENT_SECRET"),
			APIURL: get("GITHUB_API_URL"), WebURL: get("GITHUB_WEB_URL"), CAFile: get("GITHUB_CA_FILE")},
		GoogleClientID:     trimmed("GMAIL_OAUTH_CLIENT_ID"),
		GoogleClientSecret: trimmed("GMAIL_OAUTH_CLIENT_SECRET"),
	}
	values := map[string]string{}
	for _, v := range integrations.Variables() {
		values[v] = get(v)
	}
	c.Integrations = integrations.SetOf(values)
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("GUILDS_LOG_LEVEL must be debug, info, warn or error, got %q", c.LogLevel)
	}
	if c.SecretKey != "" {
		if _, err := sealed.ParseKey(c.SecretKey); err != nil {
			return c, err
		}
	}
	if err := checkOIDC(c.OIDC); err != nil {
		return c, err
	}
	var err error
	if c.MCPIdle, err = envDuration(get, "GUILDS_MCP_IDLE", 0); err != nil {
		return c, err
	}
	if c.MCPListTTL, err = envDuration(get, "GUILDS_MCP_LIST_TTL", 0); err != nil {
		return c, err
	}
	if c.ApprovalWait, err = envDuration(get, "GUILDS_APPROVAL_WAIT", 0); err != nil {
		return c, err
	}
	if c.MCPSessionIdle, err = envDuration(get, "GUILDS_MCP_SESSION_IDLE", 0); err != nil {
		return c, err
	}
	if c.SessionIdle, err = envDuration(get, "GUILDS_SESSION_IDLE", 0); err != nil {
		return c, err
	}
	if c.SessionMax, err = envDuration(get, "GUILDS_SESSION_MAX", 0); err != nil {
		return c, err
	}
	if c.MCPCallTimeout, err = envDuration(get, "GUILDS_MCP_CALL_TIMEOUT", 0); err != nil {
		return c, err
	}
	if c.MCPCallMax, err = envDuration(get, "GUILDS_MCP_CALL_MAX", 0); err != nil {
		return c, err
	}
	if c.MCPCallMax != 0 && c.MCPCallMax < c.MCPCallTimeout {
		return c, fmt.Errorf("GUILDS_MCP_CALL_MAX (%s) is shorter than GUILDS_MCP_CALL_TIMEOUT (%s): the longest a call runs while its server reports progress cannot be under its wait without progress", c.MCPCallMax, c.MCPCallTimeout)
	}
	if c.Sandbox, err = loadSandbox(get); err != nil {
		return c, err
	}
	if c.RunIdle, err = envDuration(get, "GUILDS_RUN_IDLE", 0); err != nil {
		return c, err
	}
	if c.RunPickup, err = envDuration(get, "GUILDS_RUN_PICKUP", 0); err != nil {
		return c, err
	}
	switch v := trimmed("GUILDS_WEBHOOK_ALLOW_PRIVATE"); v {
	case "", "false", "0":
	case "true", "1":
		c.WebhookAllowPrivate = true
	default:
		return c, fmt.Errorf("GUILDS_WEBHOOK_ALLOW_PRIVATE=%q: want true or false", v)
	}
	for name, dst := range map[string]*int64{"GUILDS_UPLOAD_MAX": &c.UploadMax, "GUILDS_IMPORT_MAX": &c.ImportMax} {
		if v := get(name); v != "" {
			n, err := sandbox.ParseBytes(v)
			if err != nil || n < 1 {
				return c, fmt.Errorf("%s=%q: want a size such as 100MiB or 2GiB", name, v)
			}
			*dst = n
		}
	}
	return c, nil
}

// checkOIDC checks single sign-on's variables: all three or none, and an issuer that is an https
// URL (http only on loopback, for a provider on this machine).
func checkOIDC(o orchestrator.OIDCConfig) error {
	set := map[string]bool{"GUILDS_OIDC_ISSUER": o.Issuer != "", "GUILDS_OIDC_CLIENT_ID": o.ClientID != "", "GUILDS_OIDC_CLIENT_SECRET": o.ClientSecret != ""}
	var missing []string
	for _, v := range []string{"GUILDS_OIDC_ISSUER", "GUILDS_OIDC_CLIENT_ID", "GUILDS_OIDC_CLIENT_SECRET"} {
		if !set[v] {
			missing = append(missing, v)
		}
	}
	switch len(missing) {
	case 3:
		return nil
	case 0:
	default:
		return fmt.Errorf("single sign-on needs GUILDS_OIDC_ISSUER, GUILDS_OIDC_CLIENT_ID and GUILDS_OIDC_CLIENT_SECRET together: %s unset (unset all three to turn it off)", strings.Join(missing, " and "))
	}
	u, err := url.Parse(o.Issuer)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("GUILDS_OIDC_ISSUER=%q: want the provider's issuer URL, such as https://accounts.example.com", o.Issuer)
	}
	if ip := net.ParseIP(u.Hostname()); u.Scheme == "http" && u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("GUILDS_OIDC_ISSUER=%q: an issuer must be https (http only for a provider on this machine's loopback)", o.Issuer)
	}
	return nil
}

// envDuration reads a duration variable (a Go duration such as 90s or 10m), def when unset.
func envDuration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 90s or 10m", name, v)
	}
	return d, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// ParseDotenv parses a .env file: KEY=VALUE lines, blank lines and # comments, an optional
// "export " prefix, values optionally in single quotes (taken literally) or double quotes (with \n,
// \t, \", \\ escapes), and a # after a space starting a comment in an unquoted value (other characters, quotes included, are taken literally). A malformed
// line is an error naming its number.
func ParseDotenv(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || !validKey(key) {
			return nil, fmt.Errorf("line %d: want KEY=VALUE with KEY of letters, digits and _ (not starting with a digit)", n)
		}
		v, err := parseValue(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", n, key, err)
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return out, nil
}

// validKey reports whether k is a shell-style variable name.
func validKey(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// parseValue unquotes one value.
func parseValue(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	switch v[0] {
	case '\'':
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", errors.New("unterminated single quote")
		}
		if rest := strings.TrimSpace(v[end+2:]); rest != "" && rest[0] != '#' {
			return "", fmt.Errorf("unexpected text after the closing quote: %q", rest)
		}
		return v[1 : end+1], nil
	case '"':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '"':
				if rest := strings.TrimSpace(v[i+1:]); rest != "" && rest[0] != '#' {
					return "", fmt.Errorf("unexpected text after the closing quote: %q", rest)
				}
				return b.String(), nil
			case c == '\\' && i+1 < len(v):
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(v[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", errors.New("unterminated double quote")
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, nil
}
