// Package adapters is the frame of the local API adapters: the Adapter contract, the login it
// runs with, HTTP with the spec's limits, provider errors as one line, and compact TSV results.
package adapters

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
)

// Adapter is one local adapter: a catalog slug, its Connect check and its tools.
type Adapter interface {
	// Slug is the catalog slug the adapter serves (coingecko, qonto, ...).
	Slug() string
	// Verify asks the provider whether the login works (what it learns is the Verification's
	// AccountHint); a rejected login is an *Error of KindRejected, a provider that is down one of
	// KindDown.
	Verify(ctx context.Context, l Login) (connections.Verification, error)
	// Call runs one curated tool (its bare name, e.g. "search") with arguments already checked
	// against the listed schema, and returns the compact result; a failure is an *Error whose
	// text is one line fit for the model.
	Call(ctx context.Context, l Login, tool string, args map[string]any) (string, error)
}

// Login is what an adapter call runs with: the stored credentials, the catalog row's URLs and the
// injected parts. Its credentials never appear in a log line or an error text.
type Login struct {
	Credentials map[string]string  // the token form's fields: api_key, bearer_token, login and secret_key, ...
	URL         string             // the catalog row's url (the admin's when set)
	Endpoints   map[string]string  // the catalog row's named endpoints (the admin's when set)
	Client      *http.Client       // nil is a client of the frame's own; its timeout is capped at Timeout
	Now         func() time.Time   // nil is time.Now
	Coins       []string           // Pinned prices: the coin ids Verify checks are quoted
	Files       FileReader         // Qonto upload_invoice: the run's sandbox file API
	Bearer      connections.Bearer // an OAuth login's access token (Gmail), renewed by the orchestrator; nil: read credentials
}

// FileReader reads a file of the agent's workspace through the sandbox file API (a path under
// /home/agent by the workspace file rules, size checked by the implementation).
type FileReader interface {
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// NewLogin is the Login of a catalog row (its url and endpoints, the admin's when set) and a
// connection's stored credentials, with the injected client and clock (nil for the defaults).
func NewLogin(srv orchestrator.MCPServer, creds map[string]string, client *http.Client, now func() time.Time) Login {
	return Login{Credentials: creds, URL: srv.URL, Endpoints: srv.Endpoints, Client: client, Now: now}
}

// Credential returns the named credential, trimmed.
func (l Login) Credential(name string) string { return strings.TrimSpace(l.Credentials[name]) }

// Endpoint returns the named endpoint of the catalog row, or an error naming it when unset.
func (l Login) Endpoint(provider, name string) (string, error) {
	u := strings.TrimSpace(l.Endpoints[name])
	if u == "" {
		return "", &Error{Kind: KindInvalid, Provider: provider, Msg: fmt.Sprintf("the catalog row has no %q endpoint; an instance admin sets it under Connector catalog", name)}
	}
	return strings.TrimRight(u, "/"), nil
}

// now returns the login's clock.
func (l Login) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Clock returns the login's clock reading.
func (l Login) Clock() time.Time { return l.now() }

// secrets lists the credential values an error text must never show.
func (l Login) secrets() []string {
	var out []string
	for _, v := range l.Credentials {
		if v = strings.TrimSpace(v); len(v) >= 4 {
			out = append(out, v)
		}
	}
	return out
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Adapter{}
)

// Register adds an adapter to the registry; a duplicate or empty slug panics, as it is a
// programming error caught by any test.
func Register(a Adapter) {
	registryMu.Lock()
	defer registryMu.Unlock()
	s := a.Slug()
	if s == "" {
		panic("adapters: Register with an empty slug")
	}
	if _, dup := registry[s]; dup {
		panic("adapters: " + s + " registered twice")
	}
	registry[s] = a
}

// All lists the registered adapters sorted by slug (the ones whose packages the binary links).
func All() []Adapter {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]Adapter, 0, len(registry))
	for _, a := range registry {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Adapter) int { return strings.Compare(a.Slug(), b.Slug()) })
	return out
}

// Lookup returns the registered adapter of a slug.
func Lookup(slug string) (Adapter, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	a, ok := registry[slug]
	return a, ok
}

// UnknownTool is the error of a tool name an adapter does not serve.
func UnknownTool(provider, tool string) error {
	return &Error{Kind: KindInvalid, Provider: provider, Msg: fmt.Sprintf("no tool %q", tool)}
}
