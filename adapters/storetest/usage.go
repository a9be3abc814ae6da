package storetest

import (
	"bytes"
	"maps"
	"testing"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// testUsage counts what an account holds against its quotas as the
// account changes: storage follows mail and uploads in and out (an
// identity's deletion included), counts are the account's own, vault
// items are per identity, and sends are what went out since a time, even
// when what was sent is deleted since.
func testUsage(t *testing.T, f *fixture) {
	a, other := f.account(), f.account()
	i1, in1 := f.identity(a.ID)
	i2, in2 := f.identity(a.ID)
	otherIdent, otherInbox := f.identity(other.ID)
	usage := func(accountID, identityID string, since ...core.EmailMessage) core.Usage {
		t.Helper()
		from := f.now
		if len(since) > 0 {
			from = since[0].CreatedAt
		}
		u, err := f.s.Usage(f.ctx, accountID, identityID, from, core.Quotas)
		f.must(err)
		return u
	}
	want := func(u core.Usage, used map[core.Quota]int64) {
		t.Helper()
		if !maps.Equal(u.Used, used) {
			t.Fatalf("usage %v, want %v", u.Used, used)
		}
	}
	want(usage(a.ID, ""), map[core.Quota]int64{core.QuotaStorage: 0, core.QuotaIdentities: 2, core.QuotaInboxes: 2, core.QuotaPhones: 0,
		core.QuotaVaultItems: 0, core.QuotaSendsPerHour: 0})

	received := incoming(in1, "in@x", "Hello", f.tick(), "")
	received.Attachments = []ports.AttachmentContent{{Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID, IdentityID: i1.ID,
		Filename: "a.bin", ContentType: "application/octet-stream", Size: 300, CreatedAt: f.now}, Content: bytes.Repeat([]byte{1}, 300)}}
	sentMail := incoming(in2, "out@x", "Sent", f.tick(), "")
	sentMail.Message.Direction, sentMail.Raw = core.Outgoing, bytes.Repeat([]byte("x"), 1000)
	stored := f.save(received, sentMail)
	f.save(incoming(otherInbox, "other@x", "Theirs", f.tick(), ""))
	upload := ports.AttachmentContent{Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID, IdentityID: i1.ID,
		Filename: "up.txt", ContentType: "text/plain", Size: 50, CreatedAt: f.now}, Content: bytes.Repeat([]byte{2}, 50)}
	f.must(f.s.SaveUpload(f.ctx, upload))
	phone := f.phone(i1)
	sentText := f.saveSMS(smsFor(phone, core.Outgoing, "+14155550100", "hi", "SM"+uuid.NewString()[:8], f.tick()))
	f.saveSMS(smsFor(phone, core.Incoming, "+14155550100", "hello", "SM"+uuid.NewString()[:8], f.tick()))
	f.password(i1, "a.example")
	f.password(i1, "b.example")
	f.secret(i1, "TOKEN")
	f.secret(i2, "TOKEN")
	f.password(otherIdent, "c.example")

	storage := int64(len(received.Raw) + 300 + 1000 + 50)
	u := usage(a.ID, "", stored[1])
	want(u, map[core.Quota]int64{core.QuotaStorage: storage, core.QuotaIdentities: 2, core.QuotaInboxes: 2, core.QuotaPhones: 1,
		core.QuotaVaultItems: 3, core.QuotaSendsPerHour: 2})
	if !u.OldestSend.Equal(stored[1].CreatedAt) {
		t.Fatalf("oldest send %v, want the mail's %v", u.OldestSend, stored[1].CreatedAt)
	}
	if u := usage(a.ID, i2.ID); u.Used[core.QuotaVaultItems] != 1 {
		t.Fatalf("the second identity's vault items: %v", u.Used)
	}
	later := core.EmailMessage{CreatedAt: sentText.CreatedAt}
	if u := usage(a.ID, "", later); u.Used[core.QuotaSendsPerHour] != 1 || !u.OldestSend.Equal(sentText.CreatedAt) {
		t.Fatalf("sends since the text: %v, oldest %v", u.Used, u.OldestSend)
	}

	f.must(f.s.DeleteMessage(f.ctx, a.ID, stored[0].ID))
	storage -= int64(len(received.Raw) + 300)
	if u := usage(a.ID, ""); u.Used[core.QuotaStorage] != storage {
		t.Fatalf("storage after a delete: %d, want %d", u.Used[core.QuotaStorage], storage)
	}
	// A draft's bodies count, in bytes, as they change; it goes with its
	// identity.
	content := "héllo"
	draft := core.Draft{ID: uuid.NewString(), AccountID: a.ID, IdentityID: i2.ID, InboxID: in2.ID, Kind: core.DraftCompose,
		To: []string{"x@example.org"}, Content: &content, HTML: "<p>x</p>", AttachmentIDs: []string{}, CreatedAt: f.now, UpdatedAt: f.now}
	f.must(f.s.CreateDraft(f.ctx, draft))
	if u := usage(a.ID, ""); u.Used[core.QuotaStorage] != storage+6+8 {
		t.Fatalf("storage with a draft: %d, want %d", u.Used[core.QuotaStorage], storage+6+8)
	}
	longer := "héllo again"
	draft.Content, draft.HTML = &longer, ""
	f.must(f.s.UpdateDraft(f.ctx, draft))
	if u := usage(a.ID, ""); u.Used[core.QuotaStorage] != storage+12 {
		t.Fatalf("storage with a changed draft: %d, want %d", u.Used[core.QuotaStorage], storage+12)
	}
	// The sent mail goes with its identity; its send still counts.
	f.must(f.s.DeleteIdentity(f.ctx, a.ID, i2.ID))
	want(usage(a.ID, "", stored[1]), map[core.Quota]int64{core.QuotaStorage: 50, core.QuotaIdentities: 1, core.QuotaInboxes: 1, core.QuotaPhones: 1,
		core.QuotaVaultItems: 3, core.QuotaSendsPerHour: 2})

	theirs := usage(other.ID, "")
	f.must(f.s.DeleteAccount(f.ctx, a.ID))
	if u := usage(other.ID, ""); !maps.Equal(u.Used, theirs.Used) {
		t.Fatalf("another account's usage moved: %v, was %v", u.Used, theirs.Used)
	}
	_, err := f.s.Usage(f.ctx, a.ID, "", f.now, []core.Quota{core.QuotaStorage})
	wantKind(t, err, core.KindNotFound)
}

