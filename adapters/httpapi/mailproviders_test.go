package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/callsign/callsign/core"
)

// The signature checks themselves are tested with their adapters
// (adapters/mailgunsig, adapters/snsverify) and end to end in cmd; here
// fakes stand in: signature "valid" passes, token "seen" is a replay.
type fakeMailgun struct{}

func (fakeMailgun) Check(_, token, signature string) (bool, error) {
	if signature != "valid" {
		return false, core.Forbidden("The Mailgun signature does not verify.")
	}
	return token == "seen", nil
}

type fakeSNS struct{}

func (fakeSNS) Verify(_ context.Context, body []byte) error {
	if !strings.Contains(string(body), `"Signature":"valid"`) {
		return core.Forbidden("The SNS signature does not verify.")
	}
	return nil
}

func (fakeSNS) Confirm(context.Context, string) error { return nil }

func (h *harness) mailgunEvent(token string, data map[string]any) *response {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"signature": map[string]any{"timestamp": "1", "token": token, "signature": "valid"}, "event-data": data})
	return h.raw("POST", "/webhooks/mailgun/events/", "application/json", strings.NewReader(string(body)), "")
}

// snsPost posts an SES notification wrapped as SNS does.
func (h *harness) snsPost(notification any, signature string) *response {
	h.t.Helper()
	msg, _ := json.Marshal(notification)
	body, _ := json.Marshal(map[string]any{"Type": "Notification", "MessageId": "n1", "TopicArn": "arn:aws:sns:eu-west-1:1:t",
		"Message": string(msg), "Timestamp": "2026-11-21T08:00:00Z", "SignatureVersion": "2", "Signature": signature})
	return h.raw("POST", "/webhooks/ses/", "text/plain; charset=UTF-8", strings.NewReader(string(body)), "")
}

func recipientsOf(m map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range m["recipients"].([]any) {
		out[r.(map[string]any)["email"].(string)] = r.(map[string]any)
	}
	return out
}

func suppressed(t *testing.T, h *harness, key string) map[string]string {
	out := map[string]string{}
	for _, s := range h.do("GET", "/api/suppressions/", nil, key).want(t, 200).list(t) {
		out[s["email"].(string)] = s["reason"].(string)
	}
	return out
}

