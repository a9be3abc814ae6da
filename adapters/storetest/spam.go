package storetest

import (
	"fmt"
	"testing"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// testSpam: mail filed as spam is stored with its verdict, left out of
// lists, of its thread's summary and of the INBOX view, listed in the
// Junk view, announced as email.spam; SetSpam moves it (thread, views and
// verification follow) and moving it out announces it as email.received.
func testSpam(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	all := core.Scope{AccountID: a.ID}
	ham := incoming(in, "ham@x", "ham", f.tick(), "")
	ham.Message.Spam = &core.SpamVerdict{Score: 1.5, Action: core.SpamNoAction, Symbols: []core.SpamSymbol{{Name: "R_SPF_ALLOW", Score: -0.2}}}
	h := f.save(ham)[0]
	junk := incoming(in, "junk@x", "junk", f.tick(), "ham@x") // a reply: same thread
	junk.Message.Spam, junk.Message.IsSpam = &core.SpamVerdict{Score: 9, Action: core.SpamAddHeader}, true
	j := f.save(junk)[0]
	plain := f.save(incoming(in, "plain@x", "plain", f.tick(), ""))[0] // no filter ran

	got, err := f.s.Message(f.ctx, a.ID, h.ID)
	f.must(err)
	if got.IsSpam || got.Spam == nil || got.Spam.Score != 1.5 || got.Spam.Action != core.SpamNoAction ||
		len(got.Spam.Symbols) != 1 || got.Spam.Symbols[0] != (core.SpamSymbol{Name: "R_SPF_ALLOW", Score: -0.2}) {
		t.Fatalf("ham read back: %+v %+v", got, got.Spam)
	}
	if got, err = f.s.Message(f.ctx, a.ID, plain.ID); err != nil || got.Spam != nil || got.IsSpam {
		t.Fatalf("unjudged read back: %v %+v", err, got)
	}
	listed := func(include bool) []string {
		list, _, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: all, IncludeSpam: include})
		f.must(err)
		return ids(list, func(m core.EmailMessage) string { return m.Subject })
	}
	view := func(spam bool) []string {
		entries, err := f.s.MailboxEntries(f.ctx, in.ID, core.Incoming, spam)
		f.must(err)
		return ids(entries, func(e ports.MailboxEntry) string { return fmt.Sprint(e.ID) })
	}
	threadCount := func() int {
		th, err := f.s.Thread(f.ctx, a.ID, h.ThreadID)
		f.must(err)
		return th.MessageCount
	}
	wantIDs(t, "list", listed(false), []string{"ham", "plain"})
	wantIDs(t, "list with spam", listed(true), []string{"ham", "junk", "plain"})
	wantIDs(t, "junk view", view(true), []string{fmt.Sprint(j.ID)})
	wantIDs(t, "inbox view", view(false), []string{fmt.Sprint(h.ID), fmt.Sprint(plain.ID)})
	if j.ThreadID != h.ThreadID || threadCount() != 1 {
		t.Fatalf("thread %s/%s counts %d", j.ThreadID, h.ThreadID, threadCount())
	}
	mailEvents := func() []string { return eventTypes(f.events(all, 0, "email.received", "email.spam")) }
	wantIDs(t, "events", mailEvents(), []string{"email.received", "email.spam", "email.received"})

	// Out of spam: with the verification now found, counted, announced.
	v := &core.Verification{Code: "123456"}
	moved, err := f.s.SetSpam(f.ctx, a.ID, j.ID, false, v)
	f.must(err)
	if moved.IsSpam || moved.Verification == nil || moved.Verification.Code != "123456" || moved.Spam == nil || moved.Spam.Score != 9 {
		t.Fatalf("moved out: %+v", moved)
	}
	wantIDs(t, "list after the move", listed(false), []string{"ham", "junk", "plain"})
	wantIDs(t, "junk view after the move", view(true), nil)
	if threadCount() != 2 {
		t.Fatalf("thread counts %d after the move", threadCount())
	}
	wantIDs(t, "events after the move", mailEvents(), []string{"email.received", "email.spam", "email.received", "email.received"})

	// Into spam, a message no filter judged: no event, verification gone.
	moved, err = f.s.SetSpam(f.ctx, a.ID, h.ID, true, nil)
	f.must(err)
	if !moved.IsSpam || moved.Verification != nil {
		t.Fatalf("moved in: %+v", moved)
	}
	wantIDs(t, "list after moving in", listed(false), []string{"junk", "plain"})
	if threadCount() != 1 {
		t.Fatalf("thread counts %d after moving in", threadCount())
	}
	wantIDs(t, "no event for moving in", mailEvents(), []string{"email.received", "email.spam", "email.received", "email.received"})
	_, err = f.s.SetSpam(f.ctx, f.account().ID, h.ID, false, nil)
	wantKind(t, err, core.KindNotFound)
}
