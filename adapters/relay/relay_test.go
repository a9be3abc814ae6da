package relay

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

const raw = "From: Agent <agent@callsign.test>\r\n" +
	"To: alice@example.com\r\n" +
	"Subject: hello\r\n" +
	"\r\n" +
	"Hi Alice,\r\n" +
	".a line that starts with a dot\r\n" +
	"8-bit: café\r\n"

// backend is the relay on the other end: it records what it accepts, and
// answers as the test sets it up (fields are set before it serves).
type backend struct {
	user, pass string
	mechs      []string                   // AUTH mechanisms; nil: PLAIN
	echo       bool                       // put the password it got in its 535
	noUTF8     bool                       // do not offer SMTPUTF8
	rcptErr    map[string]*smtp.SMTPError // replies to RCPT, by address
	dataErr    *smtp.SMTPError            // final reply to DATA

	mu    sync.Mutex
	helos []string // every EHLO that started a session, in order
	got   []envelope
}

type envelope struct {
	Helo string
	TLS  bool
	User string
	From string
	Opts smtp.MailOptions
	To   []string
	Data string
}

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	b.mu.Lock()
	b.helos = append(b.helos, c.Hostname())
	b.mu.Unlock()
	return &session{b: b, env: envelope{Helo: c.Hostname(), TLS: isTLS}}, nil
}

func (b *backend) record() ([]string, []envelope) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.helos), slices.Clone(b.got)
}

type session struct {
	b   *backend
	env envelope
}

func (s *session) AuthMechanisms() []string {
	if s.b.mechs != nil {
		return s.b.mechs
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		switch {
		case user == s.b.user && pass == s.b.pass:
			s.env.User = user
			return nil
		case s.b.echo:
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8},
				Message: "no user " + user + " with password " + pass}
		}
		return smtp.ErrAuthFailed
	}), nil
}

