package twilio_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/telephonytest"
	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/adapters/twilio/twiliotest"
	"github.com/callsign/callsign/ports"
)

func TestContract(t *testing.T) {
	fake := twiliotest.NewServer()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	tw := twilio.New(twilio.Config{AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken, APIBaseURL: srv.URL,
		HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	form := func(body []byte) url.Values { v, _ := url.ParseQuery(string(body)); return v }
	telephonytest.Run(t, telephonytest.Harness{
		Telephony: tw, Country: "US", NoNumbers: "FR", InvalidNumber: twiliotest.InvalidNumber,
		Held: func() []string {
			var out []string
			for _, n := range fake.Numbers() {
				out = append(out, n.Get("PhoneNumber"))
			}
			return out
		},
		Sent: func() []ports.SendSMS {
			var out []ports.SendSMS
			for _, m := range fake.Messages() {
				out = append(out, ports.SendSMS{From: m.Get("From"), To: m.Get("To"), Body: m.Get("Body")})
			}
			return out
		},
		Down: fake.Down.Store,
		Webhooks: &telephonytest.Webhooks{
			Sign: func(fullURL string, body []byte) http.Header {
				return http.Header{"X-Twilio-Signature": {twiliotest.Signature(twiliotest.AuthToken, fullURL, form(body))}}
			},
			Verify: func(fullURL string, h http.Header, body []byte) bool {
				return tw.VerifyWebhook(fullURL, form(body), h.Get("X-Twilio-Signature"))
			},
		},
	})
}
