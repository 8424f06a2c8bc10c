// Command guilds-git-credential is git's credential helper over the run's GitHub tokens (PROTOCOL.md).
package main

import (
	"os"
	"time"

	"github.com/guildsai/guilds/helpers/guilds-git-credential/internal/credential"
)

func main() { os.Exit(credential.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, time.Now)) }
