package httpapi

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/connections"
)

// DriveService is the Google Drive folder picker; lifecycle.Service implements it.
type DriveService interface {
	DriveFolders(ctx context.Context, id, parent string) ([]connections.DriveFolder, error)
	PickDriveFolder(ctx context.Context, id, folderID string) (orchestrator.Connection, error)
}

// driveFolders answers GET /api/mcp/connections/:id/drive/folders?parent=: My Drive, Shared with
// me and the shared drives without a parent, else the folders under it.
func (s *Server) driveFolders(c *fiber.Ctx) error {
	d := s.Bindings
	folders, err := d.DriveFolders(c.UserContext(), c.Params("id"), c.Query("parent"))
	if err != nil {
		return err
	}
	if folders == nil {
		folders = []connections.DriveFolder{}
	}
	return c.JSON(fiber.Map{"folders": folders})
}

// pickFolderRequest is the body of PUT /api/mcp/connections/:id/drive/folder.
type pickFolderRequest struct {
	ID string `json:"id"`
}

// pickDriveFolder answers PUT /api/mcp/connections/:id/drive/folder: the login's one folder, which
// completes it.
func (s *Server) pickDriveFolder(c *fiber.Ctx) error {
	d := s.Bindings
	var req pickFolderRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	conn, err := d.PickDriveFolder(c.UserContext(), c.Params("id"), req.ID)
	if err != nil {
		return err
	}
	return c.JSON(conn)
}
