package core

import (
	"errors"
	"testing"
	"time"
)

func TestFileMail(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 123456000, time.UTC)
	inbox := []EmailMessage{
		{ID: 1, Header: Header{MessageID: "root@x"}, ThreadID: "T1", Direction: Incoming},
		{ID: 2, Header: Header{MessageID: "sent@x"}, ThreadID: "T2", Direction: Outgoing},
	}
	for _, tc := range []struct {
		name        string
		msgID       string
		inReplyTo   string
		dedupe      bool
		now, last   time.Time
		duplicateID int64
		wantAt      time.Time
		wantThread  string
		wantNew     bool
	}{
		{"a new message starts a thread at now", "new@x", "", false, t0, t0.Add(-time.Second), 0, t0, "NEW", true},
		{"a reply joins its thread", "r@x", "root@x", false, t0, time.Time{}, 0, t0, "T1", false},
		{"a time already given moves on by a microsecond", "new@x", "", false, t0, t0, 0, t0.Add(time.Microsecond), "NEW", true},
		{"a clock behind the account's latest never goes back", "new@x", "", false, t0, t0.Add(time.Hour), 0, t0.Add(time.Hour + time.Microsecond), "NEW", true},
		{"dedupe: a received message is not stored again", "root@x", "", true, t0, t0, 1, time.Time{}, "", false},
		{"dedupe: only received copies count; the sent copy gives its thread", "sent@x", "", true, t0, time.Time{}, 0, t0, "T2", false},
		{"without dedupe a repeated Message-ID is stored, with its copy", "root@x", "", false, t0, time.Time{}, 0, t0, "T1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := EmailMessage{Header: Header{MessageID: tc.msgID, InReplyTo: tc.inReplyTo}, Direction: Incoming, CreatedAt: tc.now}
			f, err := FileMail(m, tc.dedupe, "NEW", tc.last, &inboxIndex{msgs: inbox})
			if err != nil {
				t.Fatal(err)
			}
			if tc.duplicateID != 0 {
				if f.Duplicate == nil || f.Duplicate.ID != tc.duplicateID {
					t.Fatalf("want the stored copy %d, got %+v", tc.duplicateID, f)
				}
				return
			}
			if f.Duplicate != nil || !f.CreatedAt.Equal(tc.wantAt) || f.ThreadID != tc.wantThread || f.NewThread != tc.wantNew {
				t.Fatalf("filed %+v, want at %v in %q (new %v)", f, tc.wantAt, tc.wantThread, tc.wantNew)
			}
		})
	}
	broken := errors.New("disk")
	if _, err := FileMail(EmailMessage{}, true, "NEW", t0, &inboxIndex{err: broken}); !errors.Is(err, broken) {
		t.Fatalf("a failing lookup: %v", err)
	}
}
