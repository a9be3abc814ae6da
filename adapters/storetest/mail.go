package storetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// incoming builds a received message for an inbox.
func incoming(in core.Inbox, msgID, subject string, at time.Time, inReplyTo string, refs ...string) ports.NewMail {
	return ports.NewMail{
		Message: core.EmailMessage{AccountID: in.AccountID, IdentityID: in.IdentityID, InboxID: in.ID,
			Header: core.Header{MessageID: msgID, InReplyTo: inReplyTo, References: refs, FromEmail: "sender@example.org",
				FromName: "Sender", To: []string{in.Email}, Cc: []string{"cc@example.org"}, Subject: subject},
			Text: "Body of " + subject,
			HTML: "<p>" + subject + "</p>", Direction: core.Incoming, CreatedAt: at},
		NewThreadID: uuid.NewString()[:12],
		Raw:         []byte("Subject: " + subject + "\r\n\r\nBody\r\n"),
	}
}

func (f *fixture) save(mails ...ports.NewMail) []core.EmailMessage {
	f.t.Helper()
	out, err := f.s.SaveMail(f.ctx, mails)
	f.must(err)
	if len(out) != len(mails) {
		f.t.Fatalf("saved %d of %d", len(out), len(mails))
	}
	return out
}

func msgIDs(ms []core.EmailMessage) []string {
	return ids(ms, func(m core.EmailMessage) string { return fmt.Sprint(m.ID) })
}

func testMailThreads(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	_, other := f.identity(a.ID)
	now := f.tick()
	first := f.save(incoming(in, "root@x", "Hello", now, ""))[0]
	if first.ID == 0 || first.ThreadID == "" || !first.CreatedAt.Equal(now) {
		t.Fatalf("stored %+v", first)
	}
	reply := f.save(incoming(in, "r1@x", "Re: Hello", f.tick(), "root@x"))[0]
	byRefs := f.save(incoming(in, "r2@x", "Re: Hello", f.tick(), "unknown@x", "root@x", "r1@x"))[0]
	elsewhere := f.save(incoming(other, "r3@x", "Re: Hello", f.tick(), "root@x"))[0]
	fresh := f.save(incoming(in, "new@x", "New", f.tick(), "nothing@x"))[0]
	if reply.ThreadID != first.ThreadID || byRefs.ThreadID != first.ThreadID {
		t.Fatalf("replies should join the thread: %q %q %q", first.ThreadID, reply.ThreadID, byRefs.ThreadID)
	}
	if elsewhere.ThreadID == first.ThreadID || fresh.ThreadID == first.ThreadID {
		t.Fatal("threads cross inboxes, or an unrelated message joined")
	}
	th, err := f.s.Thread(f.ctx, a.ID, first.ThreadID)
	f.must(err)
	if th.MessageCount != 3 || th.UnreadCount != 3 || th.Subject != "Hello" || th.Preview != "Body of Re: Hello" ||
		!th.LastMessageAt.Equal(byRefs.CreatedAt) || th.InboxID != in.ID {
		t.Fatalf("summary %+v", th)
	}
	if len(th.Participants) != 3 { // sender, the inbox, cc
		t.Fatalf("participants %v", th.Participants)
	}
	_, err = f.s.Thread(f.ctx, f.account().ID, first.ThreadID)
	wantKind(t, err, core.KindNotFound)
	got, err := f.s.MessageByMessageID(f.ctx, in.ID, "r1@x")
	f.must(err)
	if got.ID != reply.ID {
		t.Fatalf("by Message-ID: %+v", got)
	}
}

