package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/telnyx/telnyxtest"
)

// telnyxPost posts a webhook signed as Telnyx signs it (signature "" for
// the real one) and returns the status and body of the answer.
func (r *running) telnyxPost(path, contentType string, body []byte, signature string) (int, string) {
	r.t.Helper()
	ts, sig := telnyxtest.Sign(time.Now(), body)
	if signature != "" {
		sig = signature
	}
	req, _ := http.NewRequest("POST", r.baseURL+path, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("telnyx-timestamp", ts)
	req.Header.Set("telnyx-signature-ed25519", sig)
	res, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(answer)
}

func telnyxEventJSON(t *testing.T, eventType string, payload map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"data": map[string]any{"event_type": eventType, "id": "0ccc7b54-4df3-4bcb-a65a-3da1ecc997d7",
		"occurred_at": time.Now().UTC().Format(time.RFC3339), "record_type": "event", "payload": payload}, "meta": map[string]any{"attempt": 1}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTelephonyWithTelnyx(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		fake := telnyxtest.NewServer()
		srv := httptest.NewServer(fake)
		t.Cleanup(srv.Close)
		r := start(t, d, map[string]string{"CALLSIGN_TELEPHONY": "telnyx", "TELNYX_API_KEY": telnyxtest.APIKey,
			"TELNYX_PUBLIC_KEY": telnyxtest.PublicKey, "TELNYX_MESSAGING_PROFILE_ID": telnyxtest.MessagingProfileID,
			"TELNYX_CONNECTION_ID": telnyxtest.ConnectionID, "CALLSIGN_TELNYX_API_BASE": srv.URL + "/v2"})
		public := r.svc.Config().BaseURL
		mgmt := r.bootstrap("telnyx@example.com")
		var ident struct{ UUID, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Caller", "provision_phone": true}, &ident)
		held := fake.Numbers()
		if ident.Phone == "" || len(held) != 1 || held[0].PhoneNumber != ident.Phone || held[0].MessagingProfileID != telnyxtest.MessagingProfileID ||
			held[0].ConnectionID != telnyxtest.ConnectionID {
			t.Fatalf("identity %+v; Telnyx holds %+v", ident, held)
		}

		var sent apiSMS
		if s := r.call("POST", "/api/messages/send/?identity="+ident.UUID, mgmt, map[string]any{"to": "+14155550142", "body": "Your code is 123456"}, &sent); s != 201 {
			t.Fatalf("send: %d %+v", s, sent)
		}
		msgs := fake.Messages()
		if len(msgs) != 1 || msgs[0].ID != sent.ProviderSID || msgs[0].Body["from"] != ident.Phone || msgs[0].Body["to"] != "+14155550142" ||
			msgs[0].Body["text"] != "Your code is 123456" || msgs[0].Body["webhook_url"] != public+"/webhooks/telnyx/messaging/" {
			t.Fatalf("sent %+v; Telnyx received %+v", sent, msgs)
		}

		// A signed delivery report moves the text; a forged one is refused.
		finalized := telnyxEventJSON(t, "message.finalized", map[string]any{"id": sent.ProviderSID, "record_type": "message", "direction": "outbound",
			"to": []map[string]any{{"phone_number": "+14155550142", "status": "delivered"}}, "from": map[string]any{"phone_number": ident.Phone}})
		if s, body := r.telnyxPost("/webhooks/telnyx/messaging/", "application/json", finalized, "bm90IGEgc2lnbmF0dXJl"); s != 403 {
			t.Fatalf("a forged report: %d %s", s, body)
		}
		if s, body := r.telnyxPost("/webhooks/telnyx/messaging/", "application/json", finalized, ""); s != 204 {
			t.Fatalf("report: %d %s", s, body)
		}
		var got apiSMS
		if r.call("GET", fmt.Sprintf("/api/messages/%d/", sent.ID), mgmt, nil, &got); got.Status != "delivered" {
			t.Fatalf("after message.finalized: %+v", got)
		}

		// A signed inbound MMS becomes a stored text, its media as attachment metadata.
		received := telnyxEventJSON(t, "message.received", map[string]any{"id": "b0c5a6f1-9f5e-4b7e-8a39-5f6d1e2c3b4a", "record_type": "message",
			"direction": "inbound", "type": "MMS", "text": "Thanks, got it", "from": map[string]any{"phone_number": "+14155550142"},
			"to":    []map[string]any{{"phone_number": ident.Phone, "status": "webhook_delivered"}},
			"media": []map[string]any{{"url": "https://media.telnyx.example/photo.jpg", "content_type": "image/jpeg"}}})
		if s, body := r.telnyxPost("/webhooks/telnyx/messaging/", "application/json", received, ""); s != 204 {
			t.Fatalf("inbound: %d %s", s, body)
		}
		var inbox []struct {
			Body        string
			ProviderSID string `json:"provider_sid"`
			Attachments []struct {
				URL         string
				ContentType string `json:"content_type"`
			}
		}
		r.call("GET", "/api/messages/?direction=incoming&identity="+ident.UUID, mgmt, nil, &inbox)
		if len(inbox) != 1 || inbox[0].Body != "Thanks, got it" || len(inbox[0].Attachments) != 1 ||
			inbox[0].Attachments[0].URL != "https://media.telnyx.example/photo.jpg" || inbox[0].Attachments[0].ContentType != "image/jpeg" {
			t.Fatalf("inbound stored as %+v", inbox)
		}

		// A signed TeXML call goes on to the voice agent.
		r.call("PUT", "/api/identities/"+ident.UUID+"/voice-agent/", mgmt, map[string]any{"response_url": "https://agent.example/call"}, nil)
		call := []byte(url.Values{"CallSid": {"v3:T0CALL"}, "AccountSid": {"acct"}, "From": {"+14155550142"}, "To": {ident.Phone}, "CallStatus": {"ringing"}}.Encode())
		if s, body := r.telnyxPost("/webhooks/telnyx/voice/", "application/x-www-form-urlencoded", call, ""); s != 200 ||
			!strings.Contains(body, `<Redirect method="POST">https://agent.example/call</Redirect>`) {
			t.Fatalf("TeXML: %d %s", s, body)
		}

		// callsign doctor reads the messaging profile.
		lines, _, _ := doctorLines(t, r.env)
		if !strings.HasPrefix(lines["telephony"], "ok    telephony") {
			t.Errorf("doctor: %q", lines["telephony"])
		}

		// Deleting the identity gives the number back.
		if s := r.call("DELETE", "/api/identities/"+ident.UUID+"/?confirm=true", mgmt, nil, nil); s != 204 {
			t.Fatalf("delete: %d", s)
		}
		if held := fake.Numbers(); len(held) != 0 {
			t.Fatalf("still held after the delete: %+v", held)
		}
		if p := fake.Problems(); len(p) != 0 {
			t.Fatalf("requests Telnyx's API reference does not allow: %v", p)
		}
	})
}
