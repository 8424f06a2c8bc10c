package app

import "github.com/guildsai/guilds/helpers/guilds-code/internal/shell"

func init() {
	// A helper started as a background command's supervisor runs that and exits here.
	shell.MaybeSupervise()
	register(map[string]Handler{"shell": shell.Shell, "shell_status": shell.Status})
	mark(serial, "shell", "shell_status")
}