func testMailStoredTogether(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	nm := incoming(in, "att@x", "Files", f.tick(), "")
	for i, name := range []string{"a.pdf", "b.png"} {
		nm.Attachments = append(nm.Attachments, ports.AttachmentContent{
			Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Filename: name,
				ContentType: "application/pdf", Size: int64(100 + i), Inline: i == 1, ContentID: fmt.Sprint("cid", i), CreatedAt: f.now},
			Content: bytes.Repeat([]byte{byte(i + 1)}, 100+i)})
	}
	c := f.newContact(ident, "sender@example.org", "", core.ContactAuto)
	nm.Correspondent = &c
	stored := f.save(nm)[0]
	if len(stored.Attachments) != 2 || stored.Attachments[0].Filename != "a.pdf" || stored.Attachments[1].Size != 101 ||
		stored.Attachments[0].MessageID != stored.ID {
		t.Fatalf("attachments %+v", stored.Attachments)
	}
	got, err := f.s.Message(f.ctx, a.ID, stored.ID)
	f.must(err)
	if got.Subject != "Files" || got.HTML != "<p>Files</p>" || len(got.Cc) != 1 || len(got.Attachments) != 2 ||
		got.Attachments[1].ContentID != "cid1" || !got.Attachments[1].Inline || got.ThreadID != stored.ThreadID {
		t.Fatalf("read back %+v", got)
	}
	att, err := f.s.Attachment(f.ctx, a.ID, got.Attachments[1].ID)
	f.must(err)
	if !bytes.Equal(att.Content, bytes.Repeat([]byte{2}, 101)) || att.MessageID != stored.ID {
		t.Fatalf("attachment content %+v", att.Attachment)
	}
	raw, err := f.s.RawMessage(f.ctx, a.ID, stored.ID)
	f.must(err)
	if string(raw) != string(nm.Raw) {
		t.Fatalf("raw %q", raw)
	}
	th, _ := f.s.Thread(f.ctx, a.ID, stored.ThreadID)
	if len(th.AttachmentNames) != 2 {
		t.Fatalf("attachment names %v", th.AttachmentNames)
	}
	// The correspondent became a contact, once.
	nm2 := incoming(in, "att2@x", "Again", f.tick(), "")
	c2 := f.newContact(ident, "SENDER@example.org", "", core.ContactAuto)
	nm2.Correspondent = &c2
	f.save(nm2)
	// A page of messages shows each one's attachments, and none for one without.
	listed, _, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}, Limit: 10})
	f.must(err)
	if len(listed) != 2 || len(listed[0].Attachments) != 2 || listed[0].Attachments[1].Filename != "b.png" || len(listed[1].Attachments) != 0 {
		t.Fatalf("listed %+v", listed)
	}
	contacts, _, _ := f.s.Contacts(f.ctx, ports.ContactFilter{Scope: core.Scope{AccountID: a.ID}})
	if len(contacts) != 1 || contacts[0].Source != core.ContactAuto {
		t.Fatalf("contacts %+v", contacts)
	}
	other := f.account()
	_, err = f.s.Message(f.ctx, other.ID, stored.ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.RawMessage(f.ctx, other.ID, stored.ID)
	wantKind(t, err, core.KindNotFound)
	_, err = f.s.Attachment(f.ctx, other.ID, att.ID)
	wantKind(t, err, core.KindNotFound)
}

func testMailAttachmentsInSource(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	nm := incoming(in, "src@x", "In source", f.tick(), "")
	for i, name := range []string{"one.txt", "two.txt"} {
		nm.Attachments = append(nm.Attachments, ports.AttachmentContent{
			Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID, Filename: name,
				ContentType: "text/plain", Size: int64(10 + i), CreatedAt: f.now},
			InSource: true, Position: i})
	}
	stored := f.save(nm)[0]
	if len(stored.Attachments) != 2 || stored.Attachments[1].Size != 11 {
		t.Fatalf("stored %+v", stored.Attachments)
	}
	got, err := f.s.Attachment(f.ctx, a.ID, stored.Attachments[1].ID)
	f.must(err)
	if !got.InSource || got.Position != 1 || len(got.Content) != 0 || got.Size != 11 || got.MessageID != stored.ID {
		t.Fatalf("read back %+v (content %d bytes)", got.Attachment, len(got.Content))
	}
}

