package drive_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/cmd/orchestrator/wire/wiretest"
	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
	"github.com/guildsai/guilds/orchestrator/postgres/pgtest"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// googleServe is serve as wired with the box's Google client set to the fake's.
func googleServe(t *testing.T) (*wiretest.Served, string) {
	t.Helper()
	env := map[string]string{"GUILDS_SECRET_KEY": wiretest.SecretKey, "GUILDS_SANDBOX": "local",
		"GUILDS_SANDBOX_NETWORK": "none", "GMAIL_OAUTH_CLIENT_ID": googletest.ClientID, "GMAIL_OAUTH_CLIENT_SECRET": googletest.ClientSecret}
	if d := os.Getenv("GUILDS_BIN_DIR"); d != "" {
		env["GUILDS_BIN_DIR"] = d
	}
	s := wiretest.Serve(t, env)
	return s, s.API
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
	org, agent := wiretest.ScopesAt(t, api)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/drive", map[string]any{"url": g.URL + "/mcp/v1", "endpoints": g.DriveEndpoints()})
	start := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "drive", "scope": "org", "scope_id": org})
	id := start["connection"].(map[string]any)["id"].(string)
	// The browser: the provider's consent, then serve's callback, which lands it on the app's page.
	st, loc, page := wiretest.Authorize(t, start["authorization_url"].(string))
	if st != 303 || loc != "/connections/"+id+"?login=pending" {
		t.Fatalf("callback: %d %s %s", st, loc, page)
	}
	if q := g.LastAuthorize(); q.Get("scope") != "https://www.googleapis.com/auth/drive" || q.Get("access_type") != "offline" {
		t.Fatalf("authorize query %v", q)
	}
	if c := wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id, nil); c["status"] != "pending" {
		t.Fatalf("after the Google login the connection is %v, want pending until its folder is picked", c["status"])
	}
	names := func(out map[string]any) (n []string) {
		for _, f := range out["folders"].([]any) {
			n = append(n, f.(map[string]any)["name"].(string))
		}
		return n
	}
	if got := names(wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id+"/drive/folders", nil)); !slices.Equal(got, []string{"My Drive", "Shared with me", "Team"}) {
		t.Fatalf("roots %v", got)
	}
	if got := names(wiretest.Must(t, 200, "GET", api+"/api/mcp/connections/"+id+"/drive/folders?parent=root", nil)); !slices.Equal(got, []string{"Private", "Projects"}) {
		t.Fatalf("My Drive's folders %v", got)
	}
	for _, bad := range []string{"root", googletest.MyDriveRoot, "1UnseenFolder", googletest.Report} {
		if st, out := wiretest.Request(t, "PUT", api+"/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": bad}); st != 422 {
			t.Fatalf("picking %s: %d %v", bad, st, out)
		}
	}
	conn := wiretest.Must(t, 200, "PUT", api+"/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": googletest.Projects})
	if conn["status"] != "connected" || conn["account_hint"] != "Projects" || conn["tool_count"].(float64) != 8 {
		t.Fatalf("after the pick %v", conn)
	}
	if st, _ := wiretest.Request(t, "PUT", api+"/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": googletest.Q3}); st != 409 {
		t.Fatalf("a second pick: %d", st)
	}
	run := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
	offered := wiretest.OfferedNames(run)
	if !slices.Contains(offered, "drive_read_file_content") || slices.Contains(offered, "drive_create_file") || slices.Contains(offered, "drive_copy_file") {
		t.Fatalf("offered %v: create and copy must be Off until enabled", offered)
	}
	call := func(runID, name string, args map[string]any) string {
		t.Helper()
		return wiretest.Must(t, 200, "POST", api+"/api/runs/"+runID+"/calls", map[string]any{"name": name, "arguments": args})["result"].(string)
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
	wiretest.Must(t, 200, "PUT", api+"/api/bindings", map[string]any{"scope": "org", "scope_id": org, "catalog_kind": "mcp_tool", "catalog_id": "drive_create_file", "enabled": true})
	run2 := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})
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
		if strings.Contains(srv.Log.String(), secret) {
			t.Fatal("a code, token or the client secret appears in serve's log")
		}
	}
}

