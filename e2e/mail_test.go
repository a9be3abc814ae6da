package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/app"
)

// testRelay is an SMTP server standing in for the outbound relay: STARTTLS
// with a self-signed certificate, AUTH PLAIN required, and it keeps what it
// receives.
type testRelay struct {
	mu       sync.Mutex
	messages []relayed
	// refuse answers RCPT TO these addresses with the reply given.
	refuse map[string]*smtp.SMTPError
	srv    *smtp.Server
	addr   string
	caFile string
	tls    *tls.Config
	// replyDelay holds the reply to DATA after the message is kept (a
	// relay that has accepted but not yet said so); inData hears of each
	// message kept, when set.
	replyDelay atomic.Int64
	inData     chan struct{}
	// busy answers every RCPT 451 while set, counting them in deferred.
	busy     atomic.Bool
	deferred atomic.Int64
}

type relayed struct {
	from string
	to   []string
	data string
	at   time.Time // when the relay took it
}

func newTestRelay(t *testing.T) *testRelay {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "relay.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	r := &testRelay{caFile: filepath.Join(t.TempDir(), "relay-ca.pem"),
		tls: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}}
	if err := os.WriteFile(r.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// listen starts serving on addr ("127.0.0.1:0" for any port).
func (r *testRelay) listen(t *testing.T, addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &relaySession{r: r}, nil }))
	r.srv.TLSConfig, r.srv.Domain = r.tls, "relay.test"
	r.srv.ErrorLog = smtpQuiet{}
	r.addr = ln.Addr().String()
	go r.srv.Serve(ln)
	t.Cleanup(func() { r.srv.Close() })
}

type smtpQuiet struct{}

func (smtpQuiet) Printf(string, ...any) {}
func (smtpQuiet) Println(...any)        {}

func (r *testRelay) received() []relayed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]relayed(nil), r.messages...)
}

type relaySession struct {
	r      *testRelay
	authed bool
	from   string
	to     []string
}

func (s *relaySession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *relaySession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "relayuser" || pass != "relaypass" {
			return smtp.ErrAuthFailed
		}
		s.authed = true
		return nil
	}), nil
}
func (s *relaySession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}
func (s *relaySession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if reply := s.r.refuse[to]; reply != nil {
		return reply
	}
	if s.r.busy.Load() {
		s.r.deferred.Add(1)
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	s.to = append(s.to, to)
	return nil
}
func (s *relaySession) Data(rd io.Reader) error {
	b, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	s.r.mu.Lock()
	s.r.messages = append(s.r.messages, relayed{from: s.from, to: s.to, data: string(b), at: time.Now()})
	s.r.mu.Unlock()
	if s.r.inData != nil {
		s.r.inData <- struct{}{}
	}
	time.Sleep(time.Duration(s.r.replyDelay.Load()))
	return nil
}
func (s *relaySession) Reset()        { s.from, s.to = "", nil }
func (s *relaySession) Logout() error { return nil }

// fastRetry makes outbox retries quick enough for a test.
func fastRetry(d *app.Deps) {
	d.Retry = app.RetryPolicy{First: 50 * time.Millisecond, Max: 200 * time.Millisecond, GiveUpAfter: time.Minute}
}

func sendSMTP(t testing.TB, addr, from string, to []string, raw string) {
	t.Helper()
	if err := smtpSend(addr, from, to, raw); err != nil {
		t.Fatal(err)
	}
}

// smtpSend delivers one message in plain SMTP: the listener offers no
// STARTTLS without a certificate.
func smtpSend(addr, from string, to []string, raw string) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.SendMail(from, to, strings.NewReader(raw))
}