func testMailCreationTimes(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	_, in2 := f.identity(a.ID)
	same := f.tick()
	ms := f.save(incoming(in, "1@x", "1", same, ""), incoming(in2, "2@x", "2", same, ""), incoming(in, "3@x", "3", same.Add(-time.Hour), ""))
	for i := 1; i < len(ms); i++ {
		if !ms[i].CreatedAt.After(ms[i-1].CreatedAt) {
			t.Fatalf("times not increasing: %v", []time.Time{ms[0].CreatedAt, ms[1].CreatedAt, ms[2].CreatedAt})
		}
	}
	later := f.save(incoming(in, "4@x", "4", same, ""))[0]
	if !later.CreatedAt.After(ms[2].CreatedAt) {
		t.Fatal("a later call went back in time")
	}
	list, total, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}, CreatedAfter: &ms[0].CreatedAt})
	f.must(err)
	wantIDs(t, "after the first", msgIDs(list), msgIDs([]core.EmailMessage{ms[1], ms[2], later}))
	if total != 3 {
		t.Fatalf("total %d", total)
	}
}

func testMailConcurrentSaves(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	now := f.tick()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.s.SaveMail(f.ctx, []ports.NewMail{incoming(in, fmt.Sprintf("c%d@x", i), "c", now, "")})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		f.must(err)
	}
	var seen []core.EmailMessage
	var cursor *time.Time
	for {
		page, _, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}, CreatedAfter: cursor, Limit: 7})
		f.must(err)
		if len(page) == 0 {
			break
		}
		seen = append(seen, page...)
		cursor = &page[len(page)-1].CreatedAt
	}
	distinct := map[string]bool{}
	for _, m := range seen {
		distinct[m.MessageID] = true
	}
	if len(seen) != 40 || len(distinct) != 40 {
		t.Fatalf("polled %d messages, %d distinct", len(seen), len(distinct))
	}
}

func testMailList(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	_, in2 := f.identity(a.ID)
	m1 := f.save(incoming(in, "1@x", "one", f.tick(), ""))[0]
	out := incoming(in, "2@x", "two", f.tick(), "1@x")
	out.Message.Direction, out.Message.IsRead, out.Message.FromEmail = core.Outgoing, true, in.Email
	m2 := f.save(out)[0]
	m3 := f.save(incoming(in2, "3@x", "three", f.tick(), ""))[0]
	all := core.Scope{AccountID: a.ID}
	yes, no := true, false
	for _, tc := range []struct {
		name   string
		filter ports.MessageFilter
		want   []core.EmailMessage
	}{
		{"account", ports.MessageFilter{Scope: all}, []core.EmailMessage{m1, m2, m3}},
		{"identity", ports.MessageFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: ident.ID}}, []core.EmailMessage{m1, m2}},
		{"empty scope", ports.MessageFilter{Scope: core.Scope{AccountID: a.ID, Empty: true}}, nil},
		{"inbox", ports.MessageFilter{Scope: all, InboxID: in2.ID}, []core.EmailMessage{m3}},
		{"the identity's inbox", ports.MessageFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: ident.ID}, InboxID: in.ID}, []core.EmailMessage{m1, m2}},
		{"another identity's inbox", ports.MessageFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: ident.ID}, InboxID: in2.ID}, nil},
		{"another account's inbox", ports.MessageFilter{Scope: core.Scope{AccountID: f.account().ID}, InboxID: in.ID}, nil},
		{"another account's identity", ports.MessageFilter{Scope: core.Scope{AccountID: f.account().ID, IdentityID: ident.ID}}, nil},
		{"thread", ports.MessageFilter{Scope: all, ThreadID: m1.ThreadID}, []core.EmailMessage{m1, m2}},
		{"outgoing", ports.MessageFilter{Scope: all, Direction: core.Outgoing}, []core.EmailMessage{m2}},
		{"from, any case", ports.MessageFilter{Scope: all, FromEmail: "SENDER@example.org"}, []core.EmailMessage{m1, m3}},
		{"read", ports.MessageFilter{Scope: all, IsRead: &yes}, []core.EmailMessage{m2}},
		{"unread", ports.MessageFilter{Scope: all, IsRead: &no}, []core.EmailMessage{m1, m3}},
		{"page", ports.MessageFilter{Scope: all, Limit: 1, Offset: 1}, []core.EmailMessage{m2}},
		{"past the end", ports.MessageFilter{Scope: all, Limit: 5, Offset: 5}, nil},
		{"page, newest first", ports.MessageFilter{Scope: all, Limit: 2, Offset: 1, NewestFirst: true}, []core.EmailMessage{m2, m1}},
		{"page of the unread", ports.MessageFilter{Scope: all, IsRead: &no, Limit: 1, Offset: 1}, []core.EmailMessage{m3}},
		{"page of an identity", ports.MessageFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: ident.ID}, Limit: 5, Offset: 1}, []core.EmailMessage{m2}},
		{"other account", ports.MessageFilter{Scope: core.Scope{AccountID: f.account().ID}}, nil},
	} {
		got, total, err := f.s.Messages(f.ctx, tc.filter)
		f.must(err)
		wantIDs(t, tc.name, msgIDs(got), msgIDs(tc.want))
		if tc.filter.Limit == 0 && total != len(tc.want) {
			t.Fatalf("%s: total %d", tc.name, total)
		}
	}
	// The last page (shorter than its limit), a page past the end and a
	// full one are each counted right, and hold what the whole list holds
	// there (a page past the first reads its ids first, then its rows).
	whole, _, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: all})
	f.must(err)
	for _, p := range []struct{ limit, offset, rows int }{{1, 0, 1}, {5, 1, 2}, {5, 0, 3}, {5, 5, 0}, {2, 1, 2}} {
		list, total, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: all, Limit: p.limit, Offset: p.offset})
		if err != nil || total != 3 || len(list) != p.rows {
			t.Fatalf("limit %d offset %d: %d messages, total %d, %v", p.limit, p.offset, len(list), total, err)
		}
		if want := whole[min(p.offset, len(whole)):min(p.offset+p.limit, len(whole))]; p.rows > 0 && !reflect.DeepEqual(list, want) {
			t.Fatalf("limit %d offset %d: %+v, want %+v", p.limit, p.offset, list, want)
		}
	}
	for upTo, want := range map[int]int{2: 2, 3: 3, 4: 3} {
		list, total, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: all, Limit: 1, Offset: 1, CountUpTo: upTo})
		if err != nil || total != want || len(list) != 1 || list[0].ID != m2.ID {
			t.Fatalf("count up to %d: %d, %v", upTo, total, err)
		}
	}
}