// A provider's report lands where a bounce sent to a bounce address does:
// recipients' statuses, suppressions and events, by one path.
func TestProviderDeliveryReports(t *testing.T) {
	h := newHarness(t)
	h.runOutbox()
	tn := newTenants(t, h)
	send := func(to string) map[string]any {
		m := h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": to, "subject": "Hi", "content": "hello"}, tn.keyOne).want(t, 201).object(t)
		if done := h.waitFor(tn.keyOne, m["id"]); done["delivery_status"] != "sent" {
			t.Fatalf("delivery %v", done)
		}
		return m
	}
	get := func(m map[string]any) map[string]any {
		return h.do("GET", fmt.Sprintf("/api/email-messages/%v/", m["id"]), nil, tn.keyOne).want(t, 200).object(t)
	}

	// Mailgun: delivered, a temporary failure, a permanent one of a bad
	// mailbox, a complaint.
	mg := send("ann@example.org, bob@example.org, carol@example.org, dan@example.org")
	headers := map[string]any{"headers": map[string]any{"message-id": mg["message_id"]}}
	h.mailgunEvent("t1", map[string]any{"event": "delivered", "recipient": "ann@example.org", "message": headers}).want(t, 200)
	h.mailgunEvent("t2", map[string]any{"event": "failed", "severity": "temporary", "recipient": "bob@example.org", "message": headers,
		"delivery-status": map[string]any{"code": 452, "message": "4.2.2 mailbox full"}}).want(t, 200)
	rc := recipientsOf(get(mg))
	if rc["ann@example.org"]["status"] != "delivered" || rc["bob@example.org"]["status"] != "sent" || rc["bob@example.org"]["error"] != "452 4.2.2 mailbox full" {
		t.Fatalf("after delivered and a temporary failure: %v", rc)
	}
	h.mailgunEvent("t3", map[string]any{"event": "failed", "severity": "permanent", "reason": "bounce", "recipient": "bob@example.org", "message": headers,
		"delivery-status": map[string]any{"code": 550, "message": "5.1.1 The email account that you tried to reach does not exist"}}).want(t, 200)
	h.mailgunEvent("t4", map[string]any{"event": "failed", "severity": "permanent", "reason": "generic", "recipient": "dan@example.org", "message": headers,
		"delivery-status": map[string]any{"code": 550, "message": "5.7.1 message refused as spam"}}).want(t, 200)
	h.mailgunEvent("t5", map[string]any{"event": "complained", "recipient": "carol@example.org", "message": headers}).want(t, 200)
	rc = recipientsOf(get(mg))
	if rc["bob@example.org"]["status"] != "bounced" || rc["dan@example.org"]["status"] != "bounced" || rc["carol@example.org"]["status"] != "sent" {
		t.Fatalf("after the bounces and the complaint: %v", rc)
	}
	if s := suppressed(t, h, tn.keyOne); len(s) != 2 || !strings.Contains(s["bob@example.org"], "5.1.1") || s["carol@example.org"] != "complaint" {
		t.Fatalf("suppressions %v (a policy refusal suppresses nothing)", s)
	}
	// A replayed token, a forged signature and a message we never sent
	// change nothing; the first two say so.
	h.mailgunEvent("seen", map[string]any{"event": "complained", "recipient": "ann@example.org", "message": headers}).want(t, 200)
	body := `{"signature":{"timestamp":"1","token":"t9","signature":"forged"},"event-data":{"event":"complained","recipient":"ann@example.org"}}`
	h.raw("POST", "/webhooks/mailgun/events/", "application/json", strings.NewReader(body), "").want(t, 403)
	h.mailgunEvent("t6", map[string]any{"event": "complained", "recipient": "ann@example.org",
		"message": map[string]any{"headers": map[string]any{"message-id": "never@agents.test"}}}).want(t, 200)
	if s := suppressed(t, h, tn.keyOne); len(s) != 2 {
		t.Fatalf("suppressions %v", s)
	}

	// SES: a Transient bounce is recorded; a Permanent one bounces and
	// suppresses whatever its code; Delivery and Complaint.
	ses := send("erin@example.org, fay@example.org, gus@example.org")
	mail := map[string]any{"messageId": "0100018c-ses", "commonHeaders": map[string]any{"messageId": "<" + ses["message_id"].(string) + ">"}}
	h.snsPost(map[string]any{"notificationType": "Bounce", "mail": mail, "bounce": map[string]any{"bounceType": "Transient",
		"bouncedRecipients": []any{map[string]any{"emailAddress": "erin@example.org", "status": "4.4.7", "diagnosticCode": "smtp; 421 try later"}}}}, "valid").want(t, 200)
	h.snsPost(map[string]any{"notificationType": "Delivery", "mail": mail, "delivery": map[string]any{"recipients": []any{"fay@example.org"},
		"smtpResponse": "250 2.6.0 Message received"}}, "valid").want(t, 200)
	h.snsPost(map[string]any{"eventType": "Complaint", "mail": mail, "complaint": map[string]any{"complainedRecipients": []any{map[string]any{"emailAddress": "fay@example.org"}}}}, "valid").want(t, 200)
	h.snsPost(map[string]any{"notificationType": "Bounce", "mail": mail, "bounce": map[string]any{"bounceType": "Permanent",
		"bouncedRecipients": []any{map[string]any{"emailAddress": "erin@example.org", "status": "5.0.0", "diagnosticCode": "smtp; 550 rejected"}}}}, "valid").want(t, 200)
	h.snsPost(map[string]any{"notificationType": "Bounce", "mail": mail}, "forged").want(t, 403)
	rc = recipientsOf(get(ses))
	if rc["erin@example.org"]["status"] != "bounced" || rc["fay@example.org"]["status"] != "delivered" || rc["gus@example.org"]["status"] != "sent" {
		t.Fatalf("SES recipients %v", rc)
	}
	if s := suppressed(t, h, tn.keyOne); len(s) != 4 || s["erin@example.org"] != "smtp; 550 rejected" || s["fay@example.org"] != "complaint" {
		t.Fatalf("suppressions %v", s)
	}

	events := h.do("GET", "/api/events/?types=email.bounced,email.delivered,email.complained", nil, tn.keyOne).want(t, 200).object(t)
	if got := strings.Join(eventTypesOf(t, events), " "); got != "email.delivered email.bounced email.bounced email.complained email.delivered email.complained email.bounced" {
		t.Fatalf("events %s", got)
	}
	first := events["results"].([]any)[0].(map[string]any)["data"].(map[string]any)
	if d := first["delivered"].([]any); len(d) != 1 || d[0].(map[string]any)["email"] != "ann@example.org" || first["message_id"] != mg["message_id"] {
		t.Fatalf("email.delivered data %v", first)
	}
}

