// Package googletest is Google on loopback for tests: the user OAuth endpoints (authorize that
// redirects with a code, token with the client secret, PKCE, refresh and invalid_grant on a
// revoked grant), the Gmail API over a small mailbox and the Drive API over a small tree in
// Google's published payload shapes, and optionally an MCP server as Drive's, all taking only
// live access tokens.
package googletest

import (
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fake's client, as the box's environment would name it.
const (
	ClientID     = "1234-box.apps.googleusercontent.com"
	ClientSecret = "GOCSPX-box-secret"
	Email        = "ada@acme.example"
)

//go:embed testdata/messages.json
var messagesJSON []byte

//go:embed testdata/labels.json
var labelsJSON []byte

// Server is Google on one loopback origin. Set its knobs before the flow they change.
type Server struct {
	URL string

	TokenTTL time.Duration    // access token life; default 3599 s as Google gives
	Deny     bool             // authorize answers error=access_denied
	Now      func() time.Time // nil is time.Now

	ts       *httptest.Server
	mu       sync.Mutex
	codes    map[string]pending
	access   map[string]time.Time // live access token → expiry
	refresh  map[string]bool      // live refresh tokens
	revoked  bool
	counts   map[string]int
	issued   []string
	messages []map[string]any
	labels   []map[string]any
	drafts   map[string]string // draft id → message id
	sent     []string          // the raw messages sent, decoded
	lastAuth url.Values
	lastTok  url.Values
	seq      int
	files    map[string]*DriveFile
	reads    []string
}

type pending struct{ redirect, challenge, scope string }

// New starts the fake; mcp (nil for none) is served at /mcp/v1 behind the same tokens, as the Drive MCP server.
func New(mcp ...http.Handler) *Server {
	s := &Server{codes: map[string]pending{}, access: map[string]time.Time{}, refresh: map[string]bool{}, counts: map[string]int{}, drafts: map[string]string{}}
	if err := json.Unmarshal(messagesJSON, &s.messages); err != nil {
		panic(err)
	}
	if err := json.Unmarshal(labelsJSON, &s.labels); err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /o/oauth2/v2/auth", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.Handle("/gmail/v1/", s.protect(http.HandlerFunc(s.gmail)))
	mux.Handle("/drive/v3/", s.protect(http.HandlerFunc(s.drive)))
	mux.Handle("POST /upload/drive/v3/files", s.protect(http.HandlerFunc(s.upload)))
	if len(mcp) > 0 && mcp[0] != nil {
		mux.Handle("/mcp/v1", s.protect(mcp[0]))
	}
	s.seedDrive()
	s.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.counts[r.URL.Path]++
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	s.URL = s.ts.URL
	return s
}

// Close stops the fake.
func (s *Server) Close() { s.ts.Close() }

// Endpoints are the fake's authorize, token and Gmail api endpoints, as PATCH takes them.
func (s *Server) Endpoints() map[string]any {
	return map[string]any{"authorize": s.URL + "/o/oauth2/v2/auth", "token": s.URL + "/token", "api": s.URL + "/gmail/v1"}
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Count is how many requests reached path.
func (s *Server) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// Refreshes counts the refresh_token grants the token endpoint answered.
func (s *Server) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts["refresh"]
}

// Revoke ends the grant: every token stops working and a refresh is invalid_grant.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = true
	s.access = map[string]time.Time{}
}

// ExpireAccess ends every access token early; refresh tokens stay good.
func (s *Server) ExpireAccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.access = map[string]time.Time{}
}

// Tokens lists every code, token and verifier the fake issued or saw, for leak checks.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

// LastAuthorize is the query of the last authorization request.
func (s *Server) LastAuthorize() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAuth
}

// LastToken is the form of the last token request.
func (s *Server) LastToken() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastTok
}

// Sent lists the raw messages sent (messages.send and drafts.send), decoded.
func (s *Server) Sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// Grant issues a live access token directly, as if a login had just finished.
func (s *Server) Grant() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, _ := s.issue(false)
	return at
}

