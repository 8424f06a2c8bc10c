package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// googleServe is serve as wired with the box's Google client set to the fake's.
func googleServe(t *testing.T) (*started, string) {
	t.Helper()
	_, dsn := pgtest.NewDBWithDSN(t)
	env := map[string]string{"DATABASE_URL": dsn, "GUILDS_LISTEN": "127.0.0.1:0", "GUILDS_ADMIN_TOKEN": testToken,
		"GUILDS_SECRET_KEY": base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")), "GUILDS_SANDBOX": "local",
		"GUILDS_SANDBOX_NETWORK": "none", "GMAIL_OAUTH_CLIENT_ID": googletest.ClientID, "GMAIL_OAUTH_CLIENT_SECRET": googletest.ClientSecret}
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		env["GUILDS_BIN_DIR"] = d
	}
	s := startServe(t, env, nil)
	t.Cleanup(func() { s.stop(t) })
	return s, "http://" + s.addr
}

// TestGmailThroughServe: Gmail end to end through the HTTP API with a plain HTTP client as the
// browser: Connect → Google's authorize → serve's callback (the profile's address as
// account_hint) → connected with the curated tools, send_message Off at the owner → a run's
// call → a 401 renews the token once through the stored client → revoked → the call fails
// naming it, the login is disconnected and the next generation fails at start; the client
// secret and no token in serve's log, the stored calls or the API.
func TestGmailThroughServe(t *testing.T) {
	g := googletest.New()
	t.Cleanup(g.Close)
	srv, api := googleServe(t)
	org, agent := scopesAt(t, api)
	must(t, 200, "PATCH", api+"/api/admin/mcp/servers/gmail", map[string]any{"endpoints": g.Endpoints()})
	for _, s := range must(t, 200, "GET", api+"/api/mcp/servers", nil)["servers"].([]any) {
		if m := s.(map[string]any); m["slug"] == "gmail" && m["oauth_setup_state"] != "configured" {
			t.Fatalf("gmail oauth_setup_state %v", m["oauth_setup_state"])
		}
	}
	start := must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "gmail", "scope": "org", "scope_id": org})
	id := start["connection"].(map[string]any)["id"].(string)
	resp, err := http.Get(start["authorization_url"].(string)) // the browser: Google's consent, then serve's callback
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Connected") {
		t.Fatalf("callback page: %d %s", resp.StatusCode, page)
	}
	if q := g.LastAuthorize(); q.Get("access_type") != "offline" || q.Get("prompt") != "consent" || !strings.Contains(q.Get("scope"), "gmail.compose") {
		t.Fatalf("authorize query %v", q)
	}
	if f := g.LastToken(); f.Get("client_secret") != googletest.ClientSecret || f.Get("code_verifier") == "" {
		t.Fatal("the code exchange did not carry the client secret and the PKCE verifier")
	}
	conn := must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil)
	if conn["status"] != "connected" || conn["account_hint"] != googletest.Email || conn["tool_count"].(float64) != 7 {
		t.Fatalf("connection %v", conn)
	}
	var off []string
	for _, b := range must(t, 200, "GET", api+"/api/bindings?scope=org&scope_id="+org, nil)["bindings"].([]any) {
		if m := b.(map[string]any); m["catalog_kind"] == "mcp_tool" && m["enabled"] == false {
			off = append(off, m["catalog_id"].(string))
		}
	}
	if !slices.Equal(off, []string{"gmail_send_message"}) {
		t.Fatalf("tools written Off at the owner: %v, want gmail_send_message", off)
	}
	run := must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	runID := run["id"].(string)
	names := offeredNames(run)
	if !slices.Contains(names, "gmail_get_message") || slices.Contains(names, "gmail_send_message") {
		t.Fatalf("offered %v: send_message must be Off until the operator enables it", names)
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		return must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": args})["result"].(string)
	}
	if out := call("gmail_get_message", map[string]any{"message_id": "18c2a1f0e0b1a001"}); !strings.Contains(out, "attachment: invoice-Q3.pdf (application/pdf, 45871 bytes)") ||
		!strings.Contains(out, "Attached is the Q3 invoice") {
		t.Fatalf("get_message %q", out)
	}
	if g.Refreshes() != 0 {
		t.Fatalf("%d refreshes of a fresh token", g.Refreshes())
	}
	g.ExpireAccess()
	if out := call("gmail_search_threads", map[string]any{"query": "invoice"}); !strings.Contains(out, "Q3 invoice") {
		t.Fatalf("search after a 401 %q", out)
	}
	if g.Refreshes() != 1 || g.LastToken().Get("grant_type") != "refresh_token" || g.LastToken().Get("client_secret") != googletest.ClientSecret {
		t.Fatalf("%d refreshes after the 401", g.Refreshes())
	}
	g.Revoke()
	if out := call("gmail_list_labels", nil); !strings.HasPrefix(out, "ERROR:") || !strings.Contains(out, "invalid_grant") || !strings.Contains(out, "connect it again") {
		t.Fatalf("call on a revoked login %q", out)
	}
	if c := must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil); c["status"] != "disconnected" {
		t.Fatalf("revoked login is %v", c["status"])
	}
	if st, out := request(t, "POST", api+"/api/runs/"+runID+"/generations", nil); st != 409 || !strings.Contains(errText(out), "disconnected") {
		t.Fatalf("generation over a revoked login: %d %v", st, out)
	}
	stored, _ := json.Marshal(must(t, 200, "GET", api+"/api/runs/"+runID+"/calls", nil))
	views, _ := json.Marshal([]any{must(t, 200, "GET", api+"/api/mcp/connections", nil), must(t, 200, "GET", api+"/api/agents/"+agent+"/tools", nil)})
	for _, secret := range append(g.Tokens(), googletest.ClientSecret) {
		for where, text := range map[string]string{"log": srv.stderr.String(), "stored calls": string(stored), "API": string(views)} {
			if strings.Contains(text, secret) {
				t.Errorf("a token or the client secret appears in the %s", where)
			}
		}
	}
}

