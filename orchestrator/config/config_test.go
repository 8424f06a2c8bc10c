package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/sandbox"
)

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"plain", "A=1\nB=two words\n", map[string]string{"A": "1", "B": "two words"}, ""},
		{"comments and blanks", "# c\n\nA=1 # note\n", map[string]string{"A": "1"}, ""},
		{"export", "export A=x", map[string]string{"A": "x"}, ""},
		{"single quotes literal", `A='a\nb # c'`, map[string]string{"A": `a\nb # c`}, ""},
		{"double quotes escapes", `A="line1\nline2 \"q\""`, map[string]string{"A": "line1\nline2 \"q\""}, ""},
		{"pem with escapes", `KEY="-----BEGIN-----\nabc\n-----END-----"`, map[string]string{"KEY": "-----BEGIN-----\nabc\n-----END-----"}, ""},
		{"empty value", "A=", map[string]string{"A": ""}, ""},
		{"bom", "\ufeffA=1", map[string]string{"A": "1"}, ""},
		{"no equals", "JUSTAWORD", nil, "line 1"},
		{"bad key", "1A=x", nil, "line 1"},
		{"unterminated", "A=1\nB=\"open", nil, "line 2 (B): unterminated double quote"},
		{"trailing text", "A='x' y", nil, "unexpected text"},
		{"quote inside unquoted", `A=it's`, map[string]string{"A": "it's"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDotenv([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestLoadEnvironmentWins checks defaults, the .env file, and the environment's precedence.
func TestLoadEnvironmentWins(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, ".env")
	if err := os.WriteFile(envFile, []byte("GUILDS_LISTEN=127.0.0.1:9999\nTAVILY_API_KEY=from-file\nGUILDS_ADMIN_TOKEN=file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GUILDS_ADMIN_TOKEN": "env-token", "DATABASE_URL": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := Load(lookup, envFile)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9999" || c.AdminToken != "env-token" || c.DataDir != DefaultDataDir || c.DatabaseURL != "" {
		t.Fatalf("config %+v", c)
	}
	if c.TavilyKey != "from-file" || !c.Integrations["TAVILY_API_KEY"] {
		t.Fatalf("the typed fields do not see .env values: %+v", c)
	}
	c, err = Load(func(string) (string, bool) { return "", false }, filepath.Join(dir, "missing"))
	if err != nil || c.Listen != DefaultListen {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	if err := os.WriteFile(envFile, []byte("oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(lookup, envFile); err == nil || !strings.Contains(err.Error(), ".env: line 1") {
		t.Fatalf("bad .env: %v", err)
	}
}

// FuzzParseDotenv: any input parses or fails cleanly, and what parses holds only valid keys.
func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{"A=1", "export B='x'", `C="a\nb"`, "# c\nD=e # f", "\ufeffE=", `F="unterminated`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseDotenv([]byte(in))
		if err != nil {
			return
		}
		for k := range m {
			if !validKey(k) {
				t.Fatalf("invalid key %q accepted", k)
			}
		}
	})
}

// TestLoadSecretKey: a well-formed GUILDS_SECRET_KEY is kept, a malformed one stops Load with a
// message that says how to make one and never echoes the value.
func TestLoadSecretKey(t *testing.T) {
	tests := []struct {
		name, key string
		ok        bool
	}{
		{"unset", "", true},
		{"base64", "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=", true},
		{"too short", "tooshortvalue", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"GUILDS_SECRET_KEY": tt.key}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			c, err := Load(lookup, "")
			if tt.ok != (err == nil) {
				t.Fatalf("err=%v, want ok=%v", err, tt.ok)
			}
			if err != nil && (strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), "GUILDS_SECRET_KEY")) {
				t.Fatalf("error %q", err)
			}
			if err == nil && c.SecretKey != tt.key {
				t.Fatalf("SecretKey %q", c.SecretKey)
			}
		})
	}
}

