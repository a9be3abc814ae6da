package app_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/callsign/callsign/adapters/mailauth"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// domainWorld is the app with a DNS the test publishes records in.
type domainWorld struct {
	*world
	dns *memory.Resolver
}

var domainSettings = core.DomainSettings{MXHost: "mx.callsign.test", SPFInclude: "spf.relay.test"}

func newDomainWorld(t *testing.T) *domainWorld {
	w := &domainWorld{world: &world{t: t, ctx: context.Background(), store: memory.NewStore(),
		clock: memory.NewClock(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))}, dns: memory.NewResolver()}
	w.app = newApp(t, app.Deps{
		Ports: app.Ports{Store: w.store, Clock: w.clock, IDs: memory.IDs{}, Cipher: &memory.Cipher{},
			Resolver: w.dns, MailAuth: mailauth.NewAuthenticator(w.dns, "mx.callsign.test"), Signer: mailauth.NewSigner()},
		Settings: app.Settings{MailDomains: []string{"agents.test"}, Domain: domainSettings}})
	return w
}

// publish puts the domain's MX, DKIM and DMARC records into the DNS; SPF
// stays out, which must not hold verification back.
func (w *domainWorld) publish(d core.Domain) {
	for _, r := range d.Records(domainSettings) {
		switch r.Purpose {
		case core.PurposeMX:
			w.dns.SetMX(r.Name, r.Value)
		case core.PurposeDKIM, core.PurposeDMARC:
			w.dns.SetTXT(r.Name, r.Value)
		}
	}
}

