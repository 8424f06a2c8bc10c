package mcp

import (
	"context"
	"net/http"
	"strings"
)

// HeaderFunc returns the headers that carry a connection's credentials on one request; the
// returned header is only read, so a func may hand out the same one every time.
type HeaderFunc func(ctx context.Context) (http.Header, error)

// TokenHeader returns the HeaderFunc of a token login: header name (default Authorization) and
// scheme (default Bearer on the Authorization header, none on any other header) before the key.
func TokenHeader(name, scheme, key string) HeaderFunc {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "Authorization"
	}
	scheme = strings.TrimSpace(scheme)
	if scheme == "" && strings.EqualFold(name, "Authorization") {
		scheme = "Bearer"
	}
	value := key
	if scheme != "" {
		value = scheme + " " + key
	}
	h := http.Header{}
	h.Set(name, value)
	return func(context.Context) (http.Header, error) { return h, nil }
}

// secretsOf lists the values in h a log line or an error text must never show: each whole value
// and, for "<scheme> <token>" values, the token alone.
func secretsOf(h http.Header) []string {
	var out []string
	for _, vs := range h {
		for _, v := range vs {
			out = appendSecret(out, v)
			if _, tok, ok := strings.Cut(v, " "); ok {
				out = appendSecret(out, strings.TrimSpace(tok))
			}
		}
	}
	return out
}

// appendSecret adds s to list unless it is too short to be a credential (scrubbing it would
// mangle ordinary text) or already there.
func appendSecret(list []string, s string) []string {
	if len(s) < minSecretLen {
		return list
	}
	for _, have := range list {
		if have == s {
			return list
		}
	}
	return append(list, s)
}

// minSecretLen is the shortest value treated as a secret when scrubbing text.
const minSecretLen = 4
