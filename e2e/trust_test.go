package e2e

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/mailauth"
	"github.com/callsign/callsign/adapters/mailauth/dkimpytest"
	"github.com/callsign/callsign/adapters/resolver/dnstest"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type apiRecord struct {
	Purpose, Type, Name, Value, Status string
	Priority                           *int
}

type apiDomain struct {
	Name, Status string
	Reason       *string
	Records      []apiRecord
}

type apiRecipient struct {
	Email, Status string
	Error         *string
	ProviderID    *string `json:"provider_id"`
}

type apiSent struct {
	ID             int64          `json:"id"`
	DeliveryStatus string         `json:"delivery_status"`
	Recipients     []apiRecipient `json:"recipients"`
}

// publish puts every record the API printed into the test's DNS server.
func publish(t *testing.T, dns *dnstest.Server, d apiDomain) {
	t.Helper()
	for _, rec := range d.Records {
		if rec.Type == "MX" {
			dns.Add(t, fmt.Sprintf("%s. 300 IN MX %d %s.", rec.Name, *rec.Priority, rec.Value))
		} else {
			dns.AddTXT(rec.Name, 300, rec.Value)
		}
	}
}

// TestOwnDomainSignedMailAndBounces is the "done when": an account
// adds its domain, publishes the records the API printed, sees it verify,
// creates an inbox on it, and sends mail that dkimpy accepts; a bounce
// report comes back to the message's VERP address and suppresses the
// address, as does a relay's refusal at once.
func TestOwnDomainSignedMailAndBounces(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		dns := dnstest.Start(t)
		relay := newTestRelay(t)
		relay.refuse = map[string]*smtp.SMTPError{"gone@example.net": {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"}}
		relay.listen(t, "127.0.0.1:0")
		r := start(t, d, map[string]string{
			"CALLSIGN_SMTP_RELAY":    "smtp://relayuser:relaypass@" + relay.addr,
			"CALLSIGN_SMTP_RELAY_CA": relay.caFile,
			"CALLSIGN_DNS_RESOLVER":  dns.Addr,
			"CALLSIGN_MX_HOST":       "mx.callsign.test",
			"CALLSIGN_INBOUND_AUTH":  "all",
		}, fastRetry)
		mgmt := r.bootstrap("owner@acme.example")

		var dom apiDomain
		if s := r.call("POST", "/api/domains/", mgmt, map[string]any{"name": "acme.example"}, &dom); s != 201 || dom.Status != "pending" || len(dom.Records) != 5 {
			t.Fatalf("create: %d %+v", s, dom)
		}
		r.call("POST", "/api/domains/acme.example/verify/", mgmt, nil, &dom)
		if dom.Status != "pending" || dom.Records[0].Status != "missing" {
			t.Fatalf("before publishing: %+v", dom)
		}
		publish(t, dns, dom)
		r.call("POST", "/api/domains/acme.example/verify/", mgmt, nil, &dom)
		for _, rec := range dom.Records {
			if rec.Status != "ok" {
				t.Errorf("%s record %s: %s", rec.Purpose, rec.Name, rec.Status)
			}
		}
		if dom.Status != "verified" {
			t.Fatalf("after publishing: %+v", dom)
		}

		var ident struct{ UUID, Inbox string }
		if s := r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Sales", "email_identifier": "sales", "domain": "acme.example"}, &ident); s != 201 || ident.Inbox != "sales@acme.example" {
			t.Fatalf("identity: %d %+v", s, ident)
		}
		var key struct{ Key string }
		r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)

		// Signed mail that a verifier nobody here wrote accepts.
		var sent apiSent
		if s := r.call("POST", "/api/email-messages/compose/", key.Key, map[string]any{"to_email": "ann@example.net", "subject": "Offer", "content": "Our offer."}, &sent); s != 201 {
			t.Fatalf("compose: %d", s)
		}
		poll(t, "the message at the relay", func() bool { return len(relay.received()) == 1 })
		out := relay.received()[0]
		if !strings.HasPrefix(out.data, "DKIM-Signature: ") || !strings.Contains(out.data, "a=rsa-sha256;") || !strings.Contains(out.data, "d=acme.example;") {
			t.Fatalf("not signed first:\n%s", out.data)
		}
		if verdict, ok := dkimpytest.Verify(t, dns.Addr, []byte(out.data)); !ok {
			t.Fatalf("dkimpy refused our signature: %s\n%s", verdict, out.data)
		}
		token, ok := core.ParseBounceAddress(out.from)
		if !ok || !strings.HasSuffix(out.from, "@acme.example") {
			t.Fatalf("envelope sender %q", out.from)
		}
		var raw string
		_, rawBytes := r.callRaw("GET", fmt.Sprintf("/api/email-messages/%d/raw/", sent.ID), key.Key, nil)
		// (go-smtp's DATA reader drops the final line end of a message.)
		if raw = string(rawBytes); strings.TrimRight(raw, "\r\n") != strings.TrimRight(out.data, "\r\n") {
			t.Fatalf("the stored source is not what was sent:\n%q\n%q", raw, out.data)
		}

		// A bounce comes back later, from another server, in Postfix's shape.
		dsn, err := os.ReadFile("../testdata/dsn/postfix.eml")
		if err != nil {
			t.Fatal(err)
		}
		report := strings.NewReplacer("bounces+aaaaaaaaaaaaaaaaaaaa@agents.example", out.from, "nobody@example.net", "ann@example.net").Replace(string(dsn))
		sendSMTP(t, r.svc.SMTPAddr(), "", []string{"BOUNCES+" + strings.ToUpper(token) + "@acme.example"}, report)
		poll(t, "the bounce applied", func() bool {
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", sent.ID), key.Key, nil, &sent)
			return sent.DeliveryStatus == "bounced"
		})
		if sent.Recipients[0].Status != "bounced" || !strings.Contains(*sent.Recipients[0].Error, "550 5.1.1") {
			t.Fatalf("recipients %+v", sent.Recipients)
		}
		// email.bounced, written with the report, names the recipient, the
		// report's status and its reason.
		bouncedEvents := r.eventsUntil(key.Key, "&types=email.bounced", "0", 1)
		var bounce struct {
			ID             int64  `json:"id"`
			DeliveryStatus string `json:"delivery_status"`
			Bounced        []struct{ Email, Status, Reason string }
		}
		if err := json.Unmarshal(bouncedEvents[0].Data, &bounce); err != nil || bounce.ID != sent.ID || bounce.DeliveryStatus != "bounced" ||
			len(bounce.Bounced) != 1 || bounce.Bounced[0].Email != "ann@example.net" || bounce.Bounced[0].Status != "5.1.1" ||
			!strings.Contains(bounce.Bounced[0].Reason, "550 5.1.1") || *bouncedEvents[0].Identity != ident.UUID {
			t.Fatalf("email.bounced: %s", bouncedEvents[0].Data)
		}
		var pg apiPage
		if r.call("GET", "/api/email-messages/?direction=incoming", key.Key, nil, &pg); pg.Count != 0 {
			t.Fatalf("the report was stored as mail: %+v", pg)
		}
		var sups []struct{ Email, Identity, Reason string }
		r.call("GET", "/api/suppressions/", key.Key, nil, &sups)
		if len(sups) != 1 || sups[0].Email != "ann@example.net" || sups[0].Identity != ident.UUID {
			t.Fatalf("suppressions %+v", sups)
		}
		var refusal map[string][]string
		if s := r.call("POST", "/api/email-messages/compose/", key.Key, map[string]any{"to_email": "Ann@Example.net", "content": "Again?"}, &refusal); s != 400 ||
			!strings.Contains(strings.Join(refusal["to_email"], " "), "ann@example.net is suppressed") {
			t.Fatalf("sending to a suppressed address: %d %v", s, refusal)
		}
		// Mail to an unknown bounce address is refused at RCPT.
		c, err := smtp.Dial(r.svc.SMTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Mail("", nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Rcpt("bounces+zzzzzzzzzzzzzzzzzzzz@acme.example", nil); err == nil || !strings.Contains(err.Error(), "550") {
			t.Fatalf("unknown bounce address: %v", err)
		}

		// The relay refuses an address at once: failed, bounced, suppressed.
		if s := r.call("POST", "/api/email-messages/compose/", key.Key, map[string]any{"to_email": "gone@example.net", "content": "Hello?"}, &sent); s != 201 {
			t.Fatalf("compose: %d", s)
		}
		poll(t, "the refusal recorded", func() bool {
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", sent.ID), key.Key, nil, &sent)
			return sent.DeliveryStatus == "failed"
		})
		if sent.Recipients[0].Status != "bounced" || !strings.Contains(*sent.Recipients[0].Error, "550 5.1.1") {
			t.Fatalf("refused recipient %+v", sent.Recipients)
		}
		r.call("GET", "/api/suppressions/?email=gone@example.net", mgmt, nil, &sups)
		if len(sups) != 1 {
			t.Fatalf("the refused address is not suppressed: %+v", sups)
		}
		if s := r.call("DELETE", "/api/suppressions/gone@example.net/", mgmt, nil, nil); s != 204 {
			t.Fatalf("delete suppression: %d", s)
		}
	})
}

