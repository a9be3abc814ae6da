// Package relay hands outbound mail to the SMTP relay of CALLSIGN_SMTP_RELAY,
// implementing ports.MailRelay with go-smtp's client.
package relay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Config says how to reach the relay.
type Config struct {
	Host        string
	Port        string
	ImplicitTLS bool // smtps: TLS from the first byte instead of STARTTLS
	// Username and Password, when set, are sent with AUTH PLAIN, and never
	// over clear text to a host other than this machine.
	Username  string
	Password  string
	HeloName  string        // our name in EHLO; "" means "localhost"
	TLSConfig *tls.Config   // nil: the system roots, with ServerName = Host
	Timeout   time.Duration // bound on one whole connection; 0 means 2 minutes
}

// Relay is a ports.MailRelay that opens one connection per message.
type Relay struct {
	cfg  Config
	addr string // as configured, for messages
	// dialAddr is what is dialled: addr with a numeric host normalised.
	dialAddr string
	tls      *tls.Config
}

var _ ports.MailRelay = (*Relay)(nil)

// New returns a relay for cfg.
func New(cfg Config) *Relay {
	if cfg.HeloName == "" {
		cfg.HeloName = "localhost"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	tc := &tls.Config{}
	if cfg.TLSConfig != nil {
		tc = cfg.TLSConfig.Clone()
	}
	if tc.ServerName == "" {
		// go-smtp's NewClient knows no server name, and without one the
		// certificate could not be checked.
		tc.ServerName = cfg.Host
	}
	r := &Relay{cfg: cfg, addr: net.JoinHostPort(cfg.Host, cfg.Port), tls: tc}
	r.dialAddr = r.addr
	// A host written as an address in any notation (0x7f.1, 2130706433) is
	// dialled as the address core read it as, the one clearTextAllowed judged,
	// never handed to the DNS.
	if ip, ok := core.HostIP(cfg.Host); ok {
		r.dialAddr = net.JoinHostPort(ip.String(), cfg.Port)
	}
	return r
}

// Relay offers raw to every recipient in one SMTP transaction. Each RCPT is
// sent on its own so that one refused recipient does not sink the others.
func (r *Relay) Relay(ctx context.Context, from string, recipients []string, raw []byte) []ports.RelayOutcome {
	out := make([]ports.RelayOutcome, len(recipients))
	all := make([]int, len(recipients))
	for i, rcpt := range recipients {
		out[i].Recipient = rcpt
		all[i] = i
	}
	if len(recipients) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeoutCause(ctx, r.cfg.Timeout,
		fmt.Errorf("no answer within %v", r.cfg.Timeout))
	defer cancel() // also closes the connection (see dial)

	c, err := r.connect(ctx)
	if err != nil {
		return settle(out, all, err)
	}
	defer c.Quit() // the outcomes are settled by then; a failed QUIT changes none

	opts := &smtp.MailOptions{Size: int64(len(raw))}
	if !isASCII(from) || !allASCII(recipients) {
		if ok, _ := c.Extension("SMTPUTF8"); !ok {
			// RFC 6531 §3.2: such a message must not be sent, and a retry
			// will not change the relay's abilities.
			return settle(out, all, &failure{permanent: true,
				msg: fmt.Sprintf("relay %s does not support SMTPUTF8, which non-ASCII addresses need", r.addr)})
		}
		opts.UTF8 = true
	}
	if err := c.Mail(from, opts); err != nil {
		return settle(out, all, r.failure(ctx, "MAIL FROM:<"+from+">", err))
	}

	var accepted []int
	for i, rcpt := range recipients {
		err := c.Rcpt(rcpt, nil)
		if err == nil {
			accepted = append(accepted, i)
			continue
		}
		f := r.failure(ctx, "RCPT TO:<"+rcpt+">", err)
		if sessionOver(err) {
			// The transaction is gone, with the recipients accepted so far.
			return settle(out, append(accepted, all[i:]...), f)
		}
		settle(out, []int{i}, f)
	}
	if len(accepted) == 0 {
		return out
	}
	if err := data(c, raw); err != nil {
		settle(out, accepted, r.failure(ctx, "DATA", err))
	}
	return out
}

// Check opens a session as sending does (TLS, EHLO, AUTH with the
// configured credentials) and quits without sending: `callsign doctor`'s
// test of the relay.
func (r *Relay) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	c, err := r.connect(ctx)
	if err != nil {
		return err
	}
	if err := c.Quit(); err != nil {
		return r.failure(ctx, "QUIT", err)
	}
	return nil
}

