// Command guilds-sandboxd is the exec server inside a long-lived bubblewrap sandbox: it runs the
// commands the orchestrator sends over the control socket on fd 3 (see package sandboxd).
package main

import (
	"fmt"
	"net"
	"os"

	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxd"
)

func main() {
	f := os.NewFile(sandboxd.CtlFD, "control")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "guilds-sandboxd: fd %d is not the control socket: %v\n", sandboxd.CtlFD, err)
		os.Exit(2)
	}
	ctl, ok := c.(*net.UnixConn)
	if !ok {
		fmt.Fprintf(os.Stderr, "guilds-sandboxd: fd %d is not a unix socket\n", sandboxd.CtlFD)
		os.Exit(2)
	}
	if err := sandboxd.Serve(ctl, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "guilds-sandboxd:", err)
		os.Exit(1)
	}
}