// sendFrom delivers raw over SMTP from a given loopback address, as a
// sending server named helo.
func sendFrom(t *testing.T, local, addr, helo, from, to, raw string) {
	t.Helper()
	conn, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := smtp.NewClient(conn)
	defer c.Close()
	if err := c.Hello(helo); err != nil {
		t.Fatal(err)
	}
	if err := c.SendMail(from, []string{to}, strings.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
}

// bank is bank.example's DKIM key, as its mail servers sign with it.
type bank struct {
	signer *mailauth.Signer
	key    ports.DKIMKeyPair
}

func (b bank) sign(raw string) ([]byte, error) {
	return b.signer.Sign([]byte(raw), "bank.example", b.key.Public.Selector, b.key.Private)
}

// bankDNS starts a DNS server where bank.example authorizes sender (SPF),
// publishes its DKIM key and asks receivers to reject what fails DMARC.
func bankDNS(t testing.TB, sender string) (*dnstest.Server, bank) {
	t.Helper()
	dns := dnstest.Start(t)
	b := bank{signer: mailauth.NewSigner()}
	var err error
	if b.key, err = b.signer.NewKey("bank1"); err != nil {
		t.Fatal(err)
	}
	dns.AddTXT(core.DKIMRecordName("bank1", "bank.example"), 300, core.DKIMRecordValue(b.key.Public))
	dns.Add(t, fmt.Sprintf(`bank.example. 300 IN TXT "v=spf1 ip4:%s -all"`, sender), `_dmarc.bank.example. 300 IN TXT "v=DMARC1; p=reject"`)
	return dns, b
}

// TestInboundVerdicts: bank.example authorizes 127.0.0.2 (SPF), signs its
// mail (DKIM) and publishes p=reject (DMARC). A message from it arrives
// marked pass; a forgery from 127.0.0.3 arrives marked fail, kept and
// flagged, with the verdict on top of its stored source.
func TestInboundVerdicts(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		dns, bank := bankDNS(t, "127.0.0.2")
		r := start(t, d, map[string]string{"CALLSIGN_DNS_RESOLVER": dns.Addr, "CALLSIGN_INBOUND_AUTH": "all", "CALLSIGN_SMTP_HOSTNAME": "mx.agents.test"})
		mgmt := r.bootstrap("agent-owner@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Payer"}, &ident)
		smtpAddr := r.svc.SMTPAddr()

		msg := func(subject string) string {
			return "From: Bank <alerts@bank.example>\r\nTo: " + ident.Inbox + "\r\nSubject: " + subject +
				"\r\nMessage-ID: <" + strings.ReplaceAll(subject, " ", "-") + "@bank.example>\r\nDate: Mon, 23 Nov 2026 08:00:00 +0000\r\n" +
				"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlease pay the invoice.\r\n"
		}
		genuine, err := bank.sign(msg("Invoice"))
		if err != nil {
			t.Fatal(err)
		}
		sendFrom(t, "127.0.0.2", smtpAddr, "mail.bank.example", "bounce@bank.example", ident.Inbox, string(genuine))
		sendFrom(t, "127.0.0.3", smtpAddr, "mail.forger.example", "bounce@bank.example", ident.Inbox, msg("Urgent invoice"))

		type authView struct{ SPF, DKIM, DMARC, Verdict string }
		var pg struct {
			Count   int
			Results []struct {
				ID             int64
				Subject        string
				Authentication *struct {
					SPF, DKIM, DMARC, Verdict string
					DMARCPolicy               *string `json:"dmarc_policy"`
				}
			}
		}
		r.call("GET", "/api/email-messages/?identity="+ident.UUID, mgmt, nil, &pg)
		if pg.Count != 2 {
			t.Fatalf("messages %+v", pg)
		}
		for _, m := range pg.Results {
			a := m.Authentication
			if a == nil || a.DMARCPolicy == nil || *a.DMARCPolicy != "reject" {
				t.Fatalf("%s: authentication %+v", m.Subject, a)
			}
			got := authView{a.SPF, a.DKIM, a.DMARC, a.Verdict}
			want := authView{"pass", "pass", "pass", "pass"}
			if m.Subject == "Urgent invoice" {
				want = authView{"fail", "none", "fail", "fail"}
			}
			if got != want {
				t.Errorf("%s: %+v, want %+v", m.Subject, got, want)
			}
		}
		var trusted apiPage
		r.call("GET", "/api/email-messages/?authenticated=true", mgmt, nil, &trusted)
		if trusted.Count != 1 || trusted.Results[0].Subject != "Invoice" {
			t.Fatalf("authenticated=true: %+v", trusted)
		}
		r.call("GET", "/api/email-messages/?authenticated=false", mgmt, nil, &trusted)
		if trusted.Count != 1 || trusted.Results[0].Subject != "Urgent invoice" {
			t.Fatalf("authenticated=false: %+v", trusted)
		}
		_, raw := r.callRaw("GET", fmt.Sprintf("/api/email-messages/%d/raw/", pg.Results[1].ID), mgmt, nil)
		lines := strings.SplitN(string(raw), "\r\n", 8)
		if !strings.HasPrefix(lines[0], "Return-Path: <bounce@bank.example>") || !strings.HasPrefix(lines[1], "Received: from mail.forger.example ([127.0.0.3])") {
			t.Fatalf("trace:\n%s", raw)
		}
		field := strings.Join(lines, "\n")
		if !strings.Contains(field, "Authentication-Results: mx.agents.test;") || !strings.Contains(field, "spf=fail smtp.mailfrom=bank.example") ||
			!strings.Contains(field, `dmarc=fail reason="p=reject" header.from=bank.example`) {
			t.Fatalf("no verdict on top:\n%s", raw)
		}
	})
}

