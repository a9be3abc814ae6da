package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/callsign/callsign/adapters/mailgun"
	"github.com/callsign/callsign/adapters/ses"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/config"
	"github.com/callsign/callsign/internal/server"
)

// doctorCheckTimeout bounds each check.
const doctorCheckTimeout = 20 * time.Second

// minFreeDisk is the free space under which the disk check fails: a few
// dozen messages of the largest size, and room for the database to grow.
const minFreeDisk = 1 << 30

func (c *cli) doctorCommand() *cobra.Command {
	var dnsServer string
	doctor := leaf(&cobra.Command{
		Use:   "doctor",
		Short: "Check the database, the mail relay, the telephony provider, DNS and disk space",
		Long: `Check what the service depends on, with the configuration 'serve' would use,
and print one line per check: the database (reachable, migrated), the
mail relay (connect, TLS, EHLO and AUTH, no mail sent) or the mail
provider's credentials (SES: the account; Mailgun: the default mail
domain; one read call, no mail sent), the telephony
provider's credentials, DNS for the mail domains (MX records), and free
space in the data directory. It changes nothing, and exits 1 when a check
fails.`,
		RunE: func(*cobra.Command, []string) error { return c.doctor(dnsServer) },
	})
	doctor.Flags().StringVar(&dnsServer, "dns-server", "", "ask this DNS server (host:port) instead of the system's resolver, e.g. to see what the internet sees")
	return doctor
}

// checkResult is one line of the report.
type checkResult struct {
	status string // "ok", "FAIL", or "skip" (nothing to check)
	detail string
}

func ok(format string, args ...any) checkResult {
	return checkResult{"ok", fmt.Sprintf(format, args...)}
}
func skip(format string, args ...any) checkResult {
	return checkResult{"skip", fmt.Sprintf(format, args...)}
}
func failed(format string, args ...any) checkResult {
	return checkResult{"FAIL", fmt.Sprintf(format, args...)}
}

type doctorCheck struct {
	name string
	run  func(context.Context) checkResult
}

func (c *cli) doctor(dnsServer string) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	resolver := net.DefaultResolver
	if dnsServer != "" {
		if _, _, err := net.SplitHostPort(dnsServer); err != nil {
			return usageError{"--dns-server: want host:port, such as 1.1.1.1:53"}
		}
		resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, dnsServer)
		}}
	}
	mailOut := "relay"
	if cfg.MailProvider != "smtp" {
		mailOut = "mail-provider"
	}
	checks := []doctorCheck{
		{"database", func(ctx context.Context) checkResult { return checkDatabase(ctx, cfg) }},
		{mailOut, func(ctx context.Context) checkResult { return checkRelay(ctx, cfg) }},
		{"telephony", func(ctx context.Context) checkResult { return checkTelephony(ctx, cfg) }},
	}
	for _, domain := range cfg.MailDomains {
		checks = append(checks, doctorCheck{"dns " + domain, func(ctx context.Context) checkResult { return checkMailDomain(ctx, resolver, domain) }})
	}
	checks = append(checks, doctorCheck{"disk", func(context.Context) checkResult { return checkDisk(cfg) }})

	failures := 0
	for _, ch := range checks {
		ctx, cancel := context.WithTimeout(context.Background(), doctorCheckTimeout)
		r := ch.run(ctx)
		cancel()
		fmt.Fprintf(c.stdout, "%-4s  %-22s %s\n", r.status, ch.name, oneLine(r.detail))
		if r.status == "FAIL" {
			failures++
		}
	}
	if failures > 0 {
		return fmt.Errorf("%d of %d checks failed", failures, len(checks))
	}
	return nil
}

// checkDatabase connects without migrating: it reports a database that
// lacks this build's migrations instead of applying them.
func checkDatabase(ctx context.Context, cfg config.Config) checkResult {
	where := server.DescribeDatabase(cfg.DatabaseURL)
	if !sqlstore.IsPostgresURL(cfg.DatabaseURL) {
		if _, err := os.Stat(cfg.DatabaseURL); err != nil {
			return failed("%s: %v (callsign serve or callsign migrate creates it)", where, err)
		}
	}
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{})
	if err != nil {
		return failed("%s: %v", where, err)
	}
	defer db.Close()
	version, err := db.SchemaVersion(ctx)
	if err != nil {
		return failed("%s: reading the schema version: %v", where, err)
	}
	pending, err := db.Pending(ctx)
	switch {
	case err != nil:
		return failed("%s: %v", where, err)
	case pending:
		return failed("%s is at schema version %d and lacks this build's migrations: run callsign migrate", where, version)
	}
	return ok("%s answers, schema version %d", where, version)
}