func random(prefix string) string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastAuth = q
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if q.Get("client_id") != ClientID || err != nil || q.Get("response_type") != "code" {
		http.Error(w, "Error 400: invalid_request", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	if s.Deny {
		back.Set("error", "access_denied")
	} else {
		c := random("4/0A")
		s.codes[c] = pending{redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), scope: q.Get("scope")}
		s.issued = append(s.issued, c)
		back.Set("code", c)
		back.Set("scope", q.Get("scope"))
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// issue mints an access token (and a refresh token when asked); s.mu is held.
func (s *Server) issue(withRefresh bool) (access, refresh string) {
	ttl := s.TokenTTL
	if ttl == 0 {
		ttl = 3599 * time.Second
	}
	access = random("ya29.a0")
	s.access[access] = s.now().Add(ttl)
	s.issued = append(s.issued, access)
	if withRefresh {
		refresh = random("1//0g")
		s.refresh[refresh] = true
		s.issued = append(s.issued, refresh)
	}
	return access, refresh
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastTok = f
	if v := f.Get("code_verifier"); v != "" {
		s.issued = append(s.issued, v)
	}
	if f.Get("client_id") != ClientID || f.Get("client_secret") != ClientSecret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "Unauthorized"})
		return
	}
	ttl := s.TokenTTL
	if ttl == 0 {
		ttl = 3599 * time.Second
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		p, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || p.redirect != f.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != p.challenge {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "Bad Request"})
			return
		}
		at, rt := s.issue(true)
		writeJSON(w, 200, map[string]any{"access_token": at, "expires_in": int(ttl / time.Second), "refresh_token": rt, "scope": p.scope, "token_type": "Bearer"})
	case "refresh_token":
		s.counts["refresh"]++
		if s.revoked || !s.refresh[f.Get("refresh_token")] {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
			return
		}
		at, _ := s.issue(false) // Google keeps the refresh token: the answer carries none
		writeJSON(w, 200, map[string]any{"access_token": at, "expires_in": int(ttl / time.Second), "scope": "https://www.googleapis.com/auth/gmail.readonly https://www.googleapis.com/auth/gmail.compose", "token_type": "Bearer"})
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type", "error_description": "Invalid grant_type: " + f.Get("grant_type")})
	}
}

