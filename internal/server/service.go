// Package server assembles Callsign from the adapters the configuration
// selects and runs it: the REST API, SMTP and IMAP listeners, and the
// workers. The CLI (internal/cli) serves with it and runs administrative
// commands on it; the end-to-end tests (e2e) start it in-process.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	_ "net/http/pprof" // served only on CALLSIGN_DEBUG_ADDR
	"net/url"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/callsign/callsign/adapters/acmecert"
	"github.com/callsign/callsign/adapters/console"
	"github.com/callsign/callsign/adapters/egress"
	"github.com/callsign/callsign/adapters/httpapi"
	imapadapter "github.com/callsign/callsign/adapters/imap"
	"github.com/callsign/callsign/adapters/mailauth"
	"github.com/callsign/callsign/adapters/mailgun"
	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/mcpserver"
	"github.com/callsign/callsign/adapters/metrics"
	"github.com/callsign/callsign/adapters/numberplan"
	"github.com/callsign/callsign/adapters/relay"
	"github.com/callsign/callsign/adapters/resolver"
	"github.com/callsign/callsign/adapters/rspamd"
	"github.com/callsign/callsign/adapters/ses"
	"github.com/callsign/callsign/adapters/simtel"
	"github.com/callsign/callsign/adapters/smtpin"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/system"
	"github.com/callsign/callsign/adapters/telnyx"
	"github.com/callsign/callsign/adapters/totp"
	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/adapters/vaultcipher"
	"github.com/callsign/callsign/adapters/webhook"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/config"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Service is Callsign assembled from the adapters the configuration selects.
type Service struct {
	// Version is the build's version, which the API and the MCP server
	// report.
	Version string

	cfg config.Config
	log *slog.Logger
	db  *sqlstore.DB
	app *app.App
	// formKey signs the verification page's forms; consoleKey the console's.
	formKey, consoleKey []byte
	// sim is the telephony simulator when it is in use: its deliveries
	// finish before the database closes.
	sim *simtel.Sim
	// telnyx checks Telnyx's webhooks when Telnyx is the provider.
	telnyx *telnyx.Verifier
	// generatedKeys are the key files this start created in the data dir.
	generatedKeys []string
	// platformKeys sign platform mail (CALLSIGN_DKIM_KEY_FILE).
	platformKeys []ports.DKIMKeyPair
	// drain is what shutdown waits for.
	drain drain
	// metrics is nil unless CALLSIGN_METRICS_ADDR is set.
	metrics   *metrics.Metrics
	metricsLn net.Listener

	httpLn  net.Listener
	httpsLn net.Listener // nil without CALLSIGN_ACME
	// acme gets certificates by ACME; nil without CALLSIGN_ACME.
	acme    *acmecert.Manager
	smtpLn  net.Listener
	imapLn  net.Listener
	imapsLn net.Listener // nil without CALLSIGN_IMAPS_ADDR
	// sourceOptions tune the IMAP source workers (tests make them quick).
	sourceOptions imapadapter.SupervisorOptions
	// ACMETuning adjusts certificates by ACME; set it before Serve.
	ACMETuning ACMETuning
}

// ACMETuning is what tests change in certificates by ACME: the roots
// their CA's directory is trusted by, and an early renewal.
type ACMETuning struct {
	Roots       *x509.CertPool
	RenewBefore time.Duration
}

