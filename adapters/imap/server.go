// Package imap speaks IMAP both ways, with emersion/go-imap/v2. Its server
// gives ordinary mail clients every inbox (a driving adapter over
// app.Mailboxes); its source workers pull mail from mailboxes elsewhere
// into inboxes (a driving adapter over app.Sources). Both live here because
// they share one library, as every adapter is one technology.
package imap

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// ServerOptions configure the IMAP server.
type ServerOptions struct {
	// TLSConfig, when set, is offered through STARTTLS, and ServeTLS serves
	// implicit TLS with it.
	TLSConfig *tls.Config
	// PlaintextAuth lets clients log in without TLS. Set it only for a
	// listener on loopback, where nothing on the wire can be overheard.
	PlaintextAuth bool
	Log           *slog.Logger
	// Recheck is how often an idling client's mailbox is looked at again, to
	// announce mail stored by other instances; 0 means 10 seconds. Mail
	// stored by this process is announced at once.
	Recheck time.Duration
	// LoginFailures is how many failed logins to one inbox address one
	// remote address may make per minute before its logins to that inbox
	// are refused for the rest of the minute; 0 means 10. Across inboxes,
	// a remote address may fail ten times as often.
	LoginFailures int
}

// Server serves inboxes over IMAP4rev1 with IDLE.
type Server struct {
	mailboxes *app.Mailboxes
	log       *slog.Logger
	recheck   time.Duration
	limiter   *loginLimiter
	srv       *imapserver.Server
	tls       *tls.Config
	ctx       context.Context // ends on Close, ending every session's work
	cancel    context.CancelFunc
}

// NewServer builds the server around the app's mailboxes.
func NewServer(mailboxes *app.Mailboxes, opts ServerOptions) *Server {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Recheck <= 0 {
		opts.Recheck = 10 * time.Second
	}
	if opts.LoginFailures <= 0 {
		opts.LoginFailures = 10
	}
	s := &Server{mailboxes: mailboxes, log: opts.Log, recheck: opts.Recheck, tls: opts.TLSConfig,
		limiter: &loginLimiter{perCredential: opts.LoginFailures, perAddress: addressLoginFactor * opts.LoginFailures,
			window: time.Minute, failures: map[string]*failureCount{}}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = imapserver.New(&imapserver.Options{
		NewSession: func(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return &session{srv: s, remote: remoteHost(c.NetConn().RemoteAddr())}, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapSpecialUse: {}},
		TLSConfig:    opts.TLSConfig,
		InsecureAuth: opts.PlaintextAuth,
		Logger:       logAdapter{opts.Log},
	})
	return s
}

// Serve accepts plaintext connections (STARTTLS when TLS is configured) on
// ln until Close, which may come first.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln) }

// ServeTLS accepts implicit-TLS connections on ln until Close.
func (s *Server) ServeTLS(ln net.Listener) error {
	if s.tls == nil {
		return fmt.Errorf("implicit TLS needs a certificate")
	}
	return s.serve(tls.NewListener(ln, s.tls))
}

func (s *Server) serve(ln net.Listener) error {
	err := s.srv.Serve(ln)
	if err != nil && s.ctx.Err() != nil {
		// Closed before Serve began: go-imap refuses the listener without
		// closing it, and the port would stay bound.
		ln.Close()
		return nil
	}
	return err
}

// Close stops listening and drops every connection: IMAP clients reconnect
// on their own, and nothing a session does is lost by stopping it.
func (s *Server) Close() error {
	s.cancel()
	return s.srv.Close()
}

// commandTimeout bounds the app calls behind one IMAP command.
const commandTimeout = 30 * time.Second

func remoteHost(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

type logAdapter struct{ log *slog.Logger }

func (l logAdapter) Printf(format string, v ...any) { l.log.Warn("imap: " + fmt.Sprintf(format, v...)) }

// addressLoginFactor is how many times more failed logins a remote address
// may make across inboxes than to one.
const addressLoginFactor = 10

// loginLimiter counts failed logins in fixed windows, per inbox address
// and remote address (core.CredentialGuessKey) so that a stranger's
// failures from a shared address cannot lock out the right key, and per
// remote address, so that guessing keys over IMAP across inboxes is as
// slow as the limit makes it.
type loginLimiter struct {
	perCredential, perAddress int
	window                    time.Duration

	mu       sync.Mutex
	failures map[string]*failureCount // by credential key or by address
}

type failureCount struct {
	n     int
	since time.Time
}

// allowed reports whether addr may try to log in to user now.
func (l *loginLimiter) allowed(addr, user string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	return l.under(core.CredentialGuessKey(addr, user), l.perCredential, now) && l.under(addr, l.perAddress, now)
}

func (l *loginLimiter) under(key string, max int, now time.Time) bool {
	f := l.failures[key]
	return f == nil || f.n < max || now.Sub(f.since) >= l.window
}

// failed records a failed login from addr to user.
func (l *loginLimiter) failed(addr, user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for k, f := range l.failures { // forget finished windows, so the map stays small
		if now.Sub(f.since) >= l.window {
			delete(l.failures, k)
		}
	}
	for _, k := range []string{core.CredentialGuessKey(addr, user), addr} {
		f := l.failures[k]
		if f == nil {
			f = &failureCount{since: now}
			l.failures[k] = f
		}
		f.n++
	}
}
