package storetest

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func testIdentitiesCreate(t *testing.T, f *fixture) {
	a := f.account()
	ident, inbox := f.identity(a.ID)
	got, err := f.s.Identity(f.ctx, a.ID, ident.ID)
	f.must(err)
	if got != ident {
		t.Fatalf("read %+v, stored %+v", got, ident)
	}
	gotInbox, err := f.s.Inbox(f.ctx, inbox.ID)
	f.must(err)
	if gotInbox != inbox {
		t.Fatalf("inbox %+v, stored %+v", gotInbox, inbox)
	}
	byEmail, err := f.s.InboxByEmail(f.ctx, strings.ToUpper(inbox.Email))
	f.must(err)
	if byEmail.ID != inbox.ID {
		t.Fatalf("address lookup should ignore case")
	}
	other := f.account()
	_, err = f.s.Identity(f.ctx, other.ID, ident.ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.FirstInbox(f.ctx, other.ID)
	wantKind(t, err, core.KindNotFound)
	f.identity(other.ID)
	f.identity(a.ID)
	for _, accountID := range []string{a.ID, ""} {
		first, err := f.s.FirstInbox(f.ctx, accountID)
		f.must(err)
		if first.ID != inbox.ID {
			t.Fatalf("the first inbox of %q is %+v, want %+v", accountID, first, inbox)
		}
	}
}

func testIdentitiesClashStoresNothing(t *testing.T, f *fixture) {
	a := f.account()
	ident, inbox := f.identity(a.ID)
	now := f.tick()
	sameName := core.Identity{ID: uuid.NewString(), AccountID: a.ID, Name: ident.Name, CreatedAt: now, UpdatedAt: now}
	_, err := f.s.CreateIdentity(f.ctx, sameName, core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: sameName.ID, Email: "fresh@agents.test", CreatedAt: now}, nil)
	wantConflictOn(t, err, "name")

	sameAddr := core.Identity{ID: uuid.NewString(), AccountID: a.ID, Name: "fresh", CreatedAt: now, UpdatedAt: now}
	_, err = f.s.CreateIdentity(f.ctx, sameAddr, core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: sameAddr.ID, Email: inbox.Email, CreatedAt: now}, nil)
	wantConflictOn(t, err, "email")
	// The identity insert ran before the inbox clashed: it must be rolled back.
	_, err = f.s.Identity(f.ctx, a.ID, sameAddr.ID)
	wantKind(t, err, core.KindNotFound)

	// Names are unique per account only.
	b := f.account()
	again := core.Identity{ID: uuid.NewString(), AccountID: b.ID, Name: ident.Name, CreatedAt: now, UpdatedAt: now}
	_, err = f.s.CreateIdentity(f.ctx, again, core.Inbox{UUID: uuid.NewString(), AccountID: b.ID, IdentityID: again.ID, Email: "other@agents.test", CreatedAt: now}, nil)
	f.must(err)
	taken, err := f.s.IdentityNameTaken(f.ctx, a.ID, ident.Name)
	f.must(err)
	free, err := f.s.IdentityNameTaken(f.ctx, a.ID, "unused")
	f.must(err)
	if !taken || free {
		t.Fatalf("IdentityNameTaken: taken=%v free=%v", taken, free)
	}
}

func testIdentitiesListScope(t *testing.T, f *fixture) {
	a := f.account()
	first, _ := f.identity(a.ID)
	second, _ := f.identity(a.ID)
	other := f.account()
	f.identity(other.ID)

	all, _, err := f.s.Identities(f.ctx, core.Scope{AccountID: a.ID}, ports.Page{})
	f.must(err)
	if len(all) != 2 || all[0].ID != first.ID || all[1].ID != second.ID {
		t.Fatalf("account-wide, oldest first: %+v", all)
	}
	one, _, err := f.s.Identities(f.ctx, core.Scope{AccountID: a.ID, IdentityID: second.ID}, ports.Page{})
	f.must(err)
	if len(one) != 1 || one[0].ID != second.ID {
		t.Fatalf("narrowed: %+v", one)
	}
	none, _, err := f.s.Identities(f.ctx, core.Scope{AccountID: a.ID, IdentityID: first.ID, Empty: true}, ports.Page{})
	f.must(err)
	if len(none) != 0 {
		t.Fatalf("an empty scope listed %+v", none)
	}
	foreign, _, err := f.s.Identities(f.ctx, core.Scope{AccountID: other.ID, IdentityID: first.ID}, ports.Page{})
	f.must(err)
	if len(foreign) != 0 {
		t.Fatalf("another account's scope listed %+v", foreign)
	}
}

func testIdentitiesUpdateName(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	taken, _ := f.identity(a.ID)
	ident.Name, ident.UpdatedAt = "renamed", f.tick()
	f.must(f.s.UpdateIdentity(f.ctx, ident))
	got, err := f.s.Identity(f.ctx, a.ID, ident.ID)
	f.must(err)
	if got.Name != "renamed" || !got.UpdatedAt.Equal(ident.UpdatedAt) {
		t.Fatalf("after update: %+v", got)
	}
	ident.Name = taken.Name
	wantConflictOn(t, f.s.UpdateIdentity(f.ctx, ident), "name")
	other := f.account()
	ident.AccountID, ident.Name = other.ID, "stolen"
	wantKind(t, f.s.UpdateIdentity(f.ctx, ident), core.KindNotFound)
}

func testInboxes(t *testing.T, f *fixture) {
	a := f.account()
	ident, first := f.identity(a.ID)
	ident2, _ := f.identity(a.ID)
	extra := core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: "extra@agents.test", CreatedAt: f.tick()}
	var err error
	extra.ID, err = f.s.CreateInbox(f.ctx, extra)
	f.must(err)
	_, err = f.s.CreateInbox(f.ctx, core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident2.ID, Email: "extra@agents.test", CreatedAt: f.tick()})
	wantConflictOn(t, err, "email")

	mine, _, err := f.s.Inboxes(f.ctx, core.Scope{AccountID: a.ID, IdentityID: ident.ID}, ports.Page{})
	f.must(err)
	if len(mine) != 2 || mine[0].ID != extra.ID || mine[1].ID != first.ID {
		t.Fatalf("identity's inboxes, newest first: %+v", mine)
	}
	all, _, err := f.s.Inboxes(f.ctx, core.Scope{AccountID: a.ID}, ports.Page{})
	f.must(err)
	if len(all) != 3 {
		t.Fatalf("account inboxes: %+v", all)
	}
	// The identity's address stays its first inbox's.
	got, err := f.s.Identity(f.ctx, a.ID, ident.ID)
	f.must(err)
	if got.Inbox != first.Email {
		t.Fatalf("identity inbox %q, want %q", got.Inbox, first.Email)
	}
}
