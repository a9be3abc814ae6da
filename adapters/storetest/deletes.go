package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// wantThreadOf fails unless the stored thread is what core's fold of msgs
// (oldest first) makes of it.
func (f *fixture) wantThreadOf(accountID string, msgs ...core.EmailMessage) {
	f.t.Helper()
	got, err := f.s.Thread(f.ctx, accountID, msgs[0].ThreadID)
	f.must(err)
	want := core.StartThread(msgs[0].ThreadID, msgs[0])
	for _, m := range msgs {
		want.Add(m)
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) { // an empty list reads back as [] or nil
		f.t.Fatalf("thread\n got %+v\nwant %+v", got, want)
	}
}

func testMailDeleteRecountsThread(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	root := incoming(in, "root@x", "Plans", f.tick(), "")
	root.Attachments = []ports.AttachmentContent{{Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID,
		IdentityID: ident.ID, Filename: "plan.pdf", ContentType: "application/pdf", Size: 3, CreatedAt: f.now}, Content: []byte("pdf")}}
	first := f.save(root)[0]
	reply := incoming(in, "reply@x", "Re: Plans", f.tick(), "root@x")
	reply.Message.Direction, reply.Message.IsRead, reply.Message.FromEmail = core.Outgoing, true, in.Email
	reply.Message.To = []string{"someone@example.net"}
	reply.Outbox = &ports.OutboxEntry{AccountID: a.ID, EnvelopeFrom: in.Email, Recipients: []string{"someone@example.net"},
		NextAttempt: f.now, GiveUpAt: f.now.Add(time.Hour)}
	second := f.save(reply)[0]
	third := f.save(incoming(in, "again@x", "Re: Plans", f.tick(), "reply@x"))[0]
	f.wantThreadOf(a.ID, first, second, third)

	// Another account's key deletes nothing.
	wantKind(t, f.s.DeleteMessage(f.ctx, f.account().ID, second.ID), core.KindNotFound)

	// The middle one, still in the outbox: it is never sent.
	f.must(f.s.DeleteMessage(f.ctx, a.ID, second.ID))
	_, err := f.s.Message(f.ctx, a.ID, second.ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.RawMessage(f.ctx, a.ID, second.ID)
	wantKind(t, err, core.KindNotFound)
	if claimed, _ := f.s.ClaimOutbox(f.ctx, f.now.Add(time.Hour), f.now.Add(2*time.Hour), 10); len(claimed) != 0 {
		t.Fatalf("a deleted message is still in the outbox: %+v", claimed)
	}
	f.wantThreadOf(a.ID, first, third)
	wantKind(t, f.s.DeleteMessage(f.ctx, a.ID, second.ID), core.KindNotFound)

	// The first one: its attachment goes, and the subject is the next one's.
	f.must(f.s.DeleteMessage(f.ctx, a.ID, first.ID))
	_, err = f.s.Attachment(f.ctx, a.ID, first.Attachments[0].ID)
	wantKind(t, err, core.KindNotFound)
	f.wantThreadOf(a.ID, third)

	// The last one takes the thread with it.
	f.must(f.s.DeleteMessage(f.ctx, a.ID, third.ID))
	_, err = f.s.Thread(f.ctx, a.ID, third.ThreadID)
	wantKind(t, err, core.KindNotFound)
	if threads, _, _ := f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID}}); len(threads) != 0 {
		t.Fatalf("threads left: %+v", threads)
	}
	if entries, _ := f.s.MailboxEntries(f.ctx, in.ID, core.Incoming, false); len(entries) != 0 {
		t.Fatalf("mailbox entries left: %+v", entries)
	}
}