// TestLoadOIDC: single sign-on's three variables are read together into Config.OIDC; one or two of
// them, or an issuer that is not an https URL (http only on loopback), stop Load naming what to
// fix and never echoing the client secret.
func TestLoadOIDC(t *testing.T) {
	const secret = "oidc-client-secret-value"
	tests := []struct {
		name                 string
		issuer, client, scrt string
		err                  string
	}{
		{"off", "", "", "", ""},
		{"https", "https://accounts.example.com/realms/box", "guilds", secret, ""},
		{"loopback http", "http://127.0.0.1:9000", "guilds", secret, ""},
		{"localhost http", "http://localhost:9000", "guilds", secret, ""},
		{"no secret", "https://accounts.example.com", "guilds", "", "GUILDS_OIDC_CLIENT_SECRET unset"},
		{"issuer only", "https://accounts.example.com", "", "", "GUILDS_OIDC_CLIENT_ID and GUILDS_OIDC_CLIENT_SECRET unset"},
		{"no issuer", "", "guilds", secret, "GUILDS_OIDC_ISSUER unset"},
		{"plain http", "http://accounts.example.com", "guilds", secret, "must be https"},
		{"not a URL", "accounts.example.com", "guilds", secret, "want the provider's issuer URL"},
		{"query", "https://accounts.example.com/?x=1", "guilds", secret, "want the provider's issuer URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"GUILDS_OIDC_ISSUER": tt.issuer, "GUILDS_OIDC_CLIENT_ID": tt.client, "GUILDS_OIDC_CLIENT_SECRET": tt.scrt}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			c, err := Load(lookup, "")
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.OIDC.Issuer != tt.issuer || c.OIDC.ClientID != tt.client || c.OIDC.ClientSecret != tt.scrt || c.OIDC.Enabled() != (tt.issuer != "") {
					t.Fatalf("OIDC %+v", c.OIDC)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), secret) {
				t.Fatalf("err = %v, want it to name %q and never the secret", err, tt.err)
			}
		})
	}
}

// TestEnvDuration: the MCP durations take Go durations, default when unset, and refuse the rest.
func TestEnvDuration(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		bad   bool
	}{
		{"", 10 * time.Minute, false},
		{"90s", 90 * time.Second, false},
		{"2h", 2 * time.Hour, false},
		{"ten minutes", 0, true},
		{"-1m", 0, true},
		{"0s", 0, true},
	} {
		got, err := envDuration(func(string) string { return tc.value }, "GUILDS_MCP_IDLE", 10*time.Minute)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%q: got %v, %v", tc.value, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "GUILDS_MCP_IDLE") {
			t.Errorf("%q: the error does not name the variable: %v", tc.value, err)
		}
	}
}

