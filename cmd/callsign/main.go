// Command callsign runs the Callsign service and its administrative tasks.
//
//	callsign [serve]                          run the service (the default)
//	callsign migrate                          apply database migrations and exit
//	callsign account create --email E [--password-stdin]
//	callsign account set-password --account A --password-stdin
//	callsign account set-subscription --account A --active=false
//	callsign account delete --account A
//	callsign vault rotate-key [--keep-old]
//	callsign login --server URL [--name N]
//	callsign version
//
// Configuration comes from the environment (see README.md).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/google/uuid"

	"github.com/callsign/callsign/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// cli carries a command's streams and environment, so tests can run commands in-process.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         config.Getenv
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv config.Getenv) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = c.serve(args)
	case "migrate":
		err = c.migrate(args)
	case "account":
		err = c.account(args)
	case "vault":
		err = c.vault(args)
	case "login":
		err = c.login(args)
	case "version":
		fmt.Fprintln(stdout, "callsign", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = usageError{fmt.Sprintf("unknown command %q\n%s", cmd, usage)}
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "callsign:", err)
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

const usage = `usage:
  callsign [serve]                          run the service (the default)
  callsign migrate                          apply database migrations and exit
  callsign account create --email E [--password-stdin]
  callsign account set-password --account A --password-stdin
  callsign account set-subscription --account A --active=true|false
  callsign account delete --account A
  callsign vault rotate-key [--keep-old]    re-encrypt the vault under a new key
  callsign login --server URL [--name N]    connect this machine to an account (device-code login)
  callsign version
`

// config reads the configuration; its error names the variable at fault.
func (c *cli) config() (config.Config, error) {
	return config.Load(c.getenv)
}

func (c *cli) logger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: l}))
}

// flags makes a flag set that reports errors instead of exiting.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	return fs
}

func (c *cli) serve(args []string) error {
	if err := c.flags("serve").Parse(args); err != nil {
		return usageError{err.Error()}
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	log := c.logger(cfg.LogLevel)
	if c.getenv("GOGC") == "" {
		// Each message makes short-lived garbage a few times its size while
		// the live heap stays small: collecting less often saves CPU on the
		// ingest path for a little memory. GOGC still overrides it.
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, err := openService(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.close()
	if err := svc.listen(); err != nil {
		return err
	}
	return svc.serve(ctx)
}

func (c *cli) migrate(args []string) error {
	if err := c.flags("migrate").Parse(args); err != nil {
		return usageError{err.Error()}
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	svc, err := openService(context.Background(), cfg, c.logger(cfg.LogLevel))
	if err != nil {
		return err
	}
	defer svc.close()
	v, err := svc.db.SchemaVersion(context.Background())
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "database is at schema version %d\n", v)
	return nil
}

func (c *cli) account(args []string) error {
	if len(args) == 0 {
		return usageError{"account needs a subcommand: create, set-password, set-subscription, delete"}
	}
	sub, args := args[0], args[1:]
	fs := c.flags("account " + sub)
	email := fs.String("email", "", "the account's email address")
	accountRef := fs.String("account", "", "the account's uuid or email")
	passwordStdin := fs.Bool("password-stdin", false, "read a password from the first line of standard input")
	active := fs.Bool("active", true, "whether the subscription is active")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	ctx := context.Background()
	svc, err := openService(ctx, cfg, c.logger(cfg.LogLevel))
	if err != nil {
		return err
	}
	defer svc.close()

	password := ""
	if *passwordStdin {
		if password, err = readLine(c.stdin); err != nil {
			return fmt.Errorf("reading the password: %w", err)
		}
	}
	if sub == "create" {
		if *email == "" {
			return usageError{"account create needs --email"}
		}
		b, err := svc.app.Accounts.Create(ctx, *email, password)
		if err != nil {
			return err
		}
		return json.NewEncoder(c.stdout).Encode(map[string]string{"account": b.Account.ID, "management_key": b.ManagementKey})
	}

	if *accountRef == "" {
		return usageError{"account " + sub + " needs --account (uuid or email)"}
	}
	if !strings.Contains(*accountRef, "@") {
		if _, err := uuid.Parse(*accountRef); err != nil {
			return usageError{"--account: not a uuid or an email address"}
		}
	}
	acct, err := svc.app.Accounts.Find(ctx, *accountRef)
	if err != nil {
		return err
	}
	switch sub {
	case "set-password":
		if !*passwordStdin {
			return usageError{"account set-password needs --password-stdin"}
		}
		err = svc.app.Accounts.SetPassword(ctx, acct.ID, password)
	case "set-subscription":
		err = svc.app.Accounts.SetSubscription(ctx, acct.ID, *active)
	case "delete":
		err = svc.app.Accounts.Delete(ctx, acct.ID)
	default:
		return usageError{fmt.Sprintf("unknown account subcommand %q", sub)}
	}
	if err == nil {
		fmt.Fprintf(c.stdout, "account %s: %s done\n", acct.ID, sub)
	}
	return err
}

// readLine reads the first line, without its line ending.
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