func testSMSDeleteRecountsConversation(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	p := f.phone(ident)
	ann := "+12025550111"
	var msgs []core.SMSMessage
	for i, dir := range []core.Direction{core.Incoming, core.Outgoing, core.Incoming} {
		msgs = append(msgs, f.saveSMS(smsFor(p, dir, ann, fmt.Sprint("text ", i), fmt.Sprintf("SMdel%d%s", i, p.ProviderSID), f.tick())))
	}
	wantConversation := func(rest ...core.SMSMessage) {
		t.Helper()
		got, err := f.s.Conversation(f.ctx, a.ID, p.ID, ann)
		f.must(err)
		if want := core.SummarizeConversation(rest); got != want {
			t.Fatalf("conversation\n got %+v\nwant %+v", got, want)
		}
	}
	wantKind(t, f.s.DeleteSMS(f.ctx, f.account().ID, msgs[2].ID), core.KindNotFound)
	f.must(f.s.DeleteSMS(f.ctx, a.ID, msgs[2].ID)) // the latest, unread: preview and count move back
	wantConversation(msgs[0], msgs[1])
	f.must(f.s.DeleteSMS(f.ctx, a.ID, msgs[0].ID))
	wantConversation(msgs[1])
	f.must(f.s.DeleteSMS(f.ctx, a.ID, msgs[1].ID))
	_, err := f.s.Conversation(f.ctx, a.ID, p.ID, ann)
	wantKind(t, err, core.KindNotFound)
}

// owned is everything the contract's delete cases give one identity.
type owned struct {
	ident       core.Identity
	first, more core.Inbox
	message     core.EmailMessage
	upload      string
	phone       core.PhoneNumber
	keyID       int64
}

func (f *fixture) ownEverything(a core.Account) owned {
	f.t.Helper()
	ident, first := f.identity(a.ID)
	o := owned{ident: ident, first: first}
	var err error
	o.more = core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: "more-" + first.Email, CreatedAt: f.tick()}
	o.more.ID, err = f.s.CreateInbox(f.ctx, o.more)
	f.must(err)
	nm := incoming(o.more, uuid.NewString()+"@x", "Kept?", f.tick(), "")
	nm.Attachments = []ports.AttachmentContent{{Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID,
		Filename: "a.txt", ContentType: "text/plain", Size: 1, CreatedAt: f.now}, Content: []byte("a")}}
	nm.Outbox = &ports.OutboxEntry{AccountID: a.ID, EnvelopeFrom: o.more.Email, Recipients: []string{"x@example.net"},
		NextAttempt: f.now, GiveUpAt: f.now.Add(time.Hour)}
	o.message = f.save(nm)[0]
	o.upload = uuid.NewString()
	f.must(f.s.SaveUpload(f.ctx, ports.AttachmentContent{Attachment: core.Attachment{ID: o.upload, AccountID: a.ID, IdentityID: ident.ID,
		Filename: "u.txt", ContentType: "text/plain", Size: 1, CreatedAt: f.now}, Content: []byte("u")}))
	f.source(o.more, "imap.example.org")
	f.must(f.s.CreateContact(f.ctx, f.newContact(ident, "friend@example.org", "", core.ContactManual)))
	f.password(ident, "example.com")
	f.secret(ident, "TOKEN")
	o.keyID, err = f.s.CreateKey(f.ctx, core.APIKey{AccountID: a.ID, Type: core.KeyIdentity, IdentityID: ident.ID, Prefix: "svc_id_x",
		Hash: core.HashKey(uuid.NewString()), CreatedAt: f.tick()})
	f.must(err)
	o.phone = f.phone(ident)
	f.saveSMS(smsFor(o.phone, core.Incoming, "+12025550199", "hi", "SMown"+o.phone.ProviderSID, f.tick()))
	f.must(f.s.SaveVoiceAgent(f.ctx, core.VoiceAgent{IdentityID: ident.ID, AccountID: a.ID, Mode: core.VoiceRedirect, ResponseURL: "https://a.example/",
		Method: "POST", Enabled: true, UpdatedAt: f.now}))
	f.must(f.s.Suppress(f.ctx, core.Suppression{AccountID: a.ID, IdentityID: ident.ID, Email: uuid.NewString() + "@gone.example",
		Reason: "550 5.1.1", CreatedAt: f.tick()}))
	return o
}

