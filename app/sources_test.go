package app_test

import (
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/egress"
	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// sourceWorld is the app with a cipher and a parser, and one inbox.
func sourceWorld(t *testing.T) (*world, *memory.Cipher, core.Principal, core.Inbox) {
	w := newWorld(t)
	cipher := &memory.Cipher{}
	dns := memory.NewResolver()
	dns.SetIP("imap.example.org", "203.0.113.10")
	w.app = newApp(t, app.Deps{
		Ports: app.Ports{Store: w.store, Clock: w.clock, IDs: memory.IDs{}, Cipher: cipher, Parser: mailmime.Parser{}, Composer: mailmime.Composer{},
			Destinations: egress.New(core.DestinationPolicy{}, dns)},
		Settings: app.Settings{MailDomains: []string{"agents.test"}, MaxMessageBytes: 1 << 20}})
	p := w.owner("a@example.com")
	name := "fed"
	ident, err := w.app.Identities.Create(w.ctx, p, app.IdentityInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	in, err := w.store.InboxByEmail(w.ctx, ident.Inbox)
	if err != nil {
		t.Fatal(err)
	}
	return w, cipher, p, in
}

func strp(s string) *string { return &s }

func TestSourcePutKeepsThePasswordAndTheCursorOnlyWhereTheyHold(t *testing.T) {
	w, cipher, p, in := sourceWorld(t)
	src, created, err := w.app.Sources.Put(w.ctx, p, in.ID, app.SourceInput{Host: strp(" imap.example.org "), Username: strp("me"), Password: strp("pw")})
	if err != nil || !created || src.Port != 993 || src.TLS != core.SourceImplicitTLS || src.Folder != "INBOX" || src.Host != "imap.example.org" || src.Password != "" {
		t.Fatalf("created %v %+v %v", created, src, err)
	}
	active, _ := w.app.Sources.Claim(w.ctx, "worker", time.Minute)
	if len(active) != 1 || active[0].Password != "pw" {
		t.Fatalf("active %+v", active)
	}
	if ok, err := w.app.Sources.Record(w.ctx, active[0], core.SourceProgress{UIDValidity: 9, LastUID: 5, Connected: true}); !ok || err != nil {
		t.Fatalf("record: %v %v", ok, err)
	}
	select {
	case <-w.app.Sources.Changed():
	default:
		t.Fatal("a PUT did not nudge the workers")
	}

	// The same folder with a new password: the cursor stays, the state starts over.
	again, created, err := w.app.Sources.Put(w.ctx, p, in.ID, app.SourceInput{Host: strp("IMAP.example.org"), Username: strp("me"), Password: strp("pw2")})
	if err != nil || created || !again.UpdatedAt.After(src.UpdatedAt) || !again.CreatedAt.Equal(src.CreatedAt) ||
		again.Progress.LastUID != 5 || again.Progress.UIDValidity != 9 || again.Progress.Connected {
		t.Fatalf("replaced %v %+v %v", created, again, err)
	}
	if ok, _ := w.app.Sources.Record(w.ctx, active[0], core.SourceProgress{LastError: "stale"}); ok {
		t.Fatal("a worker with the old settings recorded progress")
	}
	// Another folder, no password given: the stored one is kept, the cursor is not.
	moved, _, err := w.app.Sources.Put(w.ctx, p, in.ID, app.SourceInput{Host: strp("imap.example.org"), Username: strp("me"), Folder: strp("Feed")})
	if err != nil || moved.Progress.LastUID != 0 || moved.Progress.UIDValidity != 0 {
		t.Fatalf("moved %+v %v", moved, err)
	}
	active, _ = w.app.Sources.Claim(w.ctx, "worker", time.Minute)
	if active[0].Password != "pw2" {
		t.Fatalf("password %q", active[0].Password)
	}
	// Key rotation reaches the source password.
	cipher.Rotate()
	if rep, err := w.app.Vault.Reseal(w.ctx); err != nil || rep.Resealed != 1 {
		t.Fatalf("reseal %+v %v", rep, err)
	}
	if active, _ = w.app.Sources.Claim(w.ctx, "worker", time.Minute); len(active) != 1 || active[0].Password != "pw2" {
		t.Fatalf("after the reseal %+v", active)
	}
}

func TestDedupedDeliveryOfAMessageWithoutMessageID(t *testing.T) {
	w, _, _, in := sourceWorld(t)
	raw := []byte("From: a@example.org\r\nSubject: no id\r\n\r\nbody\r\n")
	for range 2 {
		if _, err := w.app.Receiving.Deliver(w.ctx, app.InboundMail{Inboxes: []core.Inbox{in}, Raw: raw, Dedupe: true}); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Second)
	}
	entries, _ := w.store.MailboxEntries(w.ctx, in.ID, core.Incoming, false)
	if len(entries) != 1 {
		t.Fatalf("%d copies", len(entries))
	}
}