func TestCreatingADomain(t *testing.T) {
	w := newDomainWorld(t)
	p := w.owner("a@example.com")
	d, err := w.app.Domains.Create(w.ctx, p, "Acme.Example.")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "acme.example" || d.Status != core.DomainPending || len(d.Keys) != 1 || !d.Keys[0].Active || d.Keys[0].Algorithm != "rsa" {
		t.Fatalf("domain %+v", d)
	}
	recs := d.Records(domainSettings)
	if len(recs) != 5 || recs[2].Name != core.DKIMRecordName(d.Keys[0].Selector, "acme.example") || !strings.HasPrefix(recs[2].Value, "v=DKIM1; k=rsa; p=MII") {
		t.Fatalf("records %+v", recs)
	}

	for name, bad := range map[string]struct {
		p    core.Principal
		name string
		kind core.Kind
	}{
		"taken":           {w.owner("b@example.com"), "acme.example", core.KindConflict},
		"public suffix":   {p, "co.uk", core.KindInvalid},
		"platform domain": {p, "agents.test", core.KindInvalid},
		"not a name":      {p, "acme", core.KindInvalid},
	} {
		if _, err := w.app.Domains.Create(w.ctx, bad.p, bad.name); core.KindOf(err) != bad.kind {
			t.Errorf("%s: %v", name, err)
		}
	}
	q := w.owner("c@example.com")
	if err := w.store.SetSubscription(w.ctx, q.AccountID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Domains.Create(w.ctx, q, "inactive.example"); core.KindOf(err) != core.KindPaymentRequired {
		t.Errorf("inactive subscription: %v", err)
	}
	// The private key is sealed, never the plain PKCS #8.
	k, err := w.store.SigningKey(w.ctx, "acme.example")
	if err != nil || bytes.Equal(k.Private, nil) {
		t.Fatalf("stored key %v", err)
	}
	list, _ := w.app.Domains.List(w.ctx, p)
	if len(list) != 2 || list[0].Type != core.DomainPlatform || list[1].Name != "acme.example" {
		t.Errorf("list %+v", list)
	}
}

func TestVerifyingADomain(t *testing.T) {
	w := newDomainWorld(t)
	p := w.owner("a@example.com")
	d, err := w.app.Domains.Create(w.ctx, p, "acme.example")
	if err != nil {
		t.Fatal(err)
	}
	d, err = w.app.Domains.Verify(w.ctx, p, "acme.example")
	if err != nil || d.Status != core.DomainPending || !strings.Contains(d.Reason, "MX record") {
		t.Fatalf("nothing published: %+v, %v", d, err)
	}
	w.publish(d)
	d, err = w.app.Domains.Verify(w.ctx, p, "acme.example")
	if err != nil || d.Status != core.DomainVerified || d.Checks[core.PurposeSPF] != core.RecordMissing || d.Checks[core.PurposeDMARC] != core.RecordOK {
		t.Fatalf("published: %+v, %v", d, err)
	}

	// The DKIM record goes: the daily check fails the domain, saying why.
	w.dns.SetTXT(core.DKIMRecordName(d.Keys[0].Selector, d.Name))
	w.clock.Advance(25 * time.Hour)
	w.runChecks()
	d, _ = w.app.Domains.Get(w.ctx, p, "acme.example")
	if d.Status != core.DomainFailed || !strings.Contains(d.Reason, "DKIM record") {
		t.Fatalf("after the record went: %+v", d)
	}
	// A DNS that does not answer changes nothing.
	w.dns.Fail(d.Name, true)
	before := d
	d, _ = w.app.Domains.Verify(w.ctx, p, "acme.example")
	if d.Status != before.Status || d.Checks[core.PurposeMX] != core.RecordOK {
		t.Fatalf("failing DNS: %+v", d)
	}
}

// runChecks runs the background checker until it has nothing due.
func (w *domainWorld) runChecks() {
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() { w.app.Domains.RunChecks(ctx); close(done) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
}

func TestRotatingAKey(t *testing.T) {
	w := newDomainWorld(t)
	p := w.owner("a@example.com")
	d, _ := w.app.Domains.Create(w.ctx, p, "acme.example")
	if _, err := w.app.Domains.RotateDKIM(w.ctx, p, d.Name); core.KindOf(err) != core.KindConflict {
		t.Fatalf("rotating a pending domain: %v", err)
	}
	w.publish(d)
	d, _ = w.app.Domains.Verify(w.ctx, p, d.Name)
	old := d.Keys[0].Selector
	d, err := w.app.Domains.RotateDKIM(w.ctx, p, d.Name)
	if err != nil || len(d.Keys) != 2 || d.Keys[0].Selector != old || d.Keys[1].Active {
		t.Fatalf("rotated: %+v, %v", d, err)
	}
	// The old key signs until the new record is published.
	signed, err := w.app.Domains.Sign(w.ctx, d.Name, []byte("From: a@acme.example\r\n\r\nhi\r\n"))
	if err != nil || !bytes.Contains(signed, []byte("s="+old)) {
		t.Fatalf("signed with %q: %v", signed, err)
	}
	w.publish(d)
	d, _ = w.app.Domains.Verify(w.ctx, p, d.Name)
	if len(d.Keys) != 1 || d.Keys[0].Selector == old {
		t.Fatalf("after publishing: %+v", d.Keys)
	}
	signed, _ = w.app.Domains.Sign(w.ctx, d.Name, []byte("From: a@acme.example\r\n\r\nhi\r\n"))
	if !bytes.Contains(signed, []byte("s="+d.Keys[0].Selector)) {
		t.Fatalf("signed with %q", signed)
	}
	// Platform domains without a configured key are not signed.
	if raw, _ := w.app.Domains.Sign(w.ctx, "agents.test", []byte("x")); string(raw) != "x" {
		t.Errorf("platform mail signed without a key: %q", raw)
	}
}

// With an RSA and an Ed25519 platform key, platform mail carries two
// signatures that both verify, the first key's on top: verifiers without
// RFC 8463 still find the RSA one.
func TestPlatformMailSignedWithTwoKeys(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	txt := map[string][]string{}
	var keys []ports.DKIMKeyPair
	for selector, key := range map[string]crypto.Signer{"plat-rsa": rsaKey, "plat-ed": edKey} {
		pair, err := mailauth.KeyPair(selector, key)
		if err != nil {
			t.Fatal(err)
		}
		txt[core.DKIMRecordName(selector, "agents.test")] = []string{core.DKIMRecordValue(pair.Public)}
		keys = append(keys, pair)
	}
	slices.SortFunc(keys, func(a, b ports.DKIMKeyPair) int { return strings.Compare(b.Public.Algorithm, a.Public.Algorithm) }) // rsa first
	a := newApp(t, app.Deps{
		Ports: app.Ports{Store: memory.NewStore(), Clock: memory.NewClock(time.Now()), IDs: memory.IDs{}, Cipher: &memory.Cipher{},
			Resolver: memory.NewResolver(), Signer: mailauth.NewSigner()},
		Settings: app.Settings{MailDomains: []string{"agents.test"}, PlatformKeys: keys}})

	signed, err := a.Domains.Sign(context.Background(), "agents.test",
		[]byte("From: helper@agents.test\r\nTo: ann@example.net\r\nSubject: hi\r\n\r\nHello.\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	top, _, _ := bytes.Cut(bytes.TrimPrefix(signed, []byte("DKIM-Signature: ")), []byte("DKIM-Signature: "))
	if !bytes.HasPrefix(signed, []byte("DKIM-Signature: ")) || !bytes.Contains(top, []byte("a=rsa-sha256")) {
		t.Errorf("the RSA signature is not on top:\n%s", signed)
	}
	verifications, err := dkim.VerifyWithOptions(bytes.NewReader(signed), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		return txt[name], nil
	}})
	if err != nil || len(verifications) != 2 {
		t.Fatalf("%d verifications, %v:\n%s", len(verifications), err, signed)
	}
	for i, v := range verifications {
		if v.Err != nil || v.Domain != "agents.test" {
			t.Errorf("signature %d (%s): %v", i, v.Domain, v.Err)
		}
	}
}

func TestDeletingADomain(t *testing.T) {
	w := newDomainWorld(t)
	p := w.owner("a@example.com")
	d, _ := w.app.Domains.Create(w.ctx, p, "acme.example")
	w.publish(d)
	w.app.Domains.Verify(w.ctx, p, d.Name)
	name := "sales"
	ident, err := w.app.Identities.Create(w.ctx, p, app.IdentityInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Inboxes.CreateInbox(w.ctx, p, ident.ID, "sales@acme.example"); err != nil {
		t.Fatal(err)
	}
	err = w.app.Domains.Delete(w.ctx, p, d.Name)
	if core.KindOf(err) != core.KindConflict || !strings.Contains(err.Error(), "sales@acme.example") {
		t.Fatalf("deleting a domain in use: %v", err)
	}
}
