package bindings

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

// DriveAPI is the seam of the Drive confinement (connectors/google implements it): the picker's
// listing, a folder check, and the confined calls. Errors are one line and name no token.
type DriveAPI interface {
	// Folders lists the folders under parent ("" lists My Drive, Shared with me and the shared drives).
	Folders(ctx context.Context, srv orchestrator.MCPServer, b Bearer, parent string) ([]DriveFolder, error)
	// Folder reads one folder the token sees; an id it does not see is ENOTFOUND.
	Folder(ctx context.Context, srv orchestrator.MCPServer, b Bearer, id string) (DriveFolder, error)
	// Call runs one tool; a file outside the folder is refused.
	Call(ctx context.Context, c DriveCall) (string, error)
}

// confined reports whether srv's calls go through the Drive confinement. Drive's always do: where
// no confinement is wired, its logins stay pending and its calls are refused, never sent
// unconfined.
func (r *Remote) confined(srv orchestrator.MCPServer) bool {
	return srv.Slug == DriveSlug && srv.Kind == orchestrator.ServerRemote
}

// callDrive checks args against the listed schema and runs the confined call.
func (r *Remote) callDrive(ctx context.Context, row orchestrator.MCPLogin, login RemoteLogin, tool orchestrator.ListedTool, args json.RawMessage, run *orchestrator.Run) (string, error) {
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

// driveLogin reads a Drive connection's login with its bearer.
func (s *Service) driveLogin(ctx context.Context, id string) (orchestrator.MCPLogin, RemoteLogin, error) {
	if s.Remote == nil || s.Remote.Drive == nil || s.Remote.OAuth == nil {
		return orchestrator.MCPLogin{}, RemoteLogin{}, orchestrator.Errorf(orchestrator.ECONFLICT, "this orchestrator offers no Google Drive logins")
	}
	if _, err := s.GetConnection(ctx, id); err != nil {
		return orchestrator.MCPLogin{}, RemoteLogin{}, err
	}
	row, login, err := s.Remote.login(ctx, id, "")
	if err != nil {
		return row, login, err
	}
	if row.Server.Slug != DriveSlug {
		return row, login, orchestrator.Errorf(orchestrator.EINVALID, "connection %s is a %s login; folders belong to Google Drive logins", id, row.Server.Name)
	}
	if _, err := s.Remote.OAuth.Store.OAuthGrant(ctx, id); err != nil || login.Credentials["access_token"] == "" {
		return row, login, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s has not finished its Google login yet; open its authorization_url first", id)
	}
	if row.Connection.Status == orchestrator.ConnDisconnected {
		return row, login, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is disconnected; connect Google Drive again", id)
	}
	return row, login, nil
}

// DriveFolders lists the folders the operator may pick from under parent ("" for the roots).
func (s *Service) DriveFolders(ctx context.Context, id, parent string) ([]DriveFolder, error) {
	row, login, err := s.driveLogin(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.Remote.Drive.Folders(ctx, row.Server, login.Bearer, strings.TrimSpace(parent))
}

// PickDriveFolder confines a Drive login to one folder that is not My Drive and completes it:
// the tools are listed over the Drive MCP server with the login's token, and the folder (its name
// as account_hint), the tools and the enabled binding are stored as the login connects.
func (s *Service) PickDriveFolder(ctx context.Context, id, folderID string) (orchestrator.Connection, error) {
	row, login, err := s.driveLogin(ctx, id)
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if row.Connection.Status != orchestrator.ConnPending {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is %s; its folder is picked once, after the Google login (delete it and connect again to pick another)", id, row.Connection.Status)
	}
	folderID = strings.TrimSpace(folderID)
	if folderID == "" || folderID == "root" || len(folderID) > 200 {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "pick one folder that is not My Drive: a folder id from GET /api/mcp/connections/%s/drive/folders", id)
	}
	f, err := s.Remote.Drive.Folder(ctx, row.Server, login.Bearer, folderID)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "Google Drive shows this login no folder %q; pick one from GET /api/mcp/connections/%s/drive/folders", folderID, id)
	}
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if !f.Selectable {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s cannot be picked: choose one folder inside it (My Drive itself is never picked)", f.Name)
	}
	listID := orchestrator.NewID(strings.TrimSuffix(verifyPrefix, "_"))
	listing, err := s.Remote.Client.ListTools(ctx, RemoteLogin{ConnectionID: listID, Server: row.Server, Bearer: login.Bearer})
	s.Remote.Client.Forget(listID)
	if err == nil {
		err = rejectedListing(row.Server, listing.Tools)
	}
	if err != nil {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EUPSTREAM, "listing Google Drive's tools failed, so the login stays pending (try again): %v", err)
	}
	settings, err := json.Marshal(DriveSettings{FolderID: f.ID, FolderName: f.Name, DriveID: f.DriveID})
	if err != nil {
		return orchestrator.Connection{}, fmt.Errorf("encode the folder: %w", err)
	}
	conn, err := s.Remote.OAuth.Store.CompleteOAuth(ctx, orchestrator.OAuthComplete{ConnectionID: id, Server: row.Server, Owner: ownerChain(row.Connection),
		AccountHint: clip(f.Name, 200), Tools: listedRemote(s.log(), row.Server, listing.Tools), Transport: listing.Transport, Settings: settings, Now: s.now()})
	if err != nil {
		return conn, err
	}
	s.Remote.Client.Forget(id)
	s.log().Info("connection connected", "connection_id", id, "server", row.Server.Slug, "folder_id", f.ID, "tools", conn.ToolCount, "oauth", true)
	return conn, nil
}
