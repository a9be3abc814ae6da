package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// customDomain stores a pending domain with one active key.
func (f *fixture) customDomain(accountID, name string) (core.Domain, ports.StoredDKIMKey) {
	f.t.Helper()
	now := f.tick()
	d := core.Domain{Name: name, Type: core.DomainCustom, Status: core.DomainPending, AccountID: accountID, CreatedAt: now, NextCheckAt: now}
	k := f.dkimKey(name, "cs1", true)
	f.must(f.s.CreateCustomDomain(f.ctx, d, k))
	d.Keys = []core.DKIMKey{k.Key}
	return d, k
}

func (f *fixture) dkimKey(domain, selector string, active bool) ports.StoredDKIMKey {
	return ports.StoredDKIMKey{ID: uuid.NewString(), Domain: domain, Private: []byte("sealed-" + selector),
		Key: core.DKIMKey{Selector: selector, Algorithm: "rsa", PublicKey: "PUB-" + selector, Active: active, CreatedAt: f.tick()}}
}

func testDomainsCreate(t *testing.T, f *fixture) {
	a, b := f.account(), f.account()
	d, k := f.customDomain(a.ID, "acme.example")
	f.customDomain(a.ID, "acme-mail.example")
	wantConflictOn(t, f.s.CreateCustomDomain(f.ctx, core.Domain{Name: "acme.example", Status: core.DomainPending, AccountID: b.ID,
		CreatedAt: f.tick(), NextCheckAt: f.now}, f.dkimKey("acme.example", "other", true)), "name")

	got, err := f.s.CustomDomain(f.ctx, a.ID, "acme.example")
	f.must(err)
	if got.Name != d.Name || got.Type != core.DomainCustom || got.Status != core.DomainPending || got.AccountID != a.ID ||
		!got.CreatedAt.Equal(d.CreatedAt) || !got.NextCheckAt.Equal(d.NextCheckAt) || !got.VerifiedAt.IsZero() || !got.LastCheckedAt.IsZero() {
		t.Fatalf("domain %+v", got)
	}
	if len(got.Keys) != 1 || got.Keys[0] != k.Key {
		t.Fatalf("keys %+v, want %+v", got.Keys, k.Key)
	}
	_, err = f.s.CustomDomain(f.ctx, b.ID, "acme.example")
	wantKind(t, err, core.KindNotFound)
	if byName, err := f.s.DomainByName(f.ctx, "acme.example"); err != nil || byName.AccountID != a.ID {
		t.Fatalf("by name: %+v, %v", byName, err)
	}
	_, err = f.s.DomainByName(f.ctx, "nobody.example")
	wantKind(t, err, core.KindNotFound)

	list, err := f.s.CustomDomains(f.ctx, a.ID)
	f.must(err)
	if len(list) != 2 || list[0].Name != "acme-mail.example" || list[1].Name != "acme.example" || len(list[1].Keys) != 1 {
		t.Fatalf("list %+v", list)
	}
	if list, _ := f.s.CustomDomains(f.ctx, b.ID); len(list) != 0 {
		t.Fatalf("another account's list %+v", list)
	}
}

func testDomainsMTASTSMode(t *testing.T, f *fixture) {
	a, b := f.account(), f.account()
	f.customDomain(a.ID, "sts.example")
	got, err := f.s.CustomDomain(f.ctx, a.ID, "sts.example")
	f.must(err)
	if got.STSMode() != core.MTASTSTesting {
		t.Fatalf("new domain's mode %q", got.MTASTSMode)
	}
	f.must(f.s.SetMTASTSMode(f.ctx, a.ID, "sts.example", core.MTASTSEnforce))
	if got, _ := f.s.DomainByName(f.ctx, "sts.example"); got.STSMode() != core.MTASTSEnforce {
		t.Fatalf("mode after setting %q", got.MTASTSMode)
	}
	wantKind(t, f.s.SetMTASTSMode(f.ctx, b.ID, "sts.example", core.MTASTSTesting), core.KindNotFound)
	wantKind(t, f.s.SetMTASTSMode(f.ctx, a.ID, "nobody.example", core.MTASTSTesting), core.KindNotFound)
}

