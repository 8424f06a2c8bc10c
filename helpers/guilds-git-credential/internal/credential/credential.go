// Package credential answers git's credential-helper protocol from $GUILDS_RUN_DIR/git-tokens.json.
package credential

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/guildsai/guilds/shared/places"
)

// Username is the user name GitHub expects with an installation access token.
const Username = "x-access-token"

// maxInput bounds what get reads from git; git's own requests are a few hundred bytes.
const maxInput = 64 << 10

// TokensFile is the name of the token file in GUILDS_RUN_DIR.
const TokensFile = "git-tokens.json"

// Request is what git asks for: the fields of its key=value lines this helper uses.
type Request struct {
	Protocol string
	Host     string
	Path     string
}

// Token is one repository's token in git-tokens.json.
type Token struct {
	Host       string `json:"host"`
	Repository string `json:"repository"` // owner/name
	Token      string `json:"token"`
	ExpiresAt  string `json:"expires_at"` // RFC 3339; empty means no known expiry
}

// Tokens is the whole of git-tokens.json.
type Tokens struct {
	Tokens []Token `json:"tokens"`
}

// Main runs one helper invocation (git passes the operation as the last argument) and returns
// the exit status. Only get answers; store, erase and operations git adds later do nothing.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: guilds-git-credential get|store|erase (git runs it as a credential helper)")
		return 2
	}
	if args[len(args)-1] != "get" {
		io.Copy(io.Discard, io.LimitReader(stdin, maxInput)) // let git finish writing
		return 0
	}
	req, err := Parse(io.LimitReader(stdin, maxInput+1))
	if err != nil {
		fmt.Fprintf(stderr, "guilds-git-credential: %v\n", err)
		return 1
	}
	path := filepath.Join(places.RunDir(), TokensFile)
	toks, err := Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "guilds-git-credential: %v\n", err)
		return 1
	}
	tok, ok := toks.Find(req, now())
	if !ok {
		return 0 // git falls through to its other helpers
	}
	var b strings.Builder
	fmt.Fprintf(&b, "username=%s\npassword=%s\n", Username, tok.Token)
	if t, err := time.Parse(time.RFC3339, tok.ExpiresAt); err == nil {
		fmt.Fprintf(&b, "password_expiry_utc=%d\n", t.Unix())
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		fmt.Fprintf(stderr, "guilds-git-credential: write answer: %v\n", err)
		return 1
	}
	return 0
}

// Parse reads git's key=value lines up to a blank line or the end of input. Unknown keys are
// ignored, as git's protocol asks; a line without "=", a NUL byte or oversized input is an error.
func Parse(r io.Reader) (Request, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Request{}, fmt.Errorf("read credential request: %w", err)
	}
	if len(data) > maxInput {
		return Request{}, fmt.Errorf("credential request is over %d bytes", maxInput)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return Request{}, errors.New("credential request contains a NUL byte")
	}
	var req Request
	var rawURL string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxInput+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			break
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || key == "" {
			return Request{}, fmt.Errorf("credential request line %d is not key=value", n)
		}
		switch key {
		case "protocol":
			req.Protocol = value
		case "host":
			req.Host = value
		case "path":
			req.Path = value
		case "url":
			rawURL = value
		}
	}
	if err := sc.Err(); err != nil {
		return Request{}, fmt.Errorf("read credential request: %w", err)
	}
	if rawURL != "" {
		// url= stands for its parts; parts given on their own lines win.
		u, err := url.Parse(rawURL)
		if err != nil {
			return Request{}, errors.New("credential request has an unparsable url")
		}
		req.Protocol = firstSet(req.Protocol, u.Scheme)
		req.Host = firstSet(req.Host, u.Host)
		req.Path = firstSet(req.Path, strings.TrimPrefix(u.Path, "/"))
	}
	return req, nil
}

func firstSet(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Load reads the token file; a missing file holds no tokens.
func Load(path string) (Tokens, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Tokens{}, nil
	}
	if err != nil {
		return Tokens{}, fmt.Errorf("read %s: %w", path, err)
	}
	var t Tokens
	if err := json.Unmarshal(data, &t); err != nil {
		return Tokens{}, fmt.Errorf("%s is not valid token JSON: %v", path, syntaxOnly(err))
	}
	return t, nil
}

// syntaxOnly keeps a JSON error's position but never echoes file content (it holds tokens).
func syntaxOnly(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "syntax error at byte " + strconv.FormatInt(se.Offset, 10)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s has the wrong type", te.Field)
	}
	return "malformed"
}

// Find returns the unexpired token for the https repository req names: host and owner/name
// compared case-insensitively, with or without a .git suffix.
func (t Tokens) Find(req Request, now time.Time) (Token, bool) {
	if !strings.EqualFold(req.Protocol, "https") {
		return Token{}, false // never send a token over plain http or ssh
	}
	repo, ok := RepoFromPath(req.Path)
	if !ok || req.Host == "" {
		return Token{}, false
	}
	for _, tok := range t.Tokens {
		if !strings.EqualFold(tok.Host, req.Host) || tok.Token == "" || strings.ContainsAny(tok.Token, "\r\n\x00") {
			continue
		}
		if want, ok := RepoFromPath(tok.Repository); !ok || want != repo {
			continue
		}
		if tok.ExpiresAt != "" {
			exp, err := time.Parse(time.RFC3339, tok.ExpiresAt)
			if err != nil || !now.Before(exp) {
				continue
			}
		}
		return tok, true
	}
	return Token{}, false
}

// RepoFromPath turns a URL path such as "Owner/Name.git" or "owner/name.git/info/lfs" into
// "owner/name".
func RepoFromPath(p string) (string, bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", false
	}
	name := parts[1]
	if len(name) > 4 && strings.EqualFold(name[len(name)-4:], ".git") {
		name = name[:len(name)-4]
	}
	if name == "" || name == "." || name == ".." || parts[0] == "." || parts[0] == ".." {
		return "", false
	}
	return strings.ToLower(parts[0] + "/" + name), true
}
