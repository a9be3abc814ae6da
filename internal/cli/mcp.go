package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/adapters/mcpserver"
)

// mcpCommand serves MCP over standard input and output for a desktop
// agent, calling the server its credentials name over the REST API.
func (c *cli) mcpCommand() *cobra.Command {
	return leaf(&cobra.Command{Use: "mcp", Short: "Serve the Model Context Protocol over standard input and output (for desktop agents)",
		Long: `Serve the Model Context Protocol over standard input and output: an MCP
client (a desktop agent) starts this command and reaches the identity's mail,
texts, contacts and vault through its tools. It calls the Callsign server of
the login 'callsign login' stored (or CALLSIGN_SERVER with CALLSIGN_API_KEY).
With --identity, a management key is bound to that one identity.`,
		RunE: func(*cobra.Command, []string) error {
			api, err := c.agentClient()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			who, err := api.Whoami(ctx)
			if err != nil {
				return err
			}
			if id := api.ActsFor(); id != "" {
				// Bound to one identity, the server acts as an identity key would.
				who.KeyType, who.Identity = "identity", &id
			}
			server := mcpserver.New(api, who, mcpserver.Feed{}, mcpserver.Options{Version: Version})
			err = server.Run(ctx, mcpserver.Stdio(io.NopCloser(c.stdin), nopWriteCloser{c.stdout}))
			if ctx.Err() != nil {
				return nil // stopped by a signal
			}
			return err
		}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
