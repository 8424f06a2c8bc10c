// Command guilds-script-run runs one saved script in the sandbox (PROTOCOL.md): the request names
// the script and its arguments, which reach the script's standard input as JSON.
package main

import (
	"os"

	"github.com/guildsai/guilds/helpers/guilds-script-run/internal/scriptrun"
)

func main() { os.Exit(scriptrun.Main(os.Args[1:], os.Stdout, os.Stderr)) }
