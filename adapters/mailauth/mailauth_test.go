package mailauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/authres"
	"github.com/miekg/dns"

	"github.com/callsign/callsign/adapters/mailauth/dkimpytest"
	"github.com/callsign/callsign/adapters/resolver"
	"github.com/callsign/callsign/adapters/resolver/dnstest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

const message = "From: Bank <alerts@bank.example>\r\n" +
	"To: agent@agents.test\r\n" +
	"Subject: Your statement\r\n" +
	"Date: Mon, 23 Nov 2026 08:00:00 +0000\r\n" +
	"Message-ID: <statement-1@bank.example>\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"\r\n" +
	"Your statement is ready.\r\n"

// world is a DNS server with bank.example's records, a resolver over it
// and the adapter.
type world struct {
	dns    *dnstest.Server
	auth   *Authenticator
	signer *Signer
	key    ports.DKIMKeyPair
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{dns: dnstest.Start(t), signer: NewSigner()}
	r, err := resolver.New(w.dns.Addr)
	if err != nil {
		t.Fatal(err)
	}
	w.auth = NewAuthenticator(r, "mx.callsign.test")
	if w.key, err = w.signer.NewKey("cs1"); err != nil {
		t.Fatal(err)
	}
	w.publish(t, "bank.example", w.key.Public)
	w.dns.Add(t, `bank.example. 300 IN TXT "v=spf1 ip4:127.0.0.2 -all"`,
		`_dmarc.bank.example. 300 IN TXT "v=DMARC1; p=reject"`)
	return w
}

func (w *world) publish(t *testing.T, domain string, k core.DKIMKey) {
	t.Helper()
	w.dns.AddTXT(core.DKIMRecordName(k.Selector, domain), 300, core.DKIMRecordValue(k))
}

func (w *world) sign(t *testing.T, raw string, domain string, key ports.DKIMKeyPair) []byte {
	t.Helper()
	signed, err := w.signer.Sign([]byte(raw), domain, key.Public.Selector, key.Private)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

func pemOf(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// dkimpy, which nobody here wrote, accepts our signatures with the keys our
// records publish: RSA made here, and RSA (PKCS #1, PKCS #8) and Ed25519
// keys read from PEM files as CALLSIGN_DKIM_KEY_FILE gives them.
func TestSignaturesVerifyWithDkimpy(t *testing.T) {
	w := newWorld(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edDER, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]ports.DKIMKeyPair{"made here": w.key}
	for name, file := range map[string][]byte{
		"pkcs1":   pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)),
		"pkcs8":   pemOf(t, "PRIVATE KEY", pkcs8),
		"ed25519": pemOf(t, "PRIVATE KEY", edDER),
	} {
		k, err := ParsePrivateKeyPEM("file-"+name, file)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w.publish(t, "agents.test", k.Public)
		keys[name] = k
	}
	if keys["ed25519"].Public.Algorithm != "ed25519" || keys["pkcs1"].Public.PublicKey != keys["pkcs8"].Public.PublicKey {
		t.Fatalf("keys read wrong: %+v", keys)
	}
	for name, k := range keys {
		domain := "agents.test"
		if name == "made here" {
			domain = "bank.example"
		}
		signed := w.sign(t, message, domain, k)
		if out, ok := dkimpytest.Verify(t, w.dns.Addr, signed); !ok {
			t.Errorf("%s: dkimpy refused the signature: %s\n%s", name, out, signed)
		}
		// Our own check agrees.
		sigs := w.auth.verifyDKIM(context.Background(), signed)
		if len(sigs) != 1 || sigs[0].Result != core.AuthPass || sigs[0].Domain != domain {
			t.Errorf("%s: go-msgauth says %+v", name, sigs)
		}
	}
}

// A signature breaks when a signed field changes, or when a second From
// is added above it (From is oversigned).
func TestSignatureBreaksOnTampering(t *testing.T) {
	w := newWorld(t)
	signed := string(w.sign(t, message, "bank.example", w.key))
	for name, tampered := range map[string]string{
		"subject changed": strings.Replace(signed, "Your statement\r\n", "Your statement (urgent)\r\n", 1),
		"body changed":    strings.Replace(signed, "is ready", "is overdue", 1),
		// Above the signed one, where a verifier without oversigning would
		// not look (it takes the bottom-most instance).
		"second From": "From: attacker@forger.example\r\n" + signed,
	} {
		if out, ok := dkimpytest.Verify(t, w.dns.Addr, []byte(tampered)); ok {
			t.Errorf("%s: dkimpy accepted it: %s", name, out)
		}
		if sigs := w.auth.verifyDKIM(context.Background(), []byte(tampered)); len(sigs) != 1 || sigs[0].Result != core.AuthFail {
			t.Errorf("%s: go-msgauth says %+v", name, sigs)
		}
	}
}

