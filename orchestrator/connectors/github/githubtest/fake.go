// Package githubtest is a fake GitHub on loopback for tests: the App's REST paths (checking the
// App JWT's signature, issuer and lifetime), the web install and authorize redirects, the code
// exchange, and real git smart HTTP (git http-backend) behind a check of the installation token.
package githubtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Repo is one repository of the fake.
type Repo struct {
	ID            int64
	Owner, Name   string
	Private       bool
	DefaultBranch string
}

// FullName is owner/name.
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Install is one installation of the App.
type Install struct {
	ID        int64
	Account   string
	Repos     []int64 // ids of the repositories it reaches
	Removed   bool    // the App was uninstalled: 404
	Suspended bool    // suspended: 403
}

// TokenRequest is one access-token request the fake received.
type TokenRequest struct {
	Installation  int64
	RepositoryIDs []int64
	Permissions   map[string]string
}

// Issued is an installation token the fake handed out.
type Issued struct {
	Installation int64
	Repos        []int64 // nil: every repository of the installation
	ExpiresAt    time.Time
}

// Fake is the fake GitHub. Lock Mu to change its state while it serves.
type Fake struct {
	Mu           sync.Mutex
	AppID        int64
	Slug         string
	ClientID     string
	ClientSecret string
	Key          *rsa.PrivateKey
	KeyPEM       string
	Server       *httptest.Server
	CAFile       string // the server's certificate as PEM, for GITHUB_CA_FILE
	GitRoot      string // bare repositories at <GitRoot>/<repo id>.git

	Repos    map[int64]*Repo
	Installs map[int64]*Install
	Users    map[string][]int64 // user login → installations the user reaches
	Callback string             // where the web redirects go (PUBLIC_BASE_URL + /api/mcp/oauth/callback)

	// Faults of the next token requests: each entry is the status to answer once (429, 500, 403
	// rate-limited as 4031), consumed in order.
	TokenFaults []int
	TokenTTL    time.Duration // 0: one hour

	// SetupRedirect makes the install page come back as GitHub's setup redirect (installation_id,
	// setup_action and state, no code); DropState makes user authorization come back without the state.
	SetupRedirect bool
	DropState     bool

	Requests []TokenRequest
	Tokens   map[string]Issued
	JWTs     int               // App JWTs verified
	codes    map[string]string // code → user
	userToks map[string]string // user token → user
	nextUser string            // who logs in at the next web redirect
	t        testing.TB
}

// New starts the fake on a loopback TLS server. Close it with t.Cleanup (done here).
func New(t testing.TB) *Fake { return NewOn(t, nil) }

// NewOn starts the fake on ln (nil: loopback) with a certificate of its own for ln's address, so
// a sandbox reaching it elsewhere than loopback verifies it with CAFile.
func NewOn(t testing.TB, ln net.Listener) *Fake {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fake{AppID: 4242, Slug: "guilds-test", ClientID: "Iv1.testclient", ClientSecret: "test-client-secret-" + randHex(8),
		Key: key, Repos: map[int64]*Repo{}, Installs: map[int64]*Install{}, Users: map[string][]int64{},
		Tokens: map[string]Issued{}, codes: map[string]string{}, userToks: map[string]string{}, t: t}
	f.KeyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	f.GitRoot = t.TempDir()
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	if ln != nil {
		f.Server.Listener.Close()
		f.Server.Listener = ln
		cert, err := selfSigned(ln.Addr().(*net.TCPAddr).IP)
		if err != nil {
			t.Fatal(err)
		}
		f.Server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	f.Server.StartTLS()
	t.Cleanup(f.Server.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Server.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	f.CAFile = ca
	return f
}

// selfSigned makes a self-signed certificate (its own CA) for ip.
func selfSigned(ip net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "fake GitHub"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IPAddresses: []net.IP{ip},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// WebURL is GITHUB_WEB_URL for the fake.
func (f *Fake) WebURL() string { return f.Server.URL }

// APIURL is GITHUB_API_URL for the fake (GitHub Enterprise Server's layout).
func (f *Fake) APIURL() string { return f.Server.URL + "/api/v3" }

// Env is the App's environment pointing at the fake.
func (f *Fake) Env() map[string]string {
	return map[string]string{
		"GITHUB_APP_ID": strconv.FormatInt(f.AppID, 10), "GITHUB_APP_SLUG": f.Slug,
		"GITHUB_APP_PRIVATE_KEY": strings.ReplaceAll(f.KeyPEM, "\n", `\n`),
		"GITHUB_APP_CLIENT_ID":   f.ClientID, "GITHUB_APP_CLIENT_SECRET": f.ClientSecret,
		"GITHUB_API_URL": f.APIURL(), "GITHUB_WEB_URL": f.WebURL(), "GITHUB_CA_FILE": f.CAFile,
	}
}

// AddRepo adds a repository (and, when git is given, a bare git repository with one commit on its
// default branch).
func (f *Fake) AddRepo(r Repo) *Repo {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	f.Repos[r.ID] = &r
	return &r
}

// AddInstall adds an installation reaching the repositories.
func (f *Fake) AddInstall(id int64, account string, repos ...int64) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Installs[id] = &Install{ID: id, Account: account, Repos: repos}
}

// LoginAs makes the next web redirect log in as user, who reaches the installations.
func (f *Fake) LoginAs(user string, installs ...int64) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	f.Users[user] = installs
	f.nextUser = user
}

// Code mints a code for user as GitHub's authorize redirect would.
func (f *Fake) Code(user string) string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	code := "code-" + randHex(8)
	f.codes[code] = user
	return code
}