// driveMCP is an MCP server listing the Drive MCP server's eight tools with Google's argument
// names; the orchestrator only lists it (its calls go to the Drive API, confined).
func driveMCP() http.Handler {
	s := server.NewMCPServer("drivemcp", "1", server.WithToolCapabilities(true), server.WithLogger(slog.New(slog.DiscardHandler)))
	refused := func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultError("this fake only lists"), nil
	}
	file := mcpgo.WithString("fileId", mcpgo.Required(), mcpgo.Description("The ID of the file."))
	for _, tl := range []mcpgo.Tool{
		mcpgo.NewTool("search_files", mcpgo.WithDescription("Search for Drive files given a structured query."), mcpgo.WithString("query", mcpgo.Required()),
			mcpgo.WithString("pageToken"), mcpgo.WithNumber("pageSize"), mcpgo.WithBoolean("excludeContentSnippets")),
		mcpgo.NewTool("list_recent_files", mcpgo.WithDescription("List the user's most recent files."), mcpgo.WithString("pageToken"), mcpgo.WithNumber("pageSize")),
		mcpgo.NewTool("read_file_content", mcpgo.WithDescription("Read a file's content as text."), file),
		mcpgo.NewTool("download_file_content", mcpgo.WithDescription("Download the content of a Drive file."), file, mcpgo.WithString("exportMimeType")),
		mcpgo.NewTool("get_file_metadata", mcpgo.WithDescription("Metadata of a file."), file),
		mcpgo.NewTool("get_file_permissions", mcpgo.WithDescription("Permissions of a file."), file),
		mcpgo.NewTool("copy_file", mcpgo.WithDescription("Copy an existing File in Google Drive."), file, mcpgo.WithString("title"), mcpgo.WithString("parentId")),
		mcpgo.NewTool("create_file", mcpgo.WithDescription("Create or upload a File to Google Drive."), mcpgo.WithString("title", mcpgo.Required()),
			mcpgo.WithString("mimeType"), mcpgo.WithString("parentId"), mcpgo.WithString("content", mcpgo.Required()), mcpgo.WithBoolean("disable_conversion_to_google_type")),
	} {
		s.AddTool(tl, refused)
	}
	return server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
}

