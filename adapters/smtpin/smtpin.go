// Package smtpin is the inbound SMTP listener (emersion/go-smtp): it checks
// recipients against our inboxes, refuses to relay, and hands each message
// to the app's delivery path, answering 250 only once the message is stored.
package smtpin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"golang.org/x/sync/semaphore"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// MaxRecipients bounds RCPT TO per message; one more is answered 452.
const MaxRecipients = 100

// MaxLineLength bounds one line of a command or of a message, as Postfix
// (line_length_limit) and Dovecot do in spirit: mail from senders that do
// not wrap lines is accepted, and memory per line stays bounded. The
// message as a whole is bounded by MaxMessageBytes.
const MaxLineLength = 64 << 10

// Options configure the listener.
type Options struct {
	// Hostname is the name in the greeting and in the Received field: a
	// domain name or an address literal.
	Hostname        string
	MaxMessageBytes int64
	// TLSConfig, when set, makes the listener offer STARTTLS.
	TLSConfig *tls.Config
	Log       *slog.Logger
	// Timeout bounds each read and write, and the handling of each message.
	Timeout time.Duration
	// MaxSessions and MaxSessionsPerIP cap concurrent sessions, overall and
	// per client address; one more is answered 421 4.7.0. 0 means
	// DefaultMaxSessions and DefaultMaxSessionsPerIP.
	MaxSessions, MaxSessionsPerIP int
	// DataTimeout bounds the DATA transfer from its start, and the whole
	// session to SessionTimeoutFactor times it; 0 means DefaultDataTimeout.
	DataTimeout time.Duration
	// MaxInflightBytes caps the bytes of DATA all sessions hold at once,
	// from the first byte read until the message is stored; a message that
	// finds it spent is answered 451 4.3.1. 0 means DefaultMaxInflightBytes.
	MaxInflightBytes int64
	// SpoolDir holds the temporary files of messages larger than
	// SpoolThreshold while they are read; "" means the system's.
	SpoolDir string
	// UnknownRecipientDelay slows a session's RCPTs to unknown addresses:
	// the nth after the first waits n-1 times it (at most
	// maxUnknownRecipientDelay), so addresses cannot be tried quickly;
	// 0 means 1 second.
	UnknownRecipientDelay time.Duration
}

// Server accepts mail for our inboxes.
type Server struct {
	receiving *app.Receiving
	log       *slog.Logger
	timeout   time.Duration
	hostname  string
	srv       *smtp.Server
	opts      Options
	inflight  *semaphore.Weighted // bytes of DATA held by all sessions
	// messageShare is the most of it one message reserves: the size limit,
	// or the whole budget when that is smaller or there is no limit.
	messageShare int64

	// go-smtp's Shutdown closes only the listeners its Serve has already
	// registered, so a Shutdown that wins the race with Serve would leave
	// Serve accepting forever; we close what we were given ourselves.
	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	sessions  []*sessions
}

// New builds the listener around the app's receiving service.
func New(receiving *app.Receiving, opts Options) *Server {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	for _, d := range []struct {
		v   *int
		def int
	}{{&opts.MaxSessions, DefaultMaxSessions}, {&opts.MaxSessionsPerIP, DefaultMaxSessionsPerIP}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if opts.DataTimeout <= 0 {
		opts.DataTimeout = DefaultDataTimeout
	}
	if opts.UnknownRecipientDelay <= 0 {
		opts.UnknownRecipientDelay = time.Second
	}
	if opts.MaxInflightBytes <= 0 {
		opts.MaxInflightBytes = DefaultMaxInflightBytes
	}
	s := &Server{receiving: receiving, log: opts.Log, timeout: opts.Timeout, hostname: opts.Hostname, opts: opts,
		inflight: semaphore.NewWeighted(opts.MaxInflightBytes), messageShare: opts.MaxInflightBytes}
	if opts.MaxMessageBytes > 0 {
		s.messageShare = min(opts.MaxMessageBytes, opts.MaxInflightBytes)
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, conn: c, wire: sessionConnOf(c.Conn()), remote: c.Conn().RemoteAddr().String()}, nil
	}))
	srv.Domain = opts.Hostname
	// go-smtp's defaults are unlimited: every limit is set here.
	srv.MaxMessageBytes = opts.MaxMessageBytes
	srv.MaxRecipients = MaxRecipients
	srv.MaxLineLength = MaxLineLength
	srv.ReadTimeout, srv.WriteTimeout = opts.Timeout, opts.Timeout
	srv.EnableSMTPUTF8 = true
	srv.TLSConfig = noticeTLS(opts.TLSConfig)
	srv.ErrorLog = logAdapter{opts.Log}
	s.srv = srv
	return s
}

