package app

import "github.com/guildsai/guilds/helpers/guilds-code/internal/files"

func init() {
	register(map[string]Handler{"file_read": files.Read, "file_edit": files.Edit, "file_write": files.Write})
	mark(quiet, "file_read", "file_edit", "file_write")
	mark(serial, "file_read", "file_edit", "file_write")
}
