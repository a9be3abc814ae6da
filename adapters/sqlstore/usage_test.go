package sqlstore_test

import (
	"context"
	"strings"
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

// storedBytesColumns is the migration that gives each counted row its
// stored_bytes.
const storedBytesColumns = 34

// Rows written before stored_bytes existed get core's figure from the
// migration: the account's storage stays as it was, and deleting the rows
// gives back exactly what they counted.
func TestStoredBytesMigrationBackfillsCoresFigure(t *testing.T) {
	ctx := context.Background()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db, err := sqlstore.Open(ctx, sqlstoretest.URL(t, d), sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if err := sqlstore.MigrateTo(ctx, db, storedBytesColumns-1); err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
			acct, ident, inboxID := newMailbox(t, db, "stored@example.com", "stored", at)
			upload := []byte("crème brûlée")
			content := "Grüße, 世界"
			draft := core.Draft{ID: uuid.NewString(), Content: &content, HTML: "<p>Grüße, <b>世界</b></p>"}
			if err := sqlstore.Exec(ctx, db, `INSERT INTO attachments (id, account_id, identity_id, filename, content_type, size, content, created_at)
				VALUES (?, ?, ?, 'up.txt', 'text/plain', ?, ?, ?)`, uuid.NewString(), acct.ID, ident.ID, len(upload), upload, at.UnixMicro()); err != nil {
				t.Fatal(err)
			}
			if err := sqlstore.Exec(ctx, db, `INSERT INTO email_drafts (id, account_id, identity_id, inbox_id, kind, content, html, created_at, updated_at)
				VALUES (?, ?, ?, ?, 'compose', ?, ?, ?, ?)`, draft.ID, acct.ID, ident.ID, inboxID, content, draft.HTML, at.UnixMicro(), at.UnixMicro()); err != nil {
				t.Fatal(err)
			}
			storage := func(step string, want int64) {
				t.Helper()
				u, err := db.Usage(ctx, acct.ID, "", at, []core.Quota{core.QuotaStorage})
				if err != nil || u.Used[core.QuotaStorage] != want {
					t.Fatalf("%s: storage %v %v, want %d", step, u.Used, err, want)
				}
			}
			uploadBytes, draftBytes := core.AttachmentStoredBytes(upload, false), core.DraftStoredBytes(draft)
			storage("before the migration", uploadBytes+draftBytes)
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			storage("after the migration", uploadBytes+draftBytes)
			if err := db.DeleteDraft(ctx, acct.ID, draft.ID); err != nil {
				t.Fatal(err)
			}
			storage("without the draft", uploadBytes)
			if err := db.DeleteIdentity(ctx, acct.ID, ident.ID); err != nil {
				t.Fatal(err)
			}
			storage("without the upload", 0)
		})
	}
}

// The storage quota counts every message of a batch, stored in one
// statement for several accounts (PostgreSQL adds up per statement,
// migration 00052), and gives it back for a deleted message and for those
// an identity's deletion cascades to.
func TestStorageCountsABatchOfSeveralAccounts(t *testing.T) {
	ctx := context.Background()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db := sqlstoretest.Open(t, d)
			at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
			acctA, identA, inboxA := newMailbox(t, db, "a@example.com", "a", at)
			acctB, identB, inboxB := newMailbox(t, db, "b@example.com", "b", at)
			var batch []ports.NewMail
			want := map[string]int64{}
			for i, to := range []struct {
				acct, ident string
				inbox       int64
			}{{acctA.ID, identA.ID, inboxA}, {acctB.ID, identB.ID, inboxB}, {acctA.ID, identA.ID, inboxA}} {
				raw := []byte(strings.Repeat("x", 100*(i+1)))
				m := core.EmailMessage{AccountID: to.acct, IdentityID: to.ident, InboxID: to.inbox, Direction: core.Incoming,
					Header: core.Header{MessageID: uuid.NewString() + "@x"}, CreatedAt: at}
				batch = append(batch, ports.NewMail{Message: m, NewThreadID: uuid.NewString()[:12], Raw: raw})
				want[to.acct] += core.MessageStoredBytes(raw)
			}
			out, err := db.SaveMail(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			storage := func(step, accountID string, want int64) {
				t.Helper()
				u, err := db.Usage(ctx, accountID, "", at, []core.Quota{core.QuotaStorage})
				if err != nil || u.Used[core.QuotaStorage] != want {
					t.Fatalf("%s: storage %v %v, want %d", step, u.Used, err, want)
				}
			}
			storage("A after the batch", acctA.ID, want[acctA.ID])
			storage("B after the batch", acctB.ID, want[acctB.ID])
			if err := db.DeleteMessage(ctx, acctA.ID, out[0].ID); err != nil {
				t.Fatal(err)
			}
			storage("A without its first message", acctA.ID, want[acctA.ID]-core.MessageStoredBytes(batch[0].Raw))
			if err := db.DeleteIdentity(ctx, acctB.ID, identB.ID); err != nil {
				t.Fatal(err)
			}
			storage("B without its identity", acctB.ID, 0)
		})
	}
}