// LastRequest is the last token request.
func (f *Fake) LastRequest() TokenRequest {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if len(f.Requests) == 0 {
		return TokenRequest{}
	}
	return f.Requests[len(f.Requests)-1]
}

// ScopedRequests counts the token requests limited by repository_ids.
func (f *Fake) ScopedRequests() int {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	n := 0
	for _, r := range f.Requests {
		if len(r.RepositoryIDs) > 0 {
			n++
		}
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/v3/"):
		f.api(w, r, strings.TrimPrefix(p, "/api/v3"))
	case p == "/login/oauth/access_token" && r.Method == http.MethodPost:
		f.exchange(w, r)
	case p == "/login/oauth/authorize":
		f.redirect(w, r, false)
	case strings.HasPrefix(p, "/apps/") && strings.HasSuffix(p, "/installations/new"):
		f.redirect(w, r, true)
	default:
		f.git(w, r)
	}
}

// redirect is the web hop: the browser comes back to the callback with a code (and, after an
// install, the installation id and setup_action=install).
func (f *Fake) redirect(w http.ResponseWriter, r *http.Request, install bool) {
	f.Mu.Lock()
	user := f.nextUser
	cb := f.Callback
	if ru := r.URL.Query().Get("redirect_uri"); ru != "" {
		cb = ru
	}
	f.Mu.Unlock()
	if !install && r.URL.Query().Get("client_id") != f.ClientID {
		fail(w, 400, "unknown client_id")
		return
	}
	f.Mu.Lock()
	setup, drop := f.SetupRedirect && install, f.DropState && !install
	f.Mu.Unlock()
	q := url.Values{}
	if !setup {
		q.Set("code", f.Code(user))
	}
	if s := r.URL.Query().Get("state"); s != "" && !drop {
		q.Set("state", s)
	}
	if install {
		f.Mu.Lock()
		if ids := f.Users[user]; len(ids) > 0 {
			q.Set("installation_id", strconv.FormatInt(ids[len(ids)-1], 10))
		}
		f.Mu.Unlock()
		q.Set("setup_action", "install")
	}
	http.Redirect(w, r, cb+"?"+q.Encode(), http.StatusFound)
}

func (f *Fake) exchange(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		fail(w, 400, "bad form")
		return
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if r.PostForm.Get("client_id") != f.ClientID || r.PostForm.Get("client_secret") != f.ClientSecret {
		writeJSON(w, 200, map[string]string{"error": "incorrect_client_credentials", "error_description": "The client_id and/or client_secret passed are incorrect."})
		return
	}
	user, ok := f.codes[r.PostForm.Get("code")]
	if !ok {
		writeJSON(w, 200, map[string]string{"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."})
		return
	}
	delete(f.codes, r.PostForm.Get("code"))
	tok := "ghu_" + randHex(16)
	f.userToks[tok] = user
	writeJSON(w, 200, map[string]string{"access_token": tok, "token_type": "bearer", "scope": ""})
}

