package app_test

import (
	"bytes"
	"testing"

	"github.com/callsign/callsign/adapters/mailauth"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// Certificates go to the service's own hosts and to the MTA-STS host of a
// custom domain once it receives mail here; never to anything else.
func TestCertificateNames(t *testing.T) {
	w := newDomainWorld(t)
	w.app = newApp(t, app.Deps{
		Ports: app.Ports{Store: w.store, Clock: w.clock, IDs: memory.IDs{}, Cipher: &memory.Cipher{}, Resolver: w.dns,
			MailAuth: mailauth.NewAuthenticator(w.dns, "mx.callsign.test"), Signer: mailauth.NewSigner()},
		Settings: app.Settings{MailDomains: []string{"agents.test"}, Domain: domainSettings,
			CertificateHosts: []string{"callsign.test", "mx.callsign.test"}}})
	p := w.owner("a@example.com")
	d, err := w.app.Domains.Create(w.ctx, p, "acme.example")
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(host string) bool {
		t.Helper()
		err := w.app.Certificates.Allow(w.ctx, host)
		if err != nil && core.KindOf(err) != core.KindNotFound {
			t.Fatal(err)
		}
		return err == nil
	}
	if !allowed("callsign.test") || !allowed("MX.callsign.test") || allowed("agents.test") || allowed("stranger.test") {
		t.Fatal("the service's own hosts, and only those")
	}
	if allowed("mta-sts.acme.example") || allowed("mta-sts.unknown.example") {
		t.Fatal("a certificate for the MTA-STS host of a domain that receives no mail here")
	}
	w.publish(d)
	if _, err := w.app.Domains.Verify(w.ctx, p, "acme.example"); err != nil {
		t.Fatal(err)
	}
	if !allowed("mta-sts.acme.example") || allowed("www.acme.example") {
		t.Fatal("a verified domain's MTA-STS host, and only that")
	}
}

// What ACME keeps is sealed, bound to its name (the e2e test checks the
// real cipher leaves no PEM in the database).
func TestCertificateStateSealed(t *testing.T) {
	w := newDomainWorld(t)
	pem := []byte("-----BEGIN EC PRIVATE KEY-----\n...")
	if err := w.app.Certificates.Put(w.ctx, "mx.callsign.test", pem); err != nil {
		t.Fatal(err)
	}
	sealed, err := w.store.CertificateEntry(w.ctx, "mx.callsign.test")
	if err != nil || bytes.Equal(sealed, pem) {
		t.Fatalf("stored %q, %v", sealed, err)
	}
	if got, err := w.app.Certificates.Get(w.ctx, "mx.callsign.test"); err != nil || !bytes.Equal(got, pem) {
		t.Fatalf("read back %q, %v", got, err)
	}
	if err := w.store.PutCertificateEntry(w.ctx, "callsign.test", sealed, w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Certificates.Get(w.ctx, "callsign.test"); err == nil {
		t.Fatal("a sealed value opened under another name")
	}
	if _, err := w.app.Certificates.Get(w.ctx, "unknown.test"); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("missing: %v", err)
	}
}