// poll waits until f is true.
func poll(t testing.TB, what string, f func() bool) {
	t.Helper()
	// Generous: under go test -race on a busy 2-core machine a step that
	// takes milliseconds alone has been seen to take over ten seconds.
	deadline := time.Now().Add(30 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type apiMessage struct {
	ID             int64   `json:"id"`
	ThreadID       string  `json:"thread_id"`
	MessageID      string  `json:"message_id"`
	Subject        string  `json:"subject"`
	Content        string  `json:"content"`
	FromEmail      string  `json:"from_email"`
	DeliveryStatus string  `json:"delivery_status"`
	DeliveryError  *string `json:"delivery_error"`
	CreatedDT      string  `json:"created_dt"`
}

type apiPage struct {
	Count   int          `json:"count"`
	Next    *string      `json:"next"`
	Results []apiMessage `json:"results"`
}

// TestMailEndToEnd: an outside client mails an identity over SMTP, the agent
// reads the thread through the API and replies, and the reply reaches the
// relay over STARTTLS with AUTH, threaded.
func TestMailEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		relay := newTestRelay(t)
		relay.listen(t, "127.0.0.1:0")
		r := start(t, d, map[string]string{
			"CALLSIGN_SMTP_RELAY":    "smtp://relayuser:relaypass@" + relay.addr,
			"CALLSIGN_SMTP_RELAY_CA": relay.caFile,
		}, fastRetry)
		mgmt := r.bootstrap("mail@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Support"}, &ident)
		var key struct{ Key string }
		r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)

		raw := "From: Alice Example <alice@example.org>\r\nTo: " + ident.Inbox + "\r\nSubject: Help needed\r\n" +
			"Message-ID: <ext-1@example.org>\r\nDate: Sat, 21 Nov 2026 08:00:00 +0000\r\nMIME-Version: 1.0\r\n" +
			"Content-Type: text/plain; charset=utf-8\r\n\r\nMy order has not arrived.\r\n"
		sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ident.Inbox}, raw)

		var pg apiPage
		r.call("GET", "/api/email-messages/?created_after=2026-01-01T00:00:00Z", key.Key, nil, &pg)
		if pg.Count != 1 || pg.Results[0].Subject != "Help needed" || pg.Results[0].FromEmail != "alice@example.org" {
			t.Fatalf("inbound: %+v", pg)
		}
		in := pg.Results[0]
		var thread struct{ Messages []apiMessage }
		if s := r.call("GET", "/api/email-inbox/"+in.ThreadID+"/", key.Key, nil, &thread); s != 200 || len(thread.Messages) != 1 {
			t.Fatalf("thread: %d %+v", s, thread)
		}
		var reply apiMessage
		if s := r.call("POST", fmt.Sprintf("/api/email-messages/%d/reply/", in.ID), key.Key, map[string]any{"content": "It ships today."}, &reply); s != 201 {
			t.Fatalf("reply: %d", s)
		}
		if reply.ThreadID != in.ThreadID || reply.Subject != "Re: Help needed" {
			t.Fatalf("reply: %+v", reply)
		}
		poll(t, "the reply at the relay", func() bool { return len(relay.received()) == 1 })
		got := relay.received()[0]
		unfolded := strings.NewReplacer("\r\n ", " ", "\r\n\t", " ").Replace(got.data)
		for _, want := range []string{"In-Reply-To: <ext-1@example.org>", "References: <ext-1@example.org>", "Subject: Re: Help needed",
			`To: "Alice Example" <alice@example.org>`, `From: "Support" <support@agents.test>`, "Message-Id: <" + reply.MessageID + ">", "It ships today."} {
			if !strings.Contains(unfolded, want) {
				t.Errorf("the relayed reply lacks %q:\n%s", want, got.data)
			}
		}
		if !strings.HasPrefix(got.from, "bounces+") || !strings.HasSuffix(got.from, "@agents.test") || len(got.to) != 1 || got.to[0] != "alice@example.org" {
			t.Fatalf("envelope %q %v", got.from, got.to)
		}
		poll(t, "delivery_status sent", func() bool {
			var m apiMessage
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", reply.ID), key.Key, nil, &m)
			return m.DeliveryStatus == "sent"
		})
	})
}

// TestRelayDownThenUp: the relay refuses connections, the outbox retries,
// and once the relay is back the message arrives exactly once.
func TestRelayDownThenUp(t *testing.T) {
	t.Parallel()
	relay := newTestRelay(t)
	addr := freeAddr(t) // nobody listens here yet
	r := start(t, sqlstore.SQLite, map[string]string{
		"CALLSIGN_SMTP_RELAY":    "smtp://relayuser:relaypass@" + addr,
		"CALLSIGN_SMTP_RELAY_CA": relay.caFile,
	}, fastRetry)
	mgmt := r.bootstrap("down@example.com")
	var ident struct{ UUID string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Sender"}, &ident)
	var m apiMessage
	if s := r.call("POST", "/api/email-messages/compose/?identity="+ident.UUID, mgmt, map[string]any{"to_email": "bob@example.org", "subject": "Later", "content": "x"}, &m); s != 201 {
		t.Fatalf("compose: %d", s)
	}
	time.Sleep(300 * time.Millisecond) // a few failed attempts
	var queued apiMessage
	r.call("GET", fmt.Sprintf("/api/email-messages/%d/", m.ID), mgmt, nil, &queued)
	if queued.DeliveryStatus != "queued" {
		t.Fatalf("while the relay is down: %+v", queued)
	}
	relay.listen(t, addr)
	poll(t, "delivery after the relay is back", func() bool {
		var now apiMessage
		r.call("GET", fmt.Sprintf("/api/email-messages/%d/", m.ID), mgmt, nil, &now)
		return now.DeliveryStatus == "sent"
	})
	time.Sleep(300 * time.Millisecond)
	if n := len(relay.received()); n != 1 {
		t.Fatalf("delivered %d times", n)
	}
}

// TestCursorUnderConcurrentDelivery: 16 SMTP connections deliver at once
// while an agent polls with created_after; it sees every message once.
func TestCursorUnderConcurrentDelivery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("cursor@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Busy"}, &ident)
		const conns, each = 16, 15
		var wg sync.WaitGroup
		errs := make(chan error, conns)
		for c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl, err := smtp.Dial(r.svc.SMTPAddr())
				if err != nil {
					errs <- err
					return
				}
				defer cl.Close()
				for i := range each {
					raw := fmt.Sprintf("From: s%d@example.org\r\nMessage-ID: <%d.%d@example.org>\r\nSubject: n%d\r\n\r\nbody\r\n", c, c, i, i)
					if err := cl.SendMail("s@example.org", []string{ident.Inbox}, strings.NewReader(raw)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		seen := map[string]int{}
		cursor := "2000-01-01T00:00:00Z"
		delivered := make(chan struct{})
		go func() { wg.Wait(); close(delivered) }()
		pollOnce := func() {
			var pg apiPage
			r.call("GET", "/api/email-messages/?limit=7&identity="+ident.UUID+"&created_after="+url.QueryEscape(cursor), mgmt, nil, &pg)
			for _, m := range pg.Results {
				seen[m.MessageID]++
				cursor = m.CreatedDT
			}
		}
	loop:
		for {
			select {
			case <-delivered:
				break loop
			default:
				pollOnce()
			}
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for range 100 { // drain what is left
			before := len(seen)
			pollOnce()
			if len(seen) == before {
				break
			}
		}
		if len(seen) != conns*each {
			t.Fatalf("saw %d distinct messages of %d", len(seen), conns*each)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("%s seen %d times", id, n)
			}
		}
	})
}