// checkJWT verifies the App JWT: RS256 with the App's key, iss the App id, exp at most 10 minutes ahead.
func (f *Fake) checkJWT(r *http.Request) string {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "no bearer token"
	}
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) { return &f.Key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil {
		return "A JSON web token could not be decoded: " + err.Error()
	}
	if claims.Issuer != strconv.FormatInt(f.AppID, 10) {
		return "'Issuer' claim ('iss') must be the App's id"
	}
	if claims.ExpiresAt.Sub(time.Now()) > 10*time.Minute || claims.IssuedAt == nil {
		return "'Expiration time' claim ('exp') is too far in the future"
	}
	f.JWTs++
	return ""
}

func (f *Fake) api(w http.ResponseWriter, r *http.Request, p string) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case p == "/user/installations" && r.Method == http.MethodGet:
		user, ok := f.userToks[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			fail(w, 401, "Bad credentials")
			return
		}
		list := []map[string]any{}
		for _, id := range f.Users[user] {
			if in := f.Installs[id]; in != nil && !in.Removed {
				list = append(list, f.installJSON(in))
			}
		}
		writeJSON(w, 200, map[string]any{"total_count": len(list), "installations": pageOf(list, r)})
	case len(parts) >= 2 && parts[0] == "app" && parts[1] == "installations":
		if msg := f.checkJWT(r); msg != "" {
			fail(w, 401, msg)
			return
		}
		if len(parts) == 2 {
			list := []map[string]any{}
			for _, in := range f.Installs {
				if !in.Removed {
					list = append(list, f.installJSON(in))
				}
			}
			writeJSON(w, 200, list)
			return
		}
		id, _ := strconv.ParseInt(parts[2], 10, 64)
		in := f.Installs[id]
		if in == nil || in.Removed {
			fail(w, 404, "Not Found")
			return
		}
		if len(parts) == 3 && r.Method == http.MethodGet {
			writeJSON(w, 200, f.installJSON(in))
			return
		}
		if len(parts) == 4 && parts[3] == "access_tokens" && r.Method == http.MethodPost {
			f.accessToken(w, r, in)
			return
		}
		fail(w, 404, "Not Found")
	case p == "/installation/repositories" && r.Method == http.MethodGet:
		iss, ok := f.Tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok || time.Now().After(iss.ExpiresAt) {
			fail(w, 401, "Bad credentials")
			return
		}
		in := f.Installs[iss.Installation]
		list := []map[string]any{}
		for _, id := range in.Repos {
			if iss.Repos == nil || slices.Contains(iss.Repos, id) {
				list = append(list, f.repoJSON(f.Repos[id]))
			}
		}
		writeJSON(w, 200, map[string]any{"total_count": len(list), "repositories": pageOf(list, r)})
	default:
		fail(w, 404, "Not Found")
	}
}

