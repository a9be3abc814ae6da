// Package telephonytest is the contract every ports.Telephony passes: the
// simulator, and each real provider's adapter talking to a local fake of
// its provider's API. Each adapter's tests call Run with a Harness.
package telephonytest

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Harness is one provider under the contract, with what the test needs to
// look into the provider's side.
type Harness struct {
	Telephony ports.Telephony
	// Country has numbers; NoNumbers is a country code that has none.
	Country, NoNumbers string
	// InvalidNumber is an E.164 number the provider refuses as a destination.
	InvalidNumber string
	// Held is the provider's record of the numbers we hold (E.164).
	Held func() []string
	// Sent is the provider's record of the texts sent to it.
	Sent func() []ports.SendSMS
	// Down, when set, makes the provider fail every call (true) or not.
	Down func(bool)
	// Webhooks is how the provider signs its webhooks and how we check
	// them; nil for a provider that signs none (the simulator).
	Webhooks *Webhooks
}

// Webhooks sign and verify a provider's webhooks.
type Webhooks struct {
	// Sign returns the headers the provider sends with body, posted to fullURL.
	Sign func(fullURL string, body []byte) http.Header
	// Verify is our check of a webhook.
	Verify func(fullURL string, header http.Header, body []byte) bool
}

// Run runs the contract's cases against the harness.
func Run(t *testing.T, h Harness) {
	cases := []struct {
		name string
		run  func(*testing.T, Harness)
	}{
		{"BuyNumber", testBuyNumber},
		{"BuyNumberNoneAvailable", testBuyNumberNoneAvailable},
		{"SendSMS", testSendSMS},
		{"SendSMSRefused", testSendSMSRefused},
		{"PointCalls", testPointCalls},
		{"ReleaseNumber", testReleaseNumber},
		{"Unavailable", testUnavailable},
		{"Webhooks", testWebhooks},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
}

var ctx = context.Background()

const hookURL = "https://callsign.example/webhooks/"

func buy(t *testing.T, h Harness) ports.BoughtNumber {
	t.Helper()
	n, err := h.Telephony.BuyNumber(ctx, ports.BuyNumber{CountryCode: h.Country, SMSWebhookURL: hookURL + "sms/",
		Voice: ports.VoiceWebhooks{URL: hookURL + "voice/", StatusURL: hookURL + "call-status/"}})
	if err != nil {
		t.Fatalf("BuyNumber(%s): %v", h.Country, err)
	}
	t.Cleanup(func() { _ = h.Telephony.ReleaseNumber(ctx, n.SID) })
	return n
}

func wantKind(t *testing.T, err error, want core.Kind) {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) || e.Kind != want {
		t.Fatalf("error %v (%T), want a core error of kind %v", err, err, want)
	}
}

func testBuyNumber(t *testing.T, h Harness) {
	n := buy(t, h)
	if !core.IsE164(n.Number) || n.SID == "" || !n.Capabilities.SMS || !n.Capabilities.Voice {
		t.Fatalf("bought %+v, want an E.164 number with a sid, SMS and voice", n)
	}
	if !slices.Contains(h.Held(), n.Number) {
		t.Fatalf("the provider does not hold %s: %v", n.Number, h.Held())
	}
	other := buy(t, h)
	if other.Number == n.Number || other.SID == n.SID {
		t.Fatalf("bought %+v twice", n)
	}
}

func testBuyNumberNoneAvailable(t *testing.T, h Harness) {
	_, err := h.Telephony.BuyNumber(ctx, ports.BuyNumber{CountryCode: h.NoNumbers})
	wantKind(t, err, core.KindInvalid)
	_, err = h.Telephony.BuyNumber(ctx, ports.BuyNumber{CountryCode: "../x"})
	wantKind(t, err, core.KindInvalid)
}

func testSendSMS(t *testing.T, h Harness) {
	n := buy(t, h)
	req := ports.SendSMS{From: n.Number, To: "+14155550142", Body: "Your code is 123456", StatusCallbackURL: hookURL + "status/"}
	sent, err := h.Telephony.SendSMS(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if sent.SID == "" || (sent.Status != core.SMSQueued && sent.Status != core.SMSSent) {
		t.Fatalf("sent %+v, want a sid and queued or sent", sent)
	}
	got := h.Sent()
	if len(got) == 0 {
		t.Fatal("the provider received no text")
	}
	last := got[len(got)-1]
	if last.From != req.From || last.To != req.To || last.Body != req.Body {
		t.Fatalf("the provider received %+v, want %+v", last, req)
	}
}

func testSendSMSRefused(t *testing.T, h Harness) {
	n := buy(t, h)
	before := len(h.Sent())
	_, err := h.Telephony.SendSMS(ctx, ports.SendSMS{From: n.Number, To: h.InvalidNumber, Body: "x"})
	wantKind(t, err, core.KindInvalid)
	if len(h.Sent()) != before {
		t.Fatal("a refused text counts as sent")
	}
}

func testPointCalls(t *testing.T, h Harness) {
	n := buy(t, h)
	if err := h.Telephony.PointCalls(ctx, n.SID, ports.VoiceWebhooks{URL: hookURL + "voice/", StatusURL: hookURL + "call-status/"}); err != nil {
		t.Fatal(err)
	}
}

func testReleaseNumber(t *testing.T, h Harness) {
	n := buy(t, h)
	if err := h.Telephony.ReleaseNumber(ctx, n.SID); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(h.Held(), n.Number) {
		t.Fatalf("%s is still held after its release", n.Number)
	}
	// A release whose answer was lost is retried: the number is gone already.
	if err := h.Telephony.ReleaseNumber(ctx, n.SID); err != nil {
		t.Fatalf("releasing again: %v", err)
	}
}

func testUnavailable(t *testing.T, h Harness) {
	if h.Down == nil {
		t.Skip("the provider cannot be down")
	}
	n := buy(t, h)
	h.Down(true)
	defer h.Down(false)
	_, err := h.Telephony.SendSMS(ctx, ports.SendSMS{From: n.Number, To: "+14155550142", Body: "x"})
	wantKind(t, err, core.KindUnavailable)
	_, err = h.Telephony.BuyNumber(ctx, ports.BuyNumber{CountryCode: h.Country})
	wantKind(t, err, core.KindUnavailable)
}

func testWebhooks(t *testing.T, h Harness) {
	body := []byte("MessageSid=SM1&From=%2B14155550142&To=%2B14155550100&Body=hi")
	url := hookURL + "sms/"
	if h.Webhooks == nil {
		if h.Telephony.VerifyWebhook(url, nil, "") || h.Telephony.VerifyWebhook(url, nil, "anything") {
			t.Fatal("a provider that signs nothing accepted a webhook")
		}
		return
	}
	w := h.Webhooks
	header := w.Sign(url, body)
	if !w.Verify(url, header, body) {
		t.Fatal("a webhook signed by the provider was refused")
	}
	if w.Verify(url, http.Header{}, body) {
		t.Fatal("an unsigned webhook was accepted")
	}
	forged := slices.Clone(body)
	forged[len(forged)-1] = 'o'
	if w.Verify(url, header, forged) {
		t.Fatal("a webhook whose body changed after signing was accepted")
	}
	other := w.Sign(url, []byte("MessageSid=SM2"))
	if w.Verify(url, other, body) {
		t.Fatal("another webhook's signature was accepted")
	}
}
