package drive_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/adapterstest"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters/drive"
	"github.com/guildsai/guilds/orchestrator/connectors/google/googletest"
)

// token is a bearer that sends one token.
type token string

func (t token) Header(context.Context) (http.Header, error) {
	return http.Header{"Authorization": {"Bearer " + string(t)}}, nil
}
func (token) Rejected(context.Context) error { return errors.New("refused") }
func (token) Renewed() []string              { return nil }

// workspace is a run's files in memory, under /home/agent.
type workspace struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (w *workspace) abs(p string) (string, error) {
	if !path.IsAbs(p) {
		p = path.Join("/home/agent", p)
	}
	if p = path.Clean(p); !strings.HasPrefix(p, "/home/agent/") {
		return "", errors.New("the path is outside /home/agent")
	}
	return p, nil
}

func (w *workspace) ReadFile(_ context.Context, p string) ([]byte, error) {
	p, err := w.abs(p)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.files[p]
	if !ok {
		return nil, errors.New("no such file")
	}
	return b, nil
}

func (w *workspace) WriteFile(_ context.Context, p string, b []byte) (string, error) {
	p, err := w.abs(p)
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files[p] = b
	return p, nil
}

type fixture struct {
	g     *googletest.Server
	d     drive.Drive
	ws    *workspace
	srv   orchestrator.MCPServer
	token connections.Bearer
}

func newFixture(t *testing.T) *fixture {
	g := googletest.New()
	t.Cleanup(g.Close)
	ws := &workspace{files: map[string][]byte{"/home/agent/out/summary.csv": []byte("a,b\n1,2\n")}}
	return &fixture{g: g, ws: ws, d: drive.Drive{Files: func(orchestrator.Run) adapters.Workspace { return ws }},
		srv: orchestrator.MCPServer{Slug: "drive", Name: "Google Drive", Endpoints: orchestrator.Endpoints{"api": g.URL + "/drive/v3"}}, token: token(g.Grant())}
}

func (f *fixture) call(folder, tool string, args map[string]any) (string, error) {
	return f.d.Call(context.Background(), connections.DriveCall{Server: f.srv, ConnectionID: "conn_1", Bearer: f.token, Tool: tool, Args: args,
		Folder: connections.DriveSettings{FolderID: folder}, Run: &orchestrator.Run{ID: "run_1", AgentID: "agent_1"}})
}

// TestFolders: the picker's roots, a folder's subfolders, Shared with me, and which can be picked.
func TestFolders(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	names := func(fs []connections.DriveFolder) (out []string) {
		for _, x := range fs {
			out = append(out, x.Name+"/"+x.Kind+map[bool]string{true: "+", false: "-"}[x.Selectable])
		}
		return out
	}
	cases := []struct {
		parent string
		want   []string
	}{
		{"", []string{"My Drive/my_drive-", "Shared with me/shared_with_me-", "Team/shared_drive+"}},
		{"root", []string{"Private/folder+", "Projects/folder+"}},
		{googletest.Projects, []string{"Q3/folder+"}},
		{"shared-with-me", []string{"Partner/folder+"}},
		{googletest.TeamDrive, []string{"Shared Plans/folder+"}},
	}
	for _, tc := range cases {
		got, err := f.d.Folders(ctx, f.srv, f.token, tc.parent)
		if err != nil || !slices.Equal(names(got), tc.want) {
			t.Errorf("Folders(%q) = %v %v, want %v", tc.parent, names(got), err, tc.want)
		}
	}
	for id, selectable := range map[string]bool{"root": false, googletest.Projects: true, googletest.TeamDrive: true, googletest.Partner: true} {
		got, err := f.d.Folder(ctx, f.srv, f.token, id)
		if err != nil || got.Selectable != selectable {
			t.Errorf("Folder(%s) = %+v %v, want selectable %v", id, got, err, selectable)
		}
	}
	if _, err := f.d.Folder(ctx, f.srv, f.token, "1Unknown"); orchestrator.ErrorCode(err) != orchestrator.ENOTFOUND {
		t.Errorf("an unseen folder: %v", err)
	}
	if _, err := f.d.Folder(ctx, f.srv, f.token, googletest.Report); orchestrator.ErrorCode(err) != orchestrator.EINVALID {
		t.Errorf("a file as a folder: %v", err)
	}
}