// Open opens and migrates the database and builds the app. tune,
// for tests, adjusts the app's dependencies before it is built.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger, tune ...func(*app.Deps)) (*Service, error) {
	if err := checkDataDir(cfg); err != nil {
		return nil, err
	}
	generated := missingKeyFiles(cfg)
	var m *metrics.Metrics
	// Events are rendered once, as written, by the API's own views;
	// received mail's HTML is read back from its source by the parser that
	// read it at receipt.
	dbOptions := sqlstore.Options{EventData: httpapi.EventData(cfg.BaseURL), Parser: mailmime.Parser{}}
	if cfg.MetricsAddr != "" {
		m = metrics.New()
		dbOptions.CommitBatch = m.CommitBatch
		dbOptions.WALRestart = m.WALRestart
	}
	octx, cancel := context.WithTimeout(ctx, databaseConnectTimeout)
	db, err := sqlstore.Open(octx, cfg.DatabaseURL, dbOptions)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("CALLSIGN_DATABASE_URL: cannot open %s: %w", DescribeDatabase(cfg.DatabaseURL), err)
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	keyring, err := openKeyring(cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	signIn, err := openSignIn(cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	var telnyxHooks *telnyx.Verifier
	if cfg.Telephony == "telnyx" {
		if telnyxHooks, err = telnyx.NewVerifier(cfg.TelnyxPublicKey, nil); err != nil {
			db.Close()
			return nil, fmt.Errorf("TELNYX_PUBLIC_KEY: %w", err)
		}
	}
	deps := app.Deps{
		Ports: app.Ports{Store: db, Clock: system.Clock{}, IDs: system.IDs{}, Cipher: keyring, Log: log,
			Parser: mailmime.Parser{}, Composer: mailmime.Composer{}, Telephony: Telephony(cfg), NumberPlan: numberplan.Plan{},
			OTP: totp.Generator{}},
		Settings: app.Settings{MailDomains: cfg.MailDomains, PublicURL: cfg.BaseURL, MaxMessageBytes: cfg.SMTPMaxBytes,
			Postmaster: cfg.Postmaster, EventRetention: cfg.EventRetention, OutboxLease: cfg.OutboxLease, Quotas: quotas(cfg),
			MaxActiveCalls: cfg.Quotas[string(core.QuotaActiveCalls)], CallMaxDuration: cfg.CallMaxDuration,
			Retry:            app.RetryPolicy{First: cfg.OutboxRetry, Max: cfg.OutboxRetryMax, GiveUpAfter: app.DefaultRetry.GiveUpAfter},
			CertificateHosts: certificateHosts(cfg)},
	}
	if deps.Relay, err = MailTransport(ctx, cfg); err != nil {
		db.Close()
		return nil, err
	}
	if err := useMailTrust(cfg, &deps); err != nil {
		db.Close()
		return nil, err
	}
	signIn.use(&deps)
	if m != nil {
		deps.Observer = m
		instrumentDB(m, db)
	}
	for _, f := range tune {
		f(&deps)
	}
	sim, _ := deps.Telephony.(*simtel.Sim)
	if sim != nil {
		deps.MediaPlayer = simPlayer{sim}
	}
	a := app.New(deps)
	if sim != nil {
		sim.Answered = func(ctx context.Context, c simtel.Call) { a.Calls.AnswerSimulated(ctx, c.SID, c.From, c.To, c.Answer) }
		// A text to a number of this service is delivered here.
		sim.Serves = a.SMS.Serves
		sim.Inbound = func(ctx context.Context, from, to, body, sid string) {
			if _, err := a.SMS.Receive(ctx, app.InboundSMS{From: from, To: to, Body: body, SID: sid}); err != nil {
				log.Error("sms: simulated delivery failed", "err", err)
			}
		}
		sim.Report = a.SMS.SimulatedReport
	}
	return &Service{cfg: cfg, log: log, db: db, app: a, formKey: signIn.formKey, consoleKey: signIn.consoleKey, sim: sim, telnyx: telnyxHooks, generatedKeys: generated, metrics: m,
		platformKeys: deps.PlatformKeys}, nil
}

// certificateHosts always get a certificate by ACME: the base URL's host
// and the MX host (custom domains' MTA-STS hosts are the app's to allow).
func certificateHosts(cfg config.Config) []string {
	hosts := []string{cfg.MXHost}
	if u, err := url.Parse(cfg.BaseURL); err == nil {
		hosts = append(hosts, u.Hostname())
	}
	return hosts
}

// useMailTrust adds the DNS resolver (CALLSIGN_DNS_RESOLVER or the
// system's), mail authentication and DKIM signing, with the platform key
// of CALLSIGN_DKIM_KEY_FILE when one is set.
func useMailTrust(cfg config.Config, deps *app.Deps) error {
	r, err := resolver.New(cfg.DNSResolver)
	if err != nil {
		return fmt.Errorf("CALLSIGN_DNS_RESOLVER: %w", err)
	}
	// Domain checks look for records just published: they keep no answer.
	deps.Resolver, deps.MailAuth, deps.Signer = r.Uncached(), mailauth.NewAuthenticator(r, cfg.SMTPHostname), mailauth.NewSigner()
	// Sources reach hosts by the system's resolver (which knows /etc/hosts)
	// unless a name server is configured.
	var hosts egress.Resolver
	if cfg.DNSResolver != "" {
		hosts = r
	}
	deps.Destinations = egress.New(core.DestinationPolicy{AllowPrivate: cfg.SourcesAllowPrivate}, hosts)
	// Webhooks go out through the same policy, with their own allowance.
	hooks := egress.New(core.DestinationPolicy{AllowPrivate: cfg.WebhookAllowPrivate}, hosts)
	deps.WebhookSender = webhook.New(webhook.Options{DialContext: hooks.DialContext,
		Resolve: func(ctx context.Context, host string) error { _, err := hooks.Resolve(ctx, host); return err }})
	deps.EventJSON = httpapi.EventJSON
	deps.Domain = core.DomainSettings{MXHost: cfg.MXHost, SPFInclude: cfg.SPFInclude, TLSReportsTo: cfg.TLSReportsTo}
	deps.Reports, deps.InboundAuth = mailmime.Parser{}, core.InboundAuth(cfg.InboundAuth)
	if cfg.RspamdURL != "" {
		deps.Spam = rspamd.New(cfg.RspamdURL, cfg.RspamdPassword)
	}
	deps.SpamTimeout = cfg.RspamdTimeout
	for _, f := range cfg.PlatformDKIM {
		pemBytes, err := os.ReadFile(f.Path)
		if err != nil {
			return fmt.Errorf("CALLSIGN_DKIM_KEY_FILE: %w", err)
		}
		key, err := mailauth.ParsePrivateKeyPEM(f.Selector, pemBytes)
		if err != nil {
			return fmt.Errorf("CALLSIGN_DKIM_KEY_FILE: %s: %w", f.Path, err)
		}
		deps.PlatformKeys = append(deps.PlatformKeys, key)
	}
	return nil
}

// dkimWarning is what to tell an operator whose platform keys are all
// Ed25519: verifiers without RFC 8463 (Mail::DKIM as Debian 12 ships it,
// most large receivers) find no signature they can check.
func dkimWarning(keys []ports.DKIMKeyPair) string {
	if len(keys) == 0 {
		return ""
	}
	for _, k := range keys {
		if k.Public.Algorithm != "ed25519" {
			return ""
		}
	}
	return "platform mail is signed with Ed25519 only, which most receivers cannot verify yet (RFC 8463): " +
		"add an RSA key, e.g. CALLSIGN_DKIM_KEY_FILE=rsa.pem,ed25519.pem with CALLSIGN_DKIM_SELECTOR=<rsa selector>,<ed25519 selector>"
}

// relayWarning is what to tell an operator who set CALLSIGN_SMTP_RELAY while
// another provider carries outbound mail: the relay is not used, which a
// switch of provider that left it set would otherwise hide.
func relayWarning(cfg config.Config) string {
	if cfg.SMTPRelay == nil || cfg.MailProvider == "" || cfg.MailProvider == "smtp" {
		return ""
	}
	return "CALLSIGN_SMTP_RELAY is set but CALLSIGN_MAIL_PROVIDER=" + cfg.MailProvider +
		" carries outbound mail: the relay is not used; unset it, or set CALLSIGN_MAIL_PROVIDER=smtp"
}

// MailTransport is what CALLSIGN_MAIL_PROVIDER says carries outbound
// mail: the SMTP relay (nil when none is set), Amazon SES or Mailgun. Each
// gets the same share of the outbox's lease per attempt.
func MailTransport(ctx context.Context, cfg config.Config) (ports.MailRelay, error) {
	timeout := app.AttemptBound(cfg.OutboxLease)
	switch cfg.MailProvider {
	case "ses":
		s, err := ses.New(ctx, ses.Config{Region: cfg.SESRegion, Endpoint: cfg.SESEndpoint, ConfigurationSet: cfg.SESConfigurationSet, Timeout: timeout})
		if err != nil {
			return nil, fmt.Errorf("CALLSIGN_MAIL_PROVIDER=ses: %w", err)
		}
		return s, nil
	case "mailgun":
		return mailgun.New(mailgun.Config{APIKey: cfg.MailgunAPIKey, APIBase: cfg.MailgunAPIBase, Timeout: timeout}), nil
	}
	if cfg.SMTPRelay == nil {
		return nil, nil // no external delivery: the outbox fails such mail at once
	}
	return NewRelay(cfg)
}

// NewRelay is the relay CALLSIGN_SMTP_RELAY names.
func NewRelay(cfg config.Config) (*relay.Relay, error) {
	r := cfg.SMTPRelay
	rc := relay.Config{Host: r.Host, Port: r.Port, ImplicitTLS: r.ImplicitTLS, Username: r.Username, Password: r.Password, HeloName: cfg.SMTPHostname,
		Timeout: app.AttemptBound(cfg.OutboxLease)}
	if cfg.SMTPRelayCA != "" {
		pem, err := os.ReadFile(cfg.SMTPRelayCA)
		roots := x509.NewCertPool()
		if err != nil || !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CALLSIGN_SMTP_RELAY_CA: no PEM certificates in %s", cfg.SMTPRelayCA)
		}
		rc.TLSConfig = &tls.Config{RootCAs: roots}
	}
	return relay.New(rc), nil
}

