package e2e

import (
	"errors"
	"testing"

	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestRules is the rules' wiring: an allow rule made through the API is
// asked by the real SMTP listener (550 5.7.1 at RCPT for a stranger), and
// a bounce-style message with an empty sender is stored blocked in SQL,
// hidden from the list and from IMAP, on both databases. Every rule's
// behaviour is adapters/httpapi's TestRules.
func TestRules(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("rules@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Limited"}, &ident)
		key := identityKey(r, mgmt, ident.UUID)
		if s := r.call("POST", "/api/rules/", mgmt, map[string]any{"identity": ident.UUID, "channel": "email", "direction": "inbound", "action": "allow", "pattern": "@customer.example"}, nil); s != 201 {
			t.Fatalf("allow: %d", s)
		}

		smtpAddr := r.svc.SMTPAddr()
		err := smtpSend(smtpAddr, "stranger@elsewhere.example", []string{ident.Inbox}, plainMail(ident.Inbox, "s1@elsewhere.example", "Stranger"))
		var refused *smtp.SMTPError
		if !errors.As(err, &refused) || refused.Code != 550 || refused.EnhancedCode != (smtp.EnhancedCode{5, 7, 1}) {
			t.Fatalf("a stranger's RCPT: %v", err)
		}
		sendSMTP(t, smtpAddr, "bob@customer.example", []string{ident.Inbox}, plainMail(ident.Inbox, "c1@customer.example", "Customer"))
		bounce := "From: MAILER-DAEMON@elsewhere.example\r\nTo: " + ident.Inbox + "\r\nSubject: Undeliverable\r\nMessage-ID: <b1@elsewhere.example>\r\n\r\nA bounce.\r\n"
		sendSMTP(t, smtpAddr, "", []string{ident.Inbox}, bounce)

		var page struct {
			Count   int              `json:"count"`
			Results []map[string]any `json:"results"`
		}
		r.call("GET", "/api/email-messages/?direction=incoming&limit=50", key, nil, &page)
		if page.Count != 1 || page.Results[0]["subject"] != "Customer" {
			t.Fatalf("inbound list: %+v", page)
		}
		r.call("GET", "/api/email-messages/?direction=incoming&include_blocked=true&limit=50", key, nil, &page)
		if page.Count != 2 || page.Results[1]["subject"] != "Undeliverable" || page.Results[1]["blocked"] != true {
			t.Fatalf("with blocked: %+v", page)
		}

		// IMAP shows the customer's message only.
		c, err := imapclient.DialInsecure(r.svc.IMAPAddr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Login(ident.Inbox, key).Wait(); err != nil {
			t.Fatal(err)
		}
		sel, err := c.Select("INBOX", nil).Wait()
		if err != nil || sel.NumMessages != 1 {
			t.Fatalf("IMAP SELECT: %v %+v", err, sel)
		}
	})
}