func TestParsePrivateKeyPEMRefusals(t *testing.T) {
	for name, file := range map[string][]byte{
		"not PEM":     []byte("hello"),
		"public key":  pemOf(t, "PUBLIC KEY", []byte{1, 2, 3}),
		"garbage DER": pemOf(t, "PRIVATE KEY", []byte{1, 2, 3}),
	} {
		if _, err := ParsePrivateKeyPEM("s", file); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	authorised := ports.InboundOrigin{IP: net.ParseIP("127.0.0.2"), HELO: "mail.bank.example", MailFrom: "bounce@bank.example"}
	forger := ports.InboundOrigin{IP: net.ParseIP("127.0.0.3"), HELO: "forger.example", MailFrom: "bounce@bank.example"}

	genuine := w.auth.Authenticate(ctx, authorised, w.sign(t, message, "bank.example", w.key))
	if genuine.SPF != core.AuthPass || genuine.DKIM != core.AuthPass || genuine.DMARC != core.AuthPass || genuine.Verdict != core.AuthPass || genuine.Policy != core.DMARCReject {
		t.Errorf("genuine: %+v", genuine)
	}
	forged := w.auth.Authenticate(ctx, forger, []byte(message))
	if forged.SPF != core.AuthFail || forged.DKIM != core.AuthNone || forged.DMARC != core.AuthFail || forged.Verdict != core.AuthFail {
		t.Errorf("forged: %+v", forged)
	}
	// The forger signs with its own domain and uses its own envelope:
	// SPF and DKIM pass, for the wrong domain.
	w.dns.Add(t, `forger.example. 300 IN TXT "v=spf1 ip4:127.0.0.3 -all"`)
	forgerKey, _ := w.signer.NewKey("f1")
	w.publish(t, "forger.example", forgerKey.Public)
	forged = w.auth.Authenticate(ctx, ports.InboundOrigin{IP: forger.IP, HELO: forger.HELO, MailFrom: "x@forger.example"},
		w.sign(t, message, "forger.example", forgerKey))
	if forged.SPF != core.AuthPass || forged.DKIM != core.AuthPass || forged.DMARC != core.AuthFail || forged.Verdict != core.AuthFail {
		t.Errorf("forger's own domain: %+v", forged)
	}
	// The null sender is checked by its HELO name.
	w.dns.Add(t, `mail.bank.example. 300 IN TXT "v=spf1 ip4:127.0.0.2 -all"`)
	bounce := w.auth.Authenticate(ctx, ports.InboundOrigin{IP: authorised.IP, HELO: "mail.bank.example"}, []byte(message))
	if bounce.SPF != core.AuthPass || bounce.SPFDomain != "mail.bank.example" || bounce.DMARC != core.AuthPass {
		t.Errorf("null sender: %+v", bounce)
	}
	// and Authentication-Results names that identity smtp.helo (RFC 8601 §2.7.2).
	field := string(w.auth.ResultsField(bounce))
	_, results, err := authres.Parse(strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(field, "Authentication-Results: "), "\r\n"), "\r\n\t", " "))
	if err != nil || len(results) == 0 {
		t.Fatalf("null sender's field %q: %v", field, err)
	}
	if spf := results[0].(*authres.SPFResult); spf.Helo != "mail.bank.example" || spf.From != "" || strings.Contains(field, "smtp.mailfrom") {
		t.Errorf("null sender's field %q: spf = %+v", field, spf)
	}
}

// A DNS that does not answer gives temperror, promptly; never a fail.
func TestAuthenticateWithFailingDNS(t *testing.T) {
	w := newWorld(t)
	w.dns.Fail("bank.example", dns.RcodeServerFailure)
	w.dns.Fail("_dmarc.bank.example", dns.RcodeServerFailure)
	w.dns.Fail("cs1._domainkey.bank.example", dns.RcodeServerFailure)
	a := w.auth.Authenticate(context.Background(), ports.InboundOrigin{IP: net.ParseIP("127.0.0.2"), HELO: "x", MailFrom: "bounce@bank.example"},
		w.sign(t, message, "bank.example", w.key))
	if a.SPF != core.AuthTempError || a.DKIM != core.AuthTempError || a.DMARC != core.AuthTempError || a.Verdict != core.AuthNone {
		t.Errorf("failing DNS: %+v", a)
	}
}

