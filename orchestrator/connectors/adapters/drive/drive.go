// Package drive is Google Drive's folder confinement: the folder picker and every Drive tool call
// on the Drive API (shared-drive flags on), keeping only files under the login's folder, checked
// through each file's parents chain (cached per call).
package drive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

const (
	provider     = "Google Drive"
	folderType   = "application/vnd.google-apps.folder"
	sharedWithMe = "shared-with-me" // the picker's id of Shared with me
	maxDepth     = 32               // parents walked before a file is taken as outside
	maxFile      = 16 << 20         // the most downloaded into, or uploaded from, the workspace
	readClip     = 32 << 10         // read_file_content's text clip, in bytes
	fileFields   = "id,name,mimeType,parents,driveId,size,modifiedTime,createdTime,webViewLink,trashed"
)

// Drive implements connections.DriveAPI over the Drive API (the manifest's api endpoint).
type Drive struct {
	Client *http.Client                                  // nil is the frame's
	Files  func(run orchestrator.Run) adapters.Workspace // the run's workspace (adapters.Local.Workspace); nil: create and download are refused
}

var _ connections.DriveAPI = Drive{}

// File is a Drive API file, the fields read.
type File struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	MimeType     string   `json:"mimeType"`
	Parents      []string `json:"parents"`
	DriveID      string   `json:"driveId"`
	Size         string   `json:"size"`
	ModifiedTime string   `json:"modifiedTime"`
	CreatedTime  string   `json:"createdTime"`
	WebViewLink  string   `json:"webViewLink"`
	Trashed      bool     `json:"trashed"`
}

// api is one call's view of the Drive API with the login's bearer.
type api struct {
	srv    orchestrator.MCPServer
	bearer connections.Bearer
	client *http.Client
	base   string
}

func (d Drive) api(srv orchestrator.MCPServer, b connections.Bearer) (*api, error) {
	base := strings.TrimRight(strings.TrimSpace(srv.Endpoints["api"]), "/")
	if base == "" {
		return nil, adapters.Invalid(provider, `the catalog row has no "api" endpoint; an instance admin sets it under Connector catalog`)
	}
	if b == nil {
		return nil, adapters.Invalid(provider, "the login holds no Google token; connect Google Drive again")
	}
	return &api{srv: srv, bearer: b, client: d.Client, base: base}, nil
}

// do sends one request with the bearer; a 401 renews the token once and sends it again.
func (a *api) do(ctx context.Context, r adapters.Request) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		h, err := a.bearer.Header(ctx)
		if err != nil {
			return nil, &adapters.Error{Kind: adapters.KindRejected, Provider: provider, Msg: "the Google login's token could not be renewed: " + err.Error()}
		}
		auth := h.Get("Authorization")
		c := adapters.HTTP{Provider: provider, Login: adapters.Login{Client: a.client}, Auth: func(h http.Header) { h.Set("Authorization", auth) }}
		body, err := c.Do(ctx, r)
		if attempt == 0 && adapters.StatusOf(err) == http.StatusUnauthorized {
			if rerr := a.bearer.Rejected(ctx); rerr != nil {
				return nil, &adapters.Error{Kind: adapters.KindRejected, Provider: provider, Msg: "refused the login's token and it could not be renewed: " + rerr.Error()}
			}
			continue
		}
		return body, err
	}
}

func (a *api) json(ctx context.Context, r adapters.Request, out any) error {
	body, err := a.do(ctx, r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: provider, Msg: "answered a body that is not the expected JSON"}
	}
	return nil
}

// allDrives are the shared-drive flags of every files request.
func allDrives(q url.Values) url.Values {
	if q == nil {
		q = url.Values{}
	}
	q.Set("supportsAllDrives", "true")
	return q
}

// file reads one file's metadata; an id the token does not see is ENOTFOUND.
func (a *api) file(ctx context.Context, id string) (File, error) {
	var f File
	err := a.json(ctx, adapters.Get(a.base, "/files/"+url.PathEscape(id), allDrives(url.Values{"fields": {fileFields}}), "file "+id), &f)
	return f, err
}

// list runs files.list over every drive with q and returns one page.
func (a *api) list(ctx context.Context, q url.Values) ([]File, string, error) {
	q = allDrives(q)
	q.Set("includeItemsFromAllDrives", "true")
	q.Set("corpora", "allDrives")
	q.Set("fields", "nextPageToken,files("+fileFields+")")
	var out struct {
		Files []File `json:"files"`
		Next  string `json:"nextPageToken"`
	}
	err := a.json(ctx, adapters.Get(a.base, "/files", q, "files"), &out)
	return out.Files, out.Next, err
}

