package app

import (
	"context"
	"errors"
	"testing"

	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func TestRoute(t *testing.T) {
	ctx := context.Background()
	store := memory.NewStore()
	a := New(Deps{Ports: Ports{Store: store, Clock: &memory.Clock{}, IDs: memory.IDs{}},
		Settings: Settings{MailDomains: []string{"agents.test"}}})
	t.Cleanup(a.Close)
	owner := newOwner(t, a, "owner@example.com")
	name := "helper"
	ident, err := a.Identities.Create(ctx, owner, IdentityInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateCustomDomain(ctx, core.Domain{Name: "mail.example.com", Status: core.DomainVerified, AccountID: owner.AccountID},
		ports.StoredDKIMKey{Domain: "mail.example.com", Key: core.DKIMKey{Selector: "cs1", Active: true}}); err != nil {
		t.Fatal(err)
	}
	custom, err := a.Inboxes.CreateInbox(ctx, owner, ident.ID, "desk@mail.example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr      string
		want      destination
		wantInbox string
	}{
		{ident.Inbox, toInbox, ident.Inbox},
		{"  HELPER@Agents.Test ", toInbox, ident.Inbox},
		{"desk@mail.example.com", toInbox, custom.Email},
		{"postmaster@agents.test", toInbox, ident.Inbox},      // the service's oldest inbox
		{"Postmaster@mail.example.com", toInbox, ident.Inbox}, // the owning account's oldest
		{"nobody@agents.test", toNowhere, ""},
		{"nobody@mail.example.com", toNowhere, ""},
		{"someone@example.org", toRelay, ""},
		{"helper@agents.test.example.org", toRelay, ""},
	} {
		dest, in, err := a.Receiving.route(ctx, tc.addr)
		if err != nil || dest != tc.want || in.Email != tc.wantInbox {
			t.Errorf("route(%q) = %v %q %v, want %v %q", tc.addr, dest, in.Email, err, tc.want, tc.wantInbox)
		}
	}
	if _, _, err := a.Receiving.route(ctx, "not an address"); core.KindOf(err) != core.KindInvalid {
		t.Errorf("not an address: %v", err)
	}
	// A store that cannot answer is no decision: the caller retries.
	a.Receiving.recipients = inboxCache{}
	store.Fail = errors.New("down")
	if _, _, err := a.Receiving.route(ctx, ident.Inbox); err == nil {
		t.Error("a failing store decided a route")
	}
}