// connect opens a session that is ready for MAIL: TLS as configured, EHLO
// with our name, and AUTH when there are credentials. On failure the
// connection is left for ctx's end to close (see dial).
func (r *Relay) connect(ctx context.Context) (*smtp.Client, error) {
	conn, err := r.dial(ctx)
	if err != nil {
		return nil, r.failure(ctx, "connect", err)
	}
	var c *smtp.Client
	hello := "greeting/EHLO" // the steps Hello below may fail at
	if r.cfg.ImplicitTLS {
		tc := tls.Client(conn, r.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, r.failure(ctx, "TLS handshake", err)
		}
		c = smtp.NewClient(tc)
	} else {
		sc, secure, err := r.startTLS(ctx, conn)
		if err != nil {
			return nil, err
		}
		if !secure && !clearTextAllowed(r.cfg.Host, r.cfg.Username != "") {
			return nil, &failure{msg: fmt.Sprintf(
				"relay %s does not offer STARTTLS: refusing to send the password in clear text", r.addr)}
		}
		c, hello = smtp.NewClient(sc), "EHLO"
	}
	if err := c.Hello(r.cfg.HeloName); err != nil {
		return nil, r.failure(ctx, hello+" "+r.cfg.HeloName, err)
	}
	if r.cfg.Username == "" {
		return c, nil
	}
	if !c.SupportsAuth(sasl.Plain) {
		_, mechs := c.Extension("AUTH")
		if mechs == "" {
			mechs = "none"
		}
		return nil, &failure{msg: fmt.Sprintf(
			"relay %s does not offer AUTH PLAIN (it offers: %s)", r.addr, mechs)}
	}
	if err := c.Auth(sasl.NewPlainClient("", r.cfg.Username, r.cfg.Password)); err != nil {
		return nil, r.failure(ctx, "AUTH PLAIN as "+r.cfg.Username, err)
	}
	return c, nil
}

// maxClearText bounds what startTLS reads: a greeting and an EHLO reply are
// a few hundred bytes.
const maxClearText = 64 << 10

// startTLS speaks the clear-text start of a session itself, because go-smtp's
// NewClientStartTLS says EHLO as "localhost" there and its client has no
// STARTTLS of its own: it reads the greeting, says EHLO with our name and,
// when the relay offers it, STARTTLS and the TLS handshake. It returns the
// connection go-smtp's client goes on with, over TLS when secure, whose reads
// start with the relay's greeting replayed (the client reads one before its
// own EHLO).
func (r *Relay) startTLS(ctx context.Context, conn net.Conn) (_ net.Conn, secure bool, _ error) {
	br := bufio.NewReader(io.LimitReader(conn, maxClearText))
	in, out := textproto.NewReader(br), textproto.NewWriter(bufio.NewWriter(conn))
	step := "greeting"
	fail := func(err error) (net.Conn, bool, error) {
		var reply *textproto.Error
		if errors.As(err, &reply) {
			err = &smtp.SMTPError{Code: reply.Code, Message: reply.Msg}
		}
		return nil, false, r.failure(ctx, step, err)
	}
	_, greeting, err := in.ReadResponse(220)
	if err != nil {
		return fail(err)
	}
	step = "EHLO " + r.cfg.HeloName
	if err := out.PrintfLine("EHLO %s", r.cfg.HeloName); err != nil {
		return fail(err)
	}
	code, ext, err := in.ReadResponse(250)
	if err != nil && code/100 != 5 { // a 5xx: no ESMTP, so no STARTTLS either
		return fail(err)
	}
	if err != nil || !offers(ext, "STARTTLS") {
		// Go on in clear text: what the relay sent after its reply (nothing,
		// if it keeps to the protocol) stays for the client to read.
		rest, _ := br.Peek(br.Buffered())
		return &replayed{conn, io.MultiReader(replay(greeting), bytes.NewReader(rest), conn)}, false, nil
	}
	step = "STARTTLS"
	if err := out.PrintfLine("STARTTLS"); err != nil {
		return fail(err)
	}
	if _, _, err := in.ReadResponse(220); err != nil {
		return fail(err)
	}
	// Whatever the relay sent before the handshake is dropped with br: it
	// was not protected, and must not pass for the TLS session's (RFC 3207 §4.2).
	tc := tls.Client(conn, r.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		step = "TLS handshake"
		return fail(err)
	}
	return &replayed{tc, io.MultiReader(replay(greeting), tc)}, true, nil
}

// offers reports whether an EHLO reply's text (one line per extension
// after the first) lists keyword.
func offers(ehlo, keyword string) bool {
	lines := strings.Split(ehlo, "\n")
	for _, line := range lines[1:] {
		if f := strings.Fields(line); len(f) > 0 && strings.EqualFold(f[0], keyword) {
			return true
		}
	}
	return false
}