// Folders lists the picker's entries under parent.
func (d Drive) Folders(ctx context.Context, srv orchestrator.MCPServer, b connections.Bearer, parent string) ([]connections.DriveFolder, error) {
	a, err := d.api(srv, b)
	if err != nil {
		return nil, err
	}
	if parent == "" {
		out := []connections.DriveFolder{{ID: "root", Name: "My Drive", Kind: "my_drive"}, {ID: sharedWithMe, Name: "Shared with me", Kind: "shared_with_me"}}
		var drives struct {
			Drives []struct{ ID, Name string } `json:"drives"`
		}
		if err := a.json(ctx, adapters.Get(a.base, "/drives", url.Values{"pageSize": {"100"}}, "shared drives"), &drives); err != nil {
			return nil, err
		}
		for _, sd := range drives.Drives {
			out = append(out, connections.DriveFolder{ID: sd.ID, Name: sd.Name, Kind: "shared_drive", DriveID: sd.ID, Selectable: true})
		}
		return out, nil
	}
	q := "mimeType = '" + folderType + "' and trashed = false and "
	if parent == sharedWithMe {
		q += "sharedWithMe = true"
	} else {
		q += quote(parent) + " in parents"
	}
	files, _, err := a.list(ctx, url.Values{"q": {q}, "pageSize": {"200"}, "orderBy": {"name"}})
	if err != nil {
		return nil, err
	}
	out := make([]connections.DriveFolder, 0, len(files))
	for _, f := range files {
		out = append(out, connections.DriveFolder{ID: f.ID, Name: f.Name, Kind: "folder", DriveID: f.DriveID, Selectable: true})
	}
	return out, nil
}

// Folder reads a folder the operator picks; My Drive's root is never selectable.
func (d Drive) Folder(ctx context.Context, srv orchestrator.MCPServer, b connections.Bearer, id string) (connections.DriveFolder, error) {
	a, err := d.api(srv, b)
	if err != nil {
		return connections.DriveFolder{}, err
	}
	f, err := a.file(ctx, id)
	if adapters.StatusOf(err) == http.StatusNotFound {
		return connections.DriveFolder{}, orchestrator.Errorf(orchestrator.ENOTFOUND, "Google Drive shows this login no folder %q", id)
	}
	if err != nil {
		return connections.DriveFolder{}, err
	}
	if f.MimeType != folderType || f.Trashed {
		return connections.DriveFolder{}, orchestrator.Errorf(orchestrator.EINVALID, "%q (%s) is not a folder; pick a folder", f.Name, f.MimeType)
	}
	kind := "folder"
	if f.DriveID != "" && f.ID == f.DriveID {
		kind = "shared_drive"
	}
	out := connections.DriveFolder{ID: f.ID, Name: f.Name, Kind: kind, DriveID: f.DriveID, Selectable: true}
	if len(f.Parents) == 0 && f.DriveID == "" { // My Drive's root, or a shared folder whose parents are hidden
		root, err := a.file(ctx, "root")
		if err != nil {
			return connections.DriveFolder{}, err
		}
		if root.ID == f.ID {
			out.Kind, out.Selectable = "my_drive", false
		}
	}
	return out, nil
}

// confined is one call's view of the folder: files found inside or outside, by id.
type confined struct {
	*api
	folder string
	seen   map[string]bool // file id → inside the folder
	files  map[string]File
}

// inside reports whether a file is the folder or under it, walking its parents chain.
func (c *confined) inside(ctx context.Context, f File) (bool, error) {
	var chain []string
	for depth := 0; depth < maxDepth; depth++ {
		if in, ok := c.seen[f.ID]; ok {
			c.mark(chain, in)
			return in, nil
		}
		if f.ID == c.folder {
			c.mark(chain, true)
			return true, nil
		}
		chain = append(chain, f.ID)
		if len(f.Parents) == 0 {
			c.mark(chain, false)
			return false, nil
		}
		next, ok := c.files[f.Parents[0]]
		if !ok {
			p, err := c.file(ctx, f.Parents[0])
			if adapters.StatusOf(err) == http.StatusNotFound {
				c.mark(chain, false) // a parent the token cannot see is not the folder
				return false, nil
			}
			if err != nil {
				return false, err
			}
			c.files[p.ID], next = p, p
		}
		f = next
	}
	c.mark(chain, false) // deeper than maxDepth: taken as outside
	return false, nil
}

func (c *confined) mark(ids []string, in bool) {
	for _, id := range ids {
		c.seen[id] = in
	}
}