// testMailListSummaries: a list reads the head of the text body only and
// answers its preview, never the bodies; one message reads them whole,
// with the truncated flag it was stored with.
func testMailListSummaries(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	nm := incoming(in, "long@x", "Long", f.tick(), "")
	nm.Message.Text = "\n\n  Dear   reader,\n" + strings.Repeat("word ", 100_000)
	nm.Message.HTML = "<p>" + strings.Repeat("word ", 100_000) + "</p>"
	nm.Message.Truncated = true
	saved := f.save(nm)[0]
	list, _, err := f.s.Messages(f.ctx, ports.MessageFilter{Scope: core.Scope{AccountID: a.ID}})
	f.must(err)
	if len(list) != 1 || list[0].Text != "" || list[0].HTML != "" || !list[0].Truncated ||
		list[0].Preview != core.Preview(nm.Message.Text) || !strings.HasPrefix(list[0].Preview, "Dear reader, word word") {
		t.Fatalf("listed %+v", list)
	}
	got, err := f.s.Message(f.ctx, a.ID, saved.ID)
	f.must(err)
	if got.Text != nm.Message.Text || got.HTML != nm.Message.HTML || !got.Truncated {
		t.Fatalf("one message: %d bytes of text, %d of HTML, truncated %v", len(got.Text), len(got.HTML), got.Truncated)
	}
}

func testMailReadState(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	m := f.save(incoming(in, "1@x", "one", f.tick(), ""))[0]
	f.save(incoming(in, "2@x", "two", f.tick(), "1@x"))
	yes := true
	f.must(f.s.SetRead(f.ctx, a.ID, m.ID, true))
	f.must(f.s.SetRead(f.ctx, a.ID, m.ID, true)) // no double count
	th, _ := f.s.Thread(f.ctx, a.ID, m.ThreadID)
	if th.UnreadCount != 1 {
		t.Fatalf("unread %d", th.UnreadCount)
	}
	list, _, _ := f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID}, HasUnread: &yes})
	if len(list) != 1 {
		t.Fatalf("threads with unread: %+v", list)
	}
	f.must(f.s.SetRead(f.ctx, a.ID, m.ID, false))
	th, _ = f.s.Thread(f.ctx, a.ID, m.ThreadID)
	if th.UnreadCount != 2 {
		t.Fatalf("unread %d", th.UnreadCount)
	}
	wantKind(t, f.s.SetRead(f.ctx, f.account().ID, m.ID, true), core.KindNotFound)
}

