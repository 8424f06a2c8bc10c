package googletest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The fake Drive: My Drive holds Projects (Q3/report.txt and the Google doc Plan) and Private
// (secret.txt); the shared drive Team holds Shared Plans (notes.md); Partner is shared with the
// user. Its files answer the Drive API v3 shapes (files, drives, permissions, export, copy,
// multipart upload); its queries understand the clauses the orchestrator sends, joined by and.
const (
	MyDriveRoot = "0AMyDriveRootFolder"
	Projects    = "1ProjectsFolderId"
	Q3          = "1Q3FolderId"
	Report      = "1ReportTxtFileId"
	Plan        = "1PlanGoogleDocId"
	Private     = "1PrivateFolderId"
	Secret      = "1SecretTxtFileId"
	TeamDrive   = "0ATeamSharedDrive"
	SharedPlans = "1SharedPlansFolderId"
	Notes       = "1NotesMdFileId"
	Partner     = "1PartnerFolderId"
	folderMime  = "application/vnd.google-apps.folder"
)

// DriveFile is one file of the fake Drive.
type DriveFile struct {
	ID, Name, MimeType, DriveID, Modified string
	Parents                               []string
	Content                               string
	Shared                                bool
}

func (s *Server) seedDrive() {
	s.files = map[string]*DriveFile{}
	for _, f := range []DriveFile{
		{ID: MyDriveRoot, Name: "My Drive", MimeType: folderMime, Modified: "2024-01-01T00:00:00.000Z"},
		{ID: Projects, Name: "Projects", MimeType: folderMime, Parents: []string{MyDriveRoot}, Modified: "2024-05-01T09:00:00.000Z"},
		{ID: Q3, Name: "Q3", MimeType: folderMime, Parents: []string{Projects}, Modified: "2024-05-02T09:00:00.000Z"},
		{ID: Report, Name: "report.txt", MimeType: "text/plain", Parents: []string{Q3}, Modified: "2024-06-03T10:00:00.000Z", Content: "Q3 revenue is up 12%.\n"},
		{ID: Plan, Name: "Plan", MimeType: "application/vnd.google-apps.document", Parents: []string{Projects}, Modified: "2024-06-04T08:00:00.000Z", Content: "Plan: ship the Drive connector."},
		{ID: Private, Name: "Private", MimeType: folderMime, Parents: []string{MyDriveRoot}, Modified: "2024-05-01T09:00:00.000Z"},
		{ID: Secret, Name: "secret report.txt", MimeType: "text/plain", Parents: []string{Private}, Modified: "2024-06-05T10:00:00.000Z", Content: "the private numbers\n"},
		{ID: TeamDrive, Name: "Team", MimeType: folderMime, DriveID: TeamDrive, Modified: "2024-01-01T00:00:00.000Z"},
		{ID: SharedPlans, Name: "Shared Plans", MimeType: folderMime, DriveID: TeamDrive, Parents: []string{TeamDrive}, Modified: "2024-05-01T09:00:00.000Z"},
		{ID: Notes, Name: "notes.md", MimeType: "text/markdown", DriveID: TeamDrive, Parents: []string{SharedPlans}, Modified: "2024-06-01T10:00:00.000Z", Content: "# Notes\n"},
		{ID: Partner, Name: "Partner", MimeType: folderMime, Shared: true, Modified: "2024-04-01T09:00:00.000Z"},
	} {
		s.files[f.ID] = &f
	}
}

// DriveEndpoints are the fake's endpoints for the drive catalog row.
func (s *Server) DriveEndpoints() map[string]any {
	return map[string]any{"authorize": s.URL + "/o/oauth2/v2/auth", "token": s.URL + "/token", "api": s.URL + "/drive/v3", "mcp": s.URL + "/mcp/v1"}
}

// ContentReads lists the file ids whose bytes were read (alt=media or export), in order.
func (s *Server) ContentReads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reads...)
}

