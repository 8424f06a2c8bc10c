package github_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/github"
)

// FuzzCheckExtra: an accepted extra guild URL is https with a host and no credentials, and its
// folder name stays one path element of the repos folder.
func FuzzCheckExtra(f *testing.F) {
	for _, s := range [][2]string{{"https://github.com/acme/api.git", ""}, {"https://github.com/acme/api/", "web"}, {"https://x@github.com/a/b", ""},
		{"http://github.com/a/b", ""}, {"https://github.com/a/..", ""}, {"https://h/", ""}, {"https://github.com/a/b", "../etc"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, raw, name string) {
		n, u, err := github.CheckExtra(github.Pick{URL: raw, Name: name})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		p, perr := url.Parse(u)
		if perr != nil || p.Scheme != "https" || p.Host == "" || p.User != nil {
			t.Fatalf("accepted %q", u)
		}
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") || len(n) > 100 {
			t.Fatalf("accepted folder name %q", n)
		}
	})
}

// FuzzParseKey: a private key that does not parse is an error that never echoes it.
func FuzzParseKey(f *testing.F) {
	f.Add("-----BEGIN RSA PRIVATE KEY-----\\nMIIB\\n-----END RSA PRIVATE KEY-----")
	f.Add("not a key")
	f.Fuzz(func(t *testing.T, pem string) {
		if _, err := github.ParseKey(pem); err != nil && len(pem) > 8 && strings.Contains(err.Error(), pem) {
			t.Fatalf("the error echoes the key: %q", err)
		}
	})
}