// replay renders a 220 greeting's text as the relay sent it.
func replay(greeting string) io.Reader {
	lines := strings.Split(greeting, "\n")
	var b strings.Builder
	for i, line := range lines {
		sep := "-"
		if i == len(lines)-1 {
			sep = " "
		}
		b.WriteString("220" + sep + line + "\r\n")
	}
	return strings.NewReader(b.String())
}

// replayed is a connection whose reads come from r first.
type replayed struct {
	net.Conn
	r io.Reader
}

func (c *replayed) Read(p []byte) (int, error) { return c.r.Read(p) }

// dial connects and closes the connection when ctx ends: go-smtp sets and
// clears its own deadlines around each command, so closing the socket is the
// one way to hold it to ours, and Relay's deferred cancel closes it in every
// case.
func (r *Relay) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", r.dialAddr)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { conn.Close() })
	return conn, nil
}

// data sends the message; its error is the relay's final reply, if any.
func data(c *smtp.Client, raw []byte) error {
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	_, err = w.CloseWithResponse()
	return err
}

// clearTextAllowed reports whether a session may go on without TLS: only if
// it carries no password, or carries it no further than this machine (a
// local relay such as a development mail catcher), as core's
// outbound-destination policy classifies the host.
func clearTextAllowed(host string, credentials bool) bool {
	return !credentials || core.IsLoopbackHost(host)
}

// failure is an outcome's error, worded for the user (it is shown as
// delivery_error).
type failure struct {
	msg       string
	reply     string // the relay's answer, when it gave one
	permanent bool
	// auth marks a refusal of our credentials: a configuration fault of
	// ours, not the recipient's, so it is temporary.
	auth bool
}

func (f *failure) Error() string { return f.msg }

// Unwrap makes a refusal of our credentials a core.KindUnauthorized error,
// which the outbox reports loudly.
func (f *failure) Unwrap() error {
	if f.auth {
		return core.Unauthorized("%s", f.msg)
	}
	return nil
}

// failure words err, which happened at step: the relay's reply with its code
// when there is one (5xx is permanent), else the local cause, which is
// temporary.
func (r *Relay) failure(ctx context.Context, step string, err error) *failure {
	var reply *smtp.SMTPError
	var f failure
	switch {
	case errors.As(err, &reply):
		// A refused AUTH is retried: a password typo must not lose mail
		// in flight, and fixing CALLSIGN_SMTP_RELAY lets it go.
		f.auth = strings.HasPrefix(step, "AUTH")
		f.permanent = reply.Code/100 == 5 && !f.auth
		f.reply = r.redact(describe(reply))
		f.msg = fmt.Sprintf("relay %s rejected %s: %s", r.addr, step, describe(reply))
	case context.Cause(ctx) != nil:
		f.msg = fmt.Sprintf("relay %s: %s: %v", r.addr, step, context.Cause(ctx))
	default:
		f.msg = fmt.Sprintf("relay %s: %s: %v", r.addr, step, err)
	}
	f.msg = r.redact(f.msg)
	return &f
}

// redact removes the password from a relay's text, in case the relay echoes
// what it was sent.
func (r *Relay) redact(s string) string {
	if r.cfg.Password == "" {
		return s
	}
	plain := base64.StdEncoding.EncodeToString([]byte("\x00" + r.cfg.Username + "\x00" + r.cfg.Password))
	return strings.NewReplacer(plain, "[redacted]", r.cfg.Password, "[redacted]").Replace(s)
}

// describe renders a reply as the relay sent it: code, enhanced code, text.
func describe(e *smtp.SMTPError) string {
	s := fmt.Sprintf("%03d", e.Code)
	if ec := e.EnhancedCode; ec != smtp.EnhancedCodeNotSet && ec != smtp.NoEnhancedCode {
		s += fmt.Sprintf(" %d.%d.%d", ec[0], ec[1], ec[2])
	}
	if e.Message != "" {
		s += " " + strings.Join(strings.Fields(e.Message), " ")
	}
	return s
}

// sessionOver tells a refusal of one command, after which the session goes
// on, from a broken connection or a 421 (the relay is closing it).
func sessionOver(err error) bool {
	var reply *smtp.SMTPError
	return !errors.As(err, &reply) || reply.Code == 421
}

// settle records err for the recipients at idx.
func settle(out []ports.RelayOutcome, idx []int, err error) []ports.RelayOutcome {
	var f *failure
	permanent, reply := false, ""
	if errors.As(err, &f) {
		permanent, reply = f.permanent, f.reply
	}
	for _, i := range idx {
		out[i].Err, out[i].Permanent, out[i].Reply = err, permanent, reply
	}
	return out
}

func isASCII(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= utf8.RuneSelf }) < 0
}

func allASCII(ss []string) bool {
	for _, s := range ss {
		if !isASCII(s) {
			return false
		}
	}
	return true
}
