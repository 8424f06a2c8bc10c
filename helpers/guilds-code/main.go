// Command guilds-code runs one code tool call in the sandbox (PROTOCOL.md); its other mode,
// `guilds-code --supervise <state file>`, is a background shell command's supervisor.
package main

import (
	"os"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/app"
)

func main() { os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr)) }