// protect answers Google's 401 to a request without a live access token.
func (s *Server) protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		exp, ok := s.access[tok]
		live := ok && s.now().Before(exp)
		s.mu.Unlock()
		if !live {
			w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
			writeJSON(w, 401, map[string]any{"error": map[string]any{"code": 401, "status": "UNAUTHENTICATED",
				"message": "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."}})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// notFound is Google's 404 body.
func notFound(w http.ResponseWriter) {
	writeJSON(w, 404, map[string]any{"error": map[string]any{"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND"}})
}

func (s *Server) gmail(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/gmail/v1/users/me")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == "GET" && path == "/profile":
		writeJSON(w, 200, map[string]any{"emailAddress": Email, "messagesTotal": len(s.messages), "threadsTotal": 2, "historyId": "912400"})
	case r.Method == "GET" && path == "/threads":
		s.listThreads(w, q)
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "threads":
		var msgs []map[string]any
		for _, m := range s.messages {
			if m["threadId"] == parts[1] {
				msgs = append(msgs, shaped(m, q))
			}
		}
		if len(msgs) == 0 {
			notFound(w)
			return
		}
		writeJSON(w, 200, map[string]any{"id": parts[1], "historyId": "912400", "messages": msgs})
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "messages":
		if m := s.message(parts[1]); m != nil {
			writeJSON(w, 200, shaped(m, q))
			return
		}
		notFound(w)
	case r.Method == "GET" && path == "/labels":
		var out []map[string]any
		for _, l := range s.labels {
			out = append(out, map[string]any{"id": l["id"], "name": l["name"], "type": l["type"]})
		}
		writeJSON(w, 200, map[string]any{"labels": out})
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "labels":
		for _, l := range s.labels {
			if l["id"] == parts[1] {
				writeJSON(w, 200, l)
				return
			}
		}
		notFound(w)
	case r.Method == "GET" && path == "/drafts":
		var out []map[string]any
		for id, mid := range s.drafts {
			out = append(out, map[string]any{"id": id, "message": map[string]any{"id": mid, "threadId": s.message(mid)["threadId"]}})
		}
		writeJSON(w, 200, map[string]any{"drafts": out, "resultSizeEstimate": len(out)})
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "drafts":
		mid, ok := s.drafts[parts[1]]
		if !ok {
			notFound(w)
			return
		}
		writeJSON(w, 200, map[string]any{"id": parts[1], "message": shaped(s.message(mid), q)})
	case r.Method == "POST" && (path == "/drafts" || path == "/messages/send"):
		var in struct {
			Message  *struct{ Raw, ThreadID string } `json:"message"`
			Raw      string                          `json:"raw"`
			ThreadID string                          `json:"threadId"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 40<<20))
		if err := json.Unmarshal(body, &in); err != nil {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}})
			return
		}
		raw, thread := in.Raw, in.ThreadID
		if in.Message != nil {
			raw, thread = in.Message.Raw, in.Message.ThreadID
		}
		label := "SENT"
		if path == "/drafts" {
			label = "DRAFT"
		}
		m, err := s.store(raw, thread, label)
		if err != nil {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"code": 400, "message": "Invalid value for ByteString: " + err.Error(), "status": "INVALID_ARGUMENT"}})
			return
		}
		ref := map[string]any{"id": m["id"], "threadId": m["threadId"], "labelIds": m["labelIds"]}
		if label == "DRAFT" {
			s.seq++
			id := "r" + strconv.Itoa(-4000000000000000000+s.seq)
			s.drafts[id] = m["id"].(string)
			writeJSON(w, 200, map[string]any{"id": id, "message": ref})
			return
		}
		writeJSON(w, 200, ref)
	case r.Method == "POST" && path == "/drafts/send":
		var in struct{ ID string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		mid, ok := s.drafts[in.ID]
		if !ok {
			notFound(w)
			return
		}
		delete(s.drafts, in.ID)
		m := s.message(mid)
		m["labelIds"] = []any{"SENT"}
		s.sent = append(s.sent, m["raw"].(string))
		writeJSON(w, 200, map[string]any{"id": m["id"], "threadId": m["threadId"], "labelIds": m["labelIds"]})
	default:
		notFound(w)
	}
}

func (s *Server) message(id string) map[string]any {
	for _, m := range s.messages {
		if m["id"] == id {
			return m
		}
	}
	return nil
}

// listThreads matches q against subjects, senders and snippets (label:NAME matches a label id),
// newest first, paged by an offset token.
func (s *Server) listThreads(w http.ResponseWriter, q url.Values) {
	max, _ := strconv.Atoi(q.Get("maxResults"))
	if max <= 0 {
		max = 100
	}
	query := strings.ToLower(strings.TrimSpace(q.Get("q")))
	seen := map[string]bool{}
	var out []map[string]any
	for i := len(s.messages) - 1; i >= 0; i-- {
		m := s.messages[i]
		tid := m["threadId"].(string)
		if seen[tid] || !matches(m, query) {
			continue
		}
		seen[tid] = true
		out = append(out, map[string]any{"id": tid, "snippet": m["snippet"], "historyId": m["historyId"]})
	}
	from, _ := strconv.Atoi(q.Get("pageToken"))
	from = min(from, len(out))
	page := out[from:min(from+max, len(out))]
	ans := map[string]any{"resultSizeEstimate": len(out)}
	if len(page) > 0 {
		ans["threads"] = page
	}
	if from+max < len(out) {
		ans["nextPageToken"] = strconv.Itoa(from + max)
	}
	writeJSON(w, 200, ans)
}

func matches(m map[string]any, query string) bool {
	if query == "" {
		return true
	}
	if l, ok := strings.CutPrefix(query, "label:"); ok {
		for _, id := range m["labelIds"].([]any) {
			if strings.EqualFold(id.(string), l) {
				return true
			}
		}
		return false
	}
	text := strings.ToLower(fmt.Sprint(m["snippet"]))
	for _, h := range m["payload"].(map[string]any)["headers"].([]any) {
		text += " " + strings.ToLower(fmt.Sprint(h.(map[string]any)["value"]))
	}
	return strings.Contains(text, query)
}

// shaped is a message in the asked format: metadata keeps only the named headers and no body.
func shaped(m map[string]any, q url.Values) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != "raw" {
			out[k] = v
		}
	}
	if q.Get("format") != "metadata" {
		return out
	}
	p := m["payload"].(map[string]any)
	var hs []any
	for _, h := range p["headers"].([]any) {
		name := h.(map[string]any)["name"].(string)
		want := len(q["metadataHeaders"]) == 0
		for _, n := range q["metadataHeaders"] {
			want = want || strings.EqualFold(n, name)
		}
		if want {
			hs = append(hs, h)
		}
	}
	out["payload"] = map[string]any{"partId": "", "mimeType": p["mimeType"], "filename": "", "headers": hs, "body": map[string]any{"size": 0}}
	return out
}

// store parses a raw message (base64url RFC 2822) into a Gmail message; s.mu is held.
func (s *Server) store(raw, thread, label string) (map[string]any, error) {
	b, err := base64.URLEncoding.DecodeString(raw)
	if err != nil {
		return nil, err
	}
	msg, err := mail.ReadMessage(strings.NewReader(string(b)))
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(msg.Body)
	s.seq++
	id := fmt.Sprintf("18c2a1f0e0b1b%03d", s.seq)
	if thread == "" {
		thread = id
	}
	var hs []any
	for k, vs := range msg.Header {
		for _, v := range vs {
			hs = append(hs, map[string]any{"name": k, "value": v})
		}
	}
	m := map[string]any{"id": id, "threadId": thread, "labelIds": []any{label}, "snippet": "", "historyId": "912500",
		"internalDate": strconv.FormatInt(s.now().UnixMilli(), 10), "raw": string(b),
		"payload": map[string]any{"partId": "", "mimeType": "text/plain", "filename": "", "headers": hs,
			"body": map[string]any{"size": len(body), "data": base64.URLEncoding.EncodeToString(body)}}}
	s.messages = append(s.messages, m)
	if label == "SENT" {
		s.sent = append(s.sent, string(b))
	}
	return m, nil
}
