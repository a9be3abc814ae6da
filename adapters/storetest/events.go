package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// events reads an account's whole log (in scope) after a cursor.
func (f *fixture) events(scope core.Scope, after int64, types ...string) []core.Event {
	f.t.Helper()
	evs, err := f.s.Events(f.ctx, core.EventFilter{Scope: scope, After: after, Types: types, Limit: 1000})
	f.must(err)
	return evs
}

func eventTypes(evs []core.Event) []string {
	return ids(evs, func(e core.Event) string { return string(e.Type) })
}

// subjectID is the id the store's default encoder wrote into an event's
// data (the plain JSON of its subject).
func subjectID(t *testing.T, e core.Event) string {
	t.Helper()
	var v struct{ ID any }
	if err := json.Unmarshal(e.Data, &v); err != nil {
		t.Fatalf("%s data %q: %v", e.Type, e.Data, err)
	}
	return fmt.Sprint(v.ID)
}

func testEventsWrittenWithChanges(t *testing.T, f *fixture) {
	a := f.account()
	other := f.account()
	f.identity(other.ID) // another account's events stay in its log
	ident, in := f.identity(a.ID)
	p := f.phone(ident)
	in2 := core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: "second-" + uuid.NewString()[:6] + "@agents.test",
		CreatedAt: f.tick()}
	var err error
	in2.ID, err = f.s.CreateInbox(f.ctx, in2)
	f.must(err)
	received := incoming(in, "ev1@x", "hello", f.tick(), "")
	m := f.save(received)[0]
	dup := received
	dup.Dedupe = true
	f.save(dup) // a redelivery is no new mail
	out := incoming(in, "ev2@x", "out", f.tick(), "")
	out.Message.Direction, out.Message.FromEmail, out.Message.DeliveryStatus = core.Outgoing, in.Email, core.DeliveryQueued
	out.Outbox = &ports.OutboxEntry{AccountID: a.ID, EnvelopeFrom: in.Email, Recipients: []string{"x@example.org"}, NextAttempt: f.now, GiveUpAt: f.now.Add(time.Hour)}
	sent := f.save(out)[0] // queued: no event yet
	f.must(f.s.FinishOutbox(f.ctx, sent.ID, core.DeliverySent, "", nil))
	out2 := incoming(in, "ev3@x", "out2", f.tick(), "")
	out2.Message.Direction, out2.Message.FromEmail = core.Outgoing, in.Email
	failed := f.save(out2)[0]
	f.must(f.s.FinishOutbox(f.ctx, failed.ID, core.DeliveryFailed, "x@example.org: 550 no such user",
		[]core.Recipient{{Email: "x@example.org", Status: core.RecipientBounced, Error: "550 no such user"}}))
	smsIn := f.saveSMS(smsFor(p, core.Incoming, "+14155550100", "hi", "SMin"+uuid.NewString()[:6], f.tick()))
	if _, created, err := f.s.SaveSMS(f.ctx, smsFor(p, core.Incoming, "+14155550100", "hi", smsIn.ProviderSID, f.tick())); err != nil || created {
		t.Fatalf("redelivered text: created %v, %v", created, err)
	}
	smsOut := f.saveSMS(smsFor(p, core.Outgoing, "+14155550100", "yo", "", f.tick())) // not sent yet: no event
	sid := "SMout" + uuid.NewString()[:6]
	f.must(f.s.SetSMSProvider(f.ctx, smsOut.ID, sid, core.SMSSent))
	if found, err := f.s.UpdateSMSStatus(f.ctx, sid, core.SMSDelivered, ""); err != nil || !found {
		t.Fatalf("status: %v %v", found, err)
	}
	if _, err := f.s.UpdateSMSStatus(f.ctx, sid, core.SMSSent, ""); err != nil { // late: moves nothing, tells nothing
		t.Fatal(err)
	}
	f.must(f.s.DeleteIdentity(f.ctx, a.ID, ident.ID))

	evs := f.events(core.Scope{AccountID: a.ID}, 0)
	want := []string{"identity.created", "inbox.created", "phone.provisioned", "inbox.created", "email.received", "email.sent",
		"email.failed", "sms.received", "sms.sent", "sms.status", "phone.released", "identity.deleted"}
	if got := eventTypes(evs); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	wantSubjects := []string{ident.ID, fmt.Sprint(in.ID), fmt.Sprint(p.ID), fmt.Sprint(in2.ID), fmt.Sprint(m.ID), fmt.Sprint(sent.ID),
		fmt.Sprint(failed.ID), fmt.Sprint(smsIn.ID), fmt.Sprint(smsOut.ID), fmt.Sprint(smsOut.ID), fmt.Sprint(p.ID), ident.ID}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.AccountID != a.ID || e.IdentityID != ident.ID || e.CreatedAt.IsZero() {
			t.Fatalf("event %d: %+v", i, e)
		}
		if got := subjectID(t, e); got != wantSubjects[i] {
			t.Fatalf("%s is about %s, want %s", e.Type, got, wantSubjects[i])
		}
	}
	var status struct {
		Status     core.SMSStatus
		DeliveryOK core.DeliveryStatus `json:"DeliveryStatus"`
	}
	f.must(json.Unmarshal(evs[9].Data, &status))
	if status.Status != core.SMSDelivered {
		t.Fatalf("sms.status carries %q", status.Status)
	}
	f.must(json.Unmarshal(evs[6].Data, &status))
	if status.DeliveryOK != core.DeliveryFailed {
		t.Fatalf("email.failed carries %q", status.DeliveryOK)
	}
	if got := f.events(core.Scope{AccountID: other.ID}, 0); len(got) != 2 || got[0].Seq != 1 {
		t.Fatalf("the other account's log: %v", eventTypes(got))
	}
}