// TestDriveCreateFileNeverBlocksOrGrows (issue 29): create_file's host-side read of file_path is
// bounded and never blocks: a 64 GiB sparse file is refused by its size and a FIFO at once, a run
// whose working-directory file is sparse or a FIFO reads relative paths from the home, and nothing
// reaches Drive from them.
func TestDriveCreateFileNeverBlocksOrGrows(t *testing.T) {
	g := googletest.New(driveMCP())
	t.Cleanup(g.Close)
	_, api := googleServe(t)
	org, agent := wiretest.ScopesAt(t, api)
	wiretest.Must(t, 200, "PATCH", api+"/api/admin/mcp/servers/drive", map[string]any{"url": g.URL + "/mcp/v1", "endpoints": g.DriveEndpoints()})
	start := wiretest.Must(t, 201, "POST", api+"/api/mcp/connections", map[string]any{"server": "drive", "scope": "org", "scope_id": org})
	id := start["connection"].(map[string]any)["id"].(string)
	resp, err := http.Get(start["authorization_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wiretest.Must(t, 200, "PUT", api+"/api/mcp/connections/"+id+"/drive/folder", map[string]any{"id": googletest.Projects})
	wiretest.Must(t, 200, "PUT", api+"/api/bindings", map[string]any{"scope": "org", "scope_id": org, "catalog_kind": "mcp_tool", "catalog_id": "drive_create_file", "enabled": true})
	wiretest.Must(t, 200, "PATCH", api+"/api/agents/"+agent, map[string]any{"config": map[string]any{"coding": true}})
	runID := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	other := wiretest.Must(t, 201, "POST", api+"/api/agents/"+agent+"/runs", map[string]any{"kind": "direct"})["id"].(string)
	call := func(run, name string, args map[string]any) string {
		t.Helper()
		return wiretest.Must(t, 200, "POST", api+"/api/runs/"+run+"/calls", map[string]any{"name": name, "arguments": args})["result"].(string)
	}
	create := func(run, title, p string) string {
		return call(run, "drive_create_file", map[string]any{"title": title, "file_path": p, "mimeType": "text/plain", "disable_conversion_to_google_type": true})
	}
	out := call(runID, "shell", map[string]any{"command": "cd ~ && echo fine > ok.txt && truncate -s 64G big.txt && mkfifo pipe.txt && " +
		"mkdir -p .runs/" + other + " && truncate -s 64G .runs/" + other + "/cwd && echo ready"})
	if !strings.Contains(out, "ready") {
		t.Fatalf("shell: %q", out)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if got := create(runID, "big", "~/big.txt"); !strings.Contains(got, "is 68719476736 bytes; at most 16 MiB") {
			t.Errorf("sparse 64 GiB: %q", got)
		}
		if got := create(runID, "pipe", "~/pipe.txt"); !strings.Contains(got, "is a fifo, not a regular file") {
			t.Errorf("FIFO: %q", got)
		}
		if got := create(other, "ok sparse cwd", "ok.txt"); !strings.Contains(got, "created") {
			t.Errorf("with a sparse cwd file: %q", got)
		}
		call(runID, "shell", map[string]any{"command": "rm ~/.runs/" + other + "/cwd && mkfifo ~/.runs/" + other + "/cwd"})
		if got := create(other, "ok fifo cwd", "ok.txt"); !strings.Contains(got, "created") {
			t.Errorf("with a FIFO cwd file: %q", got)
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("create_file of a sparse file or a FIFO did not answer within a minute")
	}
	for _, title := range []string{"big", "pipe"} {
		if _, ok := g.DriveFileNamed(title); ok {
			t.Errorf("%s reached Drive", title)
		}
	}
	if f, ok := g.DriveFileNamed("ok fifo cwd"); !ok || f.Content != "fine\n" {
		t.Errorf("the file read from the home: %+v", f)
	}
}