// checkRelay opens a session with the relay as sending would, and quits;
// with a mail provider, it makes one harmless read call with our
// credentials instead (SES: GetAccount; Mailgun: the default mail domain).
func checkRelay(ctx context.Context, cfg config.Config) checkResult {
	if cfg.MailProvider != "smtp" {
		return checkMailProvider(ctx, cfg)
	}
	if cfg.SMTPRelay == nil {
		return skip("CALLSIGN_SMTP_RELAY is not set: mail to other servers fails at once")
	}
	r, err := server.NewRelay(cfg)
	if err != nil {
		return failed("%v", err)
	}
	if err := r.Check(ctx); err != nil {
		return failed("%v", err)
	}
	how := "STARTTLS when offered"
	if cfg.SMTPRelay.ImplicitTLS {
		how = "implicit TLS"
	}
	if cfg.SMTPRelay.Username != "" {
		how += ", AUTH as " + cfg.SMTPRelay.Username
	}
	return ok("%s accepts a session (%s); no mail sent", cfg.SMTPRelay.Addr(), how)
}

func checkMailProvider(ctx context.Context, cfg config.Config) checkResult {
	transport, err := server.MailTransport(ctx, cfg)
	if err != nil {
		return failed("%v", err)
	}
	var detail string
	switch t := transport.(type) {
	case *ses.SES:
		detail, err = t.Check(ctx)
		detail = "SES (" + cfg.SESRegion + ") accepts the credentials: " + detail
	case *mailgun.Mailgun:
		detail, err = t.Check(ctx, cfg.MailDomains[0])
		detail = "Mailgun accepts the key: " + detail
	}
	if err != nil {
		return failed("%s: %v", cfg.MailProvider, err)
	}
	return ok("%s; no mail sent", detail)
}

// checkTelephony asks the provider whether it accepts our credentials.
func checkTelephony(ctx context.Context, cfg config.Config) checkResult {
	provider, canCheck := server.Telephony(cfg).(interface{ Check(context.Context) error })
	if !canCheck {
		return skip("the built-in simulator (CALLSIGN_TELEPHONY=%s) has no credentials", cfg.Telephony)
	}
	if err := provider.Check(ctx); err != nil {
		return failed("%s: %v", cfg.Telephony, err)
	}
	if cfg.Telephony == "telnyx" {
		return ok("telnyx accepts the API key and has messaging profile %s", cfg.TelnyxMessagingProfileID)
	}
	return ok("%s accepts the credentials of account %s", cfg.Telephony, cfg.TwilioAccountSID)
}

// reservedTLDs are never in the public DNS (RFC 2606, RFC 6761).
var reservedTLDs = []string{"localhost", "test", "example", "invalid", "local", "internal"}

// checkMailDomain looks for where the world sends a domain's mail: its MX
// records or, without them, its address (RFC 5321's implicit MX).
func checkMailDomain(ctx context.Context, resolver *net.Resolver, domain string) checkResult {
	if slices.Contains(reservedTLDs, domain[strings.LastIndexByte(domain, '.')+1:]) {
		return skip("a reserved name, never in the public DNS: mail reaches it only on this machine")
	}
	mxs, err := resolver.LookupMX(ctx, domain)
	if len(mxs) > 0 {
		var hosts []string
		for _, mx := range mxs {
			hosts = append(hosts, fmt.Sprintf("%s (%d)", strings.TrimSuffix(mx.Host, "."), mx.Pref))
		}
		return ok("MX %s", strings.Join(hosts, ", "))
	}
	var dnsErr *net.DNSError
	if err != nil && !(errors.As(err, &dnsErr) && dnsErr.IsNotFound) {
		return failed("looking up MX: %v", err)
	}
	addrs, err := resolver.LookupHost(ctx, domain)
	if err != nil || len(addrs) == 0 {
		return failed("no MX and no address record: no one can send mail to @%s", domain)
	}
	return ok("no MX; senders use its address %s (RFC 5321 implicit MX)", strings.Join(addrs, ", "))
}

// checkDisk reports the free space where the data directory lives.
func checkDisk(cfg config.Config) checkResult {
	if !server.StoresInDataDir(cfg) {
		return skip("nothing is kept in CALLSIGN_DATA_DIR (PostgreSQL, and both keys configured)")
	}
	dir, note := cfg.DataDir, ""
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return failed("%s: no part of the path exists", cfg.DataDir)
		}
		dir, note = parent, " (it does not exist yet; this is its parent)"
	}
	free, total, err := diskSpace(dir)
	if err != nil {
		return failed("%s: %v", dir, err)
	}
	detail := fmt.Sprintf("%s free of %s in %s%s", bytesIEC(free), bytesIEC(total), dir, note)
	if free < minFreeDisk {
		return failed("%s: under %s", detail, bytesIEC(minFreeDisk))
	}
	return ok("%s", detail)
}

// bytesIEC writes a size in KiB, MiB, GiB or TiB.
func bytesIEC(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}