func testMailThreadList(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	_, in2 := f.identity(a.ID)
	t1 := f.save(incoming(in, "1@x", "one", f.tick(), ""))[0]
	t2 := f.save(incoming(in2, "2@x", "two", f.tick(), ""))[0]
	f.save(incoming(in, "3@x", "Re: one", f.tick(), "1@x"))
	list, _, err := f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID}})
	f.must(err)
	if len(list) != 2 || list[0].ID != t1.ThreadID || list[1].ID != t2.ThreadID {
		t.Fatalf("order %+v", list)
	}
	list, _, _ = f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID, IdentityID: ident.ID}})
	if len(list) != 1 {
		t.Fatalf("by identity %+v", list)
	}
	list, _, _ = f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID}, InboxID: in2.ID})
	if len(list) != 1 || list[0].ID != t2.ThreadID {
		t.Fatalf("by inbox %+v", list)
	}
	// A page: the second of two, with the number of every match.
	list, total, err := f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID}, Page: ports.Page{Limit: 1, Offset: 1, Count: true}})
	f.must(err)
	if total != 2 || len(list) != 1 || list[0].ID != t2.ThreadID {
		t.Fatalf("second page: %d %+v", total, list)
	}
	// Keyset: after the first thread comes the second, after the second none.
	list, _, err = f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID},
		After: &ports.ThreadCursor{LastMessageAt: list[0].LastMessageAt, ID: list[0].ID}})
	f.must(err)
	if len(list) != 0 {
		t.Fatalf("after the last thread: %+v", list)
	}
	first, _, _ := f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID}, Page: ports.Page{Limit: 1}})
	list, _, err = f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID},
		After: &ports.ThreadCursor{LastMessageAt: first[0].LastMessageAt, ID: first[0].ID}})
	f.must(err)
	if len(list) != 1 || list[0].ID != t2.ThreadID {
		t.Fatalf("after the first thread: %+v", list)
	}
	// Two threads with the same time are told apart by id.
	list, _, _ = f.s.Threads(f.ctx, ports.ThreadFilter{Scope: core.Scope{AccountID: a.ID},
		After: &ports.ThreadCursor{LastMessageAt: first[0].LastMessageAt, ID: ""}})
	if len(list) != 2 || list[0].ID != t1.ThreadID {
		t.Fatalf("after the first thread's time and a smaller id: %+v", list)
	}
}

func testMailDedupe(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	nm := incoming(in, "same@x", "s", f.tick(), "")
	nm.Dedupe = true
	first := f.save(nm)[0]
	again := f.save(nm)[0]
	if again.ID != first.ID {
		t.Fatalf("a deduped redelivery made a copy: %d vs %d", again.ID, first.ID)
	}
	nm.Dedupe, nm.NewThreadID = false, uuid.NewString()[:12]
	if copyMsg := f.save(nm)[0]; copyMsg.ID == first.ID {
		t.Fatal("without Dedupe a message is stored")
	}
}

