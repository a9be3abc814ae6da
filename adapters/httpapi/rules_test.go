package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// deliverFrom delivers a raw message with an envelope sender ("" for a
// bounce) to the inbox with the address, as the SMTP listener would after
// its RCPT.
func (h *harness) deliverFrom(envelopeFrom, to, raw string) {
	h.t.Helper()
	in, err := h.app.Receiving.ResolveRecipient(context.Background(), envelopeFrom, to)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.app.Receiving.Deliver(context.Background(), app.InboundMail{EnvelopeFrom: envelopeFrom, Inboxes: []core.Inbox{in}, Raw: []byte(raw)}); err != nil {
		h.t.Fatal(err)
	}
}

// TestRules: an identity limited to @customer.example can mail and text no
// one else, is reached by no one else (its recipient refuses the sender,
// which the SMTP listener answers 550 5.7.1: e2e's TestRules), a
// bounce-style message with an empty sender is stored blocked and hidden
// from lists, threads, contacts and events, and a blocked number's text is
// kept blocked. Only management keys change rules.
func TestRules(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Limited", "provision_phone": true}, mgmt).want(t, 201).object(t)
	inbox := ident["inbox"].(string)
	key := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": ident["uuid"]}, mgmt).want(t, 201).object(t)["key"].(string)

	for _, dir := range []string{"inbound", "outbound"} {
		if out := h.do("POST", "/api/rules/", map[string]any{"identity": ident["uuid"], "channel": "email", "direction": dir, "action": "allow", "pattern": "@Customer.Example"}, mgmt).
			want(t, 201).object(t); out["pattern"] != "@customer.example" {
			t.Fatalf("allow %s: %v", dir, out)
		}
	}
	blockMallory := h.do("POST", "/api/rules/", map[string]any{"channel": "email", "direction": "outbound", "action": "block", "pattern": "mallory@customer.example"}, mgmt).
		want(t, 201).object(t)
	if blockMallory["identity"] != nil {
		t.Fatalf("account-wide block: %v", blockMallory)
	}
	mallory := blockMallory["id"].(string)
	h.do("POST", "/api/rules/", map[string]any{"channel": "sms", "direction": "inbound", "action": "block", "pattern": "+4420"}, mgmt).want(t, 201)
	h.do("POST", "/api/rules/", map[string]any{"channel": "sms", "direction": "outbound", "action": "block", "pattern": "+1415555"}, mgmt).want(t, 201)
	if out := h.do("POST", "/api/rules/", map[string]any{"channel": "email", "direction": "inbound", "action": "block", "pattern": "not a pattern"}, mgmt).
		want(t, 400).object(t); out["pattern"] == nil {
		t.Fatalf("bad pattern: %v", out)
	}
	h.do("POST", "/api/rules/", map[string]any{"channel": "email", "direction": "outbound", "action": "allow", "pattern": "@anywhere.example"}, key).want(t, 403)
	h.do("DELETE", "/api/rules/"+mallory+"/", nil, key).want(t, 403)
	if l := h.do("GET", "/api/rules/", nil, key).want(t, 200).list(t); len(l) != 5 {
		t.Fatalf("the identity's rules: %v", l)
	}

	// Outbound.
	compose := func(status int, to string, cc ...string) map[string]any {
		t.Helper()
		return h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": to, "cc": cc, "subject": "Hi", "content": "Hello."}, key).want(t, status).object(t)
	}
	compose(201, "ann@customer.example")
	if out := compose(400, "eve@elsewhere.example"); !strings.Contains(asJSON(out["to_email"]), "allow rules") {
		t.Fatalf("to a stranger: %v", out)
	}
	if out := compose(400, "ann@customer.example", "mallory@customer.example"); !strings.Contains(asJSON(out["cc"]), mallory) {
		t.Fatalf("cc a blocked address: %v", out)
	}
	if out := h.do("POST", "/api/messages/send/", map[string]any{"to": "+14155550100", "body": "hi"}, key).want(t, 400).object(t); out["to"] == nil {
		t.Fatalf("text to a blocked number: %v", out)
	}

	// Inbound.
	if _, err := h.app.Receiving.ResolveRecipient(context.Background(), "stranger@elsewhere.example", inbox); !errors.Is(err, app.ErrSenderRefused) {
		t.Fatalf("a stranger's recipient: %v", err)
	}
	h.deliverFrom("bob@customer.example", inbox, "From: bob@customer.example\r\nTo: "+inbox+"\r\nSubject: Customer\r\nMessage-ID: <c1@customer.example>\r\n\r\nHello.\r\n")
	h.deliverFrom("", inbox, "From: MAILER-DAEMON@elsewhere.example\r\nTo: "+inbox+"\r\nSubject: Undeliverable\r\nMessage-ID: <b1@elsewhere.example>\r\n\r\nA bounce.\r\n")
	var page struct {
		Count   int              `json:"count"`
		Results []map[string]any `json:"results"`
	}
	h.do("GET", "/api/email-messages/?direction=incoming&limit=50", nil, key).want(t, 200).decode(t, &page)
	if page.Count != 1 || page.Results[0]["subject"] != "Customer" {
		t.Fatalf("inbound list: %+v", page)
	}
	h.do("GET", "/api/email-messages/?direction=incoming&include_blocked=true&limit=50", nil, key).want(t, 200).decode(t, &page)
	if page.Count != 2 || page.Results[1]["subject"] != "Undeliverable" || page.Results[1]["blocked"] != true || page.Results[1]["is_read"] != true {
		t.Fatalf("with blocked: %+v", page)
	}
	for _, th := range h.do("GET", "/api/email-inbox/", nil, key).want(t, 200).list(t) {
		if th["subject"] == "Undeliverable" {
			t.Fatalf("the blocked message's thread is listed: %v", th)
		}
	}
	for _, c := range h.do("GET", "/api/contacts/", nil, key).want(t, 200).list(t) {
		if strings.EqualFold(c["email"].(string), "mailer-daemon@elsewhere.example") {
			t.Fatalf("a blocked sender was recorded: %v", c)
		}
	}

	// A blocked number's text is kept, blocked.
	h.do("POST", "/webhooks/sim/sms/", map[string]any{"From": "+442071838750", "To": ident["phone"], "Body": "spam"}, mgmt).want(t, 201)
	if l := h.do("GET", "/api/messages/", nil, key).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("a blocked text is listed: %v", l)
	}
	if l := h.do("GET", "/api/messages/?include_blocked=true", nil, key).want(t, 200).list(t); len(l) != 1 || l[0]["blocked"] != true {
		t.Fatalf("with blocked: %v", l)
	}
	if l := h.do("GET", "/api/sms-inbox/", nil, key).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("a blocked text's conversation is listed: %v", l)
	}

	// Only the customer's mail is an email.received event, and no
	// sms.received event came of the blocked text.
	var events struct {
		Results []struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		} `json:"results"`
	}
	h.do("GET", "/api/events/?types=email.received,sms.received", nil, key).want(t, 200).decode(t, &events)
	if len(events.Results) != 1 || events.Results[0].Type != "email.received" || events.Results[0].Data["subject"] != "Customer" {
		t.Fatalf("events: %+v", events.Results)
	}

	// Lifting the account-wide block lets mail to mallory pass.
	h.do("DELETE", "/api/rules/"+mallory+"/", nil, mgmt).want(t, 204)
	compose(201, "mallory@customer.example")
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