// get reads a file and refuses it when it lies outside the folder.
func (c *confined) get(ctx context.Context, id, arg string) (File, error) {
	if id == "" {
		return File{}, adapters.Invalid(provider, arg+" is required")
	}
	f, err := c.file(ctx, id)
	if err != nil {
		return File{}, err
	}
	in, err := c.inside(ctx, f)
	if err != nil {
		return File{}, err
	}
	if !in {
		return File{}, c.outside(id)
	}
	return f, nil
}

func (c *confined) outside(id string) error {
	return &adapters.Error{Kind: adapters.KindInvalid, Provider: provider, Msg: fmt.Sprintf("file %s is outside this connection's folder; only the folder and what lies under it can be reached", id)}
}

// Call runs one Drive tool confined to the login's folder.
func (d Drive) Call(ctx context.Context, call connections.DriveCall) (string, error) {
	a, err := d.api(call.Server, call.Bearer)
	if err != nil {
		return "", err
	}
	c := &confined{api: a, folder: call.Folder.FolderID, seen: map[string]bool{}, files: map[string]File{}}
	args := call.Args
	out, err := func() (string, error) {
		switch call.Tool {
		case "search_files":
			return c.search(ctx, args, false)
		case "list_recent_files":
			return c.search(ctx, args, true)
		case "get_file_metadata":
			f, err := c.get(ctx, adapters.Str(args, "fileId"), "fileId")
			if err != nil {
				return "", err
			}
			return metadata(f), nil
		case "get_file_permissions":
			return c.permissions(ctx, adapters.Str(args, "fileId"))
		case "read_file_content":
			return c.read(ctx, adapters.Str(args, "fileId"))
		case "download_file_content":
			return c.download(ctx, d.workspace(call), args)
		case "copy_file":
			return c.copy(ctx, args)
		case "create_file":
			return c.create(ctx, d.workspace(call), args)
		}
		return "", adapters.UnknownTool(provider, call.Tool)
	}()
	for _, t := range call.Bearer.Renewed() {
		if len(t) >= 4 {
			out = strings.ReplaceAll(out, t, "[redacted]")
		}
	}
	return out, err
}

func (d Drive) workspace(call connections.DriveCall) adapters.Workspace {
	if d.Files == nil || call.Run == nil {
		return nil
	}
	return d.Files(*call.Run)
}

// translate turns the Drive MCP query syntax into the Drive API's: title is name, parentId = 'x'
// is 'x' in parents.
var (
	titleTerm = regexp.MustCompile(`\btitle\b`)
	parentEq  = regexp.MustCompile(`\bparentId\s*=\s*('(?:[^'\\]|\\.)*')`)
	parentNe  = regexp.MustCompile(`\bparentId\s*!=\s*('(?:[^'\\]|\\.)*')`)
)

// Translate is the Drive API query of a search_files query.
func Translate(q string) string {
	q = parentNe.ReplaceAllString(q, "not $1 in parents")
	q = parentEq.ReplaceAllString(q, "$1 in parents")
	return titleTerm.ReplaceAllString(q, "name")
}

// search lists files matching the query (or the most recent ones), keeping those inside the folder.
func (c *confined) search(ctx context.Context, args map[string]any, recent bool) (string, error) {
	size := 25
	if n, ok := adapters.Int(args, "pageSize"); ok && n > 0 {
		size = min(n, 100)
	}
	q := url.Values{"pageSize": {strconv.Itoa(size)}}
	if pt := adapters.Str(args, "pageToken"); pt != "" {
		q.Set("pageToken", pt)
	}
	query := "trashed = false"
	if recent {
		q.Set("orderBy", "modifiedTime desc")
	} else {
		s := strings.TrimSpace(adapters.Str(args, "query"))
		if s == "" {
			return "", adapters.Invalid(provider, "query is required")
		}
		query = "(" + Translate(s) + ") and trashed = false"
	}
	q.Set("q", query)
	files, next, err := c.list(ctx, q)
	if err != nil {
		return "", err
	}
	t := adapters.NewTable("id", "name", "mime_type", "modified", "size")
	for _, f := range files {
		in, err := c.inside(ctx, f)
		if err != nil {
			return "", err
		}
		if in {
			t.Add(f.ID, f.Name, f.MimeType, f.ModifiedTime, f.Size)
		}
	}
	if next != "" {
		t.Note(adapters.NextPage("pageToken", next))
	}
	if t.Len() == 0 && next == "" {
		return "no files in this connection's folder match", nil
	}
	return t.String(), nil
}

