package telnyx_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/telephonytest"
	"github.com/callsign/callsign/adapters/telnyx"
	"github.com/callsign/callsign/adapters/telnyx/telnyxtest"
	"github.com/callsign/callsign/ports"
)

// fake serves telnyxtest's API and fails the test on any request whose
// shape Telnyx's API reference does not allow.
func fake(t *testing.T) (*telnyxtest.Server, *telnyx.Telnyx) {
	f := telnyxtest.NewServer()
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		srv.Close()
		for _, p := range f.Problems() {
			t.Errorf("the fake refused a request's shape: %s", p)
		}
	})
	return f, telnyx.New(telnyx.Config{APIKey: telnyxtest.APIKey, MessagingProfileID: telnyxtest.MessagingProfileID,
		ConnectionID: telnyxtest.ConnectionID, APIBase: srv.URL + "/v2", HTTPClient: &http.Client{Timeout: 5 * time.Second}})
}

func TestContract(t *testing.T) {
	f, tx := fake(t)
	v, err := telnyx.NewVerifier(telnyxtest.PublicKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	telephonytest.Run(t, telephonytest.Harness{
		Telephony: tx, Country: "US", NoNumbers: "FR", InvalidNumber: telnyxtest.InvalidNumber,
		Held: func() []string {
			var out []string
			for _, n := range f.Numbers() {
				out = append(out, n.PhoneNumber)
			}
			return out
		},
		Sent: func() []ports.SendSMS {
			var out []ports.SendSMS
			for _, m := range f.Messages() {
				from, _ := m.Body["from"].(string)
				to, _ := m.Body["to"].(string)
				text, _ := m.Body["text"].(string)
				out = append(out, ports.SendSMS{From: from, To: to, Body: text})
			}
			return out
		},
		Down: f.Down.Store,
		Webhooks: &telephonytest.Webhooks{
			Sign: func(_ string, body []byte) http.Header {
				ts, sig := telnyxtest.Sign(time.Now(), body)
				return http.Header{"Telnyx-Timestamp": {ts}, "Telnyx-Signature-Ed25519": {sig}}
			},
			Verify: func(_ string, h http.Header, body []byte) bool {
				return v.Verify(h.Get("Telnyx-Timestamp"), h.Get("Telnyx-Signature-Ed25519"), body) == nil
			},
		},
	})
}
