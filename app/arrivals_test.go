package app

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/mailmime"
	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// arrivalsStore is the fake store, offering ports.MailArrivals: it counts
// the deliveries announced and not done, and what that count was at each
// SaveMail; failSave makes SaveMail fail.
type arrivalsStore struct {
	*memory.Store
	arriving atomic.Int64
	atSave   []int64
	failSave bool
}

func (s *arrivalsStore) Arriving() func() {
	s.arriving.Add(1)
	return func() { s.arriving.Add(-1) }
}

func (s *arrivalsStore) SaveMail(ctx context.Context, mails []ports.NewMail) ([]core.EmailMessage, error) {
	s.atSave = append(s.atSave, s.arriving.Load())
	if s.failSave {
		return nil, errors.New("the database is gone")
	}
	return s.Store.SaveMail(ctx, mails)
}

// arrivalsSpam is a spam filter that finds nothing and notes how many
// deliveries the store had announced at each check.
type arrivalsSpam struct {
	store   *arrivalsStore
	atCheck []int64
}

func (f *arrivalsSpam) Check(context.Context, ports.SpamQuery, []byte) (core.SpamVerdict, error) {
	f.atCheck = append(f.atCheck, f.store.arriving.Load())
	return core.SpamVerdict{Action: core.SpamNoAction}, nil
}

func (f *arrivalsSpam) Learn(context.Context, bool, []byte) error { return nil }

// A delivery is announced to a store that shares commits once the checks
// that may wait on the network (here the spam filter) are behind it, before
// it saves, and is done once it returns, stored or failed.
func TestDeliveriesAnnounceThemselvesToTheStore(t *testing.T) {
	ctx := context.Background()
	store := &arrivalsStore{Store: memory.NewStore()}
	spam := &arrivalsSpam{store: store}
	a := New(Deps{Ports: Ports{Store: store, Clock: &memory.Clock{Step: time.Millisecond}, IDs: memory.IDs{},
		Parser: mailmime.Parser{}, Composer: mailmime.Composer{}, Spam: spam},
		Settings: Settings{MailDomains: []string{"agents.test"}, MaxMessageBytes: 1 << 10}})
	t.Cleanup(a.Close)
	in := newInbox(t, a, store, newOwner(t, a, "owner@example.com"), "ann")
	mail := func(body string) []byte {
		return []byte("From: carol@example.org\r\nSubject: hi\r\nMessage-ID: <" + body[:1] + "@example.org>\r\n\r\n" + body + "\r\n")
	}
	if _, err := a.Receiving.Deliver(ctx, InboundMail{EnvelopeFrom: "carol@example.org", Inboxes: []core.Inbox{in}, Raw: mail("hello")}); err != nil {
		t.Fatal(err)
	}
	if len(spam.atCheck) != 1 || spam.atCheck[0] != 0 {
		t.Fatalf("deliveries announced at each spam check: %v, want [0]", spam.atCheck)
	}
	if len(store.atSave) != 1 || store.atSave[0] != 1 {
		t.Fatalf("deliveries announced at each save: %v, want [1]", store.atSave)
	}
	if n := store.arriving.Load(); n != 0 {
		t.Fatalf("%d deliveries still announced after a stored one", n)
	}
	store.failSave = true
	if _, err := a.Receiving.Deliver(ctx, InboundMail{EnvelopeFrom: "carol@example.org", Inboxes: []core.Inbox{in}, Raw: mail("again")}); err == nil {
		t.Fatal("a delivery the store failed: no error")
	}
	if len(store.atSave) != 2 || store.atSave[1] != 1 {
		t.Fatalf("deliveries announced at each save: %v, want [1 1]", store.atSave)
	}
	if n := store.arriving.Load(); n != 0 {
		t.Fatalf("%d deliveries still announced after a failed one", n)
	}
	if _, err := a.Receiving.Deliver(ctx, InboundMail{Inboxes: []core.Inbox{in}, Raw: mail(strings.Repeat("x", 2<<10))}); core.KindOf(err) != core.KindTooLarge {
		t.Fatalf("an oversized delivery: %v", err)
	}
	if n := store.arriving.Load(); n != 0 {
		t.Fatalf("%d deliveries still announced after a refused one", n)
	}
}