// pageOf cuts a listing to the request's page (per_page at most 100).
func pageOf(list []map[string]any, r *http.Request) []map[string]any {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 || per > 100 {
		per = 30
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page < 1 {
		page = 1
	}
	lo := min((page-1)*per, len(list))
	return list[lo:min(lo+per, len(list))]
}

func (f *Fake) installJSON(in *Install) map[string]any {
	m := map[string]any{"id": in.ID, "app_id": f.AppID, "app_slug": f.Slug, "account": map[string]any{"login": in.Account, "type": "Organization"},
		"repository_selection": "selected", "suspended_at": nil}
	if in.Suspended {
		m["suspended_at"] = "2026-01-01T00:00:00Z"
	}
	return m
}

func (f *Fake) repoJSON(r *Repo) map[string]any {
	return map[string]any{"id": r.ID, "name": r.Name, "full_name": r.FullName(), "owner": map[string]any{"login": r.Owner},
		"private": r.Private, "default_branch": r.DefaultBranch, "html_url": f.Server.URL + "/" + r.FullName(),
		"clone_url": f.Server.URL + "/" + r.FullName() + ".git"}
}

func (f *Fake) accessToken(w http.ResponseWriter, r *http.Request, in *Install) {
	var body struct {
		RepositoryIDs []int64           `json:"repository_ids"`
		Repositories  []string          `json:"repositories"`
		Permissions   map[string]string `json:"permissions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		fail(w, 400, "Problems parsing JSON")
		return
	}
	f.Requests = append(f.Requests, TokenRequest{Installation: in.ID, RepositoryIDs: body.RepositoryIDs, Permissions: body.Permissions})
	if len(f.TokenFaults) > 0 {
		st := f.TokenFaults[0]
		f.TokenFaults = f.TokenFaults[1:]
		if st == 4031 {
			w.Header().Set("X-Ratelimit-Remaining", "0")
			fail(w, 403, "API rate limit exceeded")
			return
		}
		fail(w, st, http.StatusText(st))
		return
	}
	if in.Suspended {
		fail(w, 403, "This installation has been suspended")
		return
	}
	for _, id := range body.RepositoryIDs {
		if !slices.Contains(in.Repos, id) {
			fail(w, 422, "There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
	}
	ttl := f.TokenTTL
	if ttl == 0 {
		ttl = time.Hour
	}
	tok := "ghs_" + randHex(18)
	exp := time.Now().Add(ttl).UTC().Truncate(time.Second)
	var repos []int64
	if len(body.RepositoryIDs) > 0 {
		repos = slices.Clone(body.RepositoryIDs)
	}
	f.Tokens[tok] = Issued{Installation: in.ID, Repos: repos, ExpiresAt: exp}
	out := map[string]any{"token": tok, "expires_at": exp.Format(time.RFC3339), "permissions": body.Permissions, "repository_selection": "selected"}
	if repos != nil {
		list := []map[string]any{}
		for _, id := range repos {
			list = append(list, f.repoJSON(f.Repos[id]))
		}
		out["repositories"] = list
	}
	writeJSON(w, 201, out)
}

// InitGit makes the bare repository behind r with one commit (README.md) on its default branch.
func (f *Fake) InitGit(r *Repo) {
	f.t.Helper()
	dir := filepath.Join(f.GitRoot, strconv.FormatInt(r.ID, 10)+".git")
	work := f.t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", r.DefaultBranch, dir},
		{"-C", dir, "config", "http.receivepack", "true"},
		{"init", "-q", "-b", r.DefaultBranch, work},
		{"-C", work, "commit", "-q", "--allow-empty", "-m", "first commit of " + r.Name},
		{"-C", work, "push", "-q", dir, r.DefaultBranch},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+work, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			f.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// GitLog returns the bare repository's log of its default branch, one subject a line.
func (f *Fake) GitLog(r *Repo) string {
	f.t.Helper()
	dir := filepath.Join(f.GitRoot, strconv.FormatInt(r.ID, 10)+".git")
	out, err := exec.Command("git", "-C", dir, "log", "--format=%s", r.DefaultBranch).CombinedOutput()
	if err != nil {
		f.t.Fatalf("git log: %v\n%s", err, out)
	}
	return string(out)
}

// git serves smart HTTP for /<owner>/<name>(.git)/... through git http-backend, demanding
// x-access-token:<token> where the token was issued for that repository.
func (f *Fake) git(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	if len(parts) < 3 {
		http.NotFound(w, r)
		return
	}
	full := strings.ToLower(parts[0] + "/" + strings.TrimSuffix(parts[1], ".git"))
	f.Mu.Lock()
	var repo *Repo
	for _, rp := range f.Repos {
		if strings.ToLower(rp.FullName()) == full {
			repo = rp
		}
	}
	ok := false
	if user, pass, has := r.BasicAuth(); has && user == "x-access-token" && repo != nil {
		if iss, found := f.Tokens[pass]; found && time.Now().Before(iss.ExpiresAt) {
			in := f.Installs[iss.Installation]
			ok = in != nil && !in.Removed && slices.Contains(in.Repos, repo.ID) && (iss.Repos == nil || slices.Contains(iss.Repos, repo.ID))
		}
	}
	f.Mu.Unlock()
	if repo == nil {
		http.NotFound(w, r)
		return
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
		return
	}
	exe, err := exec.LookPath("git")
	if err != nil {
		http.Error(w, "no git", 500)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + strconv.FormatInt(repo.ID, 10) + ".git/" + parts[2]
	h := &cgi.Handler{Path: exe, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + f.GitRoot, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=x-access-token"}}
	h.ServeHTTP(w, r2)
}

// BasicAuth is the Authorization header value git sends for a token (tests of refusal use it).
func BasicAuth(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}

// String names the fake in failures.
func (f *Fake) String() string { return fmt.Sprintf("fake GitHub at %s", f.Server.URL) }