// testMailOneBatch: messages of one SaveMail call (one transaction; on
// PostgreSQL one pipeline, where none of them is in the database while
// the others are filed) thread with each other and with what the inbox
// held, and a redelivery among them is the copy already held, with its
// attachments.
func testMailOneBatch(t *testing.T, f *fixture) {
	a := f.account()
	ident, in := f.identity(a.ID)
	held := incoming(in, "held@x", "Held", f.tick(), "")
	held.Attachments = []ports.AttachmentContent{{Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID,
		IdentityID: ident.ID, Filename: "a.txt", ContentType: "text/plain", Size: 3, CreatedAt: f.now}, Content: []byte("abc")}}
	first := f.save(held)[0]
	if len(first.Attachments) != 1 || first.Attachments[0].MessageID != first.ID {
		t.Fatalf("a stored message's attachments are its own: %+v", first.Attachments)
	}
	if th, err := f.s.Thread(f.ctx, a.ID, first.ThreadID); err != nil || th.Subject != "Held" || th.MessageCount != 1 ||
		!slices.Equal(th.AttachmentNames, []string{"a.txt"}) || !th.LastMessageAt.Equal(first.CreatedAt) {
		t.Fatalf("the thread a message starts is summed up with it: %+v, %v", th, err)
	}
	redelivered := held
	redelivered.Dedupe, redelivered.Attachments = true, nil
	at := f.tick()
	root := incoming(in, "root@x", "Hello", at, "")
	reply := incoming(in, "reply@x", "Re: Hello", at, "root@x")
	byRefs := incoming(in, "refs@x", "Re: Hello", at, "unknown@x", "reply@x")
	toHeld := incoming(in, "toheld@x", "Re: Held", at, "held@x")
	again := root // the same message twice in one call, deduped
	again.Dedupe = true
	out := f.save(root, reply, redelivered, byRefs, toHeld, again)
	if out[1].ThreadID != out[0].ThreadID || out[3].ThreadID != out[0].ThreadID {
		t.Fatalf("replies in the same call should join its thread: %q %q %q", out[0].ThreadID, out[1].ThreadID, out[3].ThreadID)
	}
	if out[2].ID != first.ID || len(out[2].Attachments) != 1 || out[2].Attachments[0].Filename != "a.txt" {
		t.Fatalf("the redelivery should be the held copy with its attachment: %+v", out[2])
	}
	if out[4].ThreadID != first.ThreadID || out[5].ID != out[0].ID {
		t.Fatalf("a reply to a held message joins its thread (%q, want %q); a repeat is the first (%d, want %d)",
			out[4].ThreadID, first.ThreadID, out[5].ID, out[0].ID)
	}
	for i, m := range []core.EmailMessage{out[0], out[1], out[3], out[4]} {
		if i > 0 && !m.CreatedAt.After(out[i-1].CreatedAt) {
			t.Fatalf("creation times should increase in the call's order: %v", msgIDs(out))
		}
	}
	th, err := f.s.Thread(f.ctx, a.ID, out[0].ThreadID)
	f.must(err)
	if th.MessageCount != 3 || th.UnreadCount != 3 || !th.LastMessageAt.Equal(out[3].CreatedAt) {
		t.Fatalf("summary %+v", th)
	}
	heldThread, err := f.s.Thread(f.ctx, a.ID, first.ThreadID)
	f.must(err)
	if heldThread.MessageCount != 2 || !heldThread.LastMessageAt.Equal(out[4].CreatedAt) {
		t.Fatalf("the held thread's summary %+v", heldThread)
	}
}

// testMailRedelivery: an SMTP sender's retry of the same bytes (the same
// Message-ID and source hash within core.RedeliveryWindow) is the first
// copy; other bytes, or the same a day later, are stored.
func testMailRedelivery(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	nm := incoming(in, "retry@x", "r", f.tick(), "")
	nm.Message.SourceHash = "h1"
	first := f.save(nm)[0]
	nm.Message.CreatedAt, nm.NewThreadID = f.tick(), uuid.NewString()[:12]
	if again := f.save(nm)[0]; again.ID != first.ID {
		t.Fatalf("a retried delivery made a copy: %d vs %d", again.ID, first.ID)
	}
	other := nm
	other.Message.SourceHash, other.NewThreadID = "h2", uuid.NewString()[:12]
	if m := f.save(other)[0]; m.ID == first.ID {
		t.Fatal("other bytes under the same Message-ID were taken for a retry")
	}
	later := nm
	later.Message.SourceHash = "h1"
	later.Message.CreatedAt, later.NewThreadID = first.CreatedAt.Add(core.RedeliveryWindow+time.Second), uuid.NewString()[:12]
	if m := f.save(later)[0]; m.ID == first.ID {
		t.Fatal("the same bytes a day later were taken for a retry")
	}
}

