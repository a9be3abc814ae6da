package smtpin_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/adapters/smtpin"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type world struct {
	t       *testing.T
	store   *memory.Store
	app     *app.App
	owner   core.Principal
	inboxes map[string]core.Inbox
	addr    string
	srv     *smtpin.Server
	logs    syncBuffer
}

// syncBuffer is a log destination that sessions may write to at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newWorld(t *testing.T, tlsConfig *tls.Config, maxBytes int64) *world {
	t.Helper()
	return newWorldWith(t, tlsConfig, maxBytes, func(*smtpin.Options) {})
}

// newWorldWith lets a test change the listener's options first.
func newWorldWith(t *testing.T, tlsConfig *tls.Config, maxBytes int64, change func(*smtpin.Options)) *world {
	t.Helper()
	w := &world{t: t, store: memory.NewStore(), inboxes: map[string]core.Inbox{}}
	clock := memory.NewClock(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))
	clock.Step = time.Millisecond
	w.app = app.New(app.Deps{
		Ports: app.Ports{Store: w.store, Clock: clock, IDs: memory.IDs{}, Cipher: &memory.Cipher{},
			Parser: mailmime.Parser{}, Composer: mailmime.Composer{}},
		Settings: app.Settings{MailDomains: []string{"agents.test"}, MaxMessageBytes: maxBytes}})
	t.Cleanup(w.app.Close)
	ctx := context.Background()
	b, err := w.app.Accounts.Create(ctx, "owner@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	if w.owner, err = w.app.Auth.Authenticate(ctx, b.ManagementKey); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alice", "bob"} {
		n := name
		ident, err := w.app.Identities.Create(ctx, w.owner, app.IdentityInput{Name: &n, EmailIdentifier: &n})
		if err != nil {
			t.Fatal(err)
		}
		in, err := w.store.InboxByEmail(ctx, ident.Inbox)
		if err != nil {
			t.Fatal(err)
		}
		w.inboxes[name] = in
	}
	opts := smtpin.Options{Hostname: "mx.agents.test", MaxMessageBytes: maxBytes, TLSConfig: tlsConfig, Timeout: 10 * time.Second,
		Log: slog.New(slog.NewTextHandler(&w.logs, nil))}
	change(&opts)
	srv := smtpin.New(w.app.Receiving, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	w.addr, w.srv = ln.Addr().String(), srv
	return w
}

func (w *world) dial() *smtp.Client {
	w.t.Helper()
	c, err := smtp.Dial(w.addr)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := c.Hello("client.example.org"); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	return c
}

// messages lists what an inbox holds.
func (w *world) messages(inbox string) []core.EmailMessage {
	w.t.Helper()
	msgs, _, err := w.store.Messages(context.Background(), ports.MessageFilter{Scope: core.Scope{AccountID: w.owner.AccountID}, InboxID: w.inboxes[inbox].ID})
	if err != nil {
		w.t.Fatal(err)
	}
	// A list carries summaries; read each message with its bodies.
	for i, m := range msgs {
		if msgs[i], err = w.store.Message(context.Background(), w.owner.AccountID, m.ID); err != nil {
			w.t.Fatal(err)
		}
	}
	return msgs
}

func wantCode(t *testing.T, err error, code int, enhanced smtp.EnhancedCode) {
	t.Helper()
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != code || (enhanced != smtp.EnhancedCode{} && se.EnhancedCode != enhanced) {
		t.Fatalf("want %d %v, got %v", code, enhanced, err)
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "mail", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func send(c *smtp.Client, from string, to []string, raw []byte) error {
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			return err
		}
	}
	wc, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := wc.Write(raw); err != nil {
		return err
	}
	return wc.Close()
}

func TestExtensionsAndFixtures(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	c := w.dial()
	for _, ext := range []string{"SIZE", "8BITMIME", "PIPELINING", "SMTPUTF8"} {
		if ok, _ := c.Extension(ext); !ok {
			t.Errorf("%s is not advertised", ext)
		}
	}
	if ok, param := c.Extension("SIZE"); !ok || param != "1048576" {
		t.Errorf("SIZE %q", param)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		t.Error("STARTTLS offered without a certificate")
	}
	entries, err := os.ReadDir(filepath.Join("..", "..", "testdata", "mail"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".eml") {
			continue
		}
		if err := send(c, "sender@example.org", []string{"alice@agents.test"}, fixture(t, e.Name())); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		n++
	}
	if got := len(w.messages("alice")); got != n {
		t.Fatalf("stored %d of %d fixtures", got, n)
	}
}