// TestLoadTyped: every variable the orchestrator reads arrives parsed (durations, sizes, counts,
// the integrations' set), unset ones as their defaults, and a value that does not parse stops
// Load naming its variable.
func TestLoadTyped(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) (Config, error) {
		return Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, "")
	}
	c, err := load(map[string]string{"GUILDS_MCP_IDLE": "90s", "GUILDS_MCP_LIST_TTL": "2m", "GUILDS_MCP_CALL_TIMEOUT": "2m", "GUILDS_MCP_CALL_MAX": "30m", "GUILDS_CHROMIUM_IDLE": "5m",
		"GUILDS_SANDBOX_IDLE": "1h", "GUILDS_SANDBOX_PIDS": "300", "GUILDS_SANDBOX_CPU": "50", "GUILDS_SANDBOX_MEMORY": "2GiB",
		"GUILDS_SANDBOX_TMP": "8MiB", "GUILDS_SANDBOX_RUN": "2M", "GUILDS_SANDBOX_DISK": "none", "GUILDS_SANDBOX_UID_BASE": "2000000",
		"GUILDS_SANDBOX_NETWORK": "none", "GUILDS_SANDBOX": "local", "PUBLIC_BASE_URL": " https://guilds.example/ ", "GUILDS_SANDBOX_ALLOW_NETS": "10.20.0.0/16, fd00:1::/64",
		"GUILDS_SANDBOX_BIND": "/usr/local/go, /opt/zig/", "GUILDS_UPLOAD_MAX": "200MiB", "GUILDS_IMPORT_MAX": "2GiB",
		"GMAIL_OAUTH_CLIENT_ID": "id", "GMAIL_OAUTH_CLIENT_SECRET": " ", "GITHUB_APP_ID": "12", "GUILDS_METRICS_LISTEN": "127.0.0.1:9090"})
	if err != nil {
		t.Fatal(err)
	}
	want := Sandbox{Kind: "local", Network: "none", Idle: time.Hour, ChromiumIdle: 5 * time.Minute, UIDBase: 2000000,
		AllowNets: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("fd00:1::/64")},
		Bind:      []string{"/usr/local/go", "/opt/zig"},
		Limits:    sandbox.Limits{Pids: 300, CPUWeight: 50, Memory: 2 << 30, Tmp: 8 << 20, Run: 2 << 20, Disk: 0}}
	if !reflect.DeepEqual(c.Sandbox, want) || c.MCPIdle != 90*time.Second || c.MCPListTTL != 2*time.Minute || c.PublicBaseURL != "https://guilds.example" ||
		c.MCPCallTimeout != 2*time.Minute || c.MCPCallMax != 30*time.Minute || c.UploadMax != 200<<20 || c.ImportMax != 2<<30 ||
		c.GoogleClientID != "id" || c.GitHub.AppID != "12" || c.MetricsListen != "127.0.0.1:9090" {
		t.Fatalf("config %+v", c)
	}
	if !c.Integrations["GMAIL_OAUTH_CLIENT_ID"] || c.Integrations["GMAIL_OAUTH_CLIENT_SECRET"] || !c.Integrations["GITHUB_APP_ID"] {
		t.Fatalf("integrations set %v: a blank variable is unset, the others set", c.Integrations)
	}
	if c, err := load(nil); err != nil || c.Sandbox.Limits != (sandbox.Limits{Disk: sandbox.DefaultDisk}) || c.MCPIdle != 0 || c.Sandbox.Idle != 0 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	// GUILDS_MCP_CALL_MAX under GUILDS_MCP_CALL_TIMEOUT is a limit that could never apply.
	if _, err := load(map[string]string{"GUILDS_MCP_CALL_TIMEOUT": "2m", "GUILDS_MCP_CALL_MAX": "1m"}); err == nil ||
		!strings.Contains(err.Error(), "GUILDS_MCP_CALL_MAX (1m0s) is shorter than GUILDS_MCP_CALL_TIMEOUT (2m0s)") {
		t.Errorf("inverted call limits: %v", err)
	}
	for name, value := range map[string]string{"GUILDS_MCP_LIST_TTL": "soon", "GUILDS_MCP_CALL_TIMEOUT": "forever", "GUILDS_MCP_CALL_MAX": "0s", "GUILDS_CHROMIUM_IDLE": "-1s", "GUILDS_SANDBOX_PIDS": "3",
		"GUILDS_SANDBOX_MEMORY": "lots", "GUILDS_SANDBOX_DISK": "1MiB", "GUILDS_SANDBOX_NETWORK": "wifi", "GUILDS_SANDBOX_UID_BASE": "7",
		"GUILDS_SANDBOX_ALLOW_NETS": "10.20.0.1/16", "GUILDS_SANDBOX_BIND": "go/bin", "GUILDS_UPLOAD_MAX": "big", "GUILDS_IMPORT_MAX": "0"} {
		if _, err := load(map[string]string{name: value}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming it", name, value, err)
		}
	}
}

// TestLoadRunEndsAndWebhooks: GUILDS_RUN_IDLE and GUILDS_RUN_PICKUP are durations (unset: 0, the
// runs' own defaults of 24h and 1h), GUILDS_WEBHOOK_ALLOW_PRIVATE is true or false; anything else
// stops Load naming the variable and the form it wants.
func TestLoadRunEndsAndWebhooks(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		idle, pickup time.Duration
		allowPrivate bool
		err          string
	}{
		{"unset: each part's default", map[string]string{}, 0, 0, false, ""},
		{"set", map[string]string{"GUILDS_RUN_IDLE": "90m", "GUILDS_RUN_PICKUP": "45s", "GUILDS_WEBHOOK_ALLOW_PRIVATE": "true"}, 90 * time.Minute, 45 * time.Second, true, ""},
		{"false", map[string]string{"GUILDS_WEBHOOK_ALLOW_PRIVATE": "false"}, 0, 0, false, ""},
		{"idle not a duration", map[string]string{"GUILDS_RUN_IDLE": "a day"}, 0, 0, false, `GUILDS_RUN_IDLE="a day": want a positive duration`},
		{"pickup negative", map[string]string{"GUILDS_RUN_PICKUP": "-5m"}, 0, 0, false, `GUILDS_RUN_PICKUP="-5m": want a positive duration`},
		{"allow yes", map[string]string{"GUILDS_WEBHOOK_ALLOW_PRIVATE": "yes"}, 0, 0, false, `GUILDS_WEBHOOK_ALLOW_PRIVATE="yes": want true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			c, err := Load(lookup, "")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.RunIdle != tt.idle || c.RunPickup != tt.pickup || c.WebhookAllowPrivate != tt.allowPrivate {
				t.Fatalf("idle %v pickup %v allow %v, want %v %v %v", c.RunIdle, c.RunPickup, c.WebhookAllowPrivate, tt.idle, tt.pickup, tt.allowPrivate)
			}
		})
	}
}