// instrumentDB adds the database's pools and the outbox's depth to the metrics.
func instrumentDB(m *metrics.Metrics, db *sqlstore.DB) {
	for role, pool := range db.Pools() {
		m.DBPool(role, pool)
	}
	m.Gauge("callsign_outbox_queued_messages", "Messages waiting in the outbox for a delivery attempt.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n, err := db.OutboxDepth(ctx)
		if err != nil {
			return math.NaN()
		}
		return float64(n)
	})
}

// requestObserver is the API's request observer: the metrics, when on.
func (s *Service) requestObserver() httpapi.RequestObserver {
	if s.metrics == nil {
		return nil
	}
	return s.metrics
}

// quotas are the configured CALLSIGN_QUOTA_*, by the names core gives them.
func quotas(cfg config.Config) core.Limits {
	limits := core.Limits{}
	for name, n := range cfg.Quotas {
		limits[core.Quota(name)] = n
	}
	return limits
}

// Telephony is the provider CALLSIGN_TELEPHONY selects.
func Telephony(cfg config.Config) ports.Telephony {
	switch cfg.Telephony {
	case "twilio":
		return twilio.New(twilio.Config{AccountSID: cfg.TwilioAccountSID, AuthToken: cfg.TwilioAuthToken})
	case "telnyx":
		return telnyx.New(telnyx.Config{APIKey: cfg.TelnyxAPIKey, MessagingProfileID: cfg.TelnyxMessagingProfileID,
			ConnectionID: cfg.TelnyxConnectionID, APIBase: cfg.TelnyxAPIBase})
	}
	return simtel.New()
}

