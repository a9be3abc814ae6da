package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// testDrafts: drafts keep every field, list in scope (and by
// awaiting_approval), change and go; a message saved from a draft deletes
// it in its transaction, and a second one from the same draft stores
// nothing; a deleted original is forgotten; the outbox says when its next
// entry is due.
func testDrafts(t *testing.T, f *fixture) {
	a := f.account()
	one, in := f.identity(a.ID)
	two, in2 := f.identity(a.ID)
	orig := f.save(incoming(in, "orig@x", "Question", f.tick(), ""))[0]
	subject, content := "Hi", "Hello."
	at := f.tick().Add(time.Hour)
	draft := func(ident core.Identity, inbox core.Inbox, awaiting bool) core.Draft {
		now := f.tick()
		d := core.Draft{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, InboxID: inbox.ID, Kind: core.DraftCompose,
			To: []string{"ann@example.org"}, Cc: []string{"bo@example.org"}, Subject: &subject, Content: &content,
			AttachmentIDs: []string{}, AwaitingApproval: awaiting, CreatedAt: now, UpdatedAt: now}
		f.must(f.s.CreateDraft(f.ctx, d))
		return d
	}
	plain := draft(one, in, false)
	waiting := draft(one, in, true)
	waiting.Kind, waiting.OriginalID, waiting.SendAt = core.DraftReply, orig.ID, &at
	reply := core.Draft{ID: uuid.NewString(), AccountID: a.ID, IdentityID: one.ID, InboxID: in.ID, Kind: core.DraftReply, OriginalID: orig.ID,
		Content: &content, SendAt: &at, AwaitingApproval: true, CreatedAt: f.tick(), UpdatedAt: f.tick()}
	f.must(f.s.CreateDraft(f.ctx, reply))
	other := draft(two, in2, true)

	got, err := f.s.Draft(f.ctx, a.ID, reply.ID)
	f.must(err)
	if got.Kind != core.DraftReply || got.OriginalID != orig.ID || got.Subject != nil || *got.Content != content || !got.SendAt.Equal(at) ||
		!got.AwaitingApproval || !got.CreatedAt.Equal(reply.CreatedAt) {
		t.Fatalf("reply draft: %+v", got)
	}
	if got, err := f.s.Draft(f.ctx, a.ID, plain.ID); err != nil || *got.Subject != subject || len(got.Cc) != 1 || got.SendAt != nil || got.OriginalID != 0 {
		t.Fatalf("plain draft: %+v %v", got, err)
	}
	if _, err := f.s.Draft(f.ctx, f.account().ID, plain.ID); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("another account's draft: %v", err)
	}
	yes := true
	list, total, err := f.s.Drafts(f.ctx, ports.DraftFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: one.ID}, AwaitingApproval: &yes, Page: ports.Page{Count: true}})
	f.must(err)
	if total != 2 || len(list) != 2 || list[0].ID != waiting.ID || list[1].ID != reply.ID {
		t.Fatalf("one's awaiting: %d %+v", total, list)
	}
	// A list gives summaries: a preview in place of the bodies.
	if l := list[0]; l.Content != nil || l.HTML != "" || l.Preview != core.Preview(*waiting.Content) || l.Preview == "" {
		t.Fatalf("a listed draft carries its bodies: %+v", l)
	}
	if list, _, err := f.s.Drafts(f.ctx, ports.DraftFilter{Scope: core.Scope{AccountID: a.ID}}); err != nil || len(list) != 4 || list[3].ID != other.ID {
		t.Fatalf("the account's: %+v %v", list, err)
	}

	plain.To, plain.Subject, plain.SendAt, plain.AwaitingApproval, plain.UpdatedAt = []string{"cy@example.org"}, nil, &at, true, f.tick()
	f.must(f.s.UpdateDraft(f.ctx, plain))
	if got, err := f.s.Draft(f.ctx, a.ID, plain.ID); err != nil || got.To[0] != "cy@example.org" || got.Subject != nil || !got.AwaitingApproval ||
		!got.UpdatedAt.Equal(plain.UpdatedAt) {
		t.Fatalf("updated: %+v %v", got, err)
	}

	// Sent once: the message saved from a draft deletes it; a second finds none.
	out := outgoing(in, "sent@x", f.tick())
	out.FromDraft = &plain
	sent := f.save(out)[0]
	if _, err := f.s.Draft(f.ctx, a.ID, plain.ID); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("the sent draft is still there: %v", err)
	}
	again := outgoing(in, "again@x", f.tick())
	again.FromDraft = &plain
	if _, err := f.s.SaveMail(f.ctx, []ports.NewMail{again}); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("a second send of the draft: %v", err)
	}
	if msgs, _, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}, Direction: core.Outgoing}); err != nil || len(msgs) != 1 || msgs[0].ID != sent.ID {
		t.Fatalf("outgoing after two sends: %+v %v", msgs, err)
	}

	// The outbox's next entry, scheduled.
	next, ok, err := f.s.NextOutboxAttempt(f.ctx)
	f.must(err)
	if !ok || next.After(out.Outbox.NextAttempt) {
		t.Fatalf("next attempt %v %v, want at most %v", next, ok, out.Outbox.NextAttempt)
	}

	// A deleted original is forgotten; drafts go with their identity.
	f.must(f.s.DeleteMessage(f.ctx, a.ID, orig.ID))
	if got, err := f.s.Draft(f.ctx, a.ID, reply.ID); err != nil || got.OriginalID != 0 {
		t.Fatalf("after the original was deleted: %+v %v", got, err)
	}
	f.must(f.s.DeleteDraft(f.ctx, a.ID, waiting.ID))
	if err := f.s.DeleteDraft(f.ctx, a.ID, waiting.ID); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("deleted twice: %v", err)
	}
	f.must(f.s.DeleteIdentity(f.ctx, a.ID, two.ID))
	if _, err := f.s.Draft(f.ctx, a.ID, other.ID); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("a deleted identity's draft: %v", err)
	}
}

// outgoing builds a queued message of an inbox, due at at.
func outgoing(in core.Inbox, msgID string, at time.Time) ports.NewMail {
	nm := incoming(in, msgID, "out", at, "")
	nm.Message.Direction, nm.Message.FromEmail, nm.Message.DeliveryStatus = core.Outgoing, in.Email, core.DeliveryQueued
	nm.Outbox = &ports.OutboxEntry{AccountID: in.AccountID, EnvelopeFrom: in.Email, Recipients: []string{"x@example.org"},
		NextAttempt: at, GiveUpAt: at.Add(time.Hour)}
	return nm
}
