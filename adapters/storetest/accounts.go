package storetest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func testAccountsCreateAndRead(t *testing.T, f *fixture) {
	a := f.account()
	got, err := f.s.Account(f.ctx, a.ID)
	f.must(err)
	if got != a {
		t.Fatalf("read %+v, stored %+v", got, a)
	}
	byEmail, err := f.s.AccountByEmail(f.ctx, strings.ToUpper(a.Email))
	f.must(err)
	if byEmail.ID != a.ID {
		t.Fatalf("email lookup should ignore case: %+v", byEmail)
	}
	_, err = f.s.Account(f.ctx, uuid.NewString())
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.AccountByEmail(f.ctx, "nobody@example.com")
	wantKind(t, err, core.KindNotFound)
}

func testAccountsEmailUnique(t *testing.T, f *fixture) {
	a := f.account()
	err := f.s.CreateAccount(f.ctx, core.Account{ID: uuid.NewString(), Email: strings.ToUpper(a.Email), CreatedAt: f.tick()})
	wantConflictOn(t, err, "email")
}

func testAccountsSubscriptionAndPassword(t *testing.T, f *fixture) {
	a := f.account()
	f.must(f.s.SetSubscription(f.ctx, a.ID, false))
	f.must(f.s.SetPasswordHash(f.ctx, a.ID, "$argon2id$x"))
	got, err := f.s.Account(f.ctx, a.ID)
	f.must(err)
	if got.SubscriptionActive || got.PasswordHash != "$argon2id$x" {
		t.Fatalf("updates not kept: %+v", got)
	}
	wantKind(t, f.s.SetSubscription(f.ctx, uuid.NewString(), true), core.KindNotFound)
}

func testAccountsDeleteCascades(t *testing.T, f *fixture) {
	a := f.account()
	other := f.account()
	ident, inbox := f.identity(a.ID)
	otherIdent, _ := f.identity(other.ID)
	k := core.APIKey{AccountID: a.ID, Type: core.KeyIdentity, IdentityID: ident.ID, Prefix: "svc_id_abcd", Hash: core.HashKey("k1"), CreatedAt: f.tick()}
	_, err := f.s.CreateKey(f.ctx, k)
	f.must(err)
	f.must(f.s.DeleteAccount(f.ctx, a.ID))
	_, err = f.s.Account(f.ctx, a.ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.KeyByHash(f.ctx, k.Hash)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.Inbox(f.ctx, inbox.ID)
	wantKind(t, err, core.KindNotFound)
	if _, err := f.s.Identity(f.ctx, other.ID, otherIdent.ID); err != nil {
		t.Fatalf("another account's identity went too: %v", err)
	}
	wantKind(t, f.s.DeleteAccount(f.ctx, a.ID), core.KindNotFound)
}

func testKeys(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	ident2, _ := f.identity(a.ID)
	mgmt := core.APIKey{AccountID: a.ID, Type: core.KeyManagement, Name: "ci", Prefix: "svc_mgmt_abcd", Hash: core.HashKey("m"),
		Origin: core.OriginJWT, CreatedAt: f.tick()}
	idk := core.APIKey{AccountID: a.ID, Type: core.KeyIdentity, IdentityID: ident.ID, Prefix: "svc_id_abcd", Hash: core.HashKey("i"), CreatedAt: f.tick()}
	idk2 := core.APIKey{AccountID: a.ID, Type: core.KeyIdentity, IdentityID: ident2.ID, CanProvision: true, CanSend: true, Prefix: "svc_id_efgh",
		Hash: core.HashKey("i2"), CreatedAt: f.tick()}
	var err error
	for _, k := range []*core.APIKey{&mgmt, &idk, &idk2} {
		k.ID, err = f.s.CreateKey(f.ctx, *k)
		f.must(err)
		if k.ID <= 0 {
			t.Fatalf("key id %d", k.ID)
		}
	}
	got, err := f.s.KeyByHash(f.ctx, core.HashKey("i"))
	f.must(err)
	if got.ID != idk.ID || got.IdentityID != ident.ID || got.Type != core.KeyIdentity || !bytes.Equal(got.Hash, idk.Hash) || got.LastUsedAt != nil ||
		got.CanProvision {
		t.Fatalf("key read back as %+v", got)
	}
	if got, err := f.s.Key(f.ctx, a.ID, idk2.ID); err != nil || !got.CanProvision || !got.CanSend {
		t.Fatalf("a key that may provision and send read back as %+v, %v", got, err)
	}
	// The send right is kept as given, and changes.
	if got.CanSend {
		t.Fatalf("a key made without the send right read back with it: %+v", got)
	}
	f.must(f.s.SetKeyCanSend(f.ctx, a.ID, idk.ID, true))
	if got, err := f.s.KeyByHash(f.ctx, core.HashKey("i")); err != nil || !got.CanSend {
		t.Fatalf("after giving the send right: %+v, %v", got, err)
	}
	if err := f.s.SetKeyCanSend(f.ctx, f.account().ID, idk.ID, false); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("another account changed the key: %v", err)
	}
	list, _, err := f.s.Keys(f.ctx, a.ID, core.KeyIdentity, "", ports.Page{})
	f.must(err)
	if len(list) != 2 || list[0].ID != idk.ID || list[1].ID != idk2.ID {
		t.Fatalf("identity keys, oldest first: %+v", list)
	}
	list, _, err = f.s.Keys(f.ctx, a.ID, core.KeyIdentity, ident2.ID, ports.Page{})
	f.must(err)
	if len(list) != 1 || list[0].ID != idk2.ID {
		t.Fatalf("identity keys of one identity: %+v", list)
	}
	list, _, err = f.s.Keys(f.ctx, a.ID, core.KeyManagement, "", ports.Page{})
	f.must(err)
	if len(list) != 1 || list[0].ID != mgmt.ID || list[0].Origin != core.OriginJWT {
		t.Fatalf("management keys: %+v", list)
	}
	used := f.tick()
	f.must(f.s.TouchKey(f.ctx, mgmt.ID, used))
	got, err = f.s.Key(f.ctx, a.ID, mgmt.ID)
	f.must(err)
	if got.LastUsedAt == nil || !got.LastUsedAt.Equal(used) {
		t.Fatalf("last used %v, want %v", got.LastUsedAt, used)
	}
	other := f.account()
	_, err = f.s.Key(f.ctx, other.ID, mgmt.ID)
	wantKind(t, err, core.KindNotFound)
	wantKind(t, f.s.DeleteKey(f.ctx, other.ID, mgmt.ID), core.KindNotFound)
	// The account's last management key stays (core.MayDeleteKey); once
	// it has another, it goes.
	wantKind(t, f.s.DeleteKey(f.ctx, a.ID, mgmt.ID), core.KindConflict)
	f.must(f.s.DeleteKey(f.ctx, a.ID, idk.ID))
	_, err = f.s.CreateKey(f.ctx, core.APIKey{AccountID: a.ID, Type: core.KeyManagement, Prefix: "svc_mgmt_efgh", Hash: core.HashKey("m2"), CreatedAt: f.tick()})
	f.must(err)
	f.must(f.s.DeleteKey(f.ctx, a.ID, mgmt.ID))
	_, err = f.s.KeyByHash(f.ctx, mgmt.Hash)
	wantKind(t, err, core.KindNotFound)
}