// serveHTTP runs the API on the HTTP listener; with ACME, on the HTTPS
// listener, the HTTP one answering the CA's http-01 challenges and
// redirecting everything else to HTTPS.
func (s *Service) serveHTTP(ctx context.Context, g *errgroup.Group, stopping context.Context, api *http.Server, httpsTLS *tls.Config) {
	plain := api
	if s.acme != nil {
		_, port, _ := net.SplitHostPort(s.httpsLn.Addr().String())
		plain = &http.Server{Handler: s.acme.HTTPHandler(acmecert.RedirectToHTTPS(port)), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
			WriteTimeout: time.Minute, IdleTimeout: time.Minute}
		api.TLSConfig = httpsTLS
		// Failed handshakes (scanners, names outside the policy) are the
		// internet's noise: debug, not the standard logger's stderr.
		api.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
		g.Go(func() error {
			if err := api.ServeTLS(s.httpsLn, "", ""); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("REST API over HTTPS: %w", err)
			}
			return nil
		})
		s.drain.task("HTTP redirects", g, func() error {
			<-ctx.Done()
			return plain.Shutdown(stopping)
		})
	}
	g.Go(func() error {
		if err := plain.Serve(s.httpLn); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("REST API: %w", err)
		}
		return nil
	})
	s.drain.task("REST API", g, func() error {
		<-ctx.Done()
		return api.Shutdown(stopping)
	})
}