// metadata is one file's metadata as text.
func metadata(f File) string {
	var b strings.Builder
	for _, kv := range [][2]string{{"id", f.ID}, {"name", f.Name}, {"mime_type", f.MimeType}, {"size", f.Size}, {"created", f.CreatedTime},
		{"modified", f.ModifiedTime}, {"parents", strings.Join(f.Parents, ", ")}, {"drive_id", f.DriveID}, {"link", f.WebViewLink}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s: %s\n", kv[0], kv[1])
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (c *confined) permissions(ctx context.Context, id string) (string, error) {
	if _, err := c.get(ctx, id, "fileId"); err != nil {
		return "", err
	}
	var out struct {
		Permissions []struct {
			ID, Type, Role, EmailAddress, Domain, DisplayName string
		} `json:"permissions"`
	}
	q := allDrives(url.Values{"fields": {"permissions(id,type,role,emailAddress,domain,displayName)"}})
	if err := c.json(ctx, adapters.Get(c.base, "/files/"+url.PathEscape(id)+"/permissions", q, "permissions of "+id), &out); err != nil {
		return "", err
	}
	t := adapters.NewTable("id", "type", "role", "who")
	for _, p := range out.Permissions {
		who := p.EmailAddress
		if who == "" {
			who = p.Domain
		}
		if p.DisplayName != "" && who != "" {
			who = p.DisplayName + " <" + who + ">"
		}
		t.Add(p.ID, p.Type, p.Role, who)
	}
	return t.String(), nil
}

// content downloads a file's bytes, exporting a Google document to exportType.
func (c *confined) content(ctx context.Context, f File, exportType string) ([]byte, error) {
	if strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") {
		if f.MimeType == folderType {
			return nil, adapters.Invalid(provider, f.Name+" is a folder; search it with search_files (parentId = '"+f.ID+"')")
		}
		if exportType == "" {
			return nil, adapters.Invalid(provider, f.Name+" is a Google document ("+f.MimeType+"); pass exportMimeType, e.g. text/plain or application/pdf")
		}
		return c.do(ctx, adapters.Get(c.base, "/files/"+url.PathEscape(f.ID)+"/export", url.Values{"mimeType": {exportType}}, "file "+f.ID))
	}
	return c.do(ctx, adapters.Get(c.base, "/files/"+url.PathEscape(f.ID), allDrives(url.Values{"alt": {"media"}}), "file "+f.ID))
}

func (c *confined) read(ctx context.Context, id string) (string, error) {
	f, err := c.get(ctx, id, "fileId")
	if err != nil {
		return "", err
	}
	export := ""
	if strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") {
		export = "text/plain"
		if f.MimeType == "application/vnd.google-apps.spreadsheet" {
			export = "text/csv"
		}
	} else if !strings.HasPrefix(f.MimeType, "text/") && f.MimeType != "application/json" {
		return "", adapters.Invalid(provider, fmt.Sprintf("%s is %s, not text; download it with download_file_content", f.Name, f.MimeType))
	}
	b, err := c.content(ctx, f, export)
	if err != nil {
		return "", err
	}
	text := strings.ToValidUTF8(string(b), "\uFFFD")
	if len(text) > readClip {
		cut := readClip
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + fmt.Sprintf("\n[… %d more bytes; download_file_content has it all]", len(text)-cut)
	}
	return text, nil
}

func (c *confined) download(ctx context.Context, ws adapters.Workspace, args map[string]any) (string, error) {
	if ws == nil {
		return "", adapters.Invalid(provider, "download_file_content writes into a run's workspace; call it from a run")
	}
	path := adapters.Str(args, "file_path")
	if path == "" {
		return "", adapters.Invalid(provider, "file_path is required: where in /home/agent the file is written")
	}
	f, err := c.get(ctx, adapters.Str(args, "fileId"), "fileId")
	if err != nil {
		return "", err
	}
	if n, _ := strconv.ParseInt(f.Size, 10, 64); n > maxFile {
		return "", adapters.Invalid(provider, fmt.Sprintf("%s is %d bytes; at most %d MiB is written to the workspace", f.Name, n, maxFile>>20))
	}
	b, err := c.content(ctx, f, adapters.Str(args, "exportMimeType"))
	if err != nil {
		return "", err
	}
	if len(b) > maxFile {
		return "", adapters.Invalid(provider, fmt.Sprintf("%s is %d bytes; at most %d MiB is written to the workspace", f.Name, len(b), maxFile>>20))
	}
	wrote, err := ws.WriteFile(ctx, path, b)
	if err != nil {
		return "", adapters.Invalid(provider, "writing "+path+" failed: "+err.Error())
	}
	return fmt.Sprintf("wrote %s (%d bytes, %s) to %s", f.Name, len(b), f.MimeType, wrote), nil
}