func TestOneMessageToSeveralInboxesIsStoredOncePerInbox(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	c := w.dial()
	raw := fixture(t, "alternative.eml")
	if err := send(c, "s@example.org", []string{"alice@agents.test", "BOB@agents.test", "alice@AGENTS.test"}, raw); err != nil {
		t.Fatal(err)
	}
	a, b := w.messages("alice"), w.messages("bob")
	if len(a) != 1 || len(b) != 1 || a[0].ThreadID == b[0].ThreadID {
		t.Fatalf("alice %d, bob %d", len(a), len(b))
	}
	if a[0].Subject == "" || a[0].Text == "" || a[0].Direction != core.Incoming {
		t.Fatalf("stored %+v", a[0])
	}
	// The sender became an auto contact of both identities.
	contacts, _, _ := w.app.Contacts.List(context.Background(), w.owner, "", ports.ContactFilter{Source: core.ContactAuto})
	if len(contacts) != 2 {
		t.Fatalf("auto contacts %+v", contacts)
	}
}

func TestRecipientRefusals(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	c := w.dial()
	if err := c.Mail("s@example.org", nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.Rcpt("nobody@agents.test", nil), 550, smtp.EnhancedCode{5, 1, 1})
	wantCode(t, c.Rcpt("someone@elsewhere.example", nil), 550, smtp.EnhancedCode{5, 7, 1})
	if err := c.Rcpt("alice@agents.test", nil); err != nil {
		t.Fatalf("a good recipient after refused ones: %v", err)
	}
	c.Reset()

	// More than 100 recipients: the 101st is 452.
	if err := c.Mail("s@example.org", nil); err != nil {
		t.Fatal(err)
	}
	for i := range smtpin.MaxRecipients {
		if err := c.Rcpt("alice@agents.test", nil); err != nil {
			t.Fatalf("recipient %d: %v", i, err)
		}
	}
	wantCode(t, c.Rcpt("bob@agents.test", nil), 452, smtp.EnhancedCode{})
}

// postmaster@ every domain we serve takes mail (RFC 5321 §4.5.1): without
// an inbox of that name, it reaches the service's oldest inbox.
func TestPostmaster(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	if err := send(w.dial(), "s@example.org", []string{"PostMaster@agents.test"}, fixture(t, "plain.eml")); err != nil {
		t.Fatal(err)
	}
	if n := len(w.messages("alice")); n != 1 {
		t.Fatalf("the oldest inbox holds %d messages", n)
	}
}

func TestTooLarge(t *testing.T) {
	w := newWorld(t, nil, 4096)
	c := w.dial()
	big := []byte("Subject: big\r\n\r\n" + strings.Repeat(strings.Repeat("x", 70)+"\r\n", 80))
	wantCode(t, send(c, "s@example.org", []string{"alice@agents.test"}, big), 552, smtp.EnhancedCode{})
	if n := len(w.messages("alice")); n != 0 {
		t.Fatalf("an oversized message was stored: %d", n)
	}
}

func TestUnreadableMessageIsRefused(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	c := w.dial()
	wantCode(t, send(c, "s@example.org", []string{"alice@agents.test"}, []byte("\r\n")), 554, smtp.EnhancedCode{5, 6, 0})
	wantCode(t, send(c, "s@example.org", []string{"alice@agents.test"}, []byte("Dear Ada,\r\nthis is prose.\r\n")), 554, smtp.EnhancedCode{5, 6, 0})
	// The operator can tell why.
	logs := w.logs.String()
	if strings.Count(logs, "refused a message that is not one") != 2 || !strings.Contains(logs, "header is empty") && !strings.Contains(logs, "no header field") {
		t.Fatalf("the refusals were not logged with their reason:\n%s", logs)
	}
}

// Lines far longer than RFC 5321's 1,000 octets are accepted up to
// MaxLineLength, as Postfix does; past it the sender hears why.
func TestLongLines(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	c := w.dial()
	long := "From: a@example.org\r\nSubject: long\r\n\r\n" + strings.Repeat("x", 20000) + "\r\n"
	if err := send(c, "s@example.org", []string{"alice@agents.test"}, []byte(long)); err != nil {
		t.Fatalf("a 20,000-octet line: %v", err)
	}
	msgs := w.messages("alice")
	if len(msgs) != 1 || msgs[0].Text != strings.Repeat("x", 20000) {
		t.Fatalf("stored %d messages", len(msgs))
	}
	tooLong := "Subject: too long\r\n\r\n" + strings.Repeat("y", smtpin.MaxLineLength+10) + "\r\n"
	if err := send(w.dial(), "s@example.org", []string{"alice@agents.test"}, []byte(tooLong)); err == nil {
		t.Fatal("a line over the limit was accepted")
	}
}