// TestDriveThroughServe: Drive end to end through the HTTP API: Connect → Google's authorize
// (scope drive) → serve's callback holds the login pending → the picker lists My Drive, Shared
// with me and the shared drive → My Drive and an unseen id are refused → Projects is picked
// (account_hint, eight tools listed, create and copy Off) → a run's calls reach files inside and
// are refused outside; download writes the workspace; create, once enabled, reads it back.
func TestDriveThroughServe(t *testing.T) {
	g := googletest.New(driveMCP())
	t.Cleanup(g.Close)
	srv, api := googleServe(t)
	org, agent := scopesAt(t, api)
	must(t, 200, "PATCH", api+"/api/admin/mcp/servers/drive", map[string]any{"url": g.URL + "/mcp/v1", "endpoints": g.DriveEndpoints()})
	start := must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "drive", "scope": "org", "scope_id": org})
	id := start["connection"].(map[string]any)["id"].(string)
	resp, err := http.Get(start["authorization_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "pick its folder") {
		t.Fatalf("callback page: %d %s", resp.StatusCode, page)
	}
	if q := g.LastAuthorize(); q.Get("scope") != "https://www.googleapis.com/auth/drive" || q.Get("access_type") != "offline" {
		t.Fatalf("authorize query %v", q)
	}
	if c := must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil); c["status"] != "pending" {
		t.Fatalf("after the Google login the connection is %v, want pending until its folder is picked", c["status"])
	}
	names := func(out map[string]any) (n []string) {
		for _, f := range out["folders"].([]any) {
			n = append(n, f.(map[string]any)["name"].(string))
		}
		return n
	}
	if got := names(must(t, 200, "GET", api+"/api/mcp/connections/"+id+"/drive/folders", nil)); !slices.Equal(got, []string{"My Drive", "Shared with me", "Team"}) {
		t.Fatalf("roots %v", got)
	}
	if got := names(must(t, 200, "GET", api+"/api/mcp/connections/"+id+"/drive/folders?parent=root", nil)); !slices.Equal(got, []string{"Private", "Projects"}) {
		t.Fatalf("My Drive's folders %v", got)
	}
	for _, bad := range []string{"root", googletest.MyDriveRoot, "1UnseenFolder", googletest.Report} {
		if st, out := request(t, "PUT", api+"/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": bad}); st != 422 {
			t.Fatalf("picking %s: %d %v", bad, st, out)
		}
	}
	conn := must(t, 200, "PUT", api+"/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": googletest.Projects})
	if conn["status"] != "connected" || conn["account_hint"] != "Projects" || conn["tool_count"].(float64) != 8 {
		t.Fatalf("after the pick %v", conn)
	}
	if st, _ := request(t, "PUT", api+"/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": googletest.Q3}); st != 409 {
		t.Fatalf("a second pick: %d", st)
	}
	run := must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	offered := offeredNames(run)
	if !slices.Contains(offered, "drive_read_file_content") || slices.Contains(offered, "drive_create_file") || slices.Contains(offered, "drive_copy_file") {
		t.Fatalf("offered %v: create and copy must be Off until enabled", offered)
	}
	call := func(runID, name string, args map[string]any) string {
		t.Helper()
		return must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": args})["result"].(string)
	}
	runID := run["id"].(string)
	if out := call(runID, "drive_read_file_content", map[string]any{"fileId": googletest.Report}); !strings.Contains(out, "Q3 revenue is up 12%.") {
		t.Fatalf("read inside %q", out)
	}
	if out := call(runID, "drive_search_files", map[string]any{"query": "title contains 'report'"}); !strings.Contains(out, "report.txt") || strings.Contains(out, "secret") {
		t.Fatalf("search %q", out)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"drive_read_file_content", map[string]any{"fileId": googletest.Secret}},
		{"drive_get_file_metadata", map[string]any{"fileId": googletest.Private}},
		{"drive_download_file_content", map[string]any{"fileId": googletest.Secret, "file_path": "secret.txt"}},
	} {
		if out := call(runID, tc.name, tc.args); !strings.HasPrefix(out, "ERROR:") || !strings.Contains(out, "outside this connection's folder") {
			t.Fatalf("%s outside the folder %q", tc.name, out)
		}
	}
	if out := call(runID, "drive_download_file_content", map[string]any{"fileId": googletest.Report, "file_path": "in/report.txt"}); !strings.Contains(out, "to /home/agent/in/report.txt") {
		t.Fatalf("download %q", out)
	}
	must(t, 200, "PUT", api+"/api/bindings", map[string]any{"scope": "org", "scope_id": org, "catalog_kind": "mcp_tool", "catalog_id": "drive_create_file", "enabled": true})
	run2 := must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	if out := call(run2["id"].(string), "drive_create_file", map[string]any{"title": "report again", "file_path": "in/report.txt", "mimeType": "text/plain",
		"disable_conversion_to_google_type": true}); !strings.Contains(out, "created") || !strings.Contains(out, "parents: "+googletest.Projects) {
		t.Fatalf("create from the workspace %q", out)
	}
	if f, ok := g.DriveFileNamed("report again"); !ok || f.Content != "Q3 revenue is up 12%.\n" {
		t.Fatalf("the uploaded file %+v", f)
	}
	for _, id := range g.ContentReads() {
		if id == googletest.Secret {
			t.Fatal("the bytes of a file outside the folder were read")
		}
	}
	for _, secret := range append(g.Tokens(), googletest.ClientSecret) {
		if strings.Contains(srv.stderr.String(), secret) {
			t.Fatal("a code, token or the client secret appears in serve's log")
		}
	}
}
