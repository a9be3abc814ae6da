package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Mail from one of our accounts to another that is at its storage quota
// waits in the outbox as a remote server's 452 would make it, and the full
// account takes nothing from SMTP either; an inactive account at none of
// its quotas still receives mail.
func TestLocalDeliveryWaitsAtTheStorageQuota(t *testing.T) {
	ctx := context.Background()
	store := memory.NewStore()
	a := New(Deps{Ports: Ports{Store: store, Clock: &memory.Clock{Step: time.Millisecond}, IDs: memory.IDs{},
		Parser: mailmime.Parser{}, Composer: mailmime.Composer{}},
		Settings: Settings{MailDomains: []string{"agents.test"}, MaxMessageBytes: 1 << 20, Quotas: core.Limits{core.QuotaStorage: 2000}}})
	t.Cleanup(a.Close)
	sender, full := newOwner(t, a, "a@example.com"), newOwner(t, a, "b@example.com")
	ann, bob := newInbox(t, a, store, sender, "ann"), newInbox(t, a, store, full, "bob")
	if err := store.SetSubscription(ctx, full.AccountID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Receiving.ResolveRecipient(ctx, "carol@example.org", bob.Email); err != nil {
		t.Fatalf("an inactive account under its quota refused mail: %v", err)
	}
	big := "From: carol@example.org\r\nSubject: big\r\nMessage-ID: <big@example.org>\r\n\r\n" + strings.Repeat("x", 2000) + "\r\n"
	if _, err := a.Receiving.Deliver(ctx, InboundMail{EnvelopeFrom: "carol@example.org", Inboxes: []core.Inbox{bob}, Raw: []byte(big)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Receiving.ResolveRecipient(ctx, "carol@example.org", bob.Email); core.QuotaOf(err) != core.QuotaStorage {
		t.Fatalf("RCPT for a full account: %v", err)
	}

	subject, content := "Hello", "Hi Bob"
	sent, err := a.Sending.Compose(ctx, sender, ann.IdentityID, ann.ID, SendInput{To: []string{bob.Email}, Subject: &subject, Content: &content})
	if err != nil {
		t.Fatal(err)
	}
	a.Outbox.deliverDue(ctx, ctx)
	got, err := a.Reading.Message(ctx, sender, sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Recipients) != 1 || got.Recipients[0].Status != core.RecipientDeferred || !strings.HasPrefix(got.Recipients[0].Error, "452 4.2.2") {
		t.Fatalf("the recipient of a full account: %+v", got.Recipients)
	}
	held, _, err := store.Messages(ctx, ports.MessageFilter{Scope: core.Scope{AccountID: full.AccountID}, InboxID: bob.ID})
	if err != nil || len(held) != 1 {
		t.Fatalf("the full inbox holds %d messages (%v), want only the big one", len(held), err)
	}
}

// TestRCPTReadsStorageAfterItsMailAndOthers: RCPT answers from a reading
// that left room, to which this instance's stored mail is added, so the
// message that fills the quota makes the next RCPT 452 at once; mail
// another instance stores (here the store itself) counts once the reading
// is a second old; a full account is read at every RCPT, so deleting mail
// makes room at once.
func TestRCPTReadsStorageAfterItsMailAndOthers(t *testing.T) {
	ctx := context.Background()
	store := memory.NewStore()
	clock := memory.NewClock(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	a := New(Deps{Ports: Ports{Store: store, Clock: clock, IDs: memory.IDs{}, Parser: mailmime.Parser{}},
		Settings: Settings{MailDomains: []string{"agents.test"}, MaxMessageBytes: 1 << 20, Quotas: core.Limits{core.QuotaStorage: 2000}}})
	t.Cleanup(a.Close)
	bob := newInbox(t, a, store, newOwner(t, a, "a@example.com"), "bob")
	rcpt := func() error {
		_, err := a.Receiving.ResolveRecipient(ctx, "carol@example.org", bob.Email)
		return err
	}
	mail := func(id string, size int) []byte {
		return []byte("From: carol@example.org\r\nSubject: " + id + "\r\nMessage-ID: <" + id + "@example.org>\r\n\r\n" + strings.Repeat("x", size) + "\r\n")
	}
	if err := rcpt(); err != nil {
		t.Fatalf("an empty account: %v", err)
	}
	if _, err := a.Receiving.Deliver(ctx, InboundMail{EnvelopeFrom: "carol@example.org", Inboxes: []core.Inbox{bob}, Raw: mail("one", 900)}); err != nil {
		t.Fatal(err)
	}
	if err := rcpt(); err != nil {
		t.Fatalf("under the quota: %v", err)
	}
	if _, err := a.Receiving.Deliver(ctx, InboundMail{EnvelopeFrom: "carol@example.org", Inboxes: []core.Inbox{bob}, Raw: mail("two", 1000)}); err != nil {
		t.Fatal(err)
	}
	if err := rcpt(); core.QuotaOf(err) != core.QuotaStorage {
		t.Fatalf("after the message that fills the quota: %v", err)
	}
	stored, _, err := store.Messages(ctx, ports.MessageFilter{Scope: core.Scope{AccountID: bob.AccountID}, InboxID: bob.ID})
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored %d, %v", len(stored), err)
	}
	if err := store.DeleteMessage(ctx, bob.AccountID, stored[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := rcpt(); err != nil {
		t.Fatalf("after mail was deleted: %v", err)
	}
	// Another instance stores mail: seen within a second.
	if _, err := store.SaveMail(ctx, []ports.NewMail{{Message: core.EmailMessage{AccountID: bob.AccountID, IdentityID: bob.IdentityID,
		InboxID: bob.ID, Header: core.Header{MessageID: "three@example.org"}, Direction: core.Incoming, CreatedAt: clock.Now()},
		NewThreadID: "three", Raw: mail("three", 1500)}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := rcpt(); core.QuotaOf(err) != core.QuotaStorage {
		t.Fatalf("a second after another instance filled the quota: %v", err)
	}
}

// newOwner creates an account in a and returns its management principal.
func newOwner(t *testing.T, a *App, email string) core.Principal {
	t.Helper()
	b, err := a.Accounts.Create(context.Background(), email, "")
	if err != nil {
		t.Fatal(err)
	}
	return core.Principal{AccountID: b.Account.ID, KeyType: core.KeyManagement}
}

// newInbox creates an identity named name for p and returns its inbox.
func newInbox(t *testing.T, a *App, store ports.InboxStore, p core.Principal, name string) core.Inbox {
	t.Helper()
	ctx := context.Background()
	ident, err := a.Identities.Create(ctx, p, IdentityInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	in, err := store.InboxByEmail(ctx, ident.Inbox)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
