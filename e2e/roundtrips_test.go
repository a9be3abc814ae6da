package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestEverydayDetails, on both databases through the real service: a
// message an identity sends itself is one thread of two copies; a body
// reads back as its sender wrote it; provisioning a number moves the
// identity's updated_dt.
func TestEverydayDetails(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil, fastRetry)
		mgmt := r.bootstrap("everyday@example.com")
		var ident struct {
			UUID, Inbox string
			UpdatedDT   string `json:"updated_dt"`
		}
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Self"}, &ident)
		created := ident.UpdatedDT
		if created == "" {
			t.Fatalf("no updated_dt: %+v", ident)
		}

		// To its own address: the sent and the received copy share a thread.
		var sent apiMessage
		if s := r.call("POST", "/api/email-messages/compose/?identity="+ident.UUID, mgmt,
			map[string]any{"to_email": ident.Inbox, "subject": "Note to self", "content": "Remember the milk\n\n"}, &sent); s != 201 {
			t.Fatalf("compose: %d", s)
		}
		var pg apiPage
		poll(t, "the received copy", func() bool {
			r.call("GET", "/api/email-messages/?identity="+ident.UUID, mgmt, nil, &pg)
			return pg.Count == 2
		})
		for _, listed := range pg.Results {
			var m apiMessage
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", listed.ID), mgmt, nil, &m)
			if m.ThreadID != sent.ThreadID || m.Content != "Remember the milk\n\n" {
				t.Errorf("a copy in another thread or with another body: %+v (sent %+v)", m, sent)
			}
		}
		var threads []struct {
			ThreadID     string `json:"thread_id"`
			MessageCount int    `json:"message_count"`
			UnreadCount  int    `json:"unread_count"`
		}
		r.call("GET", "/api/email-inbox/?identity="+ident.UUID, mgmt, nil, &threads)
		if len(threads) != 1 || threads[0].MessageCount != 2 || threads[0].UnreadCount != 1 {
			t.Fatalf("threads: %+v", threads)
		}

		// Over SMTP, the line break that ends the last line is not the sender's text.
		raw := "From: alice@example.org\r\nTo: " + ident.Inbox + "\r\nSubject: Hello\r\nMessage-ID: <smtp-1@example.org>\r\n\r\nAre you there?\r\n"
		sendSMTP(t, r.svc.SMTPAddr(), "alice@example.org", []string{ident.Inbox}, raw)
		r.call("GET", "/api/email-messages/?identity="+ident.UUID+"&from_email=alice@example.org", mgmt, nil, &pg)
		var over apiMessage
		if pg.Count == 1 {
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", pg.Results[0].ID), mgmt, nil, &over)
		}
		if pg.Count != 1 || over.Content != "Are you there?" {
			t.Fatalf("over SMTP: %+v %+v", pg, over)
		}

		time.Sleep(2 * time.Millisecond) // times are kept to the microsecond
		var after struct {
			Phone     *string
			UpdatedDT string `json:"updated_dt"`
		}
		if s := r.call("POST", "/api/identities/"+ident.UUID+"/provision-phone/", mgmt, nil, &after); s != 200 || after.Phone == nil {
			t.Fatalf("provision: %d %+v", s, after)
		}
		var shown struct {
			UpdatedDT string `json:"updated_dt"`
		}
		r.call("GET", "/api/identities/"+ident.UUID+"/", mgmt, nil, &shown)
		if after.UpdatedDT <= created || shown.UpdatedDT != after.UpdatedDT {
			t.Fatalf("updated_dt: created %s, provisioning answered %s, then shown %s", created, after.UpdatedDT, shown.UpdatedDT)
		}
	})
}
