package storetest

import (
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func (f *fixture) newContact(ident core.Identity, email, phone string, src core.ContactSource) core.Contact {
	now := f.tick()
	return core.Contact{ID: uuid.NewString(), AccountID: ident.AccountID, IdentityID: ident.ID, Email: email, PhoneNumber: phone,
		Source: src, CreatedAt: now, UpdatedAt: now}
}

func contactID(c core.Contact) string { return c.ID }

func testContactsUnique(t *testing.T, f *fixture) {
	a := f.account()
	i1, _ := f.identity(a.ID)
	i2, _ := f.identity(a.ID)
	c := f.newContact(i1, "Ann@Example.com", "+14155550100", core.ContactManual)
	c.DisplayName, c.Nickname = "Ann Smith", "annie"
	f.must(f.s.CreateContact(f.ctx, c))
	got, err := f.s.Contact(f.ctx, a.ID, c.ID)
	f.must(err)
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("read %+v, stored %+v", got, c)
	}
	wantConflictOn(t, f.s.CreateContact(f.ctx, f.newContact(i1, "ann@example.com", "", core.ContactManual)), "email")
	wantConflictOn(t, f.s.CreateContact(f.ctx, f.newContact(i1, "", "+14155550100", core.ContactManual)), "phone_number")
	f.must(f.s.CreateContact(f.ctx, f.newContact(i2, "ann@example.com", "+14155550100", core.ContactManual)))
	// Several contacts without a number or without an email are fine.
	f.must(f.s.CreateContact(f.ctx, f.newContact(i1, "bob@example.com", "", core.ContactManual)))
	f.must(f.s.CreateContact(f.ctx, f.newContact(i1, "cy@example.com", "", core.ContactManual)))

	bob := f.newContact(i1, "bob2@example.com", "", core.ContactManual)
	f.must(f.s.CreateContact(f.ctx, bob))
	bob.Email = "ANN@example.com"
	wantConflictOn(t, f.s.UpdateContact(f.ctx, bob), "email")
	bob.Email, bob.Nickname, bob.UpdatedAt = "bob3@example.com", "bobby", f.tick()
	f.must(f.s.UpdateContact(f.ctx, bob))
	got, err = f.s.Contact(f.ctx, a.ID, bob.ID)
	f.must(err)
	if !reflect.DeepEqual(got, bob) {
		t.Fatalf("after update %+v, want %+v", got, bob)
	}
	other := f.account()
	_, err = f.s.Contact(f.ctx, other.ID, bob.ID)
	wantKind(t, err, core.KindNotFound)
	wantKind(t, f.s.DeleteContact(f.ctx, other.ID, bob.ID), core.KindNotFound)
	f.must(f.s.DeleteContact(f.ctx, a.ID, bob.ID))
	_, err = f.s.Contact(f.ctx, a.ID, bob.ID)
	wantKind(t, err, core.KindNotFound)
}

func testContactsFiltersAndSearch(t *testing.T, f *fixture) {
	a := f.account()
	i1, _ := f.identity(a.ID)
	i2, _ := f.identity(a.ID)
	ann := f.newContact(i1, "ann@example.com", "+14155550100", core.ContactManual)
	ann.DisplayName = "Ann Smith"
	bob := f.newContact(i1, "bob@example.org", "", core.ContactAuto)
	bob.Nickname = "The_Builder"
	cy := f.newContact(i2, "cy@example.com", "+442079460000", core.ContactAuto)
	for _, c := range []core.Contact{ann, bob, cy} {
		f.must(f.s.CreateContact(f.ctx, c))
	}
	all := core.Scope{AccountID: a.ID}
	for _, tc := range []struct {
		name   string
		filter ports.ContactFilter
		want   []string
	}{
		{"account", ports.ContactFilter{Scope: all}, []string{ann.ID, bob.ID, cy.ID}},
		{"newest first", ports.ContactFilter{Scope: all, NewestFirst: true}, []string{cy.ID, bob.ID, ann.ID}},
		{"identity", ports.ContactFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: i1.ID}}, []string{ann.ID, bob.ID}},
		{"empty scope", ports.ContactFilter{Scope: core.Scope{AccountID: a.ID, Empty: true}}, nil},
		{"auto", ports.ContactFilter{Scope: all, Source: core.ContactAuto}, []string{bob.ID, cy.ID}},
		{"email ignoring case", ports.ContactFilter{Scope: all, Email: "ANN@example.com"}, []string{ann.ID}},
		{"phone", ports.ContactFilter{Scope: all, PhoneNumber: "+442079460000"}, []string{cy.ID}},
		{"search display name", ports.ContactFilter{Scope: all, Query: "smith"}, []string{ann.ID}},
		{"search email", ports.ContactFilter{Scope: all, Query: "EXAMPLE.COM"}, []string{ann.ID, cy.ID}},
		{"search nickname, literal underscore", ports.ContactFilter{Scope: all, Query: "e_b"}, []string{bob.ID}},
		{"search percent is literal", ports.ContactFilter{Scope: all, Query: "%"}, nil},
		{"search phone", ports.ContactFilter{Scope: all, Query: "2079"}, []string{cy.ID}},
	} {
		list, _, err := f.s.Contacts(f.ctx, tc.filter)
		f.must(err)
		wantIDs(t, tc.name, ids(list, contactID), tc.want)
	}
}

func testContactsRecordCorrespondent(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	created, err := f.s.RecordCorrespondent(f.ctx, f.newContact(ident, "new@example.com", "", core.ContactAuto))
	f.must(err)
	again, err := f.s.RecordCorrespondent(f.ctx, f.newContact(ident, "NEW@example.com", "", core.ContactAuto))
	f.must(err)
	byPhone, err := f.s.RecordCorrespondent(f.ctx, f.newContact(ident, "", "+14155550123", core.ContactAuto))
	f.must(err)
	byPhoneAgain, err := f.s.RecordCorrespondent(f.ctx, f.newContact(ident, "", "+14155550123", core.ContactAuto))
	f.must(err)
	if !created || again || !byPhone || byPhoneAgain {
		t.Fatalf("created=%v again=%v byPhone=%v byPhoneAgain=%v", created, again, byPhone, byPhoneAgain)
	}
	list, _, err := f.s.Contacts(f.ctx, ports.ContactFilter{Scope: core.Scope{AccountID: a.ID}})
	f.must(err)
	if len(list) != 2 || list[0].Source != core.ContactAuto {
		t.Fatalf("contacts: %+v", list)
	}
}
