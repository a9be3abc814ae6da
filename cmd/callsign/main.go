// Command callsign runs the Callsign service and its administrative tasks.
// `callsign --help` lists the commands and `callsign COMMAND --help` each
// command's flags; configuration comes from the environment (see README.md).
// The commands are in internal/cli, the service's wiring in internal/server.
package main

import (
	"os"

	"github.com/callsign/callsign/internal/cli"
)

func main() {
	cli.InvokedAs = os.Args[0]
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