// wantGone fails unless every lookup of what o held is NotFound or empty.
func (f *fixture) wantGone(a core.Account, o owned) {
	f.t.Helper()
	scope := core.Scope{AccountID: a.ID, IdentityID: o.ident.ID}
	_, err := f.s.Identity(f.ctx, a.ID, o.ident.ID)
	wantKind(f.t, err, core.KindNotFound)
	for _, in := range []core.Inbox{o.first, o.more} {
		_, err = f.s.Inbox(f.ctx, in.ID)
		wantKind(f.t, err, core.KindNotFound)
		_, err = f.s.InboxByEmail(f.ctx, in.Email)
		wantKind(f.t, err, core.KindNotFound)
	}
	_, err = f.s.Message(f.ctx, a.ID, o.message.ID)
	wantKind(f.t, err, core.KindNotFound)
	_, err = f.s.Thread(f.ctx, a.ID, o.message.ThreadID)
	wantKind(f.t, err, core.KindNotFound)
	_, err = f.s.Attachment(f.ctx, a.ID, o.message.Attachments[0].ID)
	wantKind(f.t, err, core.KindNotFound)
	_, err = f.s.Attachment(f.ctx, a.ID, o.upload)
	wantKind(f.t, err, core.KindNotFound)
	_, err = f.s.MailSource(f.ctx, a.ID, o.more.ID)
	wantKind(f.t, err, core.KindNotFound)
	_, err = f.s.Key(f.ctx, a.ID, o.keyID)
	wantKind(f.t, err, core.KindNotFound)
	_, err = f.s.PhoneByNumber(f.ctx, o.phone.Number)
	wantKind(f.t, err, core.KindNotFound)
	_, err = f.s.VoiceAgent(f.ctx, a.ID, o.ident.ID)
	wantKind(f.t, err, core.KindNotFound)
	counts := map[string]func() (int, error){
		"contacts": func() (int, error) {
			_, n, err := f.s.Contacts(f.ctx, ports.ContactFilter{Scope: scope, Page: counted})
			return n, err
		},
		"passwords": func() (int, error) {
			_, n, err := f.s.Passwords(f.ctx, ports.PasswordFilter{Scope: scope, Page: counted})
			return n, err
		},
		"secrets": func() (int, error) {
			_, n, err := f.s.Secrets(f.ctx, ports.SecretFilter{Scope: scope, Page: counted})
			return n, err
		},
		"sms": func() (int, error) {
			_, n, err := f.s.SMSList(f.ctx, ports.SMSFilter{Scope: scope, Page: counted})
			return n, err
		},
		"conversations": func() (int, error) {
			_, n, err := f.s.Conversations(f.ctx, ports.ConversationFilter{Scope: scope, Page: counted})
			return n, err
		},
		"suppressions": func() (int, error) {
			_, n, err := f.s.Suppressions(f.ctx, ports.SuppressionFilter{Scope: scope, Page: counted})
			return n, err
		},
		"messages": func() (int, error) {
			_, n, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: scope})
			return n, err
		},
	}
	for what, count := range counts {
		if n, err := count(); err != nil || n != 0 {
			f.t.Errorf("%s left: %d, %v", what, n, err)
		}
	}
	f.wantNotQueued(o.message.ID)
}

// wantNotQueued fails if the outbox still holds the message.
func (f *fixture) wantNotQueued(messageID int64) {
	f.t.Helper()
	claimed, err := f.s.ClaimOutbox(f.ctx, f.now.Add(time.Hour), f.now.Add(2*time.Hour), 100)
	f.must(err)
	for _, e := range claimed {
		if e.MessageID == messageID {
			f.t.Errorf("message %d is still in the outbox", messageID)
		}
	}
}