// parent is the folder a new file lands in: parentId when it lies inside, else the login's folder.
func (c *confined) parent(ctx context.Context, args map[string]any, def string) (string, error) {
	id := adapters.Str(args, "parentId")
	if id == "" {
		return def, nil
	}
	f, err := c.get(ctx, id, "parentId")
	if err != nil {
		return "", err
	}
	if f.MimeType != folderType {
		return "", adapters.Invalid(provider, "parentId "+id+" is not a folder")
	}
	return f.ID, nil
}

func (c *confined) copy(ctx context.Context, args map[string]any) (string, error) {
	src, err := c.get(ctx, adapters.Str(args, "fileId"), "fileId")
	if err != nil {
		return "", err
	}
	def := c.folder
	if len(src.Parents) > 0 {
		def = src.Parents[0] // inside, as src is and src is not the folder itself
	}
	if src.ID == c.folder {
		return "", adapters.Invalid(provider, "the connection's folder itself cannot be copied")
	}
	p, err := c.parent(ctx, args, def)
	if err != nil {
		return "", err
	}
	body := map[string]any{"parents": []string{p}}
	if t := adapters.Str(args, "title"); t != "" {
		body["name"] = t
	}
	j, _ := json.Marshal(body)
	var f File
	q := allDrives(url.Values{"fields": {fileFields}})
	if err := c.json(ctx, adapters.Request{Method: http.MethodPost, URL: c.base + "/files/" + url.PathEscape(src.ID) + "/copy?" + q.Encode(), Body: j,
		Type: "application/json", What: "file " + src.ID}, &f); err != nil {
		return "", err
	}
	return "copied\n" + metadata(f), nil
}

func (c *confined) create(ctx context.Context, ws adapters.Workspace, args map[string]any) (string, error) {
	title := strings.TrimSpace(adapters.Str(args, "title"))
	if title == "" {
		return "", adapters.Invalid(provider, "title is required")
	}
	p, err := c.parent(ctx, args, c.folder)
	if err != nil {
		return "", err
	}
	mt := adapters.StrOr(args, "mimeType", "application/octet-stream")
	var data []byte
	path, text := adapters.Str(args, "file_path"), adapters.Str(args, "textContent")
	switch {
	case path != "" && text != "":
		return "", adapters.Invalid(provider, "pass file_path or textContent, not both")
	case path != "":
		if ws == nil {
			return "", adapters.Invalid(provider, "create_file reads file_path from a run's workspace; call it from a run, or pass textContent")
		}
		if data, err = ws.ReadFile(ctx, path); err != nil {
			return "", adapters.Invalid(provider, "reading "+path+" failed: "+err.Error())
		}
	case text != "":
		if len(text) > 1<<20 {
			return "", adapters.Invalid(provider, "textContent is for small text (at most 1 MiB); write the file to the workspace and pass file_path")
		}
		data = []byte(text)
		if _, ok := args["mimeType"]; !ok {
			mt = "text/plain"
		}
	case mt != folderType && !strings.HasPrefix(mt, "application/vnd.google-apps."):
		return "", adapters.Invalid(provider, "pass file_path (a workspace file) or textContent")
	}
	meta := map[string]any{"name": title, "mimeType": mt, "parents": []string{p}}
	if data != nil && !adapters.Bool(args, "disable_conversion_to_google_type") {
		switch mt {
		case "text/plain":
			meta["mimeType"] = "application/vnd.google-apps.document"
		case "text/csv":
			meta["mimeType"] = "application/vnd.google-apps.spreadsheet"
		}
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	mj, _ := json.Marshal(meta)
	part, _ := w.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json; charset=UTF-8"}})
	_, _ = part.Write(mj)
	part, _ = w.CreatePart(textproto.MIMEHeader{"Content-Type": {mt}})
	_, _ = part.Write(data)
	_ = w.Close()
	upload, err := uploadBase(c.base)
	if err != nil {
		return "", err
	}
	q := allDrives(url.Values{"uploadType": {"multipart"}, "fields": {fileFields}})
	var f File
	if err := c.json(ctx, adapters.Request{Method: http.MethodPost, URL: upload + "/files?" + q.Encode(), Body: body.Bytes(),
		Type: "multipart/related; boundary=" + w.Boundary(), What: "the folder " + p}, &f); err != nil {
		return "", err
	}
	return "created\n" + metadata(f), nil
}

// uploadBase is the Drive API's upload root beside its api root: /upload before the path.
func uploadBase(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", adapters.Invalid(provider, "the catalog row's api endpoint is not a URL")
	}
	u.Path = "/upload" + u.Path
	return u.String(), nil
}

// quote is a Drive query string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
