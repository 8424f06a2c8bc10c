package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
)

// driveLogin reads a Drive connection's login with its bearer.
func (s *Service) driveLogin(ctx context.Context, id string) (orchestrator.MCPLogin, connections.RemoteLogin, error) {
	if s.Caller == nil || s.Caller.Drive == nil || s.Caller.OAuth == nil {
		return orchestrator.MCPLogin{}, connections.RemoteLogin{}, orchestrator.Errorf(orchestrator.ECONFLICT, "this orchestrator offers no Google Drive logins")
	}
	if _, err := s.GetConnection(ctx, id); err != nil {
		return orchestrator.MCPLogin{}, connections.RemoteLogin{}, err
	}
	row, login, err := s.Caller.Login(ctx, id, "")
	if err != nil {
		return row, login, err
	}
	if row.Server.Slug != connections.DriveSlug {
		return row, login, orchestrator.Errorf(orchestrator.EINVALID, "connection %s is a %s login; folders belong to Google Drive logins", id, row.Server.Name)
	}
	if _, err := s.Caller.OAuth.Store.OAuthGrant(ctx, id); err != nil || login.Credentials["access_token"] == "" {
		return row, login, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s has not finished its Google login yet; open its authorization_url first", id)
	}
	if row.Connection.Status == orchestrator.ConnDisconnected {
		return row, login, orchestrator.Errorf(orchestrator.ECONFLICT, "connection %s is disconnected; connect Google Drive again", id)
	}
	return row, login, nil
}

// DriveFolders lists the folders the operator may pick from under parent ("" for the roots).
func (s *Service) DriveFolders(ctx context.Context, id, parent string) ([]connections.DriveFolder, error) {
	row, login, err := s.driveLogin(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.Caller.Drive.Folders(ctx, row.Server, login.Bearer, strings.TrimSpace(parent))
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
	f, err := s.Caller.Drive.Folder(ctx, row.Server, login.Bearer, folderID)
	if orchestrator.ErrorCode(err) == orchestrator.ENOTFOUND {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "Google Drive shows this login no folder %q; pick one from GET /api/mcp/connections/%s/drive/folders", folderID, id)
	}
	if err != nil {
		return orchestrator.Connection{}, err
	}
	if !f.Selectable {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EINVALID, "%s cannot be picked: choose one folder inside it (My Drive itself is never picked)", f.Name)
	}
	listID := connections.ListID()
	listing, err := s.Caller.Client.ListTools(ctx, connections.RemoteLogin{ConnectionID: listID, Server: row.Server, Bearer: login.Bearer})
	s.Caller.Client.Forget(listID)
	if err == nil {
		err = connections.RejectedListing(row.Server, listing.Tools)
	}
	if err != nil {
		return orchestrator.Connection{}, orchestrator.Errorf(orchestrator.EUPSTREAM, "listing Google Drive's tools failed, so the login stays pending (try again): %v", err)
	}
	settings, err := json.Marshal(connections.DriveSettings{FolderID: f.ID, FolderName: f.Name, DriveID: f.DriveID})
	if err != nil {
		return orchestrator.Connection{}, fmt.Errorf("encode the folder: %w", err)
	}
	conn, err := s.Caller.OAuth.Store.CompleteOAuth(ctx, orchestrator.OAuthComplete{ConnectionID: id, Server: row.Server, Owner: row.Connection.Owner(),
		AccountHint: connections.Clip(f.Name, 200), Tools: connections.ListedRemote(s.log(), row.Server, listing.Tools), Transport: listing.Transport, Settings: settings, Now: s.now()})
	if err != nil {
		return conn, err
	}
	s.Caller.Client.Forget(id)
	s.log().Info("connection connected", "connection_id", id, "server", row.Server.Slug, "folder_id", f.ID, "tools", conn.ToolCount, "oauth", true)
	return conn, nil
}