// counted asks a list for its count only.
var counted = ports.Page{Limit: 1, Count: true}

func testIdentitiesDeleteCascades(t *testing.T, f *fixture) {
	a := f.account()
	gone := f.ownEverything(a)
	kept := f.ownEverything(a)
	mgmt, err := f.s.CreateKey(f.ctx, core.APIKey{AccountID: a.ID, Type: core.KeyManagement, Prefix: "svc_mgmt_x",
		Hash: core.HashKey(uuid.NewString()), CreatedAt: f.tick()})
	f.must(err)
	wantKind(t, f.s.DeleteIdentity(f.ctx, f.account().ID, gone.ident.ID), core.KindNotFound)
	f.must(f.s.DeleteIdentity(f.ctx, a.ID, gone.ident.ID))
	f.wantGone(a, gone)
	wantKind(t, f.s.DeleteIdentity(f.ctx, a.ID, gone.ident.ID), core.KindNotFound)
	// The sibling and the account's management key are untouched.
	if ident, err := f.s.Identity(f.ctx, a.ID, kept.ident.ID); err != nil || ident.Phone != kept.phone.Number || ident.Inbox != kept.first.Email {
		t.Fatalf("the sibling: %+v, %v", ident, err)
	}
	if _, err := f.s.Message(f.ctx, a.ID, kept.message.ID); err != nil {
		t.Fatalf("the sibling's mail: %v", err)
	}
	if _, err := f.s.Key(f.ctx, a.ID, mgmt); err != nil {
		t.Fatalf("the management key: %v", err)
	}
	if _, n, _ := f.s.SMSList(f.ctx, ports.SMSFilter{Scope: core.Scope{AccountID: a.ID}, Page: counted}); n != 1 {
		t.Fatalf("the sibling's texts: %d", n)
	}
}

func testInboxesDelete(t *testing.T, f *fixture) {
	a := f.account()
	o := f.ownEverything(a)
	wantKind(t, f.s.DeleteInbox(f.ctx, f.account().ID, o.more.ID), core.KindNotFound)
	// The first inbox goes; the identity's address is now its oldest remaining one.
	f.must(f.s.DeleteInbox(f.ctx, a.ID, o.first.ID))
	if ident, err := f.s.Identity(f.ctx, a.ID, o.ident.ID); err != nil || ident.Inbox != o.more.Email {
		t.Fatalf("after its first inbox: %+v, %v", ident, err)
	}
	// The last one stays.
	wantKind(t, f.s.DeleteInbox(f.ctx, a.ID, o.more.ID), core.KindConflict)
	if _, err := f.s.Message(f.ctx, a.ID, o.message.ID); err != nil {
		t.Fatalf("a refused delete took the mail: %v", err)
	}
	// With another inbox beside it, it goes with its mail, threads and source.
	another := core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: o.ident.ID, Email: "another-" + o.first.Email, CreatedAt: f.tick()}
	var err error
	another.ID, err = f.s.CreateInbox(f.ctx, another)
	f.must(err)
	f.must(f.s.DeleteInbox(f.ctx, a.ID, o.more.ID))
	_, err = f.s.Message(f.ctx, a.ID, o.message.ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.Thread(f.ctx, a.ID, o.message.ThreadID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.Attachment(f.ctx, a.ID, o.message.Attachments[0].ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.MailSource(f.ctx, a.ID, o.more.ID)
	wantKind(t, err, core.KindNotFound)
	f.wantNotQueued(o.message.ID)
	// What the identity owns beside its inboxes stays.
	if _, err := f.s.Attachment(f.ctx, a.ID, o.upload); err != nil {
		t.Fatalf("an upload went with an inbox: %v", err)
	}
	if _, err := f.s.PhoneByNumber(f.ctx, o.phone.Number); err != nil {
		t.Fatalf("the number went with an inbox: %v", err)
	}
}