// testMailSentAndReceivedMessageID: a Message-ID the inbox has sent under
// and also received: a redelivery is the received copy, not the sent one,
// and mail that answers either joins their thread; a Message-ID only sent
// is no redelivery of anything, but its thread is found.
func testMailSentAndReceivedMessageID(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	received := f.save(incoming(in, "both@x", "Both", f.tick(), ""))[0]
	sent := outgoing(in, "both@x", f.tick())
	sent.Message.ThreadID = received.ThreadID
	f.save(sent)
	again := incoming(in, "both@x", "Both", f.tick(), "")
	again.Dedupe = true
	if m := f.save(again)[0]; m.ID != received.ID {
		t.Fatalf("a redelivery should be the received copy %d, got %d", received.ID, m.ID)
	}
	onlySent := f.save(outgoing(in, "sent-only@x", f.tick()))[0]
	came := incoming(in, "sent-only@x", "Echo", f.tick(), "")
	came.Dedupe = true
	m := f.save(came)[0]
	if m.ID == onlySent.ID || m.Direction != core.Incoming || m.ThreadID != onlySent.ThreadID {
		t.Fatalf("mail under a Message-ID only sent is new, in the sent one's thread: %+v (sent %d, thread %s)", m, onlySent.ID, onlySent.ThreadID)
	}
}

func testMailOutbox(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	now := f.tick()
	nm := incoming(in, "out@x", "o", now, "")
	nm.Message.Direction, nm.Message.DeliveryStatus = core.Outgoing, core.DeliveryQueued
	nm.Outbox = &ports.OutboxEntry{AccountID: a.ID, EnvelopeFrom: in.Email, Recipients: []string{"a@example.org", "b@example.org"},
		NextAttempt: now, GiveUpAt: now.Add(time.Hour)}
	m := f.save(nm)[0]
	later := f.save(incoming(in, "later@x", "l", now, ""))
	_ = later
	claimed, err := f.s.ClaimOutbox(f.ctx, now, now.Add(time.Minute), 10)
	f.must(err)
	if len(claimed) != 1 || claimed[0].MessageID != m.ID || claimed[0].Attempts != 1 || len(claimed[0].Recipients) != 2 ||
		claimed[0].EnvelopeFrom != in.Email || !claimed[0].GiveUpAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("claimed %+v", claimed)
	}
	again, _ := f.s.ClaimOutbox(f.ctx, now.Add(30*time.Second), now.Add(time.Minute), 10)
	if len(again) != 0 {
		t.Fatal("a leased entry was claimed twice")
	}
	e := claimed[0]
	e.Recipients, e.Failures, e.NextAttempt = []string{"b@example.org"}, []string{"a@example.org: 550 no"}, now.Add(2*time.Minute)
	f.must(f.s.RetryOutbox(f.ctx, e, "451 try later"))
	if got, _ := f.s.Message(f.ctx, a.ID, m.ID); got.DeliveryStatus != core.DeliveryQueued || got.DeliveryError != "451 try later" {
		t.Fatalf("a retried message shows %q, %q; want queued with the last error", got.DeliveryStatus, got.DeliveryError)
	}
	if early, _ := f.s.ClaimOutbox(f.ctx, now.Add(time.Minute), now.Add(3*time.Minute), 10); len(early) != 0 {
		t.Fatal("claimed before its next attempt")
	}
	due, _ := f.s.ClaimOutbox(f.ctx, now.Add(2*time.Minute), now.Add(3*time.Minute), 10)
	if len(due) != 1 || due[0].Attempts != 2 || len(due[0].Recipients) != 1 || len(due[0].Failures) != 1 {
		t.Fatalf("retried entry %+v", due)
	}
	f.must(f.s.FinishOutbox(f.ctx, m.ID, core.DeliveryFailed, "a@example.org: 550 no", m.Recipients))
	got, _ := f.s.Message(f.ctx, a.ID, m.ID)
	if got.DeliveryStatus != core.DeliveryFailed || got.DeliveryError != "a@example.org: 550 no" {
		t.Fatalf("after finish %+v", got)
	}
	if rest, _ := f.s.ClaimOutbox(f.ctx, now.Add(time.Hour), now.Add(2*time.Hour), 10); len(rest) != 0 {
		t.Fatalf("finished entry still queued: %+v", rest)
	}
}

