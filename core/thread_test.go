package core

import (
	crand "crypto/rand"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// inboxIndex is a MessageIndex over messages of one inbox, newest last.
type inboxIndex struct {
	msgs   []EmailMessage
	probed []string
	err    error
}

func (x *inboxIndex) ThreadOf(_ int64, messageID string) (string, bool, error) {
	x.probed = append(x.probed, messageID)
	if x.err != nil {
		return "", false, x.err
	}
	for i := len(x.msgs) - 1; i >= 0; i-- {
		if x.msgs[i].MessageID == messageID {
			return x.msgs[i].ThreadID, true, nil
		}
	}
	return "", false, nil
}

func (x *inboxIndex) Received(_ int64, messageID string) (EmailMessage, bool, error) {
	if x.err != nil {
		return EmailMessage{}, false, x.err
	}
	for i := len(x.msgs) - 1; i >= 0; i-- {
		if x.msgs[i].MessageID == messageID && x.msgs[i].Direction == Incoming {
			return x.msgs[i], true, nil
		}
	}
	return EmailMessage{}, false, nil
}

func stored(msgID, threadID string, dir Direction) EmailMessage {
	return EmailMessage{Header: Header{MessageID: msgID}, ThreadID: threadID, Direction: dir}
}

func TestJoinThread(t *testing.T) {
	inbox := []EmailMessage{
		stored("root@x", "T1", Incoming),
		stored("reply@x", "T1", Outgoing),
		stored("other@x", "T2", Incoming),
		stored("again@x", "T3", Incoming),
		stored("again@x", "T4", Incoming), // a repeated Message-ID: the newest counts
	}
	for _, tc := range []struct {
		name       string
		messageID  string // "new@x" when empty
		inReplyTo  string
		refs       []string
		wantThread string
		wantFound  bool
		wantProbes []string
	}{
		{"no references: a new thread", "", "", nil, "", false, []string{"new@x"}},
		{"In-Reply-To wins over References", "", "other@x", []string{"root@x"}, "T2", true, []string{"new@x", "other@x"}},
		{"an unknown In-Reply-To falls back to the newest reference", "", "gone@x", []string{"root@x", "reply@x"}, "T1", true, []string{"new@x", "gone@x", "reply@x"}},
		{"References are tried newest first", "", "", []string{"other@x", "unknown@x", "root@x"}, "T1", true, []string{"new@x", "root@x"}},
		{"our own sent message counts", "", "reply@x", nil, "T1", true, []string{"new@x", "reply@x"}},
		{"nothing known: a new thread", "", "a@x", []string{"b@x", "c@x"}, "", false, []string{"new@x", "a@x", "c@x", "b@x"}},
		{"empty references are skipped", "", "", []string{"", "root@x", ""}, "T1", true, []string{"new@x", "root@x"}},
		{"a copy of a message the inbox holds joins its thread", "reply@x", "other@x", nil, "T1", true, []string{"reply@x"}},
		{"the newest message with the id", "", "again@x", nil, "T4", true, []string{"new@x", "again@x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := &inboxIndex{msgs: inbox, probed: []string{}}
			id := tc.messageID
			if id == "" {
				id = "new@x"
			}
			m := EmailMessage{Header: Header{MessageID: id, InReplyTo: tc.inReplyTo, References: tc.refs}}
			got, found, err := JoinThread(m, x)
			if err != nil || got != tc.wantThread || found != tc.wantFound {
				t.Fatalf("JoinThread = %q %v %v, want %q %v", got, found, err, tc.wantThread, tc.wantFound)
			}
			if !reflect.DeepEqual(x.probed, tc.wantProbes) {
				t.Fatalf("looked up %q, want %q", x.probed, tc.wantProbes)
			}
		})
	}
	broken := errors.New("disk")
	if _, _, err := JoinThread(EmailMessage{Header: Header{InReplyTo: "a@x"}}, &inboxIndex{err: broken}); !errors.Is(err, broken) {
		t.Fatalf("a failing lookup: %v", err)
	}
}

func TestThreadAdd(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	msg := func(subject, from string, dir Direction, read bool, at time.Time, files ...string) EmailMessage {
		m := EmailMessage{Header: Header{Subject: subject, FromEmail: from, To: []string{"me@agents.test"}}, Text: "text of " + subject,
			Direction: dir, IsRead: read, CreatedAt: at}
		for _, f := range files {
			m.Attachments = append(m.Attachments, Attachment{Filename: f})
		}
		return m
	}
	for _, tc := range []struct {
		name string
		msgs []EmailMessage
		want Thread
	}{
		{"one received message", []EmailMessage{msg("Hello", "a@x", Incoming, false, t0, "a.pdf")},
			Thread{Subject: "Hello", Summary: Summary{Preview: "text of Hello", MessageCount: 1, UnreadCount: 1, LastMessageAt: t0},
				Participants: []string{"a@x", "me@agents.test"}, AttachmentNames: []string{"a.pdf"}}},
		{"the first subject stays; sent and read mail are not unread", []EmailMessage{
			msg("Hello", "a@x", Incoming, true, t0), msg("Re: Hello", "me@agents.test", Outgoing, true, t0.Add(time.Minute))},
			Thread{Subject: "Hello", Summary: Summary{Preview: "text of Re: Hello", MessageCount: 2, LastMessageAt: t0.Add(time.Minute)},
				Participants: []string{"a@x", "me@agents.test"}}},
		{"an older message keeps the latest preview", []EmailMessage{
			msg("New", "a@x", Incoming, false, t0.Add(time.Hour)), msg("Old", "B@X", Incoming, false, t0, "A.PDF", "b.png")},
			Thread{Subject: "New", Summary: Summary{Preview: "text of New", MessageCount: 2, UnreadCount: 2, LastMessageAt: t0.Add(time.Hour)},
				Participants: []string{"a@x", "me@agents.test", "B@X"}, AttachmentNames: []string{"A.PDF", "b.png"}}},
		{"names repeat once, ignoring case", []EmailMessage{
			msg("x", "a@x", Incoming, false, t0, "a.pdf"), msg("x", "A@X", Incoming, false, t0, "A.pdf")},
			Thread{Subject: "x", Summary: Summary{Preview: "text of x", MessageCount: 2, UnreadCount: 2, LastMessageAt: t0},
				Participants: []string{"a@x", "me@agents.test"}, AttachmentNames: []string{"a.pdf"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := StartThread("T", tc.msgs[0])
			for _, m := range tc.msgs {
				th.Add(m)
			}
			tc.want.ID = "T"
			if !reflect.DeepEqual(th, tc.want) {
				t.Fatalf("summary\n got %+v\nwant %+v", th, tc.want)
			}
		})
	}
	var th Thread
	for i := range 60 {
		th.Add(EmailMessage{Header: Header{FromEmail: string(rune('a'+i%26)) + string(rune('a'+i/26)) + "@x"}})
	}
	if len(th.Participants) != maxThreadParticipants {
		t.Fatalf("participants grow past the limit: %d", len(th.Participants))
	}
}

func TestUnreadCounts(t *testing.T) {
	for _, tc := range []struct {
		dir           Direction
		wasRead, read bool
		delta         int
	}{
		{Incoming, false, true, -1},
		{Incoming, true, false, +1},
		{Incoming, true, true, 0},
		{Incoming, false, false, 0},
		{Outgoing, false, true, 0},
		{Outgoing, true, false, 0},
	} {
		if got := UnreadDelta(tc.dir, tc.wasRead, tc.read); got != tc.delta {
			t.Errorf("UnreadDelta(%s, %v → %v) = %d, want %d", tc.dir, tc.wasRead, tc.read, got, tc.delta)
		}
		if got, want := CountsAsUnread(tc.dir, tc.read), tc.dir == Incoming && !tc.read; got != want {
			t.Errorf("CountsAsUnread(%s, %v) = %v", tc.dir, tc.read, got)
		}
	}
}

// Thread ids begin with their start's milliseconds, so those drawn
// together share a prefix; the rest is random, and the id is as long as
// and in the alphabet of the random ids before.
func TestNewThreadIDsStartedTogetherBeginAlike(t *testing.T) {
	now := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	a, err := NewThreadID(crand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewThreadID(crand.Reader, now)
	later, _ := NewThreadID(crand.Reader, now.Add(time.Hour))
	if len(a) != 16 || strings.Trim(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Fatalf("id %q: want 16 URL-safe base64 characters", a)
	}
	if a == b || a[:8] != b[:8] {
		t.Errorf("ids of one millisecond %q and %q: want the same first 8 characters and different others", a, b)
	}
	if later[:8] == a[:8] {
		t.Errorf("ids an hour apart %q and %q begin alike", a, later)
	}
	if _, err := NewThreadID(strings.NewReader("short"), now); err == nil {
		t.Error("a failing random source gave an id")
	}
}
