// Package cli is the callsign command line: serving, the administrative
// commands and the agent commands. Run executes one command line with the
// streams and environment it is given, so the end-to-end tests run
// commands in-process as cmd/callsign does for real.
package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/config"
	"github.com/callsign/callsign/internal/server"
)

// Version is set at build time with
// -ldflags "-X github.com/callsign/callsign/internal/cli.Version=…".
var Version = "dev"

// InvokedAs is how the user started the program (./bin/callsign, callsign),
// so that the commands it suggests can be pasted as they are.
var InvokedAs = "callsign"

// cli carries a command's streams and environment, so tests can run commands in-process.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         config.Getenv
	// started is set once the command line parsed and a command began to
	// run: an error before that is a usage error.
	started bool
	// agent holds the agent commands' global flags.
	agent agentFlags
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitError ends the program with a status of its own (a signal's 128+n).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// Run executes one command line and returns the exit status: 0, 1 for a
// failure, 2 for a usage error (as the flag package and most Go CLIs do).
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv config.Getenv) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	root := c.commands()
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "callsign:", oneLine(err.Error()))
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if !c.started || errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return 2
	}
	return 1
}

// commands is the command tree. cobra is the library: kubectl, gh and hugo
// use it, so its help, flag syntax and shell completion are what people know.
func (c *cli) commands() *cobra.Command {
	root := &cobra.Command{
		Use:   "callsign",
		Short: "Email inboxes, phone numbers, contacts and a vault for software agents",
		Long: `Callsign gives software agents an identity: an email inbox, a phone number,
contacts and an encrypted vault, behind one REST API.

Run without a command, it serves (as 'callsign serve' does). Configuration
comes from CALLSIGN_* environment variables; see README.md.`,
		Version:       Version,
		RunE:          c.serve,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("callsign {{.Version}}\n")
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.AddGroup(&cobra.Group{ID: "service", Title: "Running the service:"},
		&cobra.Group{ID: "agent", Title: "Acting as an identity (after callsign login):"})
	for _, cmd := range append([]*cobra.Command{
		leaf(&cobra.Command{Use: "serve", Short: "Run the service (the default)", RunE: c.serve}),
		leaf(&cobra.Command{Use: "migrate", Short: "Apply database migrations and exit", RunE: c.migrate}),
		c.accountCommand(), c.keyCommand(), c.vaultCommand(), c.doctorCommand(), c.configCommand(),
	}, c.backupCommands()...) {
		cmd.GroupID = "service"
		root.AddCommand(cmd)
	}
	// The agent commands share --identity, --server and --json.
	login := c.loginCommand()
	login.GroupID = "agent"
	root.AddCommand(login)
	for _, cmd := range []*cobra.Command{c.whoamiCommand(), c.mailCommand(), c.smsCommand(), c.contactsCommand(),
		c.passwordCommand(), c.secretCommand(), c.phoneCommand(), c.mcpCommand()} {
		cmd.GroupID = "agent"
		c.addAgentFlags(cmd)
		root.AddCommand(cmd)
	}
	root.AddCommand(
		leaf(&cobra.Command{Use: "version", Short: "Print the version", RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "callsign", Version)
			return err
		}}),
	)
	c.markStarts(root)
	return root
}

// leaf marks a command that takes flags only: a stray argument is a usage error.
func leaf(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	return cmd
}

// group makes a command that only holds others: alone it shows its help,
// and an unknown subcommand is a usage error (cobra would show the help).
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + s[0] + "?"
		}
		return usageError{msg}
	}
	return cmd
}

// markStarts records, as each command starts running, that the command
// line was understood: cobra reports flag, argument and required-flag
// errors before that, and those are usage errors.
func (c *cli) markStarts(cmd *cobra.Command) {
	if runE := cmd.RunE; runE != nil {
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			c.started = true
			return runE(cmd, args)
		}
	}
	for _, sub := range cmd.Commands() {
		c.markStarts(sub)
	}
}

// oneLine keeps an error on one line, as every start-up error must be.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// config reads the configuration; its error names the variable at fault.
func (c *cli) config() (config.Config, error) {
	return config.Load(c.getenv)
}

func (c *cli) logger(level string) *slog.Logger {
	return server.NewLogger(c.stderr, level)
}
