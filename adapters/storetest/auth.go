package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// grant stores a pending device grant with fresh codes.
func (f *fixture) grant() core.DeviceGrant {
	f.t.Helper()
	now := f.tick()
	g := core.DeviceGrant{ID: uuid.NewString(), DeviceCodeHash: core.HashKey(uuid.NewString()), UserCode: uuid.NewString()[:8],
		ClientName: "cli on laptop", RequestedFrom: "2001:db8::7", RequestedKeyType: core.KeyManagement, RequestedIdentity: "Support", Status: core.DevicePending, Interval: 5 * time.Second, CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute)}
	f.must(f.s.CreateDeviceGrant(f.ctx, g))
	return g
}

// deviceKeys are the two keys a redemption stores.
func (f *fixture) deviceKeys(accountID, identityID string) []core.APIKey {
	now := f.tick()
	return []core.APIKey{
		{AccountID: accountID, Type: core.KeyManagement, Name: "device", Prefix: "svc_mgmt_dev1", Hash: core.HashKey(uuid.NewString()), CreatedAt: now},
		{AccountID: accountID, Type: core.KeyIdentity, IdentityID: identityID, Name: "device", Prefix: "svc_id_dev1", Hash: core.HashKey(uuid.NewString()), CreatedAt: now},
	}
}

func testDeviceGrantsCreateAndFind(t *testing.T, f *fixture) {
	g := f.grant()
	byDevice, err := f.s.DeviceGrantByDeviceCode(f.ctx, g.DeviceCodeHash)
	f.must(err)
	byUser, err := f.s.DeviceGrantByUserCode(f.ctx, g.UserCode)
	f.must(err)
	for _, got := range []core.DeviceGrant{byDevice, byUser} {
		if got.ID != g.ID || !bytes.Equal(got.DeviceCodeHash, g.DeviceCodeHash) || got.UserCode != g.UserCode || got.ClientName != g.ClientName || got.RequestedFrom != g.RequestedFrom ||
			got.RequestedKeyType != core.KeyManagement || got.RequestedIdentity != "Support" || got.KeyType != "" ||
			got.Status != core.DevicePending || got.AccountID != "" || got.IdentityID != "" || got.Interval != g.Interval ||
			!got.CreatedAt.Equal(g.CreatedAt) || !got.ExpiresAt.Equal(g.ExpiresAt) || got.LastPolledAt != nil {
			t.Fatalf("read %+v, stored %+v", got, g)
		}
	}
	_, err = f.s.DeviceGrantByDeviceCode(f.ctx, core.HashKey("nope"))
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.DeviceGrantByUserCode(f.ctx, "NOPENOPE")
	wantKind(t, err, core.KindNotFound)
	clash := g
	clash.ID, clash.DeviceCodeHash = uuid.NewString(), core.HashKey("other")
	wantConflictOn(t, f.s.CreateDeviceGrant(f.ctx, clash), "user_code")
}

func testDeviceGrantsOneAnswerOneRedemption(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	g := f.grant()
	polled := f.tick()
	f.must(f.s.RecordDevicePoll(f.ctx, g.ID, polled, 10*time.Second))
	got, err := f.s.DeviceGrantByUserCode(f.ctx, g.UserCode)
	f.must(err)
	if got.LastPolledAt == nil || !got.LastPolledAt.Equal(polled) || got.Interval != 10*time.Second {
		t.Fatalf("poll not recorded: %+v", got)
	}
	f.must(f.s.DecideDeviceGrant(f.ctx, g.ID, ports.DeviceDecision{Status: core.DeviceApproved, AccountID: a.ID, KeyType: core.KeyIdentity, IdentityID: ident.ID}))
	wantKind(t, f.s.DecideDeviceGrant(f.ctx, g.ID, ports.DeviceDecision{Status: core.DeviceDenied, AccountID: a.ID}), core.KindConflict)
	got, err = f.s.DeviceGrantByDeviceCode(f.ctx, g.DeviceCodeHash)
	f.must(err)
	if got.Status != core.DeviceApproved || got.AccountID != a.ID || got.KeyType != core.KeyIdentity || got.IdentityID != ident.ID {
		t.Fatalf("approval not kept: %+v", got)
	}

	keys := f.deviceKeys(a.ID, ident.ID)
	ids, err := f.s.RedeemDeviceGrant(f.ctx, g.ID, keys)
	f.must(err)
	if len(ids) != 2 || ids[0] <= 0 || ids[1] <= ids[0] {
		t.Fatalf("key ids %v", ids)
	}
	for i, k := range keys {
		stored, err := f.s.KeyByHash(f.ctx, k.Hash)
		f.must(err)
		if stored.ID != ids[i] || stored.Type != k.Type || stored.IdentityID != k.IdentityID {
			t.Fatalf("key %d stored as %+v", i, stored)
		}
	}
	again := f.deviceKeys(a.ID, ident.ID)
	_, err = f.s.RedeemDeviceGrant(f.ctx, g.ID, again)
	wantKind(t, err, core.KindConflict)
	_, err = f.s.KeyByHash(f.ctx, again[0].Hash)
	wantKind(t, err, core.KindNotFound)
	got, _ = f.s.DeviceGrantByDeviceCode(f.ctx, g.DeviceCodeHash)
	if got.Status != core.DeviceRedeemed {
		t.Fatalf("status after redemption: %s", got.Status)
	}
}

