package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/config"
)

func (c *cli) configCommand() *cobra.Command {
	return leaf(&cobra.Command{
		Use:   "config",
		Short: "Print the effective settings, secrets redacted",
		Long: `Read the configuration as 'serve' would and print one line per setting:
its name, the value in effect (defaults derived from other settings
included) and whether it came from the environment or the default. Secrets
show only that they are set, and passwords in URLs are masked. A bad value
fails as it would at start-up, naming the variable.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.config()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "SETTING\tVALUE\tSOURCE")
			for _, s := range config.Settings() {
				v := s.Shown(cfg)
				if v == "" {
					v = "(unset)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", s.Name, v, s.Source(c.getenv))
			}
			return w.Flush()
		},
	})
}
