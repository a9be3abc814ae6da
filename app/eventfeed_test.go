package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// receive takes the next n events a subscription is given.
func receive(t *testing.T, sub *app.Subscription, n int) []app.LiveEvent {
	t.Helper()
	var got []app.LiveEvent
	for len(got) < n {
		select {
		case e, ok := <-sub.Events:
			if !ok {
				t.Fatalf("the subscription ended after %d events", len(got))
			}
			got = append(got, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d events of %d arrived", len(got), n)
		}
	}
	return got
}

// TestEventFeedFansOut: the account's feed gives each subscriber what its
// scope and types keep, from the head on; one that falls
// SubscriberBuffer events behind is dropped, the others go on.
func TestEventFeedFansOut(t *testing.T) {
	w := newWorld(t)
	p := w.owner("feed@example.com")
	other := w.owner("other@example.com")
	identity := func(p core.Principal, name string) core.Identity {
		ident, err := w.app.Identities.Create(w.ctx, p, app.IdentityInput{Name: &name})
		if err != nil {
			t.Fatal(err)
		}
		return ident
	}
	ann := identity(p, "ann") // before the subscriptions: not given to them
	subscribe := func(p core.Principal, q app.EventQuery) *app.Subscription {
		sub, err := w.app.Events.Subscribe(w.ctx, p, q)
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}
	all := subscribe(p, app.EventQuery{})
	annOnly := subscribe(p, app.EventQuery{Identity: ann.ID})
	inboxes := subscribe(p, app.EventQuery{Types: []string{"inbox.*"}})
	otherAccount := subscribe(other, app.EventQuery{})

	bob := identity(p, "bob")
	got := receive(t, all, 2)
	if got[0].Type != core.IdentityCreated || got[0].IdentityID != bob.ID || got[1].Type != core.InboxCreated || got[1].Seq != got[0].Seq+1 {
		t.Fatalf("all: %+v", got)
	}
	if got := receive(t, inboxes, 1); got[0].Type != core.InboxCreated || got[0].IdentityID != bob.ID {
		t.Fatalf("inbox.*: %+v", got)
	}
	if _, err := w.app.Inboxes.CreateInbox(w.ctx, p, ann.ID, ""); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, annOnly, 1); got[0].Type != core.InboxCreated || got[0].IdentityID != ann.ID {
		t.Fatalf("ann's: %+v", got)
	}
	receive(t, all, 1)
	receive(t, inboxes, 1)
	if len(otherAccount.Events) != 0 {
		t.Fatal("another account's subscriber was given this account's events")
	}

	// A subscriber that takes nothing is dropped once its buffer is full;
	// one that keeps reading is not.
	annOnly.Close()
	inboxes.Close()
	slow := subscribe(p, app.EventQuery{})
	// The reading subscriber takes each identity's two events before the
	// next is created, so it is never behind however the race detector and
	// a busy machine schedule it; the slow one takes nothing.
	for i := range app.SubscriberBuffer/2 + 1 { // two events each
		identity(p, fmt.Sprint("agent ", i))
		receive(t, all, 2)
	}
	// The feed hands batches out one after another: once a later one has
	// reached the reader, the slow subscriber's fate is settled.
	identity(p, "marker")
	receive(t, all, 2)
	buffered := 0
	for range slow.Events {
		buffered++
	}
	if buffered != app.SubscriberBuffer {
		t.Fatalf("the slow subscriber was given %d events before it was dropped", buffered)
	}
	all.Close()
	otherAccount.Close()
	slow.Close() // already dropped: nothing happens

	// With every subscriber gone the feed stopped; a new one starts at the head.
	again := subscribe(p, app.EventQuery{})
	defer again.Close()
	carol := identity(p, "carol")
	if got := receive(t, again, 1); got[0].IdentityID != carol.ID {
		t.Fatalf("a new feed: %+v", got)
	}
}
