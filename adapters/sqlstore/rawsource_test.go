package sqlstore_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// TestSQLiteKeepsSourcesCompressed: SQLite stores a source of up to 1 MiB
// compressed when that saves a tenth of it, as it is otherwise (and
// PostgreSQL always, its TOAST compressing); a source stored before compression (a row with
// compressed false) reads back as it is, and a damaged compressed one is an
// error, not other bytes.
func TestSQLiteKeepsSourcesCompressed(t *testing.T) {
	ctx := context.Background()
	noise := make([]byte, 20<<10)
	rand.NewChaCha8([32]byte{}).Read(noise)
	text := []byte("Subject: minutes\r\n\r\n" + strings.Repeat("The meeting moved to Friday; the notes follow.\r\n", 400))
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			db := sqlstoretest.Open(t, d)
			acct, ident, inboxID := newMailbox(t, db, "sources@example.com", "s", time.Now())
			save := func(raw []byte) int64 {
				t.Helper()
				m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Incoming,
					Header: core.Header{MessageID: uuid.NewString() + "@x"}, Text: "text", CreatedAt: time.Now()}
				out, err := db.SaveMail(ctx, []ports.NewMail{{Message: m, NewThreadID: uuid.NewString()[:12], Raw: raw}})
				if err != nil {
					t.Fatal(err)
				}
				return out[0].ID
			}
			for _, c := range []struct {
				name     string
				raw      []byte
				compress bool
			}{
				{"text", text, d == sqlstore.SQLite},
				{"noise", noise, false},
				{"text over 1 MiB", bytes.Repeat(text, (1<<20)/len(text)+1), false},
			} {
				id := save(c.raw)
				size, compressed, err := sqlstore.StoredSource(ctx, db, id)
				if err != nil {
					t.Fatal(err)
				}
				if compressed != c.compress || (compressed && size > len(c.raw)/4) || (!compressed && size != len(c.raw)) {
					t.Errorf("%s: %d bytes stored for %d (compressed %v), want compressed %v", c.name, size, len(c.raw), compressed, c.compress)
				}
				if got, err := db.RawMessage(ctx, acct.ID, id); err != nil || !bytes.Equal(got, c.raw) {
					t.Fatalf("%s: read back %d bytes (%v), want %d", c.name, len(got), err, len(c.raw))
				}
			}
			if d != sqlstore.SQLite {
				return
			}
			before := save(noise)
			if err := sqlstore.Exec(ctx, db, `UPDATE email_sources SET raw = ? WHERE message_id = ?`, text, before); err != nil {
				t.Fatal(err)
			}
			if got, err := db.RawMessage(ctx, acct.ID, before); err != nil || !bytes.Equal(got, text) {
				t.Fatalf("a source stored uncompressed: read back %d bytes (%v), want %d", len(got), err, len(text))
			}
			if err := sqlstore.Exec(ctx, db, `UPDATE email_sources SET compressed = 1 WHERE message_id = ?`, before); err != nil {
				t.Fatal(err)
			}
			if got, err := db.RawMessage(ctx, acct.ID, before); err == nil {
				t.Fatalf("a damaged compressed source read back as %d bytes", len(got))
			}
		})
	}
}