// Close stops the app's work and closes the database, after Serve returned.
func (s *Service) Close() error {
	s.app.Close()
	if s.sim != nil {
		s.sim.Wait()
	}
	return s.db.Close()
}

// VaultKeyFile is where the generated vault keys live when
// CALLSIGN_VAULT_KEY is not set.
func VaultKeyFile(cfg config.Config) string { return filepath.Join(cfg.DataDir, "vault.key") }

// openKeyring loads the vault keys: from the configuration when
// CALLSIGN_VAULT_KEY is set, else from (or into) the data directory.
func openKeyring(cfg config.Config) (*vaultcipher.Keyring, error) {
	if cfg.VaultKey != nil {
		return vaultcipher.FromKeys(cfg.VaultKey, cfg.VaultPreviousKeys...)
	}
	return vaultcipher.OpenFile(VaultKeyFile(cfg))
}

// Listen binds every listener, so that a port in use fails start-up at once
// and tests can learn the addresses chosen for port 0. The HTTP and SMTP
// listeners count their open connections, for what shutdown waits for.
func (s *Service) Listen() error {
	httpLn, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("CALLSIGN_HTTP_ADDR: %w", err)
	}
	smtpLn, err := net.Listen("tcp", s.cfg.SMTPAddr)
	if err != nil {
		httpLn.Close()
		return fmt.Errorf("CALLSIGN_SMTP_ADDR: %w", err)
	}
	if err := s.listenIMAP(); err != nil {
		httpLn.Close()
		smtpLn.Close()
		return err
	}
	if s.cfg.ACME {
		httpsLn, err := net.Listen("tcp", s.cfg.HTTPSAddr)
		if err != nil {
			httpLn.Close()
			smtpLn.Close()
			s.closeListeners()
			return fmt.Errorf("CALLSIGN_HTTPS_ADDR: %w", err)
		}
		s.httpsLn = s.drain.count("REST API", "connection", httpsLn, nil)
	}
	s.httpLn = s.drain.count("REST API", "connection", httpLn, nil)
	var smtpAccepted func()
	if s.metrics != nil {
		smtpAccepted = s.metrics.SMTPSession
	}
	s.smtpLn = s.drain.count("SMTP", "session", smtpLn, smtpAccepted)
	if s.cfg.MetricsAddr != "" {
		if s.metricsLn, err = net.Listen("tcp", s.cfg.MetricsAddr); err != nil {
			s.closeListeners()
			return fmt.Errorf("CALLSIGN_METRICS_ADDR: %w", err)
		}
		open := s.drain.part("SMTP")
		s.metrics.Gauge("callsign_smtp_open_sessions", "SMTP connections open now.", func() float64 { return float64(open.openCount()) })
	}
	return nil
}

