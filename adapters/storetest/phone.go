package storetest

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// phoneSeq numbers the test phones, across parallel tests.
var phoneSeq atomic.Int64

func (f *fixture) phone(ident core.Identity) core.PhoneNumber {
	f.t.Helper()
	p := core.PhoneNumber{AccountID: ident.AccountID, IdentityID: ident.ID, Number: fmt.Sprintf("+1415555%04d", phoneSeq.Add(1)%10000),
		CountryCode: "US", Capabilities: core.Capabilities{SMS: true, Voice: true}, Provider: "sim", ProviderSID: "PN" + uuid.NewString()[:8],
		CreatedAt: f.tick()}
	var err error
	p.ID, err = f.s.CreatePhone(f.ctx, p)
	f.must(err)
	return p
}

func smsFor(p core.PhoneNumber, dir core.Direction, counterpart, body, sid string, at time.Time) ports.NewSMS {
	m := core.SMSMessage{AccountID: p.AccountID, IdentityID: p.IdentityID, PhoneID: p.ID, PhoneNumber: p.Number, Body: body,
		Direction: dir, ProviderSID: sid, CreatedAt: at}
	if dir == core.Incoming {
		m.FromNumber, m.ToNumber, m.Status = counterpart, p.Number, core.SMSReceived
	} else {
		m.FromNumber, m.ToNumber, m.Status, m.IsRead = p.Number, counterpart, core.SMSQueued, true
	}
	return ports.NewSMS{Message: m}
}

func (f *fixture) saveSMS(n ports.NewSMS) core.SMSMessage {
	f.t.Helper()
	m, created, err := f.s.SaveSMS(f.ctx, n)
	f.must(err)
	if !created {
		f.t.Fatalf("not created: %+v", n.Message)
	}
	return m
}

func smsIDs(ms []core.SMSMessage) []string {
	return ids(ms, func(m core.SMSMessage) string { return fmt.Sprint(m.ID) })
}

func testPhonesUnique(t *testing.T, f *fixture) {
	a := f.account()
	i1, _ := f.identity(a.ID)
	i2, _ := f.identity(a.ID)
	p := f.phone(i1)
	got, err := f.s.Phone(f.ctx, a.ID, p.ID)
	f.must(err)
	if got != p {
		t.Fatalf("read %+v, stored %+v", got, p)
	}
	if ident, err := f.s.Identity(f.ctx, a.ID, i1.ID); err != nil || !ident.UpdatedAt.Equal(p.CreatedAt) || ident.Phone != p.Number {
		t.Fatalf("the identity after its number: %+v, %v", ident, err)
	}
	dup := p
	dup.Number = "+14155559999"
	_, err = f.s.CreatePhone(f.ctx, dup)
	wantConflictOn(t, err, "identity_id")
	sameNumber := p
	sameNumber.IdentityID = i2.ID
	_, err = f.s.CreatePhone(f.ctx, sameNumber)
	wantConflictOn(t, err, "number")
	byNumber, err := f.s.PhoneByNumber(f.ctx, p.Number)
	f.must(err)
	ofIdentity, err := f.s.PhoneOfIdentity(f.ctx, a.ID, i1.ID)
	f.must(err)
	if byNumber.ID != p.ID || ofIdentity.ID != p.ID {
		t.Fatalf("lookups %+v %+v", byNumber, ofIdentity)
	}
	_, err = f.s.PhoneOfIdentity(f.ctx, a.ID, i2.ID)
	wantKind(t, err, core.KindNotFound)
	ident, _ := f.s.Identity(f.ctx, a.ID, i1.ID)
	if ident.Phone != p.Number {
		t.Fatalf("identity's phone %q", ident.Phone)
	}
	p2 := f.phone(i2)
	list, _, err := f.s.Phones(f.ctx, core.Scope{AccountID: a.ID}, ports.Page{})
	f.must(err)
	if len(list) != 2 || list[0].ID != p.ID || list[1].ID != p2.ID {
		t.Fatalf("phones %+v", list)
	}
	list, _, _ = f.s.Phones(f.ctx, core.Scope{AccountID: a.ID, IdentityID: i2.ID}, ports.Page{})
	if len(list) != 1 {
		t.Fatalf("one identity's phones %+v", list)
	}
	other := f.account()
	_, err = f.s.Phone(f.ctx, other.ID, p.ID)
	wantKind(t, err, core.KindNotFound)
}

