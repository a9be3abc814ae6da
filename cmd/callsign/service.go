package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only on CALLSIGN_DEBUG_ADDR
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/callsign/callsign/adapters/httpapi"
	imapadapter "github.com/callsign/callsign/adapters/imap"
	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/relay"
	"github.com/callsign/callsign/adapters/simtel"
	"github.com/callsign/callsign/adapters/smtpin"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/system"
	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/adapters/vaultcipher"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/config"
	"github.com/callsign/callsign/ports"
)

// service is Callsign assembled from the adapters the configuration selects.
type service struct {
	cfg config.Config
	log *slog.Logger
	db  *sqlstore.DB
	app *app.App
	// formKey signs the verification page's forms.
	formKey []byte
	// sim is the telephony simulator when it is in use: its deliveries
	// finish before the database closes.
	sim *simtel.Sim

	httpLn  net.Listener
	smtpLn  net.Listener
	imapLn  net.Listener
	imapsLn net.Listener // nil without CALLSIGN_IMAPS_ADDR
	// sourceOptions tune the IMAP source workers (tests make them quick).
	sourceOptions imapadapter.SupervisorOptions
}

// openService opens and migrates the database and builds the app. tune,
// for tests, adjusts the app's dependencies before it is built.
func openService(ctx context.Context, cfg config.Config, log *slog.Logger, tune ...func(*app.Deps)) (*service, error) {
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{})
	if err != nil {
		return nil, err
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
	mail := app.MailDeps{Parser: mailmime.Parser{}, Composer: mailmime.Composer{}, MaxMessageBytes: cfg.SMTPMaxBytes, Postmaster: cfg.Postmaster}
	if r := cfg.SMTPRelay; r != nil {
		rc := relay.Config{Host: r.Host, Port: r.Port, ImplicitTLS: r.ImplicitTLS, Username: r.Username, Password: r.Password, HeloName: cfg.SMTPHostname}
		if cfg.SMTPRelayCA != "" {
			pem, err := os.ReadFile(cfg.SMTPRelayCA)
			roots := x509.NewCertPool()
			if err != nil || !roots.AppendCertsFromPEM(pem) {
				db.Close()
				return nil, fmt.Errorf("CALLSIGN_SMTP_RELAY_CA: no PEM certificates in %s", cfg.SMTPRelayCA)
			}
			rc.TLSConfig = &tls.Config{RootCAs: roots}
		}
		mail.Relay = relay.New(rc)
	}
	deps := app.Deps{
		Store:       db,
		Clock:       system.Clock{},
		IDs:         system.IDs{},
		Cipher:      keyring,
		Log:         log,
		MailDomains: cfg.MailDomains,
		Mail:        mail,
		Telephony:   telephony(cfg),
		PublicURL:   cfg.BaseURL,
	}
	signIn.use(&deps)
	for _, f := range tune {
		f(&deps)
	}
	a := app.New(deps)
	sim, _ := deps.Telephony.(*simtel.Sim)
	if sim != nil {
		// Between two simulated numbers, a message is delivered here.
		sim.Inbound = func(ctx context.Context, from, to, body, sid string) {
			if _, err := a.SMS.Receive(ctx, app.InboundSMS{From: from, To: to, Body: body, SID: sid}); err != nil {
				log.Error("sms: simulated delivery failed", "err", err)
			}
		}
	}
	return &service{cfg: cfg, log: log, db: db, app: a, formKey: signIn.formKey, sim: sim}, nil
}

// telephony is the provider CALLSIGN_TELEPHONY selects.
func telephony(cfg config.Config) ports.Telephony {
	if cfg.Telephony == "twilio" {
		return twilio.New(twilio.Config{AccountSID: cfg.TwilioAccountSID, AuthToken: cfg.TwilioAuthToken})
	}
	return simtel.New()
}

func (s *service) close() error {
	if s.sim != nil {
		s.sim.Wait()
	}
	return s.db.Close()
}