func TestFromDomain(t *testing.T) {
	for raw, want := range map[string]string{
		"From: Ada <ada@Bank.Example>\r\n\r\nx":                       "bank.example",
		"From: =?x-unknown?q?Ada?= <ada@bank.example>\r\n\r\nx":       "bank.example",
		"From: a@one.example, b@two.example\r\n\r\nx":                 "",
		"From: a@one.example\r\nFrom: b@two.example\r\n\r\nx":         "",
		"To: a@one.example\r\n\r\nx":                                  "",
		"From: undisclosed\r\n\r\nx":                                  "",
		"Subject: x\r\nFrom: \"Bank, Inc\" <a@bank.example>\r\n\r\nx": "bank.example",
	} {
		if got := fromDomain([]byte(raw)); got != want {
			t.Errorf("fromDomain(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestResultsField(t *testing.T) {
	a := NewAuthenticator(nil, "mx.callsign.test")
	field := string(a.ResultsField(core.Authentication{Checked: true, SPF: core.AuthFail, DKIM: core.AuthPass, DMARC: core.AuthFail, Verdict: core.AuthFail,
		Policy: core.DMARCReject, SPFDomain: "bank.example", FromDomain: "bank.example",
		Signatures: []core.DKIMOutcome{{Result: core.AuthPass, Domain: "forger.example"}}}))
	if !strings.HasPrefix(field, "Authentication-Results: mx.callsign.test;\r\n\t") || !strings.HasSuffix(field, "\r\n") {
		t.Fatalf("field = %q", field)
	}
	value := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(field, "Authentication-Results: "), "\r\n"), "\r\n\t", " ")
	id, results, err := authres.Parse(value)
	if err != nil || id != "mx.callsign.test" || len(results) != 3 {
		t.Fatalf("parsed back: %q %v %v", id, results, err)
	}
	if spf := results[0].(*authres.SPFResult); spf.Value != authres.ResultFail || spf.From != "bank.example" {
		t.Errorf("spf = %+v", spf)
	}
	if dm := results[2].(*authres.DMARCResult); dm.Value != authres.ResultFail || dm.From != "bank.example" || strings.Trim(dm.Reason, `"`) != "p=reject" {
		t.Errorf("dmarc = %+v", dm)
	}
	if got := string(a.ResultsField(core.Unchecked)); got != "Authentication-Results: mx.callsign.test;\r\n\tnone\r\n" {
		t.Errorf("unchecked = %q", got)
	}
	if got := string(a.ResultsField(core.LocalAuthentication)); !strings.Contains(got, "auth=pass") {
		t.Errorf("local = %q", got)
	}
}

func TestOrganization(t *testing.T) {
	a := NewAuthenticator(nil, "x")
	for in, want := range map[string]string{"mail.example.co.uk": "example.co.uk", "a.b.bank.example": "bank.example", "Bank.Example.": "bank.example"} {
		if got, ok := a.Organization(in); !ok || got != want {
			t.Errorf("Organization(%q) = %q, %v", in, got, ok)
		}
	}
	for _, suffix := range []string{"co.uk", "com", "github.io"} {
		if _, ok := a.Organization(suffix); ok {
			t.Errorf("%q is a public suffix", suffix)
		}
	}
}

// BenchmarkSign is the cost of signing one message with an RSA-2048 key,
// against a peer that only copies the message (what signing adds).
func BenchmarkSign(b *testing.B) {
	s := NewSigner()
	key, err := s.NewKey("cs1")
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(message + strings.Repeat("A line of a longer body, as mail has.\r\n", 100))
	b.Run("rsa2048", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := s.Sign(raw, "bank.example", "cs1", key.Private); err != nil {
				b.Fatal(err)
			}
		}
	})
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	ed, _ := KeyPair("ed", edKey)
	b.Run("ed25519", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := s.Sign(raw, "bank.example", "ed", ed.Private); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy-only", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			_ = append([]byte(nil), raw...)
		}
	})
}

// BenchmarkAuthenticate is the cost of checking one signed 4 KiB message
// (SPF, DKIM, DMARC) with the resolver's cache warm, as under steady
// inbound load.
func BenchmarkAuthenticate(b *testing.B) {
	dns := dnstest.Start(b)
	r, err := resolver.New(dns.Addr)
	if err != nil {
		b.Fatal(err)
	}
	a, s := NewAuthenticator(r, "mx.callsign.test"), NewSigner()
	key, _ := s.NewKey("cs1")
	dns.AddTXT(core.DKIMRecordName("cs1", "bank.example"), 300, core.DKIMRecordValue(key.Public))
	dns.Add(b, `bank.example. 300 IN TXT "v=spf1 ip4:127.0.0.2 -all"`, `_dmarc.bank.example. 300 IN TXT "v=DMARC1; p=reject"`)
	raw, err := s.Sign([]byte(message+strings.Repeat("A line of a longer body, as mail has.\r\n", 100)), "bank.example", "cs1", key.Private)
	if err != nil {
		b.Fatal(err)
	}
	origin := ports.InboundOrigin{IP: net.ParseIP("127.0.0.2"), HELO: "mail.bank.example", MailFrom: "bounce@bank.example"}
	if got := a.Authenticate(context.Background(), origin, raw); got.Verdict != core.AuthPass {
		b.Fatalf("verdict %+v", got)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		a.Authenticate(context.Background(), origin, raw)
	}
}
