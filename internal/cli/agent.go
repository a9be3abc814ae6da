package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/client"
)

// agentFlags are the global flags of the agent commands (whoami, mail,
// sms, contacts, password, secret, phone, mcp).
type agentFlags struct {
	identity string // --identity: the identity to act for
	server   string // --server: which stored login (or CALLSIGN_SERVER's server)
	json     bool   // --json: the API's objects instead of tables
}

func (c *cli) addAgentFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&c.agent.identity, "identity", "", "the identity (uuid) to act for, with a management key")
	f.StringVar(&c.agent.server, "server", "", "the server to use, when logins to several are stored")
	f.BoolVar(&c.agent.json, "json", false, "print the API's objects as JSON (lists as arrays)")
}

// agentClient is the client the agent commands use: CALLSIGN_API_KEY with
// CALLSIGN_SERVER (or --server), else the login `callsign login` stored
// for --server (the most recent login by default). With --identity, a
// management key acts for that identity; a stored login uses its identity
// key for its own identity and its management key, if it was granted one,
// for any other.
func (c *cli) agentClient() (*client.Client, error) {
	server := c.agent.server
	if server == "" {
		server = c.getenv("CALLSIGN_SERVER")
	}
	if key := c.getenv("CALLSIGN_API_KEY"); key != "" {
		if server == "" {
			return nil, usageError{"CALLSIGN_API_KEY is set: set CALLSIGN_SERVER (or --server) to the server it is for"}
		}
		base, err := serverURL(server)
		if err != nil {
			return nil, usageError{"CALLSIGN_SERVER: " + err.Error()}
		}
		return client.New(base, key, nil).As(c.agent.identity), nil
	}
	login, base, err := storedLogin(server)
	if err != nil {
		return nil, err
	}
	switch {
	case login.IdentityKey != "" && (c.agent.identity == "" || c.agent.identity == login.Identity.UUID):
		return client.New(base, login.IdentityKey, nil), nil
	case login.ManagementKey != "":
		return client.New(base, login.ManagementKey, nil).As(c.agent.identity), nil
	}
	return nil, usageError{fmt.Sprintf("the stored login holds a key for identity %s only: log in again with --identity or --management", login.Identity.UUID)}
}

// storedLogin is the login kept for server ("" for the most recent one).
func storedLogin(server string) (SavedLogin, string, error) {
	path, err := credentialsFile()
	if err != nil {
		return SavedLogin{}, "", err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return SavedLogin{}, "", errors.New("not logged in: run callsign login --server URL, or set CALLSIGN_SERVER and CALLSIGN_API_KEY")
	}
	if err != nil {
		return SavedLogin{}, "", err
	}
	var creds Credentials
	if err := json.Unmarshal(data, &creds); err != nil {
		return SavedLogin{}, "", fmt.Errorf("%s is not a credentials file (%v); move it away and log in again", path, err)
	}
	if server != "" {
		base, err := serverURL(server)
		if err != nil {
			return SavedLogin{}, "", usageError{"--server: " + err.Error()}
		}
		login, ok := creds.Servers[base]
		if !ok {
			return SavedLogin{}, "", fmt.Errorf("no login for %s is stored; run callsign login --server %s", base, base)
		}
		return login, base, nil
	}
	var newest string
	for base, login := range creds.Servers {
		if newest == "" || login.SavedAt.After(creds.Servers[newest].SavedAt) {
			newest = base
		}
	}
	if newest == "" {
		return SavedLogin{}, "", errors.New("not logged in: run callsign login --server URL, or set CALLSIGN_SERVER and CALLSIGN_API_KEY")
	}
	return creds.Servers[newest], newest, nil
}

// agent wraps an agent command: it gets a client, a context that ends on
// SIGINT or SIGTERM, and prints what it returns: the object as JSON with
// --json, else as human writes it.
func (c *cli) agentRun(run func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error)) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		api, err := c.agentClient()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		obj, human, err := run(ctx, api, args)
		if err != nil {
			return err
		}
		if c.agent.json {
			enc := json.NewEncoder(c.stdout)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			return enc.Encode(obj)
		}
		human(c.stdout)
		return nil
	}
}

// table writes aligned columns.
func table(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// fields writes "name: value" lines, names aligned, skipping empty values.
func fields(w io.Writer, pairs ...string) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", pairs[i], pairs[i+1])
		}
	}
	tw.Flush()
}

// now is the clock relative times are told against (tests fix it).
var now = time.Now

// ago tells an API time relative to now: "just now", "5m ago", "3h ago",
// "2d ago", or the date for older ones.
func ago(apiTime string) string {
	t, err := time.Parse(time.RFC3339Nano, apiTime)
	if err != nil {
		return apiTime
	}
	d := now().Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 7*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}

// cut shortens text to n characters on one line.
func cut(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return text
}

// readValue is a value given as an argument, or standard input for "-".
func (c *cli) readValue(arg string) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	b, err := io.ReadAll(io.LimitReader(c.stdin, 1<<20+1))
	if err != nil {
		return "", err
	}
	if len(b) > 1<<20 {
		return "", errors.New("standard input holds more than 1 MiB")
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}
