package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/callsign/callsign/client"
)

func (c *cli) passwordCommand() *cobra.Command {
	password := group(&cobra.Command{Use: "password", Short: "List, show and generate the identity's stored passwords"})
	var domain string
	ls := leaf(&cobra.Command{Use: "ls [--domain HOST]", Short: "List stored logins (never their passwords)",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			l, err := api.Passwords(ctx, domain)
			type login struct {
				UUID      string `json:"uuid"`
				Identity  string `json:"identity"`
				Domain    string `json:"domain"`
				Username  string `json:"username"`
				CreatedDT string `json:"created_dt"`
				UpdatedDT string `json:"updated_dt"`
			}
			out := make([]login, len(l))
			rows := make([][]string, len(l))
			for i, p := range l {
				out[i] = login{p.UUID, p.Identity, p.Domain, p.Username, p.CreatedDT, p.UpdatedDT}
				rows[i] = []string{p.Domain, p.Username, ago(p.UpdatedDT), p.UUID}
			}
			return out, func(w io.Writer) { table(w, []string{"DOMAIN", "USERNAME", "UPDATED", "UUID"}, rows) }, err
		})})
	ls.Flags().StringVar(&domain, "domain", "", "only logins for this host and its subdomains")
	get := &cobra.Command{Use: "get UUID|DOMAIN", Short: "Show a stored login with its password", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			var p client.Password
			var err error
			if uuid.Validate(args[0]) == nil {
				p, err = api.Password(ctx, args[0])
			} else {
				p, err = api.PasswordForDomain(ctx, args[0])
			}
			return p, func(w io.Writer) {
				fields(w, "Domain", p.Domain, "Username", p.Username, "Password", p.Password, "Notes", p.Notes, "UUID", p.UUID)
			}, err
		})}
	var spec client.PasswordSpec
	var noSpecial bool
	generate := leaf(&cobra.Command{Use: "generate [--length N] [--no-special]", Short: "Print a new random password (nothing is stored)",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			if noSpecial {
				no := false
				spec.Special = &no
			}
			pw, err := api.GeneratePassword(ctx, spec)
			return map[string]string{"password": pw}, func(w io.Writer) { fmt.Fprintln(w, pw) }, err
		})})
	generate.Flags().IntVar(&spec.Length, "length", 0, "8 to 128 characters (default 20)")
	generate.Flags().BoolVar(&noSpecial, "no-special", false, "letters and digits only")
	generate.Flags().StringVar(&spec.ExcludeChars, "exclude", "", "characters never to use")
	password.AddCommand(ls, get, generate)
	return password
}

func (c *cli) secretCommand() *cobra.Command {
	secret := group(&cobra.Command{Use: "secret", Short: "List, read and set the identity's secrets"})
	ls := leaf(&cobra.Command{Use: "ls", Short: "List secrets by name (never their values)",
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, _ []string) (any, func(io.Writer), error) {
			l, err := api.Secrets(ctx, "")
			type named struct {
				UUID      string `json:"uuid"`
				Identity  string `json:"identity"`
				Key       string `json:"key"`
				CreatedDT string `json:"created_dt"`
				UpdatedDT string `json:"updated_dt"`
			}
			out := make([]named, len(l))
			rows := make([][]string, len(l))
			for i, s := range l {
				out[i] = named{s.UUID, s.Identity, s.Key, s.CreatedDT, s.UpdatedDT}
				rows[i] = []string{s.Key, ago(s.UpdatedDT), s.UUID}
			}
			return out, func(w io.Writer) { table(w, []string{"KEY", "UPDATED", "UUID"}, rows) }, err
		})})
	get := &cobra.Command{Use: "get KEY", Short: "Print a secret's value", Args: cobra.ExactArgs(1),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			s, err := api.SecretByKey(ctx, args[0])
			return s, func(w io.Writer) { fmt.Fprintln(w, s.Value) }, err
		})}
	set := &cobra.Command{Use: "set KEY [VALUE|-]", Short: "Store a value under KEY (read from standard input when left out or -)", Args: cobra.RangeArgs(1, 2),
		RunE: c.agentRun(func(ctx context.Context, api *client.Client, args []string) (any, func(io.Writer), error) {
			arg := "-"
			if len(args) == 2 {
				arg = args[1]
			}
			value, err := c.readValue(arg)
			if err != nil {
				return nil, nil, err
			}
			s, created, err := api.SetSecret(ctx, args[0], value)
			verb := "Updated"
			if created {
				verb = "Created"
			}
			return s, func(w io.Writer) { fmt.Fprintf(w, "%s secret %s.\n", verb, s.Key) }, err
		})}
	secret.AddCommand(ls, get, set)
	return secret
}