// closeListeners closes what Listen bound, when start-up fails after it.
func (s *Service) closeListeners() {
	for _, ln := range []net.Listener{s.httpLn, s.httpsLn, s.smtpLn, s.imapLn, s.imapsLn, s.metricsLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// tlsConfigs are the TLS of HTTPS (nil without ACME) and of SMTP and IMAP
// (nil without a certificate): by ACME, or from the configured files.
func (s *Service) tlsConfigs() (https, mail *tls.Config, err error) {
	if !s.cfg.ACME {
		mail, err = s.fileTLS()
		return nil, mail, err
	}
	holder := make([]byte, 8)
	if _, err := rand.Read(holder); err != nil {
		return nil, nil, err
	}
	s.acme = acmecert.New(acmecert.Config{Directory: s.cfg.ACMEDirectory, Email: s.cfg.ACMEEmail, State: s.app.Certificates,
		Holder: hex.EncodeToString(holder), DefaultHost: s.cfg.MXHost, RenewBefore: s.ACMETuning.RenewBefore, Roots: s.ACMETuning.Roots})
	return s.acme.TLSConfig(), &tls.Config{GetCertificate: s.acme.GetCertificate, MinVersion: tls.VersionTLS12}, nil
}

// fileTLS loads the certificate of CALLSIGN_SMTP_TLS_CERT, when one is configured.
func (s *Service) fileTLS() (*tls.Config, error) {
	if s.cfg.SMTPTLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(s.cfg.SMTPTLSCert, s.cfg.SMTPTLSKey)
	if err != nil {
		return nil, fmt.Errorf("CALLSIGN_SMTP_TLS_CERT: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Announce logs where the service listens.
func (s *Service) Announce() {
	for _, w := range []string{dkimWarning(s.platformKeys), relayWarning(s.cfg)} {
		if w != "" {
			s.log.Warn(w)
		}
	}
	s.log.Info("serving the REST API", "addr", s.httpLn.Addr().String(), "base_url", s.cfg.BaseURL)
	s.log.Info("serving the console", "url", s.cfg.BaseURL+httpapi.ConsolePath)
	if s.httpsLn != nil {
		s.log.Info("serving the REST API over HTTPS with certificates by ACME", "addr", s.httpsLn.Addr().String(), "directory", s.cfg.ACMEDirectory)
	}
	tls := s.cfg.SMTPTLSCert != "" || s.cfg.ACME
	s.log.Info("accepting mail over SMTP", "addr", s.smtpLn.Addr().String(), "starttls", tls)
	s.log.Info("serving inboxes over IMAP", "addr", s.imapLn.Addr().String(), "starttls", tls)
	if s.imapsLn != nil {
		s.log.Info("serving inboxes over IMAP with implicit TLS", "addr", s.imapsLn.Addr().String())
	}
	if s.cfg.DebugAddr != "" {
		s.log.Info("serving the profiler", "addr", s.cfg.DebugAddr)
	}
	if s.metricsLn != nil {
		s.log.Info("serving Prometheus metrics", "addr", s.metricsLn.Addr().String(), "path", "/metrics")
		if !isLoopback(s.metricsLn) {
			s.log.Warn("metrics are served beyond loopback: they show the service's traffic; keep CALLSIGN_METRICS_ADDR on loopback or behind a firewall",
				"addr", s.metricsLn.Addr().String())
		}
	}
}

// Serve runs the listeners and workers until ctx ends, then drains them:
// it waits up to CALLSIGN_SHUTDOWN_GRACE for what is still running, saying
// what that is, and fails naming whatever outlived the grace period.
func (s *Service) Serve(ctx context.Context) error {
	httpsTLS, tlsConfig, err := s.tlsConfigs()
	if err != nil {
		return err
	}
	mx := smtpin.New(s.app.Receiving, smtpin.Options{Hostname: s.cfg.SMTPHostname, MaxMessageBytes: s.cfg.SMTPMaxBytes, TLSConfig: tlsConfig, Log: s.log,
		MaxSessions: s.cfg.SMTPMaxSessions, MaxSessionsPerIP: s.cfg.SMTPMaxSessionsPerIP, DataTimeout: s.cfg.SMTPDataTimeout,
		MaxInflightBytes: s.cfg.SMTPMaxInflightBytes, SpoolDir: s.cfg.DataDir})
	var mcpEndpoint *mcpserver.HTTP
	apiOptions := httpapi.Options{Log: s.log, BaseURL: s.cfg.BaseURL, MaxUploadBytes: s.cfg.SMTPMaxBytes,
		RateLimit:      httpapi.RateLimit{PerSecond: s.cfg.RateLimitPerSecond, Burst: s.cfg.RateLimitBurst},
		Streams:        httpapi.StreamLimits{PerKey: s.cfg.MaxStreamsPerKey, PerAccount: s.cfg.MaxStreamsPerAccount},
		TrustedProxies: s.cfg.TrustedProxies, FormKey: s.formKey, Version: s.Version, Requests: s.requestObserver()}
	apiOptions.Media = mediaBridge{spool: s.cfg.DataDir, log: s.log,
		dial: egress.New(core.DestinationPolicy{AllowPrivate: s.cfg.WebhookAllowPrivate}, nil).DialContext}
	if s.telnyx != nil { // a nil *Verifier in the interface would not read as unset
		apiOptions.Telnyx = s.telnyx
	}
	if s.cfg.MCP {
		apiOptions.MCP = func(api http.Handler) http.Handler {
			mcpEndpoint = mcpserver.NewHTTP(api, s.app, mcpserver.HTTPOptions{Options: mcpserver.Options{Version: s.Version}, BaseURL: s.cfg.BaseURL})
			return mcpEndpoint
		}
	}
	apiOptions.Console = func(host httpapi.ConsoleHost) http.Handler {
		return console.New(s.app, console.Options{Log: s.log, BaseURL: s.cfg.BaseURL, FormKey: s.consoleKey, Host: host,
			MaxUploadBytes: s.cfg.SMTPMaxBytes})
	}
	if err := useMailProviderHooks(s.cfg, &apiOptions); err != nil {
		return err
	}
	// Event streams end when shutdown begins, or they would hold the drain.
	closing := make(chan struct{})
	apiOptions.Closing = closing
	s.app.Health.WatchWorkers(&s.drain)
	handler := httpapi.New(s.app, apiOptions)
	api := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	api.RegisterOnShutdown(func() { close(closing) })
	if mcpEndpoint != nil {
		// MCP sessions hold streams open: end them, or shutdown waits.
		api.RegisterOnShutdown(mcpEndpoint.Close)
	}
	g, gctx := errgroup.WithContext(ctx)
	// stopping ends with the grace period; each server's shutdown gets it.
	stopping, cancelStopping := context.WithCancel(context.Background())
	defer cancelStopping()
	s.serveHTTP(gctx, g, stopping, api, httpsTLS)
	g.Go(func() error {
		if err := mx.Serve(s.smtpLn); err != nil {
			return fmt.Errorf("SMTP listener: %w", err)
		}
		return nil
	})
	s.drain.task("SMTP", g, func() error {
		<-gctx.Done()
		return mx.Shutdown(stopping)
	})
	s.drain.task("outbox", g, func() error {
		// The attempt under way may finish within the grace period, and
		// leaves a second for the rest of the drain.
		s.app.Outbox.RunOutbox(gctx, max(s.cfg.ShutdownGrace-time.Second, s.cfg.ShutdownGrace/2))
		return nil
	})
	s.drain.task("webhook deliveries", g, func() error {
		s.app.Webhooks.RunDeliveries(gctx)
		return nil
	})
	s.drain.task("simulated calls", g, func() error {
		s.app.Calls.RunSimulatedHangUps(gctx)
		return nil
	})
	s.drain.task("stale streams", g, func() error {
		s.app.Calls.RunStreamSweep(gctx)
		return nil
	})
	s.drain.task("event retention", g, func() error {
		s.app.Events.RunRetention(gctx)
		return nil
	})
	s.drain.task("domain checks", g, func() error {
		s.app.Domains.RunChecks(gctx)
		return nil
	})
	s.serveIMAP(gctx, g, tlsConfig)
	if s.metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", s.metrics.Handler())
		metricsServer := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error {
			if err := metricsServer.Serve(s.metricsLn); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("CALLSIGN_METRICS_ADDR: %w", err)
			}
			return nil
		})
		g.Go(func() error { <-gctx.Done(); return metricsServer.Close() })
	}
	if s.cfg.DebugAddr != "" {
		// The profiler stays off unless asked for: it shows internals.
		debug := &http.Server{Addr: s.cfg.DebugAddr, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error {
			if err := debug.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("CALLSIGN_DEBUG_ADDR: %w", err)
			}
			return nil
		})
		g.Go(func() error { <-gctx.Done(); return debug.Close() })
	}

	s.drain.started.Store(true)
	finished := make(chan error, 1)
	go func() { finished <- g.Wait() }()
	select {
	case err := <-finished:
		return err
	case <-gctx.Done():
	}
	// Orchestrators stop sending traffic while what is under way finishes.
	s.drain.stopping.Store(true)
	grace := s.cfg.ShutdownGrace
	s.log.Info("shutting down; waiting for "+s.drain.describe(), "grace", grace.String())
	timeout := time.NewTimer(grace)
	defer timeout.Stop()
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	for {
		select {
		case err := <-finished:
			s.log.Info("stopped")
			return err
		case <-progress.C:
			s.log.Info("still waiting for " + s.drain.describe())
		case <-timeout.C:
			// Named before the cancel: what still ran may finish at once then.
			running := s.drain.describe()
			cancelStopping()
			return fmt.Errorf("shutdown: gave up after %s; still running: %s", grace, running)
		}
	}
}
