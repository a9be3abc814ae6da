package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/callsign/callsign/adapters/httpapi"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/system"
	"github.com/callsign/callsign/adapters/vaultcipher"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/config"
)

// service is Callsign assembled from the adapters the configuration selects.
type service struct {
	cfg config.Config
	log *slog.Logger
	db  *sqlstore.DB
	app *app.App

	httpLn net.Listener
}

// openService opens and migrates the database and builds the app.
func openService(ctx context.Context, cfg config.Config, log *slog.Logger) (*service, error) {
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
	a := app.New(app.Deps{
		Store:       db,
		Clock:       system.Clock{},
		IDs:         system.IDs{},
		Cipher:      keyring,
		Log:         log,
		MailDomains: cfg.MailDomains,
	})
	return &service{cfg: cfg, log: log, db: db, app: a}, nil
}

func (s *service) close() error { return s.db.Close() }

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
	return nil
}

// shutdownGrace is how long in-flight work gets to finish on shutdown.
const shutdownGrace = 15 * time.Second

// serve runs the listeners until ctx ends, then shuts them down gracefully.
func (s *service) serve(ctx context.Context) error {
	api := &http.Server{
		Handler:           httpapi.New(s.app, httpapi.Options{Log: s.log, BaseURL: s.cfg.BaseURL}),
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
		<-gctx.Done()
		s.log.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		return api.Shutdown(sctx)
	})
	return g.Wait()
}