// DriveFileNamed returns a copy of the fake's file with that name.
func (s *Server) DriveFileNamed(name string) (DriveFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		if f.Name == name {
			return *f, true
		}
	}
	return DriveFile{}, false
}

func (f *DriveFile) resource() map[string]any {
	m := map[string]any{"kind": "drive#file", "id": f.ID, "name": f.Name, "mimeType": f.MimeType, "modifiedTime": f.Modified,
		"createdTime": f.Modified, "webViewLink": "https://drive.google.com/file/d/" + f.ID + "/view", "trashed": false}
	if len(f.Parents) > 0 {
		m["parents"] = f.Parents
	}
	if f.DriveID != "" {
		m["driveId"] = f.DriveID
	}
	if f.MimeType != folderMime && !strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") {
		m["size"] = fmt.Sprint(len(f.Content))
	}
	return m
}

var clause = regexp.MustCompile(`^(not )?'((?:[^'\\]|\\.)*)' in parents$|^mimeType = '([^']*)'$|^name (contains|=) '((?:[^'\\]|\\.)*)'$|^fullText contains '((?:[^'\\]|\\.)*)'$|^sharedWithMe = true$|^trashed = false$`)

// match evaluates a query of clauses joined by and (parentheses ignored).
func (f *DriveFile) match(q string) (bool, error) {
	q = strings.NewReplacer("(", "", ")", "").Replace(q)
	for _, c := range strings.Split(q, " and ") {
		c = strings.TrimSpace(c)
		m := clause.FindStringSubmatch(c)
		if m == nil {
			return false, fmt.Errorf("Invalid Value: %s", c)
		}
		unq := func(s string) string { return strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(s) }
		ok := true
		switch {
		case m[2] != "" || strings.HasSuffix(c, "in parents"):
			id := unq(m[2])
			if id == "root" {
				id = MyDriveRoot
			}
			ok = slices.Contains(f.Parents, id) != (m[1] != "")
		case m[3] != "":
			ok = f.MimeType == m[3]
		case m[4] == "contains":
			ok = strings.Contains(strings.ToLower(f.Name), strings.ToLower(unq(m[5])))
		case m[4] == "=":
			ok = f.Name == unq(m[5])
		case m[6] != "":
			ok = strings.Contains(strings.ToLower(f.Name+" "+f.Content), strings.ToLower(unq(m[6])))
		case c == "sharedWithMe = true":
			ok = f.Shared
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

func badRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, 400, map[string]any{"error": map[string]any{"code": 400, "message": msg, "errors": []any{map[string]any{"message": msg, "domain": "global", "reason": "invalid"}}}})
}

func driveNotFound(w http.ResponseWriter, id string) {
	msg := "File not found: " + id + "."
	writeJSON(w, 404, map[string]any{"error": map[string]any{"code": 404, "message": msg, "errors": []any{map[string]any{"message": msg, "domain": "global", "reason": "notFound", "location": "fileId", "locationType": "parameter"}}}})
}

// file finds a file by id (root is My Drive's root); s.mu is held.
func (s *Server) file(id string) *DriveFile {
	if id == "root" {
		id = MyDriveRoot
	}
	return s.files[id]
}

func (s *Server) drive(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/drive/v3")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == "GET" && path == "/drives":
		writeJSON(w, 200, map[string]any{"kind": "drive#driveList", "drives": []any{map[string]any{"kind": "drive#drive", "id": TeamDrive, "name": "Team"}}})
	case r.Method == "GET" && path == "/files":
		if q.Get("supportsAllDrives") != "true" || q.Get("includeItemsFromAllDrives") != "true" {
			badRequest(w, "the fake wants the shared-drive flags on every list")
			return
		}
		var out []*DriveFile
		for _, f := range s.files {
			ok, err := f.match(q.Get("q"))
			if err != nil {
				badRequest(w, err.Error())
				return
			}
			if ok && f.ID != MyDriveRoot && f.ID != TeamDrive {
				out = append(out, f)
			}
		}
		sort.Slice(out, func(i, j int) bool {
			if q.Get("orderBy") == "modifiedTime desc" {
				return out[i].Modified > out[j].Modified
			}
			return out[i].Name < out[j].Name
		})
		files := make([]any, 0, len(out))
		for _, f := range out {
			files = append(files, f.resource())
		}
		writeJSON(w, 200, map[string]any{"kind": "drive#fileList", "incompleteSearch": false, "files": files})
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "files":
		f := s.file(parts[1])
		if f == nil {
			driveNotFound(w, parts[1])
			return
		}
		if q.Get("alt") == "media" {
			if strings.HasPrefix(f.MimeType, "application/vnd.google-apps.") {
				writeJSON(w, 403, map[string]any{"error": map[string]any{"code": 403, "message": "Only files with binary content can be downloaded. Use Export with Docs Editors files."}})
				return
			}
			s.reads = append(s.reads, f.ID)
			w.Header().Set("Content-Type", f.MimeType)
			_, _ = io.WriteString(w, f.Content)
			return
		}
		writeJSON(w, 200, f.resource())
	case r.Method == "GET" && len(parts) == 3 && parts[0] == "files" && parts[2] == "export":
		f := s.file(parts[1])
		if f == nil {
			driveNotFound(w, parts[1])
			return
		}
		s.reads = append(s.reads, f.ID)
		w.Header().Set("Content-Type", q.Get("mimeType"))
		_, _ = io.WriteString(w, f.Content)
	case r.Method == "GET" && len(parts) == 3 && parts[0] == "files" && parts[2] == "permissions":
		if s.file(parts[1]) == nil {
			driveNotFound(w, parts[1])
			return
		}
		writeJSON(w, 200, map[string]any{"kind": "drive#permissionList", "permissions": []any{
			map[string]any{"kind": "drive#permission", "id": "06193421", "type": "user", "role": "owner", "emailAddress": Email, "displayName": "Ada Lovelace"},
			map[string]any{"kind": "drive#permission", "id": "anyoneWithLink", "type": "anyone", "role": "reader"}}})
	case r.Method == "POST" && len(parts) == 3 && parts[0] == "files" && parts[2] == "copy":
		src := s.file(parts[1])
		if src == nil {
			driveNotFound(w, parts[1])
			return
		}
		var in struct {
			Name    string   `json:"name"`
			Parents []string `json:"parents"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		cp := *src
		s.seq++
		cp.ID, cp.Parents = fmt.Sprintf("1CopyFileId%03d", s.seq), in.Parents
		if cp.Name = in.Name; cp.Name == "" {
			cp.Name = "Copy of " + src.Name
		}
		s.files[cp.ID] = &cp
		writeJSON(w, 200, cp.resource())
	default:
		driveNotFound(w, path)
	}
}

// upload answers a multipart upload: the metadata part, then the media part.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("uploadType") != "multipart" {
		badRequest(w, "the fake takes uploadType=multipart")
		return
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/related" {
		badRequest(w, "Bad content type: "+r.Header.Get("Content-Type"))
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var meta struct {
		Name     string   `json:"name"`
		MimeType string   `json:"mimeType"`
		Parents  []string `json:"parents"`
	}
	p, err := mr.NextPart()
	if err != nil || json.NewDecoder(p).Decode(&meta) != nil {
		badRequest(w, "the metadata part is missing")
		return
	}
	var content []byte
	if p, err := mr.NextPart(); err == nil {
		content, _ = io.ReadAll(io.LimitReader(p, 64<<20))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	f := &DriveFile{ID: fmt.Sprintf("1NewFileId%03d", s.seq), Name: meta.Name, MimeType: meta.MimeType, Parents: meta.Parents, Content: string(content),
		Modified: "2024-06-06T10:00:00.000Z"}
	if len(f.Parents) == 0 {
		f.Parents = []string{MyDriveRoot}
	}
	if par := s.file(f.Parents[0]); par != nil {
		f.DriveID = par.DriveID
	}
	s.files[f.ID] = f
	writeJSON(w, 200, f.resource())
}
