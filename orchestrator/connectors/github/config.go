// Package github is the box's GitHub App: its setup from the environment, the App JWT, the REST
// calls of the install and authorize flows, and the installation tokens a coding run's sandbox
// gets for exactly its guild's repositories.
package github

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/guildsai/guilds/orchestrator"
)

// The environment variables of the github-app integration, and the ones that point it elsewhere.
const (
	EnvAppID        = "GITHUB_APP_ID"
	EnvSlug         = "GITHUB_APP_SLUG"
	EnvPrivateKey   = "GITHUB_APP_PRIVATE_KEY"
	EnvClientID     = "GITHUB_APP_CLIENT_ID"
	EnvClientSecret = "GITHUB_APP_CLIENT_SECRET"
	EnvAPIURL       = "GITHUB_API_URL"
	EnvWebURL       = "GITHUB_WEB_URL"
	EnvCAFile       = "GITHUB_CA_FILE"
)

// Required are the variables the App needs, in the spec's order.
var Required = []string{EnvAppID, EnvSlug, EnvPrivateKey, EnvClientID, EnvClientSecret}

// Setup states of the access views' oauth_setup_state for GitHub.
const (
	SetupConfigured  = "configured"
	SetupUnsupported = "unsupported"
)

// Config is the box's GitHub App as the environment gives it. The private key and the client
// secret never leave the orchestrator.
type Config struct {
	AppID        string
	Slug         string
	ClientID     string
	ClientSecret string
	Key          *rsa.PrivateKey // nil when unset or unparsable
	APIURL       string          // without a trailing slash; default https://api.github.com
	WebURL       string          // without a trailing slash; default https://github.com
	CAFile       string          // a PEM bundle the orchestrator and the sandbox's git trust for WebURL and APIURL
	Missing      []string        // required variables that are unset
	Problems     []string        // what is wrong with the ones that are set (a key that does not parse)
	http         *http.Client
}

// FromEnv reads the App's configuration from its variables' values. A key that does not parse, a
// bad URL or an unreadable CA file is a problem (SetupState unsupported), never a panic or a value
// in the message.
func FromEnv(e orchestrator.GitHubAppEnv) Config {
	c := Config{
		AppID: strings.TrimSpace(e.AppID), Slug: strings.TrimSpace(e.Slug),
		ClientID: strings.TrimSpace(e.ClientID), ClientSecret: strings.TrimSpace(e.ClientSecret),
		APIURL: strings.TrimRight(strings.TrimSpace(e.APIURL), "/"), WebURL: strings.TrimRight(strings.TrimSpace(e.WebURL), "/"),
		CAFile: strings.TrimSpace(e.CAFile),
	}
	pem := e.PrivateKey
	for name, v := range map[string]string{EnvAppID: c.AppID, EnvSlug: c.Slug, EnvPrivateKey: strings.TrimSpace(pem), EnvClientID: c.ClientID, EnvClientSecret: c.ClientSecret} {
		if v == "" {
			c.Missing = append(c.Missing, name)
		}
	}
	c.Missing = ordered(c.Missing)
	if c.AppID != "" {
		if n, err := strconv.ParseInt(c.AppID, 10, 64); err != nil || n <= 0 {
			c.Problems = append(c.Problems, EnvAppID+" must be the App's numeric id (its settings page shows it as App ID)")
		}
	}
	if strings.TrimSpace(pem) != "" {
		key, err := ParseKey(pem)
		if err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("%s does not parse: %v; paste the .pem file GitHub generated, with real newlines or \\n escapes", EnvPrivateKey, err))
		}
		c.Key = key
	}
	if c.APIURL == "" {
		c.APIURL = "https://api.github.com"
	}
	if c.WebURL == "" {
		c.WebURL = "https://github.com"
	}
	for _, nv := range [][2]string{{EnvAPIURL, c.APIURL}, {EnvWebURL, c.WebURL}} {
		name, v := nv[0], nv[1]
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/" && name == EnvWebURL) {
			c.Problems = append(c.Problems, fmt.Sprintf("%s must be an http(s) URL such as https://github.example.com, got %q", name, v))
		}
	}
	client, err := httpClient(c.CAFile)
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
	}
	c.http = client
	return c
}

// ordered sorts names into the order of Required.
func ordered(names []string) []string {
	var out []string
	for _, r := range Required {
		for _, n := range names {
			if n == r {
				out = append(out, r)
			}
		}
	}
	return out
}

// ParseKey reads a PEM RSA private key (PKCS #1 or #8), with real newlines or \n escapes.
func ParseKey(pem string) (*rsa.PrivateKey, error) {
	pem = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(pem, `\n`, "\n"), "\r\n", "\n"))
	pem = strings.Trim(pem, `"'`)
	key, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(pem))
	if err != nil {
		return nil, errors.New("not a PEM RSA private key")
	}
	return key, nil
}

// httpClient trusts the system roots and, when caFile is set, its certificates too.
func httpClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return &http.Client{Timeout: 30 * time.Second, Transport: tr}, fmt.Errorf("%s: %v", EnvCAFile, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return &http.Client{Timeout: 30 * time.Second, Transport: tr}, fmt.Errorf("%s (%s) holds no PEM certificate", EnvCAFile, caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}, nil
}

// SetupState is oauth_setup_state for GitHub: configured when every variable is set and usable,
// unsupported otherwise.
func (c Config) SetupState() string {
	if len(c.Missing) == 0 && len(c.Problems) == 0 {
		return SetupConfigured
	}
	return SetupUnsupported
}

// Why says what the box lacks for the App ("" when it is configured): the missing variables and
// the problems of the set ones.
func (c Config) Why() string {
	var parts []string
	if len(c.Missing) > 0 {
		parts = append(parts, "set "+strings.Join(c.Missing, ", ")+" (the box's GitHub App) in the environment or .env and restart")
	}
	parts = append(parts, c.Problems...)
	return strings.Join(parts, "; ")
}

// Ready is nil when the App can be used, else EINVALID saying setup_state unsupported and what to set.
func (c Config) Ready() error {
	if c.SetupState() == SetupConfigured {
		return nil
	}
	missing := c.Missing
	if missing == nil {
		missing = []string{} // a set but unusable variable: named in the message, none missing
	}
	return &orchestrator.Error{Code: orchestrator.EINVALID,
		Message: fmt.Sprintf("GitHub is not set up on this box (setup_state: unsupported): %s; nothing was written", c.Why()),
		Fields:  map[string]any{"setup_state": SetupUnsupported, "missing": missing}}
}

// GitHost is the git host of WebURL with its port, as git's credential helper sees it.
func (c Config) GitHost() string {
	u, err := url.Parse(c.WebURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// HTTP is the client for GitHub: the system roots plus GITHUB_CA_FILE.
func (c Config) HTTP() *http.Client {
	if c.http == nil {
		c.http, _ = httpClient(c.CAFile)
	}
	return c.http
}

// AppJWT signs the App's token: RS256, issued 60 s in the past (GitHub's clock drift), valid 9 minutes.
func (c Config) AppJWT(now time.Time) (string, error) {
	if c.Key == nil {
		return "", c.Ready()
	}
	claims := jwt.RegisteredClaims{
		Issuer:    c.AppID,
		IssuedAt:  jwt.NewNumericDate(now.Add(-60 * time.Second)),
		ExpiresAt: jwt.NewNumericDate(now.Add(9 * time.Minute)),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(c.Key)
	if err != nil {
		return "", fmt.Errorf("sign the GitHub App token: %w", err)
	}
	return s, nil
}