func testEventsFilters(t *testing.T, f *fixture) {
	a := f.account()
	i1, in1 := f.identity(a.ID)
	i2, in2 := f.identity(a.ID)
	f.save(incoming(in1, "f1@x", "one", f.tick(), ""))
	f.save(incoming(in2, "f2@x", "two", f.tick(), ""))
	all := core.Scope{AccountID: a.ID}
	for _, tc := range []struct {
		name  string
		scope core.Scope
		after int64
		types []string
		want  []string
	}{
		{"all", all, 0, nil, []string{"identity.created", "inbox.created", "identity.created", "inbox.created", "email.received", "email.received"}},
		{"after", all, 4, nil, []string{"email.received", "email.received"}},
		{"identity", core.Scope{AccountID: a.ID, IdentityID: i2.ID}, 0, nil, []string{"identity.created", "inbox.created", "email.received"}},
		{"exact type", all, 0, []string{"inbox.created"}, []string{"inbox.created", "inbox.created"}},
		{"prefix", all, 0, []string{"email.*", "identity.*"}, []string{"identity.created", "identity.created", "email.received", "email.received"}},
		{"prefix is a whole part", all, 0, []string{"email.rec*"}, nil},
		{"empty scope", core.Scope{AccountID: a.ID, IdentityID: i1.ID, Empty: true}, 0, nil, nil},
		{"another account", core.Scope{AccountID: uuid.NewString()}, 0, nil, nil},
	} {
		if got := eventTypes(f.events(tc.scope, tc.after, tc.types...)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	evs, err := f.s.Events(f.ctx, core.EventFilter{Scope: all, After: 1, Limit: 2})
	f.must(err)
	if len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 3 {
		t.Fatalf("limit: %+v", evs)
	}
	// Newest first, a page before a cursor, with the other filters.
	evs, err = f.s.Events(f.ctx, core.EventFilter{Scope: all, Newest: true, Before: 6, Types: []string{"email.*", "inbox.*"}, Limit: 2})
	f.must(err)
	if len(evs) != 2 || evs[0].Seq != 5 || evs[1].Seq != 4 {
		t.Fatalf("newest first before 6: %+v", evs)
	}
	if last, err := f.s.LatestEvent(f.ctx, a.ID); err != nil || last != 6 {
		t.Fatalf("the last event: %d %v", last, err)
	}
	if last, err := f.s.LatestEvent(f.ctx, f.account().ID); err != nil || last != 0 {
		t.Fatalf("the last event of an account without any: %d %v", last, err)
	}
	_, err = f.s.LatestEvent(f.ctx, uuid.NewString())
	wantKind(t, err, core.KindNotFound)
}

// testEventsCursorExact polls the log while writers commit concurrently:
// a reader that only ever asks "after the last id I saw" sees every event
// once, in order.
func testEventsCursorExact(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := f.s.SaveMail(f.ctx, []ports.NewMail{incoming(in, fmt.Sprintf("w%d-%d@x", w, i), "c", f.now, "")})
				errs <- err
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var seen []core.Event
	cursor := int64(2) // after identity.created and inbox.created
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		page, err := f.s.Events(f.ctx, core.EventFilter{Scope: core.Scope{AccountID: a.ID}, After: cursor, Limit: 3})
		f.must(err)
		for _, e := range page {
			if e.Seq != cursor+1 {
				t.Fatalf("after %d came %d", cursor, e.Seq)
			}
			cursor = e.Seq
			seen = append(seen, e)
		}
		if finished && len(page) == 0 {
			break
		}
	}
	close(errs)
	for err := range errs {
		f.must(err)
	}
	if len(seen) != writers*each {
		t.Fatalf("saw %d events of %d", len(seen), writers*each)
	}
}

func testEventsPrune(t *testing.T, f *fixture) {
	a := f.account()
	other := f.account()
	_, in := f.identity(a.ID)
	f.identity(other.ID)
	n, err := f.s.PruneEvents(f.ctx, time.Now().Add(-time.Hour), 100)
	f.must(err)
	if n != 0 {
		t.Fatalf("pruned %d events younger than the cutoff", n)
	}
	if p, err := f.s.EventsPrunedThrough(f.ctx, a.ID); err != nil || p != 0 {
		t.Fatalf("pruned through %d, %v", p, err)
	}
	if n, err = f.s.PruneEvents(f.ctx, time.Now().Add(time.Hour), 100); err != nil || n < 4 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	for _, acc := range []core.Account{a, other} {
		if p, err := f.s.EventsPrunedThrough(f.ctx, acc.ID); err != nil || p != 2 {
			t.Fatalf("pruned through %d, %v", p, err)
		}
		if evs := f.events(core.Scope{AccountID: acc.ID}, 0); len(evs) != 0 {
			t.Fatalf("left %v", eventTypes(evs))
		}
	}
	f.save(incoming(in, "after-prune@x", "s", f.tick(), ""))
	if evs := f.events(core.Scope{AccountID: a.ID}, 0); len(evs) != 1 || evs[0].Seq != 3 {
		t.Fatalf("numbering after a prune: %+v", evs)
	}
	// Only what is older than the cutoff goes: the oldest, not the newer.
	cutoff := time.Now()
	time.Sleep(2 * time.Millisecond)
	f.save(incoming(in, "kept@x", "s", f.tick(), ""))
	if n, err = f.s.PruneEvents(f.ctx, cutoff, 100); err != nil || n != 1 {
		t.Fatalf("pruned %d before the cutoff, %v; want the one older event", n, err)
	}
	if evs := f.events(core.Scope{AccountID: a.ID}, 0); len(evs) != 1 || evs[0].Seq != 4 {
		t.Fatalf("left %+v, want the newer event alone", evs)
	}
	_, err = f.s.EventsPrunedThrough(f.ctx, uuid.NewString())
	wantKind(t, err, core.KindNotFound)
}

func testEventsSignal(t *testing.T, f *fixture) {
	written := f.s.EventsWritten()
	a := f.account()
	// Drain what came before (a PostgreSQL listener's first connection signals too).
	for drained := false; !drained; {
		select {
		case <-written:
		case <-time.After(300 * time.Millisecond):
			drained = true
		}
	}
	f.identity(a.ID)
	select {
	case <-written:
	case <-time.After(5 * time.Second):
		t.Fatal("no signal after a commit that wrote events")
	}
}