// Serve accepts connections on ln until Shutdown, which may come first.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ln.Close()
	}
	limited := limitSessions(ln, s.opts.MaxSessions, s.opts.MaxSessionsPerIP, SessionTimeoutFactor*s.opts.DataTimeout)
	s.listeners = append(s.listeners, ln)
	s.sessions = append(s.sessions, limited)
	s.mu.Unlock()
	err := s.srv.Serve(limited)
	if errors.Is(err, smtp.ErrServerClosed) || (errors.Is(err, net.ErrClosed) && s.isClosed()) {
		return nil
	}
	return err
}

// Shutdown stops accepting, ends each session once it is between messages
// (421 4.3.2: the sender tries again later, perhaps at another instance),
// and waits for them, until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.listeners {
		ln.Close()
	}
	for _, open := range s.sessions {
		open.drain()
	}
	s.mu.Unlock()
	// go-smtp closing a listener closed above is no failure.
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

type logAdapter struct{ log *slog.Logger }

func (l logAdapter) Printf(format string, v ...any) { l.log.Warn("smtp: " + fmt.Sprintf(format, v...)) }
func (l logAdapter) Println(v ...any)               { l.log.Warn("smtp: " + fmt.Sprint(v...)) }

// session is one SMTP connection's transaction state.
type session struct {
	s       *Server
	conn    *smtp.Conn
	wire    *sessionConn // under conn, for the drain
	remote  string
	from    string
	utf8    bool // SMTPUTF8 was asked for (RFC 6531)
	rcpts   []string
	inboxes []core.Inbox
	// unknown counts this session's RCPTs to addresses we do not have.
	unknown int
}

// Reset ends a transaction: go-smtp calls it on RSET, on a repeated EHLO
// and after DATA's reply (STARTTLS ends the session instead: Logout).
func (se *session) Reset() {
	se.from, se.utf8, se.rcpts, se.inboxes = "", false, nil, nil
	se.wire.endTransaction()
}

// Logout ends the session, at the close or at STARTTLS (which go-smtp
// allows within a transaction, and follows with a new session).
func (se *session) Logout() error {
	se.wire.endTransaction()
	return nil
}

func (se *session) Mail(from string, opts *smtp.MailOptions) error {
	se.Reset()
	se.from = from
	se.utf8 = opts != nil && opts.UTF8
	se.wire.beginTransaction()
	return nil
}

// SMTP replies for the ways a recipient or a message can fail.
var (
	replyNoSuchUser  = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}
	replyRelayDenied = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Relay access denied"}
	// A sender the recipient's inbound rules refuse (RFC 3463: 5.7.1, delivery not authorized).
	replySenderRefused = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "The recipient does not accept mail from this sender"}
	// An account at its storage quota (RFC 3463: 4.2.2, mailbox full): the
	// sender keeps the message and tries again.
	replyMailboxFull = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "Mailbox full; try again later"}
	replyBadAddress  = &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: "Bad recipient address syntax"}
	replyTryLater    = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary failure storing the message; try again later"}
	replyUnreadable  = &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "The message could not be read"}
	// The spam filter's reject and soft reject (RFC 3463: 5.7.1 and 4.7.1,
	// delivery not authorized).
	replySpam         = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Message refused as spam"}
	replySpamDeferred = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "Message deferred by the spam filter; try again later"}
)

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ctx, cancel := context.WithTimeout(context.Background(), se.s.timeout)
	defer cancel()
	in, err := se.s.receiving.ResolveRecipient(ctx, se.from, to)
	if err != nil {
		if errors.Is(err, app.ErrSenderRefused) {
			return replySenderRefused
		}
		if core.QuotaOf(err) == core.QuotaStorage {
			return replyMailboxFull
		}
		switch core.KindOf(err) {
		case core.KindNotFound:
			se.slowDown()
			return replyNoSuchUser
		case core.KindForbidden:
			return replyRelayDenied
		case core.KindInvalid:
			return replyBadAddress
		}
		se.s.log.Error("smtp: looking up a recipient failed", "remote", se.remote, "err", err)
		return replyTryLater
	}
	se.rcpts = append(se.rcpts, to)
	for _, have := range se.inboxes {
		if have.ID == in.ID {
			return nil // the same inbox twice is stored once
		}
	}
	se.inboxes = append(se.inboxes, in)
	return nil
}

// maxUnknownRecipientDelay caps the pause before one 550 for an unknown
// recipient.
const maxUnknownRecipientDelay = 10 * time.Second

// slowDown pauses before each 550 for an unknown recipient after the first,
// longer each time, so that trying addresses one after another in a session
// is slow (a sender's typo costs nothing).
func (se *session) slowDown() {
	se.unknown++
	if d := min(time.Duration(se.unknown-1)*se.s.opts.UnknownRecipientDelay, maxUnknownRecipientDelay); d > 0 {
		time.Sleep(d)
	}
}

