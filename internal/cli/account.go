package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/internal/server"
)

// accountCommand is `callsign account …`, the operator's side of accounts.
func (c *cli) accountCommand() *cobra.Command {
	account := group(&cobra.Command{Use: "account", Short: "Create, change and delete accounts"})

	var email string
	var passwordStdin bool
	create := leaf(&cobra.Command{
		Use:   "create --email E [flags]",
		Short: "Create an account and print its first management key (shown once)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withService(func(ctx context.Context, svc *server.Service) error {
				password, err := c.password(passwordStdin)
				if err != nil {
					return err
				}
				b, err := svc.App().Accounts.Create(ctx, email, password)
				if err != nil {
					return err
				}
				return json.NewEncoder(c.stdout).Encode(map[string]string{"account": b.Account.ID, "management_key": b.ManagementKey})
			})
		},
	})
	create.Flags().StringVar(&email, "email", "", "the account's email address")
	create.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read a sign-in password from the first line of standard input")
	_ = create.MarkFlagRequired("email")

	var ref string
	setPassword := c.onAccount(&ref, &cobra.Command{
		Use:   "set-password --account A --password-stdin",
		Short: "Set or replace an account's sign-in password (ends its tokens and sessions)",
	}, func(ctx context.Context, svc *server.Service, acct core.Account) error {
		password, err := c.password(true)
		if err != nil {
			return err
		}
		return svc.App().Accounts.SetPassword(ctx, acct.ID, password)
	})
	var fromStdin bool // required: the password is never an argument
	setPassword.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the password from the first line of standard input")
	_ = setPassword.MarkFlagRequired("password-stdin")

	var active bool
	setSubscription := c.onAccount(&ref, &cobra.Command{
		Use:   "set-subscription --account A --active=true|false",
		Short: "Turn an account's subscription on or off (inactive accounts cannot create inboxes)",
	}, func(ctx context.Context, svc *server.Service, acct core.Account) error {
		return svc.App().Accounts.SetSubscription(ctx, acct.ID, active)
	})
	setSubscription.Flags().BoolVar(&active, "active", true, "whether the subscription is active")
	_ = setSubscription.MarkFlagRequired("active")

	remove := c.onAccount(&ref, &cobra.Command{
		Use:   "delete --account A",
		Short: "Delete an account with everything it owns",
	}, func(ctx context.Context, svc *server.Service, acct core.Account) error {
		return svc.App().Accounts.Delete(ctx, acct.ID)
	})

	account.AddCommand(create, setPassword, setSubscription, remove)
	return account
}

// onAccount makes a command that acts on the account --account names and
// reports "done".
func (c *cli) onAccount(ref *string, cmd *cobra.Command, act func(context.Context, *server.Service, core.Account) error) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withAccount(*ref, func(ctx context.Context, svc *server.Service, acct core.Account) error {
			if err := act(ctx, svc, acct); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "account %s: %s done\n", acct.ID, cmd.Name())
			return nil
		})
	}
	addAccountFlag(cmd, ref)
	return leaf(cmd)
}

func addAccountFlag(cmd *cobra.Command, ref *string) {
	cmd.Flags().StringVar(ref, "account", "", "the account's uuid or email")
	_ = cmd.MarkFlagRequired("account")
}

// keyCommand is `callsign key create`: the way back for an operator whose
// account lost every management key.
func (c *cli) keyCommand() *cobra.Command {
	key := group(&cobra.Command{Use: "key", Short: "Create API keys as the operator"})
	var ref, identity, name string
	var canProvision bool
	create := leaf(&cobra.Command{
		Use:   "create --account A [flags]",
		Short: "Create a management key, or with --identity an identity key, and print it (shown once)",
		Long: `Create an API key for an account without an existing key, for instance when
every management key was lost. Without --identity it is a management key;
with --identity (the identity's uuid) it is a key fenced to that identity.
The key is printed once, as the API's key-creation response shows it.`,
		RunE: func(*cobra.Command, []string) error {
			if identity != "" {
				if _, err := uuid.Parse(identity); err != nil {
					return usageError{"--identity: not a uuid"}
				}
			}
			return c.withAccount(ref, func(ctx context.Context, svc *server.Service, acct core.Account) error {
				k, err := svc.App().Accounts.CreateKey(ctx, acct.ID, app.KeyInput{Name: name, Identity: identity, CanProvision: canProvision})
				if err != nil {
					return err
				}
				out := map[string]any{"id": k.Record.ID, "name": k.Record.Name, "prefix": k.Record.Prefix, "key": k.Secret}
				if k.Record.IdentityID != "" {
					out["identity"], out["can_provision"] = k.Record.IdentityID, k.Record.CanProvision
				}
				return json.NewEncoder(c.stdout).Encode(out)
			})
		},
	})
	addAccountFlag(create, &ref)
	create.Flags().StringVar(&identity, "identity", "", "make an identity key for this identity (its uuid)")
	create.Flags().StringVar(&name, "name", "created by callsign key create", "the key's name")
	create.Flags().BoolVar(&canProvision, "can-provision", false, "let the identity key buy a phone number for its identity")
	key.AddCommand(create)
	return key
}

// withService opens the service for one administrative command.
func (c *cli) withService(f func(context.Context, *server.Service) error) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	ctx := context.Background()
	svc, err := server.Open(ctx, cfg, c.logger(cfg.LogLevel))
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.NoteGeneratedKeys(c.stderr)
	return f(ctx, svc)
}

// withAccount runs f on the account ref names (a uuid or an email).
func (c *cli) withAccount(ref string, f func(context.Context, *server.Service, core.Account) error) error {
	if !strings.Contains(ref, "@") {
		if _, err := uuid.Parse(ref); err != nil {
			return usageError{"--account: not a uuid or an email address"}
		}
	}
	return c.withService(func(ctx context.Context, svc *server.Service) error {
		acct, err := svc.App().Accounts.Find(ctx, ref)
		if err != nil {
			return err
		}
		return f(ctx, svc, acct)
	})
}

// password reads a password from the first line of standard input when asked to.
func (c *cli) password(fromStdin bool) (string, error) {
	if !fromStdin {
		return "", nil
	}
	line, err := bufio.NewReader(c.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
