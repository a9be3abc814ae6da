package storetest

import (
	"testing"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// testRules: rules of an identity and of its account are listed in the
// identity's scope and judge it; another identity's are not; rules go
// with their identity and account.
func testRules(t *testing.T, f *fixture) {
	a := f.account()
	one, _ := f.identity(a.ID)
	two, _ := f.identity(a.ID)
	rule := func(identity string, channel core.RuleChannel, dir core.RuleDirection, action core.RuleAction, pattern string) core.Rule {
		r := core.Rule{ID: uuid.NewString(), AccountID: a.ID, IdentityID: identity, Channel: channel, Direction: dir, Action: action,
			Pattern: pattern, CreatedAt: f.tick()}
		f.must(f.s.CreateRule(f.ctx, r))
		return r
	}
	own := rule(one.ID, core.RuleEmail, core.RuleOutbound, core.RuleAllow, "@customer.example")
	account := rule("", core.RuleEmail, core.RuleOutbound, core.RuleBlock, "mallory@customer.example")
	rule(two.ID, core.RuleEmail, core.RuleOutbound, core.RuleAllow, "@other.example")
	rule(one.ID, core.RuleSMS, core.RuleInbound, core.RuleBlock, "+44")
	got, err := f.s.RulesFor(f.ctx, a.ID, one.ID, core.RuleEmail, core.RuleOutbound)
	f.must(err)
	if len(got) != 2 || got[0].ID != own.ID || got[1].ID != account.ID || got[1].IdentityID != "" || !got[0].CreatedAt.Equal(own.CreatedAt) {
		t.Fatalf("rules for one: %+v", got)
	}
	list, total, err := f.s.Rules(f.ctx, core.Scope{AccountID: a.ID, IdentityID: one.ID}, ports.Page{Count: true})
	f.must(err)
	if len(list) != 3 || total != 3 {
		t.Fatalf("one's scope: %d %+v", total, list)
	}
	if n, err := f.s.CountRules(f.ctx, a.ID); err != nil || n != 4 {
		t.Fatalf("count: %d %v", n, err)
	}
	wantKind(t, f.s.DeleteRule(f.ctx, f.account().ID, own.ID), core.KindNotFound)
	f.must(f.s.DeleteRule(f.ctx, a.ID, own.ID))
	f.must(f.s.DeleteIdentity(f.ctx, a.ID, two.ID))
	if n, _ := f.s.CountRules(f.ctx, a.ID); n != 2 {
		t.Fatalf("after deletes: %d rules", n)
	}
}

// testBlockedMail: blocked mail is stored but left out of lists, of its
// thread's summary and the thread list, and of mailbox views.
func testBlockedMail(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	save := func(subject string, blocked bool) core.EmailMessage {
		m := core.EmailMessage{AccountID: a.ID, IdentityID: ident.ID, InboxID: in.ID, Header: core.Header{MessageID: uuid.NewString() + "@example.org",
			FromEmail: "x@example.org", To: []string{in.Email}, Subject: subject}, Direction: core.Incoming, IsRead: blocked, Blocked: blocked, CreatedAt: f.tick()}
		out, err := f.s.SaveMail(f.ctx, []ports.NewMail{{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte("raw")}})
		f.must(err)
		return out[0]
	}
	save("kept", false)
	b := save("blocked", true)
	if !b.Blocked {
		t.Fatalf("stored as %+v", b)
	}
	list, total, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}})
	f.must(err)
	if total != 1 || list[0].Subject != "kept" {
		t.Fatalf("list: %d %+v", total, list)
	}
	list, total, err = f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}, IncludeBlocked: true})
	f.must(err)
	if total != 2 || !list[1].Blocked {
		t.Fatalf("with blocked: %d %+v", total, list)
	}
	threads, _, err := f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID}})
	f.must(err)
	if len(threads) != 1 || threads[0].Subject != "kept" {
		t.Fatalf("threads: %+v", threads)
	}
	entries, err := f.s.MailboxEntries(f.ctx, in.ID, core.Incoming, false)
	f.must(err)
	if len(entries) != 1 {
		t.Fatalf("mailbox: %+v", entries)
	}
	if got, err := f.s.Message(f.ctx, a.ID, b.ID); err != nil || !got.Blocked {
		t.Fatalf("read back: %v %+v", err, got)
	}
}