// Data reads the message and answers 250 only after it is stored; when the
// store fails the sender hears 451 and retries, so nothing accepted is lost.
func (se *session) Data(r io.Reader) error {
	// The transfer has DataTimeout from its start, however slowly it trickles
	// (go-smtp sets no deadline while DATA is read).
	_ = se.conn.Conn().SetReadDeadline(time.Now().Add(se.s.opts.DataTimeout))
	// The message's bytes count against the in-flight budget from the first
	// read until it is stored or refused.
	res := &reservation{budget: se.s.inflight, limit: se.s.messageShare}
	defer res.release()
	sp := &spool{dir: se.s.opts.SpoolDir}
	defer sp.close()
	// Bare LF line ends become CRLF as they arrive (docs/api.md).
	err := readData(core.NewCRLFReader(r), sp, res)
	switch {
	case errors.Is(err, errNoBudget):
		se.s.log.Warn("smtp: DATA in flight at CALLSIGN_SMTP_MAX_INFLIGHT_BYTES; answered 451", "remote", se.remote, "from", se.from)
		return replyBusyData
	case errors.Is(err, errSpool):
		se.s.log.Error("smtp: spooling a message failed", "remote", se.remote, "err", err)
		return replyTryLater
	case err != nil:
		return err // go-smtp answers 552 for an oversized message
	}
	raw, err := sp.bytes(headroom)
	if err != nil {
		se.s.log.Error("smtp: reading a spooled message failed", "remote", se.remote, "err", err)
		return replyTryLater
	}
	sp.close() // the bytes are in memory now
	size := sp.size
	ctx, cancel := context.WithTimeout(context.Background(), se.s.timeout)
	defer cancel()
	_, err = se.s.receiving.Deliver(ctx, app.InboundMail{EnvelopeFrom: se.from, Inboxes: se.inboxes, Raw: raw, Headroom: headroom,
		Trace: se.trace(time.Now()), Origin: se.origin(), Envelope: se.rcpts})
	switch {
	case errors.Is(err, app.ErrSpamRefused):
		return replySpam
	case errors.Is(err, app.ErrSpamDeferred):
		return replySpamDeferred
	}
	if err != nil {
		switch core.KindOf(err) {
		case core.KindInvalid:
			se.s.log.Warn("smtp: refused a message that is not one", "remote", se.remote, "from", se.from, "bytes", size, "reason", err)
			return replyUnreadable
		case core.KindTooLarge: // over the size or the part limit: say which
			var ce *core.Error
			errors.As(err, &ce)
			return &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4}, Message: ce.Message}
		}
		se.s.log.Error("smtp: storing a message failed", "remote", se.remote, "err", err)
		return replyTryLater
	}
	return nil
}

// headroom is the room left before a message for what is put on top of
// it (Return-Path, Received, Authentication-Results: a few hundred bytes),
// so that the app stores it without copying the message.
const headroom = 4 << 10

// origin is who sent the message, for its SPF check: the client's
// address, the name it gave in EHLO, and the envelope sender.
func (se *session) origin() *ports.InboundOrigin {
	o := &ports.InboundOrigin{HELO: se.conn.Hostname(), MailFrom: se.from}
	if tcp, ok := se.conn.Conn().RemoteAddr().(*net.TCPAddr); ok {
		o.IP = tcp.IP
	}
	return o
}

// trace is what RFC 5321 §4.4 has a receiving server put on top of a
// message: Return-Path with the envelope sender, as the final delivery,
// and Received saying from whom (the name it gave in EHLO and its address),
// to whom, how and when.
func (se *session) trace(now time.Time) []byte {
	host, _, err := net.SplitHostPort(se.remote)
	if err != nil {
		host = se.remote
	}
	protocol := "ESMTP" // RFC 3848 and RFC 6531 names
	if se.utf8 {
		protocol = "UTF8SMTP"
	}
	if _, ok := se.conn.TLSConnectionState(); ok {
		protocol += "S"
	}
	received := fmt.Sprintf("Received: from %s ([%s])\r\n\tby %s with %s", oneWord(se.conn.Hostname()), host, se.s.hostname, protocol)
	if len(se.rcpts) == 1 {
		received += "\r\n\tfor <" + oneWord(se.rcpts[0]) + ">"
	}
	received += "; " + now.Format(time.RFC1123Z) + "\r\n"
	return []byte("Return-Path: <" + oneWord(se.from) + ">\r\n" + received)
}

// oneWord keeps what a client sent from breaking the trace fields: no
// white space, no control characters, no angle brackets.
func oneWord(s string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f || r == '<' || r == '>' {
			return -1
		}
		return r
	}, s)
}