func testPhonesWithIdentity(t *testing.T, f *fixture) {
	a := f.account()
	i1, _ := f.identity(a.ID)
	taken := f.phone(i1)
	now := f.tick()
	ident := core.Identity{ID: uuid.NewString(), AccountID: a.ID, Name: "with-phone", CreatedAt: now, UpdatedAt: now}
	inbox := core.Inbox{UUID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Email: "with-phone@agents.test", CreatedAt: now}
	p := core.PhoneNumber{AccountID: a.ID, IdentityID: ident.ID, Number: taken.Number, CountryCode: "US", Provider: "sim", ProviderSID: "PNx", CreatedAt: now}
	_, err := f.s.CreateIdentity(f.ctx, ident, inbox, &p)
	wantConflictOn(t, err, "number")
	_, err = f.s.Identity(f.ctx, a.ID, ident.ID)
	wantKind(t, err, core.KindNotFound)
	p.Number = "+14155558888"
	_, err = f.s.CreateIdentity(f.ctx, ident, inbox, &p)
	f.must(err)
	got, _ := f.s.Identity(f.ctx, a.ID, ident.ID)
	if got.Phone != "+14155558888" {
		t.Fatalf("identity %+v", got)
	}
}

func testSMSConversations(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	p := f.phone(ident)
	ann, bob := "+14155550001", "+14155550002"
	in1 := f.saveSMS(smsFor(p, core.Incoming, ann, "hello", "SM1", f.tick()))
	f.saveSMS(smsFor(p, core.Outgoing, ann, "hi ann", "", f.tick()))
	in2 := f.saveSMS(smsFor(p, core.Incoming, bob, "from bob", "SM3", f.tick()))
	again, created, err := f.s.SaveSMS(f.ctx, smsFor(p, core.Incoming, ann, "hello", "SM1", f.tick()))
	f.must(err)
	if created || again.ID != in1.ID {
		t.Fatalf("a repeated provider id was stored again: %+v created=%v", again, created)
	}
	convs, _, err := f.s.Conversations(f.ctx, ports.ConversationFilter{Scope: core.Scope{AccountID: a.ID}})
	f.must(err)
	if len(convs) != 2 || convs[0].Counterpart != bob || convs[1].Counterpart != ann || convs[1].MessageCount != 2 ||
		convs[1].UnreadCount != 1 || convs[1].Preview != "hi ann" || convs[1].ID != core.ConversationID(p.ID, ann) {
		t.Fatalf("conversations %+v", convs)
	}
	f.must(f.s.SetSMSRead(f.ctx, a.ID, in1.ID, true))
	f.must(f.s.SetSMSRead(f.ctx, a.ID, in1.ID, true))
	c, err := f.s.Conversation(f.ctx, a.ID, p.ID, ann)
	f.must(err)
	if c.UnreadCount != 0 {
		t.Fatalf("unread after reading %+v", c)
	}
	yes := true
	unread, _, _ := f.s.Conversations(f.ctx, ports.ConversationFilter{Scope: core.Scope{AccountID: a.ID}, HasUnread: &yes})
	if len(unread) != 1 || unread[0].Counterpart != bob {
		t.Fatalf("unread conversations %+v", unread)
	}
	newest, _, _ := f.s.SMSList(f.ctx, ports.SMSFilter{Scope: core.Scope{AccountID: a.ID}})
	if len(newest) != 3 || newest[0].ID != in2.ID {
		t.Fatalf("newest first %+v", newest)
	}
	thread, _, _ := f.s.SMSList(f.ctx, ports.SMSFilter{Scope: core.Scope{AccountID: a.ID}, PhoneID: p.ID, Counterpart: ann, Oldest: true})
	if len(thread) != 2 || thread[0].ID != in1.ID || thread[1].Direction != core.Outgoing {
		t.Fatalf("conversation, oldest first %+v", thread)
	}
	no := false
	list, _, _ := f.s.SMSList(f.ctx, ports.SMSFilter{Scope: core.Scope{AccountID: a.ID}, Direction: core.Incoming, IsRead: &no})
	wantIDs(t, "unread incoming", smsIDs(list), smsIDs([]core.SMSMessage{in2}))
	other := f.account()
	list, _, _ = f.s.SMSList(f.ctx, ports.SMSFilter{Scope: core.Scope{AccountID: other.ID}})
	if len(list) != 0 {
		t.Fatal("another account sees messages")
	}
	_, err = f.s.SMS(f.ctx, other.ID, in1.ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.Conversation(f.ctx, other.ID, p.ID, ann)
	wantKind(t, err, core.KindNotFound)
}

func testSMSStatusAndRemoval(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	p := f.phone(ident)
	out := f.saveSMS(smsFor(p, core.Outgoing, "+14155550003", "status", "", f.tick()))
	f.must(f.s.SetSMSProvider(f.ctx, out.ID, "SMout", core.SMSSent))
	for _, st := range []core.SMSStatus{core.SMSDelivered, core.SMSSent, core.SMSUndelivered} {
		found, err := f.s.UpdateSMSStatus(f.ctx, "SMout", st, "")
		f.must(err)
		if !found {
			t.Fatal("report not matched")
		}
	}
	got, _ := f.s.SMS(f.ctx, a.ID, out.ID)
	if got.Status != core.SMSDelivered || got.ProviderSID != "SMout" {
		t.Fatalf("status %+v", got)
	}
	if found, _ := f.s.UpdateSMSStatus(f.ctx, "SMnobody", core.SMSFailed, "x"); found {
		t.Fatal("an unknown id matched")
	}
	mms := smsFor(p, core.Incoming, "+14155550003", "keep", "SMkeep", f.tick())
	mms.Message.Media = []core.SMSMedia{{URL: "https://media.example/1", ContentType: "image/png"}}
	keep := f.saveSMS(mms)
	if got, _ := f.s.SMS(f.ctx, a.ID, keep.ID); !reflect.DeepEqual(got.Media, mms.Message.Media) {
		t.Fatalf("media read back as %+v", got.Media)
	}
	gone := f.saveSMS(smsFor(p, core.Outgoing, "+14155550003", "never sent", "", f.tick()))
	f.must(f.s.DeleteSMS(f.ctx, a.ID, gone.ID))
	c, err := f.s.Conversation(f.ctx, a.ID, p.ID, "+14155550003")
	f.must(err)
	if c.MessageCount != 2 || c.Preview != "keep" || !c.LastMessageAt.Equal(keep.CreatedAt) || c.UnreadCount != 1 {
		t.Fatalf("conversation after delete %+v", c)
	}
	lone := f.saveSMS(smsFor(p, core.Outgoing, "+14155550004", "lone", "", f.tick()))
	f.must(f.s.DeleteSMS(f.ctx, a.ID, lone.ID))
	_, err = f.s.Conversation(f.ctx, a.ID, p.ID, "+14155550004")
	wantKind(t, err, core.KindNotFound)
}

func testSMSCorrespondent(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	p := f.phone(ident)
	for i := range 2 {
		n := smsFor(p, core.Incoming, "+14155550005", "hi", fmt.Sprint("SMc", i), f.tick())
		c := f.newContact(ident, "", "+14155550005", core.ContactAuto)
		n.Correspondent = &c
		f.saveSMS(n)
	}
	list, _, _ := f.s.Contacts(f.ctx, ports.ContactFilter{Scope: core.Scope{AccountID: a.ID}})
	if len(list) != 1 || list[0].PhoneNumber != "+14155550005" {
		t.Fatalf("contacts %+v", list)
	}
}

func testVoiceAgents(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	_, err := f.s.VoiceAgent(f.ctx, a.ID, ident.ID)
	wantKind(t, err, core.KindNotFound)
	v := core.VoiceAgent{IdentityID: ident.ID, AccountID: a.ID, ResponseURL: "https://a.example/", Method: "POST", Enabled: true,
		Mode: core.VoiceRedirect, UpdatedAt: f.tick()}
	f.must(f.s.SaveVoiceAgent(f.ctx, v))
	v.Method, v.Enabled, v.UpdatedAt = "GET", false, f.tick()
	v.Mode, v.StreamURL, v.RecordCalls, v.SealedStreamSecret = core.VoiceStream, "wss://agent.example/media", true, []byte{1, 2, 3}
	f.must(f.s.SaveVoiceAgent(f.ctx, v))
	got, err := f.s.VoiceAgent(f.ctx, a.ID, ident.ID)
	f.must(err)
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("read %+v, saved %+v", got, v)
	}
	_, err = f.s.VoiceAgent(f.ctx, f.account().ID, ident.ID)
	wantKind(t, err, core.KindNotFound)
}