func (s *session) Mail(from string, opts *smtp.MailOptions) error {
	if s.b.pass != "" && s.env.User == "" {
		return smtp.ErrAuthRequired
	}
	s.env.From, s.env.Opts = from, *opts
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if err, ok := s.b.rcptErr[to]; ok {
		return err
	}
	s.env.To = append(s.env.To, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.b.dataErr != nil {
		return s.b.dataErr
	}
	env := s.env
	env.Data = string(data)
	s.b.mu.Lock()
	s.b.got = append(s.b.got, env)
	s.b.mu.Unlock()
	return nil
}

func (s *session) Reset() { s.env.From, s.env.Opts, s.env.To = "", smtp.MailOptions{}, nil }

func (s *session) Logout() error { return nil }

type mode int

const (
	startTLS mode = iota
	implicitTLS
	clearText // no TLS at all; AUTH allowed anyway
)

// serve starts b on loopback and returns the client configuration for it.
func serve(t *testing.T, b *backend, m mode) Config {
	t.Helper()
	cert, roots := selfSigned(t)
	s := smtp.NewServer(b)
	s.Domain = "relay.test"
	s.ReadTimeout, s.WriteTimeout = 5*time.Second, 5*time.Second
	s.MaxMessageBytes, s.MaxRecipients = 1<<20, 10
	s.EnableSMTPUTF8 = !b.noUTF8
	s.ErrorLog = log.New(io.Discard, "", 0)
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	switch m {
	case startTLS:
		s.TLSConfig = tlsConfig
	case implicitTLS:
		ln = tls.NewListener(ln, tlsConfig)
	case clearText:
		s.AllowInsecureAuth = true
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })

	host, port, _ := net.SplitHostPort(ln.Addr().String())
	return Config{
		Host: host, Port: port, ImplicitTLS: m == implicitTLS,
		Username: b.user, Password: b.pass,
		HeloName:  "callsign.test",
		TLSConfig: &tls.Config{RootCAs: roots},
		Timeout:   5 * time.Second,
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "relay.test"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}

func relay(t *testing.T, ctx context.Context, cfg Config, rcpts ...string) []ports.RelayOutcome {
	t.Helper()
	out := New(cfg).Relay(ctx, "agent@callsign.test", rcpts, []byte(raw))
	if len(out) != len(rcpts) {
		t.Fatalf("%d outcomes for %d recipients", len(out), len(rcpts))
	}
	for i, o := range out {
		if o.Recipient != rcpts[i] {
			t.Fatalf("outcome %d is for %q, want %q", i, o.Recipient, rcpts[i])
		}
	}
	return out
}

func wantAccepted(t *testing.T, o ports.RelayOutcome) {
	t.Helper()
	if o.Err != nil {
		t.Errorf("%s: %v, want accepted", o.Recipient, o.Err)
	}
}

// wantFailed checks o failed as it should, with every part in its message.
func wantFailed(t *testing.T, o ports.RelayOutcome, permanent bool, parts ...string) {
	t.Helper()
	if o.Err == nil {
		t.Errorf("%s: accepted, want an error", o.Recipient)
		return
	}
	t.Logf("%s: %v (permanent: %v)", o.Recipient, o.Err, o.Permanent)
	if o.Permanent != permanent {
		t.Errorf("%s: permanent = %v, want %v (%v)", o.Recipient, o.Permanent, permanent, o.Err)
	}
	for _, p := range parts {
		if !strings.Contains(o.Err.Error(), p) {
			t.Errorf("%s: error %q lacks %q", o.Recipient, o.Err, p)
		}
	}
}

func TestDeliversOverStartTLSWithAuth(t *testing.T) {
	b := &backend{user: "relay-user", pass: "s3cret-Pass"}
	cfg := serve(t, b, startTLS)

	out := relay(t, t.Context(), cfg, "alice@example.com", "bob@example.org")
	wantAccepted(t, out[0])
	wantAccepted(t, out[1])

	helos, got := b.record()
	want := envelope{
		Helo: "callsign.test", TLS: true, User: "relay-user",
		From: "agent@callsign.test",
		Opts: smtp.MailOptions{Body: smtp.Body8BitMIME, Size: int64(len(raw))},
		To:   []string{"alice@example.com", "bob@example.org"},
		Data: raw,
	}
	if len(got) != 1 || !equal(got[0], want) {
		t.Fatalf("relay got %+v\nwant one %+v", got, want)
	}
	// Our name in both EHLOs: the clear-text one and the one over TLS.
	if !slices.Equal(helos, []string{"callsign.test", "callsign.test"}) {
		t.Errorf("EHLO names = %q", helos)
	}
}

func equal(a, b envelope) bool {
	return a.Helo == b.Helo && a.TLS == b.TLS && a.User == b.User && a.From == b.From &&
		a.Opts.Body == b.Opts.Body && a.Opts.Size == b.Opts.Size && a.Opts.UTF8 == b.Opts.UTF8 &&
		slices.Equal(a.To, b.To) && a.Data == b.Data
}

func TestRecipientRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reply     *smtp.SMTPError
		permanent bool
		parts     []string
	}{
		{"550 is permanent", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"},
			true, []string{"RCPT TO:<bad@example.com>", "550 5.1.1 No such user"}},
		{"451 is temporary", &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try later"},
			false, []string{"RCPT TO:<bad@example.com>", "451 4.3.0 Try later"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &backend{user: "u", pass: "p4ss", rcptErr: map[string]*smtp.SMTPError{"bad@example.com": tc.reply}}
			cfg := serve(t, b, startTLS)

			out := relay(t, t.Context(), cfg, "a@example.com", "bad@example.com", "c@example.com")
			wantAccepted(t, out[0])
			wantFailed(t, out[1], tc.permanent, tc.parts...)
			if want := tc.parts[1]; out[1].Reply != want {
				t.Errorf("reply %q, want %q (the relay's words, for reading its codes)", out[1].Reply, want)
			}
			wantAccepted(t, out[2])

			_, got := b.record()
			if len(got) != 1 || !slices.Equal(got[0].To, []string{"a@example.com", "c@example.com"}) {
				t.Errorf("relay got %+v, want one message for a and c", got)
			}
		})
	}
}

// A 421 ends the session: the recipients accepted before it are lost too.
func TestRecipient421EndsTransaction(t *testing.T) {
	b := &backend{rcptErr: map[string]*smtp.SMTPError{
		"b@example.com": {Code: 421, EnhancedCode: smtp.EnhancedCode{4, 4, 5}, Message: "Too busy"},
	}}
	cfg := serve(t, b, startTLS)

	out := relay(t, t.Context(), cfg, "a@example.com", "b@example.com", "c@example.com")
	for _, o := range out {
		wantFailed(t, o, false, "421 4.4.5 Too busy")
	}
	if _, got := b.record(); len(got) != 0 {
		t.Errorf("relay got %+v, want nothing", got)
	}
}

