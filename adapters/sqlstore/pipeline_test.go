package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Once email_messages has statistics, PostgreSQL's batches look messages
// up by Message-ID through the plans the plan cache keeps (generic after
// five runs) rather than planning them each time: replies still join
// their threads and redeliveries still find their copies, batch after
// batch.
func TestMailLookupsOnceAnalyzed(t *testing.T) {
	if os.Getenv(sqlstoretest.PostgresURLVar) == "" {
		t.Skipf("%s is not set", sqlstoretest.PostgresURLVar)
	}
	ctx := context.Background()
	db := sqlstoretest.Open(t, sqlstore.Postgres)
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	acct, ident, inboxID := newMailbox(t, db, "analyzed@example.com", "analyzed", at)
	mail := func(messageID, inReplyTo string) ports.NewMail {
		m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Incoming,
			Header: core.Header{MessageID: messageID, InReplyTo: inReplyTo, Subject: "s"}, CreatedAt: at}
		return ports.NewMail{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte("x"), Dedupe: true}
	}
	var first []core.EmailMessage
	for start := 0; start < 10_000; start += 2000 {
		var batch []ports.NewMail
		for i := start; i < start+2000; i++ {
			batch = append(batch, mail(fmt.Sprintf("%d@x", i), ""))
		}
		out, err := db.SaveMail(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = out
		}
	}
	if err := sqlstore.Exec(ctx, db, `ANALYZE email_messages`); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		original := first[i]
		out, err := db.SaveMail(ctx, []ports.NewMail{mail(fmt.Sprintf("reply-%d@x", i), original.MessageID), mail(original.MessageID, "")})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].ThreadID != original.ThreadID {
			t.Fatalf("batch %d: the reply is in thread %s, want its original's %s", i, out[0].ThreadID, original.ThreadID)
		}
		if out[1].ID != original.ID {
			t.Fatalf("batch %d: the redelivery was stored again as %d, want the copy %d", i, out[1].ID, original.ID)
		}
	}
}

// Where nothing else analyzes the mail tables (autovacuum is off, as on
// this machine, or lags), the store analyzes them itself once they have
// outgrown their statistics, so that the plans it caches fit them.
func TestMailAnalyzedOnceOutgrown(t *testing.T) {
	if os.Getenv(sqlstoretest.PostgresURLVar) == "" {
		t.Skipf("%s is not set", sqlstoretest.PostgresURLVar)
	}
	ctx := context.Background()
	db := sqlstoretest.Open(t, sqlstore.Postgres)
	analyzed := []string{"email_messages", "email_threads", "email_search"}
	for _, table := range analyzed {
		if err := sqlstore.Exec(ctx, db, `ALTER TABLE `+table+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	acct, ident, inboxID := newMailbox(t, db, "outgrown@example.com", "outgrown", at)
	text := strings.Repeat("words of a message ", 80) // 1,520 bytes: a row of about 1.7 KB
	save := func(from, to int) {
		var batch []ports.NewMail
		for i := from; i < to; i++ {
			m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Incoming,
				Header: core.Header{MessageID: fmt.Sprintf("%d@outgrown", i), Subject: "s"}, Text: text, CreatedAt: at}
			batch = append(batch, ports.NewMail{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte("x"), Dedupe: true})
		}
		if _, err := db.SaveMail(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	counted := func(table string) float64 {
		t.Helper()
		n, err := sqlstore.CountedRows(ctx, db, table)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	save(0, 100)
	for _, table := range analyzed {
		if n := counted(table); n >= 0 {
			t.Fatalf("statistics of 100 messages: %s counts %v rows; want none yet", table, n)
		}
	}
	save(100, 1600)
	// A batch asks at most once a second.
	for i, deadline := 1600, time.Now().Add(20*time.Second); ; i++ {
		save(i, i+1)
		if counted("email_messages") >= 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("statistics of email_messages count %v rows after %d messages, want them analyzed", counted("email_messages"), i+1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// One ANALYZE takes the three; it may still be at a later one.
	for deadline := time.Now().Add(20 * time.Second); counted("email_threads") < 1000 || counted("email_search") < 1000; {
		if time.Now().After(deadline) {
			t.Fatalf("statistics of the threads and the search index count %v and %v rows, want them analyzed with the messages",
				counted("email_threads"), counted("email_search"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A batch whose sources pass the bound of one multi-row insert stores them
// with several, each after the messages they belong to.
func TestSourcesOfABatchSplitAcrossInserts(t *testing.T) {
	ctx := context.Background()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			defer sqlstore.SetMaxRowSetBytes(150)()
			db := sqlstoretest.Open(t, d)
			at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
			acct, ident, inboxID := newMailbox(t, db, "split@example.com", "split", at)
			var batch []ports.NewMail
			for i := range 5 {
				m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Incoming,
					Header: core.Header{MessageID: fmt.Sprintf("%d@split", i)}, CreatedAt: at}
				batch = append(batch, ports.NewMail{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte(fmt.Sprintf("%d%0100d", i, 0))})
			}
			out, err := db.SaveMail(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range out {
				raw, err := db.RawMessage(ctx, acct.ID, m.ID)
				if err != nil || string(raw) != string(batch[i].Raw) {
					t.Fatalf("message %d's source: %q %v, want %q", i, raw, err, batch[i].Raw)
				}
			}
		})
	}
}