func testDomainsChecksAndKeys(t *testing.T, f *fixture) {
	a := f.account()
	d, first := f.customDomain(a.ID, "acme.example")
	signing, err := f.s.SigningKey(f.ctx, "acme.example")
	f.must(err)
	if signing.ID != first.ID || string(signing.Private) != "sealed-cs1" || signing.Key != first.Key {
		t.Fatalf("signing key %+v", signing)
	}

	// A check: verified, with record statuses.
	now := f.tick()
	d.Status, d.Reason, d.VerifiedAt, d.LastCheckedAt, d.NextCheckAt = core.DomainVerified, "", now, now, now.Add(24*time.Hour)
	d.Checks = map[core.RecordPurpose]core.RecordStatus{core.PurposeMX: core.RecordOK, core.PurposeDKIM: core.RecordOK, core.PurposeSPF: core.RecordMissing}
	f.must(f.s.SaveDomainCheck(f.ctx, d, ""))
	got, _ := f.s.CustomDomain(f.ctx, a.ID, d.Name)
	if got.Status != core.DomainVerified || !got.VerifiedAt.Equal(now) || !got.LastCheckedAt.Equal(now) || got.Checks[core.PurposeSPF] != core.RecordMissing || len(got.Checks) != 3 {
		t.Fatalf("after a check: %+v", got)
	}

	// A rotation: a next key, replaced by another next key.
	f.must(f.s.AddDKIMKey(f.ctx, a.ID, f.dkimKey(d.Name, "cs2", false)))
	next := f.dkimKey(d.Name, "cs3", false)
	f.must(f.s.AddDKIMKey(f.ctx, a.ID, next))
	wantConflictOn(t, f.s.AddDKIMKey(f.ctx, a.ID, f.dkimKey(d.Name, "cs1", false)), "selector")
	wantKind(t, f.s.AddDKIMKey(f.ctx, f.account().ID, f.dkimKey(d.Name, "cs9", false)), core.KindNotFound)
	got, _ = f.s.CustomDomain(f.ctx, a.ID, d.Name)
	if len(got.Keys) != 2 || got.Keys[0].Selector != "cs1" || !got.Keys[0].Active || got.Keys[1].Selector != "cs3" || got.Keys[1].Active {
		t.Fatalf("keys during a rotation: %+v", got.Keys)
	}
	// The next key's record verified: it signs, the first goes.
	got.Keys = []core.DKIMKey{{Selector: "cs3", Active: true}}
	f.must(f.s.SaveDomainCheck(f.ctx, got, "cs1"))
	got, _ = f.s.CustomDomain(f.ctx, a.ID, d.Name)
	if len(got.Keys) != 1 || got.Keys[0].Selector != "cs3" || !got.Keys[0].Active {
		t.Fatalf("keys after the rotation: %+v", got.Keys)
	}
	if signing, err := f.s.SigningKey(f.ctx, d.Name); err != nil || signing.ID != next.ID {
		t.Fatalf("signing key after the rotation: %+v, %v", signing, err)
	}
	_, err = f.s.SigningKey(f.ctx, "nobody.example")
	wantKind(t, err, core.KindNotFound)
	wantKind(t, f.s.SaveDomainCheck(f.ctx, core.Domain{Name: d.Name, AccountID: f.account().ID, Status: core.DomainFailed}, ""), core.KindNotFound)

	// Private keys are sealed values: key rotation reaches them.
	var found bool
	var after ports.SealedValue
	for {
		page, err := f.s.SealedValues(f.ctx, after, 10)
		f.must(err)
		if len(page) == 0 {
			break
		}
		for _, v := range page {
			if v.Table == "dkim_keys" && v.ID == next.ID && v.Field == "private_key" && string(v.Sealed) == "sealed-cs3" {
				found = true
				ok, err := f.s.ReplaceSealed(f.ctx, v, []byte("resealed"))
				f.must(err)
				if !ok {
					t.Fatal("resealing a DKIM key failed")
				}
			}
		}
		after = page[len(page)-1]
	}
	if signing, _ := f.s.SigningKey(f.ctx, d.Name); !found || string(signing.Private) != "resealed" {
		t.Fatalf("the DKIM key is not among the sealed values (found %v, now %q)", found, signing.Private)
	}
}