// TestPlatformDomainSignedWithKeyFile: with CALLSIGN_DKIM_KEY_FILE and
// CALLSIGN_DKIM_SELECTOR naming an Ed25519 key (PKCS #8 PEM), or an RSA
// and an Ed25519 key, mail from a platform domain carries one signature
// per key and dkimpy accepts every one; start-up warns when no key is RSA.
func TestPlatformDomainSignedWithKeyFile(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		selectors []string
		keys      []crypto.Signer
		algs      []string // a= of each signature, top first
		warned    bool
	}{
		{"ed25519 only", []string{"platform2026"}, []crypto.Signer{edKey}, []string{"ed25519-sha256"}, true},
		{"rsa and ed25519", []string{"plat-rsa", "plat-ed"}, []crypto.Signer{rsaKey, edKey}, []string{"rsa-sha256", "ed25519-sha256"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dns := dnstest.Start(t)
			var files []string
			for i, key := range tc.keys {
				der, err := x509.MarshalPKCS8PrivateKey(key)
				if err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(t.TempDir(), tc.selectors[i]+".pem")
				if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
					t.Fatal(err)
				}
				files = append(files, file)
				pair, err := mailauth.KeyPair(tc.selectors[i], key)
				if err != nil {
					t.Fatal(err)
				}
				dns.AddTXT(core.DKIMRecordName(tc.selectors[i], "agents.test"), 300, core.DKIMRecordValue(pair.Public))
			}
			relay := newTestRelay(t)
			relay.listen(t, "127.0.0.1:0")
			r := start(t, sqlstore.SQLite, map[string]string{
				"CALLSIGN_SMTP_RELAY":    "smtp://relayuser:relaypass@" + relay.addr,
				"CALLSIGN_SMTP_RELAY_CA": relay.caFile,
				"CALLSIGN_DNS_RESOLVER":  dns.Addr,
				"CALLSIGN_DKIM_KEY_FILE": strings.Join(files, ","),
				"CALLSIGN_DKIM_SELECTOR": strings.Join(tc.selectors, ","),
				"CALLSIGN_LOG_LEVEL":     "warn",
			}, fastRetry)
			r.svc.Announce()
			if warned := strings.Contains(r.logs(), "Ed25519 only"); warned != tc.warned {
				t.Errorf("warned about Ed25519 only: %v, want %v\n%s", warned, tc.warned, r.logs())
			}
			mgmt := r.bootstrap("platform@example.com")
			var ident struct{ UUID string }
			r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Helper"}, &ident)
			if s := r.call("POST", "/api/email-messages/compose/?identity="+ident.UUID, mgmt, map[string]any{"to_email": "ann@example.net", "content": "Hi."}, nil); s != 201 {
				t.Fatalf("compose: %d", s)
			}
			poll(t, "the message at the relay", func() bool { return len(relay.received()) == 1 })
			out := relay.received()[0].data
			sigs := strings.Split(out, "DKIM-Signature: ")[1:]
			if len(sigs) != len(tc.algs) {
				t.Fatalf("%d signatures, want %d:\n%s", len(sigs), len(tc.algs), out)
			}
			for i, alg := range tc.algs {
				if !strings.Contains(sigs[i], "a="+alg+";") || !strings.Contains(sigs[i], "s="+tc.selectors[i]+";") {
					t.Errorf("signature %d is not %s by %s:\n%s", i, alg, tc.selectors[i], out)
				}
			}
			if verdict, ok := dkimpytest.Verify(t, dns.Addr, []byte(out)); !ok || !strings.HasPrefix(verdict, fmt.Sprintf("%d signature(s) verified", len(tc.algs))) {
				t.Fatalf("dkimpy refused a platform signature: %s", verdict)
			}
		})
	}
}