func testMailUploads(t *testing.T, f *fixture) {
	a := f.account()
	ident, _ := f.identity(a.ID)
	up := ports.AttachmentContent{Attachment: core.Attachment{ID: uuid.NewString(), AccountID: a.ID, IdentityID: ident.ID,
		Filename: "report.csv", ContentType: "text/csv", Size: 3, CreatedAt: f.tick()}, Content: []byte("a,b")}
	f.must(f.s.SaveUpload(f.ctx, up))
	got, err := f.s.Attachment(f.ctx, a.ID, up.ID)
	f.must(err)
	if string(got.Content) != "a,b" || got.MessageID != 0 || got.Filename != "report.csv" {
		t.Fatalf("upload %+v", got)
	}
}

// testMailSources: a store may keep a source in another form (SQLite
// compresses it), but reads it back as it was, and a mailbox's sizes are
// the received bytes'.
func testMailSources(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	noise := make([]byte, 40<<10) // incompressible
	rand.NewChaCha8([32]byte{}).Read(noise)
	sources := [][]byte{
		[]byte("Subject: tiny\r\n\r\nBody\r\n"),
		[]byte("Subject: text\r\n\r\n" + strings.Repeat("Quarterly figures attached, see the summary.\r\n", 2000)),
		append([]byte("Subject: noise\r\n\r\n"), noise...),
	}
	want := map[int64][]byte{}
	var sizes []string
	for i, raw := range sources {
		nm := incoming(in, fmt.Sprintf("src%d@x", i), "source", f.tick(), "")
		nm.Raw = raw
		m := f.save(nm)[0]
		want[m.ID] = raw
		sizes = append(sizes, fmt.Sprint(m.ID, len(raw)))
	}
	for id, raw := range want {
		got, err := f.s.RawMessage(f.ctx, a.ID, id)
		f.must(err)
		if !bytes.Equal(got, raw) {
			t.Fatalf("message %d: read back %d bytes, want its %d", id, len(got), len(raw))
		}
	}
	entries, err := f.s.MailboxEntries(f.ctx, in.ID, core.Incoming, false)
	f.must(err)
	wantIDs(t, "sizes", ids(entries, func(e ports.MailboxEntry) string { return fmt.Sprint(e.ID, e.Size) }), sizes)
}

func testMailboxEntries(t *testing.T, f *fixture) {
	a := f.account()
	_, in := f.identity(a.ID)
	_, other := f.identity(a.ID)
	m1 := f.save(incoming(in, "1@x", "one", f.tick(), ""))[0]
	out := incoming(in, "2@x", "two", f.tick(), "")
	out.Message.Direction, out.Message.IsRead = core.Outgoing, true
	m2 := f.save(out)[0]
	f.save(incoming(other, "3@x", "three", f.tick(), ""))
	m4 := f.save(incoming(in, "4@x", "four", f.tick(), ""))[0]
	f.must(f.s.SetRead(f.ctx, a.ID, m4.ID, true))
	entries, err := f.s.MailboxEntries(f.ctx, in.ID, core.Incoming, false)
	f.must(err)
	got := ids(entries, func(e ports.MailboxEntry) string { return fmt.Sprint(e.ID, e.IsRead, e.Size) })
	size := len("Subject: one\r\n\r\nBody\r\n")
	wantIDs(t, "incoming", got, []string{fmt.Sprint(m1.ID, false, size), fmt.Sprint(m4.ID, true, size+1)})
	if !entries[0].CreatedAt.Equal(m1.CreatedAt) {
		t.Fatalf("created %v, want %v", entries[0].CreatedAt, m1.CreatedAt)
	}
	sent, err := f.s.MailboxEntries(f.ctx, in.ID, core.Outgoing, false)
	f.must(err)
	wantIDs(t, "outgoing", ids(sent, func(e ports.MailboxEntry) string { return fmt.Sprint(e.ID) }), []string{fmt.Sprint(m2.ID)})
}
