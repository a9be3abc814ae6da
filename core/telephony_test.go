package core

import (
	"testing"
	"time"
)

func TestConversationSummary(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	sms := func(id int64, dir Direction, read bool, at time.Time, body string) SMSMessage {
		m := SMSMessage{ID: id, AccountID: "A", IdentityID: "I", PhoneID: 7, PhoneNumber: "+14155550100", Body: body,
			Direction: dir, IsRead: read, CreatedAt: at}
		if dir == Incoming {
			m.FromNumber, m.ToNumber = "+14155550199", m.PhoneNumber
		} else {
			m.FromNumber, m.ToNumber = m.PhoneNumber, "+14155550199"
		}
		return m
	}
	base := Conversation{ID: "7_+14155550199", AccountID: "A", IdentityID: "I", PhoneID: 7, PhoneNumber: "+14155550100", Counterpart: "+14155550199"}
	if got := StartConversation(sms(1, Outgoing, true, t0, "hi")); got != base {
		t.Fatalf("started %+v", got)
	}
	for _, tc := range []struct {
		name string
		msgs []SMSMessage
		want func(Conversation) Conversation
	}{
		{"one unread received", []SMSMessage{sms(1, Incoming, false, t0, "hello")}, func(c Conversation) Conversation {
			c.MessageCount, c.UnreadCount, c.Preview, c.LastMessageAt = 1, 1, "hello", t0
			return c
		}},
		{"sent and read messages are not unread; the latest previews", []SMSMessage{
			sms(1, Incoming, true, t0, "hello"), sms(2, Outgoing, true, t0.Add(time.Minute), "hi back"), sms(3, Incoming, false, t0.Add(2*time.Minute), "  and\nmore ")},
			func(c Conversation) Conversation {
				c.MessageCount, c.UnreadCount, c.Preview, c.LastMessageAt = 3, 1, "and more", t0.Add(2*time.Minute)
				return c
			}},
		{"of two at the same time, the later id previews", []SMSMessage{sms(1, Incoming, false, t0, "first"), sms(2, Incoming, false, t0, "second")},
			func(c Conversation) Conversation {
				c.MessageCount, c.UnreadCount, c.Preview, c.LastMessageAt = 2, 2, "second", t0
				return c
			}},
	} {
		if got, want := SummarizeConversation(tc.msgs), tc.want(base); got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, want)
		}
	}
}