// Mail a provider received for us goes through the one delivery path,
// with the provider's verdicts; a repost is stored once.
func TestProviderInboundMail(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	raw := "From: Ann <ann@example.org>\r\nTo: one@agents.test\r\nMessage-ID: <in-1@example.org>\r\nSubject: Your code\r\n" +
		"X-Mailgun-Spf: Pass\r\nX-Mailgun-Dkim-Check-Result: Fail\r\n\r\nYour verification code is 482913.\r\n"
	post := func(token, rcpt, signature string) *response {
		form := url.Values{"recipient": {rcpt}, "sender": {"ann@example.org"}, "timestamp": {"1"}, "token": {token}, "signature": {signature}, "body-mime": {raw}}
		return h.raw("POST", "/webhooks/mailgun/mime", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), "")
	}
	post("a", "one@agents.test", "valid").want(t, 200)
	post("b", "one@agents.test", "valid").want(t, 200) // Mailgun retried: a new token, the same message
	post("c", "nobody@agents.test", "valid").want(t, 200)
	post("d", "one@agents.test", "forged").want(t, 403)
	list := h.do("GET", "/api/email-messages/", nil, tn.keyOne).want(t, 200).object(t)
	if list["count"] != 1.0 {
		t.Fatalf("stored %v times", list["count"])
	}
	m := list["results"].([]any)[0].(map[string]any)
	auth := m["authentication"].(map[string]any)
	if m["subject"] != "Your code" || auth["checked_by"] != "mailgun" || auth["spf"] != "pass" || auth["dkim"] != "fail" || auth["verdict"] != "none" {
		t.Fatalf("message %v", m)
	}
	if v := h.do("GET", "/api/verifications/latest/", nil, tn.keyOne); v.Status == 200 && !strings.Contains(string(v.Body), "482913") {
		t.Fatalf("verification %s", v.Body)
	}

	// SES: a receipt rule's SNS action, in both encodings.
	sesRaw := "From: bob@example.net\r\nTo: two@agents.test\r\nMessage-ID: <in-2@example.net>\r\nSubject: From SES\r\n\r\nHello.\r\n"
	receipt := func(content, encoding string) map[string]any {
		return map[string]any{"notificationType": "Received", "mail": map[string]any{"source": "bob@example.net"},
			"receipt": map[string]any{"recipients": []any{"two@agents.test", "stranger@elsewhere.example"}, "spfVerdict": map[string]any{"status": "PASS"},
				"dkimVerdict": map[string]any{"status": "PASS"}, "dmarcVerdict": map[string]any{"status": "PASS"},
				"action": map[string]any{"type": "SNS", "encoding": encoding}}, "content": content}
	}
	h.snsPost(receipt(base64.StdEncoding.EncodeToString([]byte(sesRaw)), "BASE64"), "valid").want(t, 200)
	h.snsPost(receipt(sesRaw, "UTF8"), "valid").want(t, 200)
	h.snsPost(receipt(sesRaw, "UTF8"), "forged").want(t, 403)
	list = h.do("GET", "/api/email-messages/", nil, tn.keyTwo).want(t, 200).object(t)
	if list["count"] != 1.0 {
		t.Fatalf("stored %v times", list["count"])
	}
	m = list["results"].([]any)[0].(map[string]any)
	if auth := m["authentication"].(map[string]any); m["subject"] != "From SES" || auth["checked_by"] != "ses" || auth["verdict"] != "pass" {
		t.Fatalf("message %v", m)
	}
}