func TestDataReplies(t *testing.T) {
	for _, tc := range []struct {
		reply     *smtp.SMTPError
		permanent bool
		want      string
	}{
		{&smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Looks like spam"}, true, "554 5.7.1 Looks like spam"},
		{&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Queue full"}, false, "451 4.3.0 Queue full"},
		{&smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "Shutting down"}, false, "421 4.3.2 Shutting down"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			b := &backend{user: "u", pass: "p4ss", dataErr: tc.reply, rcptErr: map[string]*smtp.SMTPError{
				"gone@example.com": {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"},
			}}
			cfg := serve(t, b, startTLS)

			out := relay(t, t.Context(), cfg, "a@example.com", "gone@example.com", "c@example.com")
			wantFailed(t, out[0], tc.permanent, "rejected DATA", tc.want)
			wantFailed(t, out[1], true, "550 5.1.1") // its own refusal stands
			wantFailed(t, out[2], tc.permanent, "rejected DATA", tc.want)
		})
	}
}

func TestWrongPassword(t *testing.T) {
	b := &backend{user: "relay-user", pass: "right-pass"}
	cfg := serve(t, b, startTLS)
	cfg.Password = "Wr0ng-Pa55word"

	out := relay(t, t.Context(), cfg, "a@example.com", "b@example.com")
	for _, o := range out {
		// Temporary: fixing the password lets queued mail go.
		wantFailed(t, o, false, "AUTH PLAIN", "535 5.7.8")
		if core.KindOf(o.Err) != core.KindUnauthorized {
			t.Errorf("a refused AUTH is not marked as ours to fix: %v", o.Err)
		}
		if strings.Contains(o.Err.Error(), cfg.Password) {
			t.Errorf("error shows the password: %v", o.Err)
		}
	}
	if _, got := b.record(); len(got) != 0 {
		t.Errorf("relay got %+v, want nothing", got)
	}
}

// A relay that echoes what it was sent cannot make us show the password.
func TestPasswordRedactedFromRelayText(t *testing.T) {
	b := &backend{user: "relay-user", pass: "right-pass", echo: true}
	cfg := serve(t, b, startTLS)
	cfg.Password = "Wr0ng-Pa55word"

	out := relay(t, t.Context(), cfg, "a@example.com")
	wantFailed(t, out[0], false, "535 5.7.8", "[redacted]")
	if strings.Contains(out[0].Err.Error(), cfg.Password) {
		t.Errorf("error shows the password: %v", out[0].Err)
	}
}

func TestNoAuthPlain(t *testing.T) {
	b := &backend{user: "u", pass: "p4ss", mechs: []string{"LOGIN"}}
	cfg := serve(t, b, startTLS)

	out := relay(t, t.Context(), cfg, "a@example.com")
	wantFailed(t, out[0], false, "does not offer AUTH PLAIN", "LOGIN")
}

func TestRelayDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()

	out := relay(t, t.Context(), Config{Host: host, Port: port}, "a@example.com", "b@example.com")
	for _, o := range out {
		wantFailed(t, o, false, "connect", "refused")
	}
}

func TestImplicitTLS(t *testing.T) {
	b := &backend{user: "u", pass: "p4ss"}
	cfg := serve(t, b, implicitTLS)

	out := relay(t, t.Context(), cfg, "a@example.com")
	wantAccepted(t, out[0])
	helos, got := b.record()
	if len(got) != 1 || !got[0].TLS || got[0].User != "u" || got[0].Data != raw {
		t.Errorf("relay got %+v", got)
	}
	if !slices.Equal(helos, []string{"callsign.test"}) {
		t.Errorf("EHLO names = %q", helos)
	}
}

func TestUntrustedCertificate(t *testing.T) {
	b := &backend{user: "u", pass: "p4ss"}
	cfg := serve(t, b, startTLS)
	cfg.TLSConfig = nil // the system roots do not know the test's certificate

	out := relay(t, t.Context(), cfg, "a@example.com")
	wantFailed(t, out[0], false, "certificate")
	if _, got := b.record(); len(got) != 0 {
		t.Errorf("relay got %+v, want nothing", got)
	}
}

func TestClearTextAllowed(t *testing.T) {
	for _, tc := range []struct {
		host        string
		credentials bool
		want        bool
	}{
		{"smtp.example.com", false, true},
		{"smtp.example.com", true, false},
		{"10.0.0.1", true, false},
		{"2001:db8::1", true, false},
		{"localhost.example.com", true, false},
		{"localhost", true, true},
		{"LocalHost", true, true},
		{"127.0.0.1", true, true},
		{"127.1.2.3", true, true},
		{"::1", true, true},
		{"0x7f.1", true, true},
		{"2130706433", true, true},
		{"::ffff:127.0.0.1", true, true},
		{"relay.localhost", true, true},
		{"0x0a.1", true, false},
	} {
		if got := clearTextAllowed(tc.host, tc.credentials); got != tc.want {
			t.Errorf("clearTextAllowed(%q, %v) = %v, want %v", tc.host, tc.credentials, got, tc.want)
		}
	}
}