// TestConfinedTools: inside Projects every tool works; a file outside it (Private's secret, a
// shared-with-me folder, My Drive's root) is refused by every tool, and its bytes are never read.
func TestConfinedTools(t *testing.T) {
	f := newFixture(t)
	inside := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_files", map[string]any{"query": "title contains 'report'"}, "1ReportTxtFileId\treport.txt\ttext/plain"},
		{"search_files", map[string]any{"query": "parentId = '" + googletest.Q3 + "'"}, "report.txt"},
		{"list_recent_files", map[string]any{}, "1PlanGoogleDocId\tPlan"},
		{"get_file_metadata", map[string]any{"fileId": googletest.Report}, "parents: " + googletest.Q3},
		{"get_file_permissions", map[string]any{"fileId": googletest.Plan}, "owner\tAda Lovelace <ada@acme.example>"},
		{"read_file_content", map[string]any{"fileId": googletest.Plan}, "Plan: ship the Drive connector."},
		{"read_file_content", map[string]any{"fileId": googletest.Report}, "Q3 revenue is up 12%."},
		{"download_file_content", map[string]any{"fileId": googletest.Report, "file_path": "in/report.txt"}, "wrote report.txt (22 bytes, text/plain) to /home/agent/in/report.txt"},
		{"copy_file", map[string]any{"fileId": googletest.Report, "title": "report copy"}, "name: report copy\nmime_type: text/plain"},
		{"create_file", map[string]any{"title": "summary", "mimeType": "text/csv", "file_path": "out/summary.csv", "parentId": googletest.Q3}, "mime_type: application/vnd.google-apps.spreadsheet"},
		{"create_file", map[string]any{"title": "note.txt", "textContent": "hello", "disable_conversion_to_google_type": true}, "parents: " + googletest.Projects},
	}
	for _, tc := range inside {
		out, err := f.call(googletest.Projects, tc.tool, tc.args)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s %v inside the folder: %q %v, want %q", tc.tool, tc.args, out, err, tc.want)
		}
	}
	if got := string(f.ws.files["/home/agent/in/report.txt"]); got != "Q3 revenue is up 12%.\n" {
		t.Errorf("downloaded %q", got)
	}
	for _, out := range []string{must(f.call(googletest.Projects, "search_files", map[string]any{"query": "fullText contains 'report'"})),
		must(f.call(googletest.Projects, "list_recent_files", nil))} {
		if strings.Contains(out, "secret") || strings.Contains(out, googletest.Secret) {
			t.Errorf("a list shows a file outside the folder: %q", out)
		}
	}
	for _, outside := range []string{googletest.Secret, googletest.Private, googletest.Partner, "root", googletest.Notes} {
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"get_file_metadata", map[string]any{"fileId": outside}},
			{"get_file_permissions", map[string]any{"fileId": outside}},
			{"read_file_content", map[string]any{"fileId": outside}},
			{"download_file_content", map[string]any{"fileId": outside, "file_path": "x"}},
			{"copy_file", map[string]any{"fileId": outside}},
			{"copy_file", map[string]any{"fileId": googletest.Report, "parentId": outside}},
			{"create_file", map[string]any{"title": "x", "textContent": "x", "parentId": outside}},
			{"search_files", map[string]any{"query": "parentId = '" + outside + "'"}},
		} {
			out, err := f.call(googletest.Projects, tc.tool, tc.args)
			refused := err != nil && strings.Contains(err.Error(), "outside this connection's folder")
			if tc.tool == "search_files" { // lists keep what lies inside: at most the folder itself (a child of root)
				refused = err == nil
				for _, name := range []string{"Private", "secret", "Partner", "notes", "Q3"} {
					refused = refused && !strings.Contains(out, name)
				}
			}
			if !refused {
				t.Errorf("%s %v on a file outside the folder: %q %v", tc.tool, tc.args, out, err)
			}
		}
	}
	for _, id := range f.g.ContentReads() {
		if id != googletest.Report && id != googletest.Plan {
			t.Errorf("the bytes of %s, outside the folder, were read", id)
		}
	}
	if _, ok := f.g.DriveFileNamed("x"); ok {
		t.Error("a file was created outside the folder")
	}
	// A shared drive's folder confines the same way.
	if out, err := f.call(googletest.TeamDrive, "read_file_content", map[string]any{"fileId": googletest.Notes}); err != nil || out != "# Notes\n" {
		t.Errorf("a file of the shared drive: %q %v", out, err)
	}
	if _, err := f.call(googletest.TeamDrive, "read_file_content", map[string]any{"fileId": googletest.Report}); err == nil {
		t.Error("a My Drive file was read through a shared-drive login")
	}
}

