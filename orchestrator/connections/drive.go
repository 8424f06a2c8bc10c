package connections

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
)

// Drive logins are confined to one folder: after the Google login the connection stays pending
// (its tokens held) until the operator picks a folder that is not My Drive; every call then goes
// to the Drive API through DriveAPI, which refuses a file outside that folder.

// DriveSlug is the catalog slug of Google Drive.
const DriveSlug = "drive"

// DriveFolder is one entry of the folder picker, or the folder a login is confined to.
type DriveFolder struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Kind       string `json:"kind"` // my_drive, shared_with_me, shared_drive or folder
	DriveID    string `json:"drive_id,omitempty"`
	Selectable bool   `json:"selectable"` // My Drive and Shared with me are browsed, never picked
}

// DriveSettings is what a confined Drive login stores as its settings.
type DriveSettings struct {
	FolderID   string `json:"folder_id"`
	FolderName string `json:"folder_name"`
	DriveID    string `json:"drive_id,omitempty"`
}

// DriveCall is one Drive tool call confined to a folder.
type DriveCall struct {
	Server       orchestrator.MCPServer
	ConnectionID string
	Bearer       Bearer
	Folder       DriveSettings
	Tool         string // the remote name, e.g. search_files
	Args         map[string]any
	Run          *orchestrator.Run // nil for the operator's test call
}

// DriveAPI is the seam of the Drive confinement (connectors/adapters/drive implements it): the
// picker's listing, a folder check, and the confined calls. Errors are one line and name no token.
type DriveAPI interface {
	// Folders lists the folders under parent ("" lists My Drive, Shared with me and the shared drives).
	Folders(ctx context.Context, srv orchestrator.MCPServer, b Bearer, parent string) ([]DriveFolder, error)
	// Folder reads one folder the token sees; an id it does not see is ENOTFOUND.
	Folder(ctx context.Context, srv orchestrator.MCPServer, b Bearer, id string) (DriveFolder, error)
	// Call runs one tool; a file outside the folder is refused.
	Call(ctx context.Context, c DriveCall) (string, error)
}

// Confined reports whether srv's calls go through the Drive confinement. Drive's always do: where
// no confinement is wired, its logins stay pending and its calls are refused, never sent
// unconfined.
func (r *Caller) Confined(srv orchestrator.MCPServer) bool {
	return srv.Slug == DriveSlug && srv.Kind == orchestrator.ServerRemote
}

// callDrive checks args against the listed schema and runs the confined call.
func (r *Caller) callDrive(ctx context.Context, row orchestrator.MCPLogin, login RemoteLogin, tool orchestrator.ListedTool, args json.RawMessage, run *orchestrator.Run) (string, error) {
	if r.Drive == nil {
		return "", fmt.Errorf("%s calls are confined to the login's folder, and this orchestrator runs without that confinement; nothing was sent", row.Server.Name)
	}
	var folder DriveSettings
	if err := json.Unmarshal(row.Connection.Settings, &folder); err != nil || folder.FolderID == "" {
		return "", fmt.Errorf("the %s login %s has no folder picked; pick one with PUT /api/mcp/connections/%s/drive/folder", row.Server.Name, login.ConnectionID, login.ConnectionID)
	}
	m, err := checkedArgs(tool, args)
	if err != nil {
		return "", err
	}
	if login.Bearer == nil {
		return "", fmt.Errorf("the %s login %s holds no OAuth token; connect it again", row.Server.Name, login.ConnectionID)
	}
	return r.Drive.Call(ctx, DriveCall{Server: row.Server, ConnectionID: login.ConnectionID, Bearer: login.Bearer, Folder: folder,
		Tool: tool.RemoteName, Args: m, Run: run})
}

// driveTool rewrites the workspace side of Drive's listed schemas: download_file_content takes
// the file_path it writes (never returning bytes), create_file reads file_path (or small textContent)
// instead of base64 content.
func driveTool(t orchestrator.ListedTool) orchestrator.ListedTool {
	var s map[string]any
	if json.Unmarshal(t.InputSchema, &s) != nil {
		return t
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	req, _ := s["required"].([]any)
	filePath := map[string]any{"type": "string", "description": "A path under /home/agent (relative paths start at the run's working directory)"}
	switch t.RemoteName {
	case "download_file_content":
		props["file_path"] = map[string]any{"type": "string", "description": filePath["description"].(string) + "; the file is written there and its path returned, never its bytes"}
		req = append(req, "file_path")
		t.Description = strings.TrimSpace(t.Description + " Writes the content to file_path in the workspace and returns that path, not the bytes.")
	case "create_file":
		delete(props, "content")
		props["file_path"] = map[string]any{"type": "string", "description": filePath["description"].(string) + "; the orchestrator reads and uploads it"}
		props["textContent"] = map[string]any{"type": "string", "description": "Small UTF-8 text to upload instead of file_path"}
		var kept []any
		for _, r := range req {
			if r != "content" {
				kept = append(kept, r)
			}
		}
		req = kept
		t.Description = strings.TrimSpace(t.Description + " Upload a workspace file with file_path, or small text with textContent; the file lands in the connection's folder unless parentId names a folder inside it.")
	default:
		return t
	}
	s["properties"] = props
	if len(req) > 0 {
		s["required"] = req
	}
	if b, err := json.Marshal(s); err == nil {
		t.InputSchema = b
	}
	return t
}
