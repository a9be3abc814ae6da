package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/telnyx/telnyxtest"
	"github.com/callsign/callsign/app"
)

// telnyxPost posts body to a Telnyx webhook route with the headers given.
func telnyxPost(h *harness, path, contentType string, body []byte, timestamp, signature string) *response {
	h.t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", contentType)
	if timestamp != "" {
		req.Header.Set("telnyx-timestamp", timestamp)
	}
	if signature != "" {
		req.Header.Set("telnyx-signature-ed25519", signature)
	}
	return h.serve(req)
}

// telnyxMessageEvent is a messaging webhook as Telnyx sends it.
func telnyxMessageEvent(t *testing.T, eventType, id, from, to, status, text string, extra map[string]any) []byte {
	payload := map[string]any{"id": id, "record_type": "message", "direction": "inbound", "type": "SMS", "text": text,
		"from": map[string]any{"phone_number": from}, "to": []map[string]any{{"phone_number": to, "status": status}}}
	for k, v := range extra {
		payload[k] = v
	}
	b, err := json.Marshal(map[string]any{"data": map[string]any{"event_type": eventType, "id": "b301ed3f-1490-491f-995f-6e64e69674d4",
		"occurred_at": "2026-12-06T10:00:00.000+00:00", "record_type": "event", "payload": payload}, "meta": map[string]any{"attempt": 1}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTelnyxWebhooks(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	number := h.provision(tn.mgmt, tn.one) // through the simulator; the webhooks below only need the number
	tx := newHarnessWith(t, func(d *app.Deps) { d.Store = h.store })
	tx.h = New(tx.app, Options{BaseURL: "http://api.test", Telnyx: telnyxtest.NewVerifier()})
	const messaging, jsonType = "/webhooks/telnyx/messaging/", "application/json"
	post := func(body []byte) *response {
		ts, sig := telnyxtest.Sign(time.Now(), body)
		return telnyxPost(tx, messaging, jsonType, body, ts, sig)
	}

	// An MMS: its media kept as attachment metadata, at most 10, only http(s).
	in := telnyxMessageEvent(t, "message.received", "7ee4241c-f127-47e5-9c34-3aac291f8058", "+14155550199", number, "webhook_delivered", "Look",
		map[string]any{"media": []map[string]any{{"url": "https://media.telnyx.com/a.jpg", "content_type": "image/jpeg", "size": 1, "hash_sha256": "x"},
			{"url": "javascript:alert(1)", "content_type": "image/png"}}})
	post(in).want(t, 204)
	post(in).want(t, 204) // Telnyx retries: stored once
	got := tx.do("GET", "/api/messages/", nil, tn.keyOne).want(t, 200).list(t)
	if len(got) != 1 || got[0]["body"] != "Look" || got[0]["provider_sid"] != "7ee4241c-f127-47e5-9c34-3aac291f8058" ||
		fmt.Sprint(got[0]["attachments"]) != "[map[content_type:image/jpeg url:https://media.telnyx.com/a.jpg]]" {
		t.Fatalf("stored %v", got)
	}

	// Refused before anything is read: forged, stale, missing, tampered.
	fresh, sig := telnyxtest.Sign(time.Now(), in)
	stale, staleSig := telnyxtest.Sign(time.Now().Add(-6*time.Minute), in)
	other := telnyxMessageEvent(t, "message.received", "other", "+14155550199", number, "webhook_delivered", "Forged", nil)
	for name, c := range map[string]struct {
		body    []byte
		ts, sig string
	}{
		"missing": {in, "", ""}, "no timestamp": {in, "", sig}, "stale": {in, stale, staleSig},
		"another body": {other, fresh, sig}, "forged": {in, fresh, "bm90IGEgc2lnbmF0dXJl"},
	} {
		if res := telnyxPost(tx, messaging, jsonType, c.body, c.ts, c.sig); res.Status != 403 {
			t.Errorf("%s: %d %s", name, res.Status, res.Body)
		}
	}
	if l := tx.do("GET", "/api/messages/", nil, tn.keyOne).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("a refused webhook was stored: %v", l)
	}

	// Delivery reports move a sent text forward, never back.
	sent := h.do("POST", "/api/messages/send/", map[string]any{"to": "+14155550199", "body": "out"}, tn.keyOne).want(t, 201).object(t)
	h.sim.Wait()
	sid := sent["provider_sid"].(string)
	post(telnyxMessageEvent(t, "message.finalized", sid, number, "+14155550199", "delivery_failed", "out",
		map[string]any{"errors": []map[string]any{{"code": "40002", "title": "Blocked as spam", "detail": "temporary"}}})).want(t, 204)
	post(telnyxMessageEvent(t, "message.sent", sid, number, "+14155550199", "sent", "out", nil)).want(t, 204)
	m := tx.do("GET", fmt.Sprintf("/api/messages/%v/", sent["id"]), nil, tn.keyOne).want(t, 200).object(t)
	if m["status"] != "undelivered" || !strings.Contains(fmt.Sprint(m["error"]), "40002 Blocked as spam") {
		t.Fatalf("after the reports: %v", m)
	}
	// Events we do not use are acknowledged; a body that is not JSON is 400.
	post(telnyxMessageEvent(t, "message.received_unknown", "x", "+1", number, "", "", nil)).want(t, 204)
	post([]byte("{")).want(t, 400)

	// TeXML: a call is recorded and sent on to the voice agent.
	tx.do("PUT", "/api/identities/"+tn.one+"/voice-agent/", map[string]any{"response_url": "https://agent.example/call"}, tn.keyOne).want(t, 200)
	call := []byte(url.Values{"CallSid": {"v3:call-1"}, "AccountSid": {"acct"}, "From": {"+14155550199"}, "To": {number}, "CallStatus": {"ringing"}}.Encode())
	ts, callSig := telnyxtest.Sign(time.Now(), call)
	res := telnyxPost(tx, "/webhooks/telnyx/voice/", "application/x-www-form-urlencoded", call, ts, callSig).want(t, 200)
	if !strings.Contains(string(res.Body), `<Redirect method="POST">https://agent.example/call</Redirect>`) {
		t.Fatalf("TeXML %s", res.Body)
	}
	telnyxPost(tx, "/webhooks/telnyx/voice/", "application/x-www-form-urlencoded", call, ts, "bm90IGEgc2lnbmF0dXJl").want(t, 403)
	telnyxPost(tx, "/webhooks/telnyx/voice/", jsonType, call, ts, callSig).want(t, 415)
	done := []byte(url.Values{"CallSid": {"v3:call-1"}, "CallStatus": {"completed"}, "CallDuration": {"42"}}.Encode())
	ts, doneSig := telnyxtest.Sign(time.Now(), done)
	telnyxPost(tx, "/webhooks/telnyx/call-status/", "application/x-www-form-urlencoded", done, ts, doneSig).want(t, 204)
	calls := tx.do("GET", "/api/calls/", nil, tn.keyOne).want(t, 200).list(t)
	if len(calls) != 1 || calls[0]["status"] != "completed" || fmt.Sprint(calls[0]["duration_seconds"]) != "42" {
		t.Fatalf("calls %v", calls)
	}

	// Without Telnyx configured, its routes do not exist.
	h.raw("POST", messaging, jsonType, strings.NewReader(string(in)), "").want(t, 404)
}