// vaultKeyFile is where the generated vault keys live when
// CALLSIGN_VAULT_KEY is not set.
func vaultKeyFile(cfg config.Config) string { return filepath.Join(cfg.DataDir, "vault.key") }

// openKeyring loads the vault keys: from the configuration when
// CALLSIGN_VAULT_KEY is set, else from (or into) the data directory.
func openKeyring(cfg config.Config) (*vaultcipher.Keyring, error) {
	if cfg.VaultKey != nil {
		return vaultcipher.FromKeys(cfg.VaultKey, cfg.VaultPreviousKeys...)
	}
	return vaultcipher.OpenFile(vaultKeyFile(cfg))
}

// listen binds every listener, so that a port in use fails start-up at once
// and tests can learn the addresses chosen for port 0.
func (s *service) listen() error {
	var err error
	if s.httpLn, err = net.Listen("tcp", s.cfg.HTTPAddr); err != nil {
		return fmt.Errorf("CALLSIGN_HTTP_ADDR: %w", err)
	}
	if s.smtpLn, err = net.Listen("tcp", s.cfg.SMTPAddr); err != nil {
		s.httpLn.Close()
		return fmt.Errorf("CALLSIGN_SMTP_ADDR: %w", err)
	}
	if err := s.listenIMAP(); err != nil {
		s.httpLn.Close()
		s.smtpLn.Close()
		return err
	}
	return nil
}

// smtpTLS loads the listener's certificate, when one is configured.
func (s *service) smtpTLS() (*tls.Config, error) {
	if s.cfg.SMTPTLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(s.cfg.SMTPTLSCert, s.cfg.SMTPTLSKey)
	if err != nil {
		return nil, fmt.Errorf("CALLSIGN_SMTP_TLS_CERT: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// shutdownGrace is how long in-flight work gets to finish on shutdown.
const shutdownGrace = 15 * time.Second

// serve runs the listeners until ctx ends, then shuts them down gracefully.
func (s *service) serve(ctx context.Context) error {
	tlsConfig, err := s.smtpTLS()
	if err != nil {
		return err
	}
	mx := smtpin.New(s.app.Mail, smtpin.Options{Hostname: s.cfg.SMTPHostname, MaxMessageBytes: s.cfg.SMTPMaxBytes, TLSConfig: tlsConfig, Log: s.log})
	handler := httpapi.New(s.app, httpapi.Options{Log: s.log, BaseURL: s.cfg.BaseURL, MaxUploadBytes: s.cfg.SMTPMaxBytes,
		RateLimit:      httpapi.RateLimit{PerSecond: s.cfg.RateLimitPerSecond, Burst: s.cfg.RateLimitBurst},
		TrustedProxies: s.cfg.TrustedProxies, FormKey: s.formKey})
	api := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		s.log.Info("serving the REST API", "addr", s.httpLn.Addr().String(), "base_url", s.cfg.BaseURL)
		if err := api.Serve(s.httpLn); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("REST API: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		s.log.Info("accepting mail over SMTP", "addr", s.smtpLn.Addr().String(), "starttls", tlsConfig != nil)
		if err := mx.Serve(s.smtpLn); err != nil {
			return fmt.Errorf("SMTP listener: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		s.app.Mail.RunOutbox(gctx)
		return nil
	})
	s.serveIMAP(gctx, g, tlsConfig)
	if s.cfg.DebugAddr != "" {
		// The profiler stays off unless asked for: it shows internals.
		debug := &http.Server{Addr: s.cfg.DebugAddr, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error {
			s.log.Info("serving the profiler", "addr", s.cfg.DebugAddr)
			if err := debug.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("CALLSIGN_DEBUG_ADDR: %w", err)
			}
			return nil
		})
		g.Go(func() error { <-gctx.Done(); return debug.Close() })
	}
	g.Go(func() error {
		<-gctx.Done()
		s.log.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		return errors.Join(api.Shutdown(sctx), mx.Shutdown(sctx))
	})
	return g.Wait()
}