func testDomainsClaims(t *testing.T, f *fixture) {
	a := f.account()
	early, _ := f.customDomain(a.ID, "early.example")
	late, _ := f.customDomain(a.ID, "late.example")
	late.NextCheckAt = f.now.Add(time.Hour)
	f.must(f.s.SaveDomainCheck(f.ctx, late, ""))

	now := f.tick()
	claimed, err := f.s.ClaimDomainChecks(f.ctx, now, now.Add(time.Minute), 10)
	f.must(err)
	if len(claimed) != 1 || claimed[0].Name != early.Name || len(claimed[0].Keys) != 1 {
		t.Fatalf("claimed %+v", claimed)
	}
	if again, _ := f.s.ClaimDomainChecks(f.ctx, now, now.Add(time.Minute), 10); len(again) != 0 {
		t.Fatalf("a leased domain was claimed again: %+v", again)
	}
	// The lease runs out: claimable again; a saved check ends the lease.
	if again, _ := f.s.ClaimDomainChecks(f.ctx, now.Add(2*time.Minute), now.Add(3*time.Minute), 10); len(again) != 1 {
		t.Fatalf("after the lease: %+v", again)
	}
	early.NextCheckAt = now
	f.must(f.s.SaveDomainCheck(f.ctx, early, ""))
	if again, _ := f.s.ClaimDomainChecks(f.ctx, now.Add(2*time.Minute), now.Add(3*time.Minute), 1); len(again) != 1 || again[0].Name != early.Name {
		t.Fatalf("after a saved check: %+v", again)
	}
	// Soonest due first, up to the limit.
	later := now.Add(2 * time.Hour)
	if first, _ := f.s.ClaimDomainChecks(f.ctx, later, later.Add(time.Hour), 1); len(first) != 1 || first[0].Name != early.Name {
		t.Fatalf("the limit and the order: %+v", first)
	}
	if rest, _ := f.s.ClaimDomainChecks(f.ctx, later, later.Add(time.Hour), 10); len(rest) != 1 || rest[0].Name != late.Name {
		t.Fatalf("the rest: %+v", rest)
	}
}

func testDomainsDelete(t *testing.T, f *fixture) {
	a := f.account()
	d, _ := f.customDomain(a.ID, "acme.example")
	ident, _ := f.identity(a.ID)
	for _, local := range []string{"zed", "ann"} {
		_, err := f.s.CreateInbox(f.ctx, core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: local + "@acme.example", CreatedAt: f.tick()})
		f.must(err)
	}
	_, err := f.s.CreateInbox(f.ctx, core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: "x@subacme.example", CreatedAt: f.tick()})
	f.must(err)
	using, err := f.s.InboxesOnDomain(f.ctx, d.Name, 10)
	f.must(err)
	if len(using) != 2 || using[0] != "ann@acme.example" || using[1] != "zed@acme.example" {
		t.Fatalf("inboxes on the domain: %v", using)
	}
	if one, _ := f.s.InboxesOnDomain(f.ctx, d.Name, 1); len(one) != 1 {
		t.Fatalf("limit: %v", one)
	}
	wantKind(t, f.s.DeleteCustomDomain(f.ctx, f.account().ID, d.Name), core.KindNotFound)
	f.must(f.s.DeleteCustomDomain(f.ctx, a.ID, d.Name))
	_, err = f.s.DomainByName(f.ctx, d.Name)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.SigningKey(f.ctx, d.Name)
	wantKind(t, err, core.KindNotFound)
	// The name is free again, and goes with its account.
	b := f.account()
	f.customDomain(b.ID, d.Name)
	f.must(f.s.DeleteAccount(f.ctx, b.ID))
	_, err = f.s.DomainByName(f.ctx, d.Name)
	wantKind(t, err, core.KindNotFound)
}