// testDeviceGrantsManagementKey: a grant approved for a management key has
// no identity, and redeems to that one key.
func testDeviceGrantsManagementKey(t *testing.T, f *fixture) {
	a := f.account()
	g := f.grant()
	f.must(f.s.DecideDeviceGrant(f.ctx, g.ID, ports.DeviceDecision{Status: core.DeviceApproved, AccountID: a.ID, KeyType: core.KeyManagement}))
	got, err := f.s.DeviceGrantByDeviceCode(f.ctx, g.DeviceCodeHash)
	f.must(err)
	if got.Status != core.DeviceApproved || got.KeyType != core.KeyManagement || got.IdentityID != "" {
		t.Fatalf("management approval not kept: %+v", got)
	}
	ids, err := f.s.RedeemDeviceGrant(f.ctx, g.ID, f.deviceKeys(a.ID, "")[:1])
	f.must(err)
	if len(ids) != 1 {
		t.Fatalf("key ids %v", ids)
	}
	if got, _ := f.s.DeviceGrantByDeviceCode(f.ctx, g.DeviceCodeHash); got.Status != core.DeviceRedeemed {
		t.Fatalf("status after redemption: %s", got.Status)
	}
}

func testDeviceGrantsRedeemOnlyApproved(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	pending := f.grant()
	_, err := f.s.RedeemDeviceGrant(f.ctx, pending.ID, f.deviceKeys(a.ID, ident.ID))
	wantKind(t, err, core.KindConflict)
	denied := f.grant()
	f.must(f.s.DecideDeviceGrant(f.ctx, denied.ID, ports.DeviceDecision{Status: core.DeviceDenied, AccountID: a.ID}))
	got, _ := f.s.DeviceGrantByUserCode(f.ctx, denied.UserCode)
	if got.Status != core.DeviceDenied || got.AccountID != a.ID || got.IdentityID != "" {
		t.Fatalf("denial not kept: %+v", got)
	}
	_, err = f.s.RedeemDeviceGrant(f.ctx, denied.ID, f.deviceKeys(a.ID, ident.ID))
	wantKind(t, err, core.KindConflict)
	keys, _, err := f.s.Keys(f.ctx, a.ID, core.KeyManagement, "", ports.Page{})
	f.must(err)
	if len(keys) != 0 {
		t.Fatalf("a refused redemption stored keys: %+v", keys)
	}
	wantKind(t, f.s.DecideDeviceGrant(f.ctx, uuid.NewString(), ports.DeviceDecision{Status: core.DeviceDenied, AccountID: a.ID}), core.KindNotFound)
	wantKind(t, f.s.RecordDevicePoll(f.ctx, uuid.NewString(), f.tick(), time.Second), core.KindNotFound)
}

func testDeviceGrantsExpire(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	old := f.grant()
	fresh := f.grant()
	decided := f.grant()
	f.must(f.s.DecideDeviceGrant(f.ctx, decided.ID, ports.DeviceDecision{Status: core.DeviceApproved, AccountID: a.ID, KeyType: core.KeyIdentity, IdentityID: ident.ID}))
	f.must(f.s.DeleteDeviceGrants(f.ctx, old.ExpiresAt.Add(time.Microsecond)))
	_, err := f.s.DeviceGrantByUserCode(f.ctx, old.UserCode)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.DeviceGrantByUserCode(f.ctx, fresh.UserCode)
	f.must(err)
	f.must(f.s.DeleteAccount(f.ctx, a.ID))
	_, err = f.s.DeviceGrantByUserCode(f.ctx, decided.UserCode)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.DeviceGrantByUserCode(f.ctx, fresh.UserCode)
	f.must(err)
}

func testRefreshFamilies(t *testing.T, f *fixture) {
	a := f.account()
	fam := core.RefreshFamily{ID: uuid.NewString(), AccountID: a.ID, Generation: 1, CreatedAt: f.tick(), ExpiresAt: f.now.Add(time.Hour)}
	f.must(f.s.CreateRefreshFamily(f.ctx, fam))
	got, err := f.s.RefreshFamily(f.ctx, fam.ID)
	if err != nil || got.AccountID != a.ID || got.Generation != 1 || !got.ExpiresAt.Equal(fam.ExpiresAt) || got.RevokedAt != nil {
		t.Fatalf("read back %+v, %v", got, err)
	}
	next, err := f.s.RotateRefreshFamily(f.ctx, fam.ID, 1, f.tick())
	if err != nil || next.Generation != 2 {
		t.Fatalf("rotate: %+v, %v", next, err)
	}
	reusedAt := f.tick()
	if _, err := f.s.RotateRefreshFamily(f.ctx, fam.ID, 1, reusedAt); err != core.ErrRefreshReused {
		t.Fatalf("reuse: %v", err)
	}
	// The revocation was kept although the rotation was refused.
	if got, err := f.s.RefreshFamily(f.ctx, fam.ID); err != nil || got.RevokedAt == nil || !got.RevokedAt.Equal(reusedAt) || got.Active(f.tick()) {
		t.Fatalf("after a reuse: %+v, %v", got, err)
	}
	if _, err := f.s.RotateRefreshFamily(f.ctx, fam.ID, 2, f.tick()); err != core.ErrRefreshEnded {
		t.Fatalf("the newest token of a revoked family: %v", err)
	}
	_, err = f.s.RotateRefreshFamily(f.ctx, uuid.NewString(), 1, f.tick())
	wantKind(t, err, core.KindNotFound)

	old := core.RefreshFamily{ID: uuid.NewString(), AccountID: a.ID, Generation: 1, CreatedAt: f.tick(), ExpiresAt: f.now.Add(time.Minute)}
	f.must(f.s.CreateRefreshFamily(f.ctx, old))
	f.must(f.s.DeleteRefreshFamilies(f.ctx, f.now.Add(2*time.Minute)))
	_, err = f.s.RefreshFamily(f.ctx, old.ID)
	wantKind(t, err, core.KindNotFound)
	f.must(f.s.DeleteAccount(f.ctx, a.ID))
	_, err = f.s.RefreshFamily(f.ctx, fam.ID)
	wantKind(t, err, core.KindNotFound)
}
