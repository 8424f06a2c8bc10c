// Package config reads the orchestrator's configuration from the environment and an optional .env
// file; a variable set in the environment wins over the file.
package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/sealed"
)

// Defaults.
const (
	DefaultListen  = "127.0.0.1:8080"
	DefaultDataDir = ".data"
)

// Config is what the orchestrator needs to start.
type Config struct {
	Listen      string // GUILDS_LISTEN
	DatabaseURL string // DATABASE_URL; empty means the embedded local cluster under DataDir
	DataDir     string // GUILDS_DATA_DIR
	AdminToken  string // GUILDS_ADMIN_TOKEN: the operator API's bearer token
	LogLevel    string // GUILDS_LOG_LEVEL: debug, info, warn or error
	// SecretKey is GUILDS_SECRET_KEY: the AES-256-GCM key (sealed package) that encrypts stored
	// credentials; empty means connections and stored secrets are unavailable.
	SecretKey string
	// OIDC is single sign-on (GUILDS_OIDC_ISSUER, GUILDS_OIDC_CLIENT_ID, GUILDS_OIDC_CLIENT_SECRET):
	// all three set, or none (off).
	OIDC orchestrator.OIDCConfig
	// Getenv reads any variable with the same precedence (environment, then .env); the
	// integrations registry and the offer policy read through it.
	Getenv func(string) string
}

// Load reads the configuration. envFile is read when it exists ("" skips it); getenv is the
// process environment (os.Getenv in production).
func Load(getenv func(string) string, lookup func(string) (string, bool), envFile string) (Config, error) {
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
	c := Config{
		Listen:      or(get("GUILDS_LISTEN"), DefaultListen),
		DatabaseURL: get("DATABASE_URL"),
		DataDir:     or(get("GUILDS_DATA_DIR"), DefaultDataDir),
		AdminToken:  get("GUILDS_ADMIN_TOKEN"),
		LogLevel:    or(get("GUILDS_LOG_LEVEL"), "info"),
		SecretKey:   get(sealed.KeyVar),
		OIDC: orchestrator.OIDCConfig{Issuer: strings.TrimSpace(get("GUILDS_OIDC_ISSUER")), ClientID: strings.TrimSpace(get("GUILDS_OIDC_CLIENT_ID")),
			ClientSecret: get("GUILDS_OIDC_CLIENT_SECRET")},
		Getenv: get,
	}
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
