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
	// LoginFailures is how many failed logins one remote address may make
	// per minute before its logins are refused for the rest of the minute;
	// 0 means 10.
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
		limiter: &loginLimiter{max: opts.LoginFailures, window: time.Minute, failures: map[string]*failureCount{}}}
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

// loginLimiter counts failed logins per remote address in fixed windows, so
// that guessing keys over IMAP is as slow as the limit makes it.
type loginLimiter struct {
	max    int
	window time.Duration

	mu       sync.Mutex
	failures map[string]*failureCount
}

type failureCount struct {
	n     int
	since time.Time
}

// allowed reports whether addr may try to log in now.
func (l *loginLimiter) allowed(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.failures[addr]
	return f == nil || f.n < l.max || time.Since(f.since) >= l.window
}

// failed records a failed login from addr.
func (l *loginLimiter) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for a, f := range l.failures { // forget finished windows, so the map stays small
		if now.Sub(f.since) >= l.window {
			delete(l.failures, a)
		}
	}
	f := l.failures[addr]
	if f == nil {
		f = &failureCount{since: now}
		l.failures[addr] = f
	}
	f.n++
}
