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

// htmlParser reads a whole source as its HTML body.
type htmlParser struct{}

func (htmlParser) Parse(raw []byte) (ports.ParsedMail, error) {
	return ports.ParsedMail{HTML: string(raw)}, nil
}

func (p htmlParser) Describe(raw []byte) (ports.ParsedMail, error) { return p.Parse(raw) }

// TestHTMLKeptInSource: received mail whose HTML its source holds is
// stored without it, and every read of one message gives the HTML the row
// would have held (bounded, cleaned); a store without a parser keeps it in
// the row, and refuses to read a row that needs one.
func TestHTMLKeptInSource(t *testing.T) {
	ctx := context.Background()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			url := sqlstoretest.URL(t, d)
			db := sqlstoretest.OpenWith(t, url, sqlstore.Options{Parser: htmlParser{}})
			now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
			acct, ident, inboxID := newMailbox(t, db, "html@example.com", "h", now)
			received := func(store *sqlstore.DB, msgID, raw string, dedupe bool) core.EmailMessage {
				t.Helper()
				m := core.EmailMessage{AccountID: acct.ID, IdentityID: ident.ID, InboxID: inboxID, Direction: core.Incoming,
					Header: core.Header{MessageID: msgID}, Text: "text", HTML: raw, CreatedAt: now}
				m.BoundBodies()
				out, err := store.SaveMail(ctx, []ports.NewMail{{Message: m, NewThreadID: uuid.NewString()[:12], Raw: []byte(raw),
					HTMLInRaw: true, Dedupe: dedupe}})
				if err != nil {
					t.Fatal(err)
				}
				return out[0]
			}
			for _, c := range []struct{ name, raw, want string }{
				{"plain", "<p>Hello</p>", "<p>Hello</p>"},
				{"NUL and bad UTF-8", "<p>a\x00b\xffc</p>", "<p>a\uFFFDb\uFFFDc</p>"},
				{"longer than a stored body", strings.Repeat("é", core.MaxStoredBody/2) + "<p>", strings.Repeat("é", core.MaxStoredBody/2)},
			} {
				stored := received(db, c.name+"@x", c.raw, false)
				html, inSource, err := sqlstore.StoredHTML(ctx, db, stored.ID)
				if err != nil || html != "" || !inSource {
					t.Fatalf("%s: the row holds %d bytes of HTML, in source %v, %v", c.name, len(html), inSource, err)
				}
				got, err := db.Message(ctx, acct.ID, stored.ID)
				if err != nil || got.HTML != c.want || got.Text != "text" {
					t.Errorf("%s: Message gives %d bytes of HTML (want %d), text %q, %v", c.name, len(got.HTML), len(c.want), got.Text, err)
				}
				if got, err := db.MessageByMessageID(ctx, inboxID, c.name+"@x"); err != nil || got.HTML != c.want {
					t.Errorf("%s: MessageByMessageID gives %d bytes of HTML, %v", c.name, len(got.HTML), err)
				}
			}
			// A redelivery comes back as the copy stored, HTML included.
			if dup := received(db, "plain@x", "<p>Hello</p>", true); dup.HTML != "<p>Hello</p>" {
				t.Errorf("the redelivered copy has HTML %q", dup.HTML)
			}

			bare, err := sqlstore.Open(ctx, url, sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { bare.Close() })
			kept := received(bare, "kept@x", "<p>Kept</p>", false)
			if html, inSource, err := sqlstore.StoredHTML(ctx, bare, kept.ID); err != nil || html != "<p>Kept</p>" || inSource {
				t.Errorf("without a parser the row holds %q, in source %v, %v", html, inSource, err)
			}
			if got, err := db.Message(ctx, acct.ID, kept.ID); err != nil || got.HTML != "<p>Kept</p>" {
				t.Errorf("a row that keeps its HTML reads %q, %v", got.HTML, err)
			}
			first, _ := db.MessageByMessageID(ctx, inboxID, "plain@x")
			if _, err := bare.Message(ctx, acct.ID, first.ID); err == nil {
				t.Error("a store without a parser read a message whose HTML is in its source")
			}
		})
	}
}