func testSuppressions(t *testing.T, f *fixture) {
	a := f.account()
	one, _ := f.identity(a.ID)
	two, _ := f.identity(a.ID)
	first := core.Suppression{AccountID: a.ID, IdentityID: one.ID, Email: "Gone@Example.net", Reason: "550 5.1.1 no such user", CreatedAt: f.tick()}
	f.must(f.s.Suppress(f.ctx, first))
	f.must(f.s.Suppress(f.ctx, core.Suppression{AccountID: a.ID, IdentityID: two.ID, Email: "moved@example.net", Reason: "551 moved", CreatedAt: f.tick()}))
	other := f.account()
	otherIdent, _ := f.identity(other.ID)
	f.must(f.s.Suppress(f.ctx, core.Suppression{AccountID: other.ID, IdentityID: otherIdent.ID, Email: "gone@example.net", Reason: "x", CreatedAt: f.tick()}))

	all, _, err := f.s.Suppressions(f.ctx, ports.SuppressionFilter{Scope: core.Scope{AccountID: a.ID}})
	f.must(err)
	if len(all) != 2 || all[0].Email != "moved@example.net" || all[1].Email != "gone@example.net" || all[1].Reason != first.Reason || !all[1].CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("list %+v", all)
	}
	if mine, _, _ := f.s.Suppressions(f.ctx, ports.SuppressionFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: one.ID}}); len(mine) != 1 || mine[0].IdentityID != one.ID {
		t.Fatalf("identity scope %+v", mine)
	}
	if byEmail, _, _ := f.s.Suppressions(f.ctx, ports.SuppressionFilter{Scope: core.Scope{AccountID: a.ID}, Email: "GONE@example.net"}); len(byEmail) != 1 {
		t.Fatalf("by email %+v", byEmail)
	}
	if none, _, _ := f.s.Suppressions(f.ctx, ports.SuppressionFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: one.ID, Empty: true}}); len(none) != 0 {
		t.Fatalf("empty scope %+v", none)
	}

	// Bouncing again refreshes the entry: the latest identity and reason.
	f.must(f.s.Suppress(f.ctx, core.Suppression{AccountID: a.ID, IdentityID: two.ID, Email: "gone@example.net", Reason: "550 5.1.1 still gone", CreatedAt: f.tick()}))
	among, err := f.s.SuppressedAmong(f.ctx, a.ID, []string{"ok@example.net", "GONE@EXAMPLE.NET"})
	f.must(err)
	if len(among) != 1 || among[0].IdentityID != two.ID || among[0].Reason != "550 5.1.1 still gone" {
		t.Fatalf("among %+v", among)
	}
	if none, _ := f.s.SuppressedAmong(f.ctx, a.ID, nil); len(none) != 0 {
		t.Fatalf("among nothing %+v", none)
	}

	wantKind(t, f.s.DeleteSuppression(f.ctx, core.Scope{AccountID: a.ID, IdentityID: one.ID}, "gone@example.net"), core.KindNotFound)
	f.must(f.s.DeleteSuppression(f.ctx, core.Scope{AccountID: a.ID, IdentityID: two.ID}, "Gone@Example.net"))
	wantKind(t, f.s.DeleteSuppression(f.ctx, core.Scope{AccountID: a.ID}, "gone@example.net"), core.KindNotFound)
	if left, _ := f.s.SuppressedAmong(f.ctx, other.ID, []string{"gone@example.net"}); len(left) != 1 {
		t.Fatalf("another account's entry went too: %+v", left)
	}
	f.must(f.s.DeleteAccount(f.ctx, other.ID))
	if left, _ := f.s.SuppressedAmong(f.ctx, other.ID, []string{"gone@example.net"}); len(left) != 0 {
		t.Fatalf("entries outlive their account: %+v", left)
	}
}

