package storetest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// lister reads one page of a list, as the ids of its items.
type lister func(p ports.Page) ([]string, int, error)

// listOf adapts a store's list method to a lister.
func listOf[T any](list func(ports.Page) ([]T, int, error), id func(T) string) lister {
	return func(p ports.Page) ([]string, int, error) {
		items, total, err := list(p)
		return ids(items, id), total, err
	}
}

// wantPages checks that every list pages in the store: a page is the
// slice of the whole list at its offset, counted only when asked, and a
// page past the end is empty with the count still right; a bounded count
// stops at its bound.
func wantPages(t *testing.T, name string, list lister) {
	t.Helper()
	all, total, err := list(ports.Page{})
	if err != nil || total != 0 {
		t.Fatalf("%s: every item, uncounted: total %d, %v", name, total, err)
	}
	if len(all) < 3 {
		t.Fatalf("%s: the case needs at least 3 items, has %d", name, len(all))
	}
	for _, p := range []ports.Page{{Limit: 2, Count: true}, {Limit: 2, Offset: 1, Count: true}, {Limit: 2, Offset: len(all) - 1},
		{Limit: len(all) + 5, Offset: 1, Count: true}, {Limit: 5, Offset: len(all) + 3, Count: true}} {
		got, total, err := list(p)
		if err != nil {
			t.Fatalf("%s %+v: %v", name, p, err)
		}
		want := all[min(p.Offset, len(all)):min(p.Offset+p.Limit, len(all))]
		if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
			t.Errorf("%s %+v: got %v, want %v", name, p, got, want)
		}
		if wantTotal := map[bool]int{true: len(all)}[p.Count]; total != wantTotal {
			t.Errorf("%s %+v: total %d, want %d", name, p, total, wantTotal)
		}
	}
	for upTo, want := range map[int]int{2: 2, len(all): len(all), len(all) + 1: len(all)} {
		p := ports.Page{Limit: 1, Offset: 1, Count: true, CountUpTo: upTo}
		if got, total, err := list(p); err != nil || total != want || !reflect.DeepEqual(got, all[1:2]) {
			t.Errorf("%s %+v: %v, total %d (want %d), %v", name, p, got, total, want, err)
		}
	}
}

func testListsPage(t *testing.T, f *fixture) {
	a := f.account()
	scope := core.Scope{AccountID: a.ID}
	var idents []core.Identity
	for range 3 {
		ident, in := f.identity(a.ID)
		idents = append(idents, ident)
		f.save(incoming(in, ident.ID+"@x", "paged", f.tick(), ""))
		_, err := f.s.CreateInbox(f.ctx, core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: "more-" + in.Email, CreatedAt: f.tick()})
		f.must(err)
		f.must(f.s.CreateContact(f.ctx, f.newContact(ident, ident.Name+"@example.com", "", core.ContactManual)))
		f.password(ident, "example.com")
		f.secret(ident, "KEY")
		_, err = f.s.CreateKey(f.ctx, core.APIKey{AccountID: a.ID, Type: core.KeyIdentity, IdentityID: ident.ID, Prefix: "svc_id_x",
			Hash: []byte(ident.ID), CreatedAt: f.tick()})
		f.must(err)
		f.must(f.s.Suppress(f.ctx, core.Suppression{AccountID: a.ID, IdentityID: ident.ID, Email: ident.Name + "@gone.example", Reason: "550 5.1.1", CreatedAt: f.tick()}))
	}
	phone := f.phone(idents[0])
	for i := range 3 {
		f.saveSMS(smsFor(phone, core.Incoming, fmt.Sprintf("+1202555010%d", i), "hi", fmt.Sprintf("SMpage%d%s", i, phone.ProviderSID), f.tick()))
	}
	for _, other := range idents[1:] {
		f.phone(other)
	}

	wantPages(t, "identities", listOf(func(p ports.Page) ([]core.Identity, int, error) { return f.s.Identities(f.ctx, scope, p) },
		func(i core.Identity) string { return i.ID }))
	wantPages(t, "inboxes", listOf(func(p ports.Page) ([]core.Inbox, int, error) { return f.s.Inboxes(f.ctx, scope, p) },
		func(i core.Inbox) string { return i.UUID }))
	wantPages(t, "keys", listOf(func(p ports.Page) ([]core.APIKey, int, error) {
		return f.s.Keys(f.ctx, a.ID, core.KeyIdentity, "", p)
	}, func(k core.APIKey) string { return fmt.Sprint(k.ID) }))
	wantPages(t, "passwords", listOf(func(p ports.Page) ([]ports.StoredPassword, int, error) {
		return f.s.Passwords(f.ctx, ports.PasswordFilter{Scope: scope, Host: "example.com", Page: p})
	}, passwordID))
	wantPages(t, "secrets", listOf(func(p ports.Page) ([]ports.StoredSecret, int, error) {
		return f.s.Secrets(f.ctx, ports.SecretFilter{Scope: scope, Key: "KEY", Page: p})
	}, func(s ports.StoredSecret) string { return s.Secret.ID }))
	wantPages(t, "contacts", listOf(func(p ports.Page) ([]core.Contact, int, error) {
		return f.s.Contacts(f.ctx, ports.ContactFilter{Scope: scope, Query: "@example.com", Page: p})
	}, contactID))
	wantPages(t, "phones", listOf(func(p ports.Page) ([]core.PhoneNumber, int, error) { return f.s.Phones(f.ctx, scope, p) },
		func(n core.PhoneNumber) string { return n.Number }))
	wantPages(t, "sms", listOf(func(p ports.Page) ([]core.SMSMessage, int, error) {
		return f.s.SMSList(f.ctx, ports.SMSFilter{Scope: scope, Direction: core.Incoming, Page: p})
	}, func(m core.SMSMessage) string { return fmt.Sprint(m.ID) }))
	wantPages(t, "conversations", listOf(func(p ports.Page) ([]core.Conversation, int, error) {
		return f.s.Conversations(f.ctx, ports.ConversationFilter{Scope: scope, Page: p})
	}, func(c core.Conversation) string { return c.ID }))
	wantPages(t, "threads", listOf(func(p ports.Page) ([]core.Thread, int, error) {
		return f.s.Threads(f.ctx, ports.ThreadFilter{Scope: scope, Page: p})
	}, func(t core.Thread) string { return t.ID }))
	wantPages(t, "suppressions", listOf(func(p ports.Page) ([]core.Suppression, int, error) {
		return f.s.Suppressions(f.ctx, ports.SuppressionFilter{Scope: scope, Page: p})
	}, func(s core.Suppression) string { return s.Email }))
}
