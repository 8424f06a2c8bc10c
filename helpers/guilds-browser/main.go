// Command guilds-browser runs one browser tool call against the sandbox's live Chromium
// (PROTOCOL.md); its other mode, `guilds-browser --daemon`, is the warm per-sandbox daemon.
package main

import (
	"os"

	"github.com/guildsai/guilds/helpers/guilds-browser/internal/app"
)

func main() { os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr)) }