// On loopback a relay without STARTTLS gets the password in clear text: the
// bytes never leave the machine.
func TestClearTextAuthOnLoopback(t *testing.T) {
	b := &backend{user: "u", pass: "p4ss"}
	cfg := serve(t, b, clearText)

	out := relay(t, t.Context(), cfg, "a@example.com")
	wantAccepted(t, out[0])
	helos, got := b.record()
	if len(got) != 1 || got[0].TLS || got[0].User != "u" || got[0].Helo != "callsign.test" {
		t.Errorf("relay got %+v", got)
	}
	// One connection, which says our name from its first EHLO.
	if !slices.Equal(helos, []string{"callsign.test"}) {
		t.Errorf("EHLO names = %q", helos)
	}
}

// A relay named in an odd notation is dialled at the address that notation
// means (the one judged to be loopback), not looked up in the DNS.
func TestOddNotationIsDialledAsRead(t *testing.T) {
	b := &backend{user: "u", pass: "p4ss"}
	cfg := serve(t, b, clearText)
	cfg.Host = "0x7f.1"
	out := relay(t, t.Context(), cfg, "a@example.com")
	wantAccepted(t, out[0])
	if _, got := b.record(); len(got) != 1 || got[0].User != "u" {
		t.Errorf("relay got %+v", got)
	}
}

func TestSMTPUTF8(t *testing.T) {
	b := &backend{}
	cfg := serve(t, b, startTLS)

	out := relay(t, t.Context(), cfg, "jörg@example.com", "ascii@example.com")
	wantAccepted(t, out[0])
	wantAccepted(t, out[1])
	if _, got := b.record(); len(got) != 1 || !got[0].Opts.UTF8 {
		t.Errorf("relay got %+v, want SMTPUTF8 requested", got)
	}

	b = &backend{noUTF8: true}
	cfg = serve(t, b, startTLS)
	out = relay(t, t.Context(), cfg, "jörg@example.com", "ascii@example.com")
	wantFailed(t, out[0], true, "SMTPUTF8")
	wantFailed(t, out[1], true, "SMTPUTF8")
}

// silent accepts connections and never says a word.
func silent(t *testing.T) Config {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	return Config{Host: host, Port: port, Timeout: 5 * time.Second}
}

func TestSilentRelay(t *testing.T) {
	t.Run("ctx deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		out := relay(t, ctx, silent(t), "a@example.com", "b@example.com")
		for _, o := range out {
			wantFailed(t, o, false, "deadline exceeded")
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("ctx cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		out := relay(t, ctx, silent(t), "a@example.com")
		wantFailed(t, out[0], false, "context canceled")
	})
	t.Run("own timeout", func(t *testing.T) {
		cfg := silent(t)
		cfg.Timeout = 100 * time.Millisecond
		out := relay(t, t.Context(), cfg, "a@example.com")
		wantFailed(t, out[0], false, "no answer within 100ms")
	})
	t.Run("implicit TLS", func(t *testing.T) {
		cfg := silent(t)
		cfg.ImplicitTLS, cfg.Timeout = true, 100*time.Millisecond
		out := relay(t, t.Context(), cfg, "a@example.com")
		wantFailed(t, out[0], false, "TLS handshake", "no answer within 100ms")
	})
}

// A relay that knows only HELO, with a greeting of two lines: the session
// goes on in clear text, on the one connection, as our name.
func TestHELOOnlyRelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cmds := make(chan []string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		var got []string
		defer func() { cmds <- got }()
		in, out := textproto.NewConn(c), textproto.NewWriter(bufio.NewWriter(c))
		out.PrintfLine("220-relay.test old-fashioned\r\n220 ready")
		for {
			line, err := in.ReadLine()
			if err != nil {
				return
			}
			got = append(got, line)
			switch verb, _, _ := strings.Cut(line, " "); verb {
			case "EHLO":
				out.PrintfLine("502 5.5.1 EHLO what?")
			case "DATA":
				out.PrintfLine("354 go on")
				if _, err := in.ReadDotBytes(); err != nil {
					return
				}
				out.PrintfLine("250 queued")
			case "QUIT":
				out.PrintfLine("221 bye")
				return
			default:
				out.PrintfLine("250 ok")
			}
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	cfg := Config{Host: host, Port: port, HeloName: "callsign.test", Timeout: 5 * time.Second}

	out := relay(t, t.Context(), cfg, "a@example.com")
	wantAccepted(t, out[0])
	got := <-cmds
	want := []string{"EHLO callsign.test", "EHLO callsign.test", "HELO callsign.test"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("relay got commands %q, want them to start with %q", got, want)
	}
}