func testMailVerdictsAndRecipients(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	pass := incoming(in, "pass@x", "Genuine", f.tick(), "")
	pass.Message.Authentication = &core.Authentication{SPF: core.AuthPass, DKIM: core.AuthPass, DMARC: core.AuthPass, Verdict: core.AuthPass,
		Policy: core.DMARCReject, Checked: true}
	forged := incoming(in, "fail@x", "Forged", f.tick(), "")
	forged.Message.Authentication = &core.Authentication{SPF: core.AuthFail, DKIM: core.AuthNone, DMARC: core.AuthFail, Verdict: core.AuthFail,
		Policy: core.DMARCReject, Checked: true}
	unchecked := incoming(in, "none@x", "Unchecked", f.tick(), "")
	sent := incoming(in, "sent@x", "Sent", f.tick(), "")
	sent.Message.Direction, sent.Message.DeliveryStatus, sent.Message.BounceToken = core.Outgoing, core.DeliverySent, "abcdefghijklmnopqrst"
	sent.Message.Recipients = []core.Recipient{{Email: "ann@example.net", Status: core.RecipientSent}, {Email: "bob@example.net", Status: core.RecipientQueued}}
	stored := f.save(pass, forged, unchecked, sent)

	got, err := f.s.Message(f.ctx, a.ID, stored[1].ID)
	f.must(err)
	if a := got.Authentication; a == nil || a.SPF != core.AuthFail || a.DKIM != core.AuthNone || a.DMARC != core.AuthFail ||
		a.Verdict != core.AuthFail || a.Policy != core.DMARCReject {
		t.Fatalf("authentication %+v", got.Authentication)
	}
	if got, _ := f.s.Message(f.ctx, a.ID, stored[2].ID); got.Authentication != nil || got.BounceToken != "" || len(got.Recipients) != 0 {
		t.Fatalf("unchecked message %+v", got)
	}
	yes, no := true, false
	if list, n, _ := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}, Authenticated: &yes}); n != 1 || list[0].ID != stored[0].ID {
		t.Fatalf("authenticated: %d %v", n, msgIDs(list))
	}
	if list, n, _ := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}, Authenticated: &no}); n != 3 {
		t.Fatalf("not authenticated: %d %v", n, msgIDs(list))
	}

	byToken, err := f.s.MessageByBounceToken(f.ctx, "abcdefghijklmnopqrst")
	f.must(err)
	if byToken.ID != stored[3].ID || len(byToken.Recipients) != 2 || byToken.Recipients[1] != sent.Message.Recipients[1] {
		t.Fatalf("by token %+v", byToken)
	}
	_, err = f.s.MessageByBounceToken(f.ctx, "tttttttttttttttttttt")
	wantKind(t, err, core.KindNotFound)
	// A provider's report names the message by its Message-ID alone.
	byID, err := f.s.SentMessageByMessageID(f.ctx, byToken.MessageID)
	f.must(err)
	if byID.ID != byToken.ID || byID.Direction != core.Outgoing {
		t.Fatalf("by Message-ID %+v", byID)
	}
	_, err = f.s.SentMessageByMessageID(f.ctx, "never-sent@example.net")
	wantKind(t, err, core.KindNotFound)

	f.must(f.s.SetRecipients(f.ctx, byToken.ID, []core.Recipient{{Email: "ann@example.net", Status: core.RecipientSent, ProviderID: "0100018c-ses"},
		{Email: "bob@example.net", Status: core.RecipientSent}}))
	if got, _ := f.s.Message(f.ctx, a.ID, byToken.ID); got.Recipients[0].ProviderID != "0100018c-ses" || got.Recipients[1].ProviderID != "" {
		t.Fatalf("provider ids kept: %+v", got.Recipients)
	}
	m, bounced, err := f.s.ApplyReport(f.ctx, byToken.ID, []core.DSNRecipient{{FinalRecipient: "ann@example.net", Action: core.DSNFailed, Status: "5.1.1", Diagnostic: "smtp; 550 5.1.1 unknown"}})
	f.must(err)
	if len(bounced) != 1 || m.DeliveryStatus != core.DeliverySent || m.Recipients[0].Status != core.RecipientBounced || m.Recipients[0].Error != "smtp; 550 5.1.1 unknown" {
		t.Fatalf("after one bounce: %+v %+v", m.Recipients, bounced)
	}
	m, _, err = f.s.ApplyReport(f.ctx, byToken.ID, []core.DSNRecipient{{FinalRecipient: "bob@example.net", Action: core.DSNFailed, Status: "5.2.1"}})
	f.must(err)
	if got, _ := f.s.Message(f.ctx, a.ID, m.ID); got.DeliveryStatus != core.DeliveryBounced || got.Recipients[1].Status != core.RecipientBounced {
		t.Fatalf("after every recipient bounced: %+v", got)
	}
	_, _, err = f.s.ApplyReport(f.ctx, 1<<40, nil)
	wantKind(t, err, core.KindNotFound)
}
