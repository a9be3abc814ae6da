package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestRules: an identity limited to @customer.example can mail and text no
// one else, is reached by no one else (550 5.7.1 at RCPT over the real
// SMTP listener; a bounce-style message with an empty sender is stored
// blocked, hidden from lists, threads and IMAP), and a blocked number's
// text is kept blocked. Only management keys change rules.
func TestRules(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("rules@example.com")
		var ident struct{ UUID, Inbox, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Limited", "provision_phone": true}, &ident)
		var key struct{ Key string }
		r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)

		rule := func(k string, body map[string]any) (int, map[string]any) {
			var out map[string]any
			s := r.call("POST", "/api/rules/", k, body, &out)
			return s, out
		}
		for _, dir := range []string{"inbound", "outbound"} {
			if s, out := rule(mgmt, map[string]any{"identity": ident.UUID, "channel": "email", "direction": dir, "action": "allow", "pattern": "@Customer.Example"}); s != 201 || out["pattern"] != "@customer.example" {
				t.Fatalf("allow %s: %d %v", dir, s, out)
			}
		}
		s, blockMallory := rule(mgmt, map[string]any{"channel": "email", "direction": "outbound", "action": "block", "pattern": "mallory@customer.example"})
		if s != 201 || blockMallory["identity"] != nil {
			t.Fatalf("account-wide block: %d %v", s, blockMallory)
		}
		if s, out := rule(mgmt, map[string]any{"channel": "sms", "direction": "inbound", "action": "block", "pattern": "+4420"}); s != 201 {
			t.Fatalf("sms block: %d %v", s, out)
		}
		if s, out := rule(mgmt, map[string]any{"channel": "sms", "direction": "outbound", "action": "block", "pattern": "+1415555"}); s != 201 {
			t.Fatalf("sms outbound block: %d %v", s, out)
		}
		if s, out := rule(mgmt, map[string]any{"channel": "email", "direction": "inbound", "action": "block", "pattern": "not a pattern"}); s != 400 || out["pattern"] == nil {
			t.Fatalf("bad pattern: %d %v", s, out)
		}
		if s, _ := rule(key.Key, map[string]any{"channel": "email", "direction": "outbound", "action": "allow", "pattern": "@anywhere.example"}); s != 403 {
			t.Fatalf("an identity key made a rule: %d", s)
		}
		if s := r.call("DELETE", "/api/rules/"+blockMallory["id"].(string)+"/", key.Key, nil, nil); s != 403 {
			t.Fatalf("an identity key deleted a rule: %d", s)
		}
		var listed []map[string]any
		if r.call("GET", "/api/rules/", key.Key, nil, &listed); len(listed) != 5 {
			t.Fatalf("the identity's rules: %v", listed)
		}

		// Outbound.
		compose := func(to string, cc ...string) (int, map[string]any) {
			var out map[string]any
			s := r.call("POST", "/api/email-messages/compose/", key.Key, map[string]any{"to_email": to, "cc": cc, "subject": "Hi", "content": "Hello."}, &out)
			return s, out
		}
		if s, out := compose("ann@customer.example"); s != 201 {
			t.Fatalf("to a customer: %d %v", s, out)
		}
		if s, out := compose("eve@elsewhere.example"); s != 400 || !strings.Contains(asJSON(out["to_email"]), "allow rules") {
			t.Fatalf("to a stranger: %d %v", s, out)
		}
		if s, out := compose("ann@customer.example", "mallory@customer.example"); s != 400 || !strings.Contains(asJSON(out["cc"]), blockMallory["id"].(string)) {
			t.Fatalf("cc a blocked address: %d %v", s, out)
		}
		var sms map[string]any
		if s := r.call("POST", "/api/messages/send/", key.Key, map[string]any{"to": "+14155550100", "body": "hi"}, &sms); s != 400 || sms["to"] == nil {
			t.Fatalf("text to a blocked number: %d %v", s, sms)
		}

		// Inbound over SMTP.
		smtpAddr := r.svc.smtpLn.Addr().String()
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
		r.call("GET", "/api/email-messages/?direction=incoming&limit=50", key.Key, nil, &page)
		if page.Count != 1 || page.Results[0]["subject"] != "Customer" {
			t.Fatalf("inbound list: %+v", page)
		}
		r.call("GET", "/api/email-messages/?direction=incoming&include_blocked=true&limit=50", key.Key, nil, &page)
		if page.Count != 2 || page.Results[1]["subject"] != "Undeliverable" || page.Results[1]["blocked"] != true || page.Results[1]["is_read"] != true {
			t.Fatalf("with blocked: %+v", page)
		}
		var threads []map[string]any
		r.call("GET", "/api/email-inbox/", key.Key, nil, &threads)
		for _, th := range threads {
			if th["subject"] == "Undeliverable" {
				t.Fatalf("the blocked message's thread is listed: %v", threads)
			}
		}
		var contacts []map[string]any
		r.call("GET", "/api/contacts/", key.Key, nil, &contacts)
		for _, c := range contacts {
			if c["email"] == "mailer-daemon@elsewhere.example" || c["email"] == "MAILER-DAEMON@elsewhere.example" {
				t.Fatalf("a blocked sender was recorded: %v", contacts)
			}
		}

		// IMAP shows the customer's message only.
		c, err := imapclient.DialInsecure(r.svc.imapLn.Addr().String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Login(ident.Inbox, key.Key).Wait(); err != nil {
			t.Fatal(err)
		}
		sel, err := c.Select("INBOX", nil).Wait()
		if err != nil || sel.NumMessages != 1 {
			t.Fatalf("IMAP SELECT: %v %+v", err, sel)
		}

		// A blocked number's text is kept, blocked.
		if s, b := r.callRaw("POST", "/webhooks/sim/sms/", mgmt, map[string]any{"From": "+442071838750", "To": ident.Phone, "Body": "spam"}); s >= 300 {
			t.Fatalf("simulated text: %d %s", s, b)
		}
		var texts []map[string]any
		if r.call("GET", "/api/messages/", key.Key, nil, &texts); len(texts) != 0 {
			t.Fatalf("a blocked text is listed: %v", texts)
		}
		if r.call("GET", "/api/messages/?include_blocked=true", key.Key, nil, &texts); len(texts) != 1 || texts[0]["blocked"] != true {
			t.Fatalf("with blocked: %v", texts)
		}
		var convs []map[string]any
		if r.call("GET", "/api/sms-inbox/", key.Key, nil, &convs); len(convs) != 0 {
			t.Fatalf("a blocked text's conversation is listed: %v", convs)
		}

		// Only the customer's mail is an email.received event, and no
		// sms.received event came of the blocked text.
		var events struct {
			Results []struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			} `json:"results"`
		}
		r.call("GET", "/api/events/?types=email.received,sms.received", key.Key, nil, &events)
		if len(events.Results) != 1 || events.Results[0].Type != "email.received" || events.Results[0].Data["subject"] != "Customer" {
			t.Fatalf("events: %+v", events.Results)
		}

		// Lifting the account-wide block lets mail to mallory pass.
		if s := r.call("DELETE", "/api/rules/"+blockMallory["id"].(string)+"/", mgmt, nil, nil); s != 204 {
			t.Fatalf("delete: %d", s)
		}
		if s, out := compose("mallory@customer.example"); s != 201 {
			t.Fatalf("after the block was lifted: %d %v", s, out)
		}
	})
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
