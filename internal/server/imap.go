package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"golang.org/x/sync/errgroup"

	imapadapter "github.com/callsign/callsign/adapters/imap"
)

// listenIMAP binds the IMAP listeners: plaintext (with STARTTLS when a
// certificate is configured) and, when asked for, implicit TLS.
func (s *Service) listenIMAP() error {
	var err error
	if s.imapLn, err = net.Listen("tcp", s.cfg.IMAPAddr); err != nil {
		return fmt.Errorf("CALLSIGN_IMAP_ADDR: %w", err)
	}
	if s.cfg.IMAPSAddr != "" {
		if s.imapsLn, err = net.Listen("tcp", s.cfg.IMAPSAddr); err != nil {
			s.imapLn.Close()
			return fmt.Errorf("CALLSIGN_IMAPS_ADDR: %w", err)
		}
	}
	return nil
}

// isLoopback reports whether a listener only hears this machine.
func isLoopback(ln net.Listener) bool {
	addr, ok := ln.Addr().(*net.TCPAddr)
	return ok && addr.IP.IsLoopback()
}

// serveIMAP runs the IMAP server and the source workers in g until ctx ends.
func (s *Service) serveIMAP(ctx context.Context, g *errgroup.Group, tlsConfig *tls.Config) {
	// Without TLS, a password may cross the wire in the clear only where
	// no one else can hear it.
	plaintextAuth := isLoopback(s.imapLn)
	if !plaintextAuth && tlsConfig == nil {
		s.log.Warn("IMAP listens beyond loopback without a certificate, so clients cannot log in; set CALLSIGN_SMTP_TLS_CERT and CALLSIGN_SMTP_TLS_KEY",
			"addr", s.imapLn.Addr().String())
	}
	srv := imapadapter.NewServer(s.app.Mailboxes, imapadapter.ServerOptions{TLSConfig: tlsConfig, PlaintextAuth: plaintextAuth, Log: s.log})
	g.Go(func() error {
		if err := srv.Serve(s.imapLn); err != nil {
			return fmt.Errorf("IMAP listener: %w", err)
		}
		return nil
	})
	if s.imapsLn != nil {
		g.Go(func() error {
			if err := srv.ServeTLS(s.imapsLn); err != nil {
				return fmt.Errorf("IMAPS listener: %w", err)
			}
			return nil
		})
	}
	g.Go(func() error {
		<-ctx.Done()
		return srv.Close()
	})
	s.drain.task("IMAP sources", g, func() error {
		opts := s.sourceOptions
		if opts.Log == nil {
			opts.Log = s.log // the workers' warnings belong in the service's log
		}
		if opts.Lease == 0 {
			opts.Lease = s.cfg.SourceLease
		}
		imapadapter.NewSupervisor(s.app.Sources, opts).Run(ctx)
		return nil
	})
}
