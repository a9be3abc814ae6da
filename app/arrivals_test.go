package app

import (
	"context"
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
// SaveMail.
type arrivalsStore struct {
	*memory.Store
	arriving atomic.Int64
	atSave   []int64
}

func (s *arrivalsStore) Arriving() func() {
	s.arriving.Add(1)
	return func() { s.arriving.Add(-1) }
}

func (s *arrivalsStore) SaveMail(ctx context.Context, mails []ports.NewMail) ([]core.EmailMessage, error) {
	s.atSave = append(s.atSave, s.arriving.Load())
	return s.Store.SaveMail(ctx, mails)
}

// A delivery is announced to a store that shares commits before it saves,
// and is done once it returns, stored or refused.
func TestDeliveriesAnnounceThemselvesToTheStore(t *testing.T) {
	ctx := context.Background()
	store := &arrivalsStore{Store: memory.NewStore()}
	a := New(Deps{Ports: Ports{Store: store, Clock: &memory.Clock{Step: time.Millisecond}, IDs: memory.IDs{},
		Parser: mailmime.Parser{}, Composer: mailmime.Composer{}},
		Settings: Settings{MailDomains: []string{"agents.test"}, MaxMessageBytes: 1 << 10}})
	t.Cleanup(a.Close)
	in := newInbox(t, a, store, newOwner(t, a, "owner@example.com"), "ann")
	mail := func(body string) []byte {
		return []byte("From: carol@example.org\r\nSubject: hi\r\nMessage-ID: <" + body[:1] + "@example.org>\r\n\r\n" + body + "\r\n")
	}
	if _, err := a.Receiving.Deliver(ctx, InboundMail{EnvelopeFrom: "carol@example.org", Inboxes: []core.Inbox{in}, Raw: mail("hello")}); err != nil {
		t.Fatal(err)
	}
	if len(store.atSave) != 1 || store.atSave[0] != 1 {
		t.Fatalf("deliveries announced at each save: %v, want [1]", store.atSave)
	}
	if n := store.arriving.Load(); n != 0 {
		t.Fatalf("%d deliveries still announced after a stored one", n)
	}
	if _, err := a.Receiving.Deliver(ctx, InboundMail{Inboxes: []core.Inbox{in}, Raw: mail(strings.Repeat("x", 2<<10))}); core.KindOf(err) != core.KindTooLarge {
		t.Fatalf("an oversized delivery: %v", err)
	}
	if n := store.arriving.Load(); n != 0 {
		t.Fatalf("%d deliveries still announced after a refused one", n)
	}
}
