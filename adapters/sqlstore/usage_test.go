package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// The sends log holds about an hour: each send prunes its account's rows
// older than core.SendWindow, so the table does not grow with the mail.
func TestSendsLogPrunesItself(t *testing.T) {
	ctx := context.Background()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db := sqlstoretest.Open(t, d)
			start := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
			acct, ident, inboxID := newMailbox(t, db, "sends@example.com", "s", start)
			send := func(at time.Time) {
				m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Outgoing,
					Header: core.Header{MessageID: uuid.NewString() + "@x"}, CreatedAt: at}
				if _, err := db.SaveMail(ctx, []ports.NewMail{{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte("x")}}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 5 {
				send(start.Add(time.Duration(i) * time.Minute))
			}
			send(start.Add(core.SendWindow + 3*time.Minute + 30*time.Second)) // the first four are past the window now
			if n, err := sqlstore.SendRows(ctx, db, acct.ID); err != nil || n != 2 {
				t.Fatalf("rows kept: %d %v, want 2", n, err)
			}
			u, err := db.Usage(ctx, acct.ID, "", start.Add(3*time.Minute+30*time.Second), []core.Quota{core.QuotaSendsPerHour})
			if err != nil || u.Used[core.QuotaSendsPerHour] != 2 || !u.OldestSend.Equal(start.Add(4*time.Minute)) {
				t.Fatalf("usage %v, oldest %v, %v", u.Used, u.OldestSend, err)
			}
		})
	}
}