// TestRefusedArguments: missing arguments and a non-text read each answer one line.
func TestRefusedArguments(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_files", nil, "Google Drive: query is required"},
		{"get_file_metadata", nil, "Google Drive: fileId is required"},
		{"download_file_content", map[string]any{"fileId": googletest.Report}, "Google Drive: file_path is required"},
		{"download_file_content", map[string]any{"fileId": googletest.Plan, "file_path": "p"}, "pass exportMimeType"},
		{"download_file_content", map[string]any{"fileId": googletest.Report, "file_path": "/etc/passwd"}, "outside /home/agent"},
		{"create_file", map[string]any{"title": "t"}, "pass file_path (a workspace file) or textContent"},
		{"create_file", map[string]any{"title": "t", "file_path": "nope"}, "reading nope failed"},
		{"nope", nil, `Google Drive: no tool "nope"`},
	} {
		_, err := f.call(googletest.Projects, tc.tool, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.tool, tc.args, err, tc.want)
		}
		if _, ok := adapters.KindOf(err); !ok {
			t.Errorf("%s: %v is not a provider line", tc.tool, err)
		}
	}
}

// TestTranslate: the Drive MCP query syntax becomes the Drive API's.
func TestTranslate(t *testing.T) {
	for in, want := range map[string]string{
		"title contains 'a'":                   "name contains 'a'",
		"parentId = '123' and title = 'x'":     "'123' in parents and name = 'x'",
		"parentId != 'r\\'s'":                  "not 'r\\'s' in parents",
		"fullText contains 'subtitle details'": "fullText contains 'subtitle details'",
	} {
		if got := drive.Translate(in); got != want {
			t.Errorf("Translate(%q) = %q, want %q", in, got, want)
		}
	}
}

func must(s string, err error) string {
	if err != nil {
		return "ERROR: " + err.Error()
	}
	return s
}

// BenchmarkConfinedSearch: search_files confined to Projects (each hit's parents chain walked,
// cached per call) against the one files.list GET it starts with, in the same run.
func BenchmarkConfinedSearch(b *testing.B) {
	g := googletest.New()
	b.Cleanup(g.Close)
	tok := g.Grant()
	d := drive.Drive{}
	srv := orchestrator.MCPServer{Slug: "drive", Endpoints: orchestrator.Endpoints{"api": g.URL + "/drive/v3"}}
	raw := g.URL + "/drive/v3/files?q=" + url.QueryEscape("(name contains 'report') and trashed = false") + "&supportsAllDrives=true&includeItemsFromAllDrives=true&corpora=allDrives"
	adapterstest.Compare(b, "search", raw, http.Header{"Authorization": {"Bearer " + tok}}, func() error {
		out, err := d.Call(context.Background(), connections.DriveCall{Server: srv, Bearer: token(tok), Tool: "search_files",
			Args: map[string]any{"query": "title contains 'report'"}, Folder: connections.DriveSettings{FolderID: googletest.Projects}})
		if err == nil && (!strings.Contains(out, "report.txt") || strings.Contains(out, "secret")) {
			err = errors.New("the confined search answered " + out)
		}
		return err
	})
}
