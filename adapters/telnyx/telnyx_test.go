package telnyx_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/telnyx"
	"github.com/callsign/callsign/adapters/telnyx/telnyxtest"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

var ctx = context.Background()

func kind(t *testing.T, err error, want core.Kind) *core.Error {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) || e.Kind != want {
		t.Fatalf("error %v (%T), want a core error of kind %v", err, err, want)
	}
	if strings.Contains(e.Error(), telnyxtest.APIKey) {
		t.Errorf("error %q carries the API key", e.Error())
	}
	return e
}

func TestBuyNumberAttachesProfileAndConnection(t *testing.T) {
	f, tx := fake(t)
	n, err := tx.BuyNumber(ctx, ports.BuyNumber{CountryCode: "US"})
	if err != nil {
		t.Fatal(err)
	}
	held := f.Numbers()
	if len(held) != 1 || held[0].PhoneNumber != n.Number || held[0].MessagingProfileID != telnyxtest.MessagingProfileID ||
		held[0].ConnectionID != telnyxtest.ConnectionID {
		t.Fatalf("bought %+v, Telnyx holds %+v", n, held)
	}
	if !n.Capabilities.MMS || n.SID != n.Number {
		t.Fatalf("bought %+v: want MMS from the features, the number as its sid", n)
	}
}

func TestSendSMSBody(t *testing.T) {
	f, tx := fake(t)
	sent, err := tx.SendSMS(ctx, ports.SendSMS{From: "+14155552001", To: "+14155550142", Body: "hi", StatusCallbackURL: "https://c.example/webhooks/telnyx/messaging/"})
	if err != nil {
		t.Fatal(err)
	}
	m := f.Messages()[0]
	if sent.SID != m.ID || sent.Status != core.SMSQueued || m.Body["webhook_url"] != "https://c.example/webhooks/telnyx/messaging/" || m.Body["text"] != "hi" {
		t.Fatalf("sent %+v, Telnyx got %+v", sent, m)
	}
}

func TestRefusalsAndOutages(t *testing.T) {
	f, tx := fake(t)
	e := kind(t, func() error {
		_, err := tx.SendSMS(ctx, ports.SendSMS{From: "+14155552001", To: telnyxtest.InvalidNumber, Body: "x"})
		return err
	}(), core.KindInvalid)
	if !strings.Contains(e.Message, "40310") {
		t.Errorf("the refusal does not carry Telnyx's code: %q", e.Message)
	}
	f.Down.Store(true)
	kind(t, tx.Check(ctx), core.KindUnavailable)
	f.Down.Store(false)
	if err := tx.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	srv := httptest.NewServer(telnyxtest.NewServer())
	defer srv.Close()
	wrongKey := telnyx.New(telnyx.Config{APIKey: "wrong", MessagingProfileID: telnyxtest.MessagingProfileID, APIBase: srv.URL + "/v2"})
	e = kind(t, wrongKey.Check(ctx), core.KindUnavailable)
	if !strings.Contains(e.Message, "credentials") {
		t.Errorf("a refused key: %q", e.Message)
	}
}

// TestNoRedirects: a redirect would carry the API key to wherever it points.
func TestNoRedirects(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("followed a redirect, with Authorization %q", r.Header.Get("Authorization"))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusTemporaryRedirect))
	defer srv.Close()
	tx := telnyx.New(telnyx.Config{APIKey: telnyxtest.APIKey, APIBase: srv.URL})
	kind(t, tx.Check(ctx), core.KindUnavailable)
}

func TestReleaseUnknownNumber(t *testing.T) {
	_, tx := fake(t)
	if err := tx.ReleaseNumber(ctx, "+14155559999"); err != nil {
		t.Fatalf("a number Telnyx does not have: %v", err)
	}
	kind(t, tx.ReleaseNumber(ctx, "1293384261075731"), core.KindInvalid)
	kind(t, tx.PointCalls(ctx, "+14155559999", ports.VoiceWebhooks{}), core.KindInvalid)
}

func TestVerifier(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	v, err := telnyx.NewVerifier(telnyxtest.PublicKey, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"data":{"event_type":"message.received"}}`)
	ts, sig := telnyxtest.Sign(now.Add(-time.Minute), body)
	if err := v.Verify(ts, sig, body); err != nil {
		t.Fatalf("a fresh signature: %v", err)
	}
	_, otherKey, _ := ed25519.GenerateKey(nil)
	forgedTS, forged := telnyx.Sign(otherKey, now, body)
	staleTS, stale := telnyxtest.Sign(now.Add(-telnyx.Tolerance-time.Second), body)
	futureTS, future := telnyxtest.Sign(now.Add(telnyx.Tolerance+time.Second), body)
	for name, c := range map[string][2]string{
		"missing signature": {ts, ""}, "missing timestamp": {"", sig}, "another key": {forgedTS, forged},
		"stale": {staleTS, stale}, "from the future": {futureTS, future}, "another timestamp": {forgedTS, sig},
		"not base64": {ts, "!!"}, "not a time": {"soon", sig},
	} {
		if err := v.Verify(c[0], c[1], body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := v.Verify(ts, sig, append(body, ' ')); err == nil {
		t.Error("a changed body: accepted")
	}
	for _, bad := range []string{"", "bm90IGEga2V5", "!!"} {
		if _, err := telnyx.NewVerifier(bad, nil); err == nil {
			t.Errorf("NewVerifier(%q) accepted", bad)
		}
	}
}

// A placed call is a connection-scoped TeXML call with our TeXML inline;
// hanging up is Call Control's hangup, and a call already ended counts
// as hung up.
func TestPlaceCallAndHangUp(t *testing.T) {
	ctx := context.Background()
	fake := telnyxtest.NewServer()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	tx := telnyx.New(telnyx.Config{APIKey: telnyxtest.APIKey, MessagingProfileID: telnyxtest.MessagingProfileID,
		ConnectionID: telnyxtest.ConnectionID, APIBase: srv.URL + "/v2"})
	answer := core.CallAnswer{StreamURL: "wss://cs.example/media/t/", Greeting: core.Greeting(false)}
	placed, err := tx.PlaceCall(ctx, ports.PlaceCall{From: "+14155550100", To: "+14155550101", Answer: answer})
	if err != nil || placed.SID == "" || placed.Status != core.CallQueued {
		t.Fatalf("placed %+v, %v", placed, err)
	}
	c := fake.Calls()[placed.SID]
	if c.From != "+14155550100" || c.To != "+14155550101" || c.Texml != string(answer.TwiML()) {
		t.Fatalf("Telnyx got %+v", c)
	}
	for range 2 {
		if err := tx.HangUp(ctx, placed.SID); err != nil {
			t.Fatal(err)
		}
	}
	if !fake.Calls()[placed.SID].HungUp || len(fake.Problems()) != 0 {
		t.Fatalf("hung up: %+v, problems %v", fake.Calls()[placed.SID], fake.Problems())
	}
	if _, err := tx.PlaceCall(ctx, ports.PlaceCall{From: "+14155550100", To: "12"}); core.KindOf(err) != core.KindInvalid {
		t.Fatalf("a bad number: %v", err)
	}
}