// The stored source starts with Return-Path and Received (RFC 5321 §4.4),
// so the envelope sender and the client show through the API and IMAP.
func TestTraceFields(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	raw := fixture(t, "plain.eml")
	if err := send(w.dial(), "bounces@example.org", []string{"alice@agents.test"}, raw); err != nil {
		t.Fatal(err)
	}
	// Other bytes: the same bytes again would be a retry, which makes no copy.
	if err := send(w.dial(), "", []string{"alice@agents.test", "bob@agents.test"}, append([]byte("X-Again: yes\r\n"), raw...)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		"Return-Path: <bounces@example.org>\r\nReceived: from client.example.org ([127.0.0.1])\r\n\tby mx.agents.test with ESMTP\r\n\tfor <alice@agents.test>; ",
		"Return-Path: <>\r\nReceived: from client.example.org ([127.0.0.1])\r\n\tby mx.agents.test with ESMTP; ",
	} {
		stored, err := w.store.RawMessage(context.Background(), w.owner.AccountID, w.messages("alice")[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(stored, []byte(want)) || !bytes.HasSuffix(stored, raw) {
			t.Errorf("message %d is stored as %q…", i, stored[:min(len(stored), 200)])
		}
		head, _, _ := bytes.Cut(stored, []byte("\r\nFrom"))
		if _, err := mail.ParseDate(string(head[bytes.LastIndex(head, []byte("; "))+2:])); err != nil {
			t.Errorf("Received has no date: %q", head)
		}
	}
}

// A sender's bare LF line ends are stored as CRLF (as Postfix does), under
// our CRLF trace fields; every other byte stays as sent. go-smtp's client
// would fix the line ends itself, so this one speaks SMTP by hand.
func TestBareLFStoredAsCRLF(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	conn, err := net.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	replies := bufio.NewReader(conn)
	expect := func(code string) {
		t.Helper()
		for {
			line, err := replies.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, code) {
				t.Fatalf("reply %q, %v; want %s", line, err, code)
			}
			if line[3] == ' ' {
				return
			}
		}
	}
	body := "From: ann@example.org\nSubject: scripted\nMessage-ID: <lf@example.org>\n\nline one\nline\rtwo\r\n..dot\n\nlast"
	expect("220")
	for _, step := range []struct{ send, code string }{
		{"EHLO client.example.org\r\n", "250"}, {"MAIL FROM:<ann@example.org>\r\n", "250"},
		{"RCPT TO:<alice@agents.test>\r\n", "250"}, {"DATA\r\n", "354"}, {body + "\r\n.\r\n", "250"},
	} {
		if _, err := io.WriteString(conn, step.send); err != nil {
			t.Fatal(err)
		}
		expect(step.code)
	}
	stored, err := w.store.RawMessage(context.Background(), w.owner.AccountID, w.messages("alice")[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	want := "From: ann@example.org\r\nSubject: scripted\r\nMessage-ID: <lf@example.org>\r\n\r\nline one\r\nline\rtwo\r\n.dot\r\n\r\nlast\r\n"
	if !bytes.HasSuffix(stored, []byte(want)) || bytes.Contains(bytes.ReplaceAll(stored, []byte("\r\n"), nil), []byte("\n")) {
		t.Errorf("stored %q, want it to end %q", stored, want)
	}
}

func TestStoreFailureDuringDataIs451AndStoresNothing(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	c := w.dial()
	if err := c.Mail("s@example.org", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("alice@agents.test", nil); err != nil {
		t.Fatal(err)
	}
	w.store.Fail = errors.New("disk full")
	wc, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	wc.Write(fixture(t, "plain.eml"))
	wantCode(t, wc.Close(), 451, smtp.EnhancedCode{4, 3, 0})
	w.store.Fail = nil
	if n := len(w.messages("alice")); n != 0 {
		t.Fatalf("a message was half-written: %d", n)
	}
	// The sender retries, and now it is stored.
	if err := send(c, "s@example.org", []string{"alice@agents.test"}, fixture(t, "plain.eml")); err != nil {
		t.Fatal(err)
	}
	if n := len(w.messages("alice")); n != 1 {
		t.Fatalf("after the retry: %d", n)
	}
}

func TestStartTLS(t *testing.T) {
	cfg := selfSigned(t)
	w := newWorld(t, cfg, 1<<20)
	c, err := smtp.DialStartTLS(w.addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.TLSConnectionState(); !ok {
		t.Fatal("no TLS after STARTTLS")
	}
	if err := send(c, "s@example.org", []string{"alice@agents.test"}, fixture(t, "plain.eml")); err != nil {
		t.Fatal(err)
	}
}

func selfSigned(t *testing.T) *tls.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mx.agents.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"mx.agents.test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func TestManyConnectionsAtOnce(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			c, err := smtp.Dial(w.addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for j := range 5 {
				raw := fmt.Sprintf("From: s%d@example.org\r\nMessage-ID: <%d.%d@x>\r\nSubject: n\r\n\r\nhi\r\n", i, i, j)
				if err := send(c, "s@example.org", []string{"alice@agents.test"}, []byte(raw)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(w.messages("alice")); n != 40 {
		t.Fatalf("stored %d of 40", n)
	}
}

func TestShutdownBeforeServeStillStopsServe(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	srv := smtpin.New(w.app.Receiving, smtpin.Options{Hostname: "mx.agents.test"})
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(ln); err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener still accepts after Shutdown")
	}
}

func TestShutdownStopsServeWithoutError(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	srv := smtpin.New(w.app.Receiving, smtpin.Options{Hostname: "mx.agents.test"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// At shutdown a session waiting for its next message hears 421 4.3.2 at
// once, in clear or through TLS; one in the middle of a message finishes
// it (stored, 250) and hears 421 next; and Shutdown returns.
func TestShutdownEndsSessionsBetweenMessages(t *testing.T) {
	w := newWorld(t, selfSigned(t), 1<<20)
	idle := w.rawSession()
	// A transaction that STARTTLS ended (go-smtp allows it there) holds nothing.
	idleTLS := w.rawSession()
	idleTLS.command(250, "MAIL FROM:<s@example.org>")
	idleTLS.startTLS()
	busy := w.rawSession()
	busy.command(250, "MAIL FROM:<s@example.org>")
	busy.command(250, "RCPT TO:<alice@agents.test>")

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- w.srv.Shutdown(ctx)
	}()
	idle.expect(421, "4.3.2 Service shutting down")
	idleTLS.expect(421, "4.4.2") // go-smtp's own, through TLS
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) with a message under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	busy.command(354, "DATA")
	busy.command(250, "From: s@example.org\r\nMessage-ID: <drain@example.org>\r\nSubject: under way\r\n\r\nhi\r\n.")
	busy.expect(421, "4.3.2 Service shutting down")
	if err := <-stopped; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if msgs := w.messages("alice"); len(msgs) != 1 || msgs[0].Subject != "under way" {
		t.Fatalf("stored %d messages, want the one under way", len(msgs))
	}
}

// rawSession is a session past EHLO, spoken line by line so that a test
// sees what the server says unprompted.
func (w *world) rawSession() *rawSession {
	w.t.Helper()
	conn, err := net.Dial("tcp", w.addr)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { conn.Close() })
	r := &rawSession{t: w.t, conn: conn, text: textproto.NewConn(conn)}
	r.expect(220, "")
	r.command(250, "EHLO client.example.org")
	return r
}

// startTLS upgrades the session and greets again.
func (r *rawSession) startTLS() {
	r.t.Helper()
	r.command(220, "STARTTLS")
	tc := tls.Client(r.conn, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		r.t.Fatal(err)
	}
	r.text = textproto.NewConn(tc)
	r.command(250, "EHLO client.example.org")
}

type rawSession struct {
	t    *testing.T
	conn net.Conn
	text *textproto.Conn
}

func (r *rawSession) command(code int, line string) {
	r.t.Helper()
	if err := r.text.PrintfLine("%s", line); err != nil {
		r.t.Fatal(err)
	}
	r.expect(code, "")
}

// expect reads a reply, every line of it, and wants its code and a text
// starting with prefix.
func (r *rawSession) expect(code int, prefix string) {
	r.t.Helper()
	got, text, err := r.text.ReadResponse(code)
	if err != nil || !strings.HasPrefix(text, prefix) {
		r.t.Fatalf("want %d %s…, got %d %q (%v)", code, prefix, got, text, err)
	}
}

// A message of more MIME parts than core.MaxMessageParts is refused with
// 552 5.3.4 naming the limit, and nothing is stored.
func TestTooManyPartsRefused(t *testing.T) {
	w := newWorld(t, nil, 1<<20)
	var b strings.Builder
	b.WriteString("From: a@example.org\r\nSubject: parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n")
	for i := range core.MaxMessageParts + 1 {
		fmt.Fprintf(&b, "--B\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=f%d\r\n\r\nx\r\n", i)
	}
	b.WriteString("--B--\r\n")
	err := send(w.dial(), "s@example.org", []string{"alice@agents.test"}, []byte(b.String()))
	wantCode(t, err, 552, smtp.EnhancedCode{5, 3, 4})
	if !strings.Contains(err.Error(), "MIME parts") {
		t.Errorf("the reply does not say why: %v", err)
	}
	if n := len(w.messages("alice")); n != 0 {
		t.Fatalf("stored %d", n)
	}
}