// testStoredBytes holds every store to core's figure of what each row takes
// of the storage quota (core.MessageStoredBytes, AttachmentStoredBytes,
// DraftStoredBytes), in multi-byte text, as rows are stored, changed,
// sent and deleted, cascades included.
func testStoredBytes(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	var want int64
	check := func(step string) {
		t.Helper()
		u, err := f.s.Usage(f.ctx, a.ID, "", f.now, []core.Quota{core.QuotaStorage})
		f.must(err)
		if got := u.Used[core.QuotaStorage]; got != want {
			t.Fatalf("%s: storage %d bytes, want core's %d", step, got, want)
		}
	}
	attachment := func(name string, content []byte, inSource bool) ports.AttachmentContent {
		return ports.AttachmentContent{Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID,
			Filename: name, ContentType: "text/plain", Size: int64(len(content)), CreatedAt: f.now}, Content: content, InSource: inSource}
	}

	mail := incoming(in, "grüße@x", "Grüße", f.tick(), "")
	mail.Raw = []byte("Subject: Grüße\r\n\r\nÀ bientôt, 世界 ✓\r\n")
	mail.Attachments = []ports.AttachmentContent{attachment("in-source.txt", nil, true), attachment("kept.txt", []byte("naïve ✓"), false)}
	msg := f.save(mail)[0]
	want += core.MessageStoredBytes(mail.Raw)
	for _, at := range mail.Attachments {
		want += core.AttachmentStoredBytes(at.Content, at.InSource)
	}
	check("a message with its attachments")
	upload := attachment("upload.txt", []byte("crème brûlée"), false)
	f.must(f.s.SaveUpload(f.ctx, upload))
	want += core.AttachmentStoredBytes(upload.Content, upload.InSource)
	check("an upload")

	content := "Grüße, 世界"
	draft := core.Draft{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, InboxID: in.ID, Kind: core.DraftCompose,
		To: []string{"x@example.org"}, Content: &content, HTML: "<p>Grüße, <b>世界</b></p>", AttachmentIDs: []string{}, CreatedAt: f.now, UpdatedAt: f.now}
	f.must(f.s.CreateDraft(f.ctx, draft))
	want += core.DraftStoredBytes(draft)
	check("a draft with text and HTML")
	for _, change := range []func(d *core.Draft){
		func(d *core.Draft) { d.Content = nil },                                           // HTML only
		func(d *core.Draft) { longer := "ça va? " + content + " ✓"; d.Content = &longer }, // both again
		func(d *core.Draft) { d.HTML = "" },                                               // text only
	} {
		want -= core.DraftStoredBytes(draft)
		change(&draft)
		f.must(f.s.UpdateDraft(f.ctx, draft))
		want += core.DraftStoredBytes(draft)
		check("a changed draft")
	}
	f.must(f.s.DeleteDraft(f.ctx, a.ID, draft.ID))
	want -= core.DraftStoredBytes(draft)
	check("a deleted draft")

	// A draft sent leaves in the transaction that stores its message.
	draft.ID = uuid.NewString()
	f.must(f.s.CreateDraft(f.ctx, draft))
	sent := incoming(in, "sent@x", "Envoyé", f.tick(), "")
	sent.Message.Direction, sent.Raw, sent.FromDraft = core.Outgoing, []byte("Subject: Envoyé\r\n\r\n"+content+"\r\n"), &draft
	f.save(sent)
	want += core.MessageStoredBytes(sent.Raw)
	check("a draft sent")

	f.must(f.s.DeleteMessage(f.ctx, a.ID, msg.ID)) // its attachments go with it
	want -= core.MessageStoredBytes(mail.Raw)
	for _, at := range mail.Attachments {
		want -= core.AttachmentStoredBytes(at.Content, at.InSource)
	}
	check("a deleted message")
	f.must(f.s.CreateDraft(f.ctx, core.Draft{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, InboxID: in.ID,
		Kind: core.DraftCompose, To: []string{}, Content: &content, AttachmentIDs: []string{}, CreatedAt: f.now, UpdatedAt: f.now}))
	f.must(f.s.DeleteIdentity(f.ctx, a.ID, ident.ID)) // the upload, the sent message and the draft go with it
	want = 0
	check("a deleted identity")
}
