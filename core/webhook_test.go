package core

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The example of the Standard Webhooks specification's reference libraries.
func TestSignWebhookMatchesTheSpecificationsExample(t *testing.T) {
	got := SignWebhook([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	two := SignWebhook([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if parts := strings.Fields(two); len(parts) != 2 || parts[0] != got {
		t.Fatalf("two secrets: %q", two)
	}
}

func TestNewWebhookSecret(t *testing.T) {
	s, err := NewWebhookSecret(bytes.NewReader(make([]byte, 32)))
	if err != nil || s != "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" {
		t.Fatalf("%q %v", s, err)
	}
}

func TestWebhookWantsAndManagedBy(t *testing.T) {
	w := Webhook{AccountID: "a", Enabled: true, EventTypes: []string{"email.*", "sms.status"}, Identities: []string{"i1"}}
	for _, tc := range []struct {
		e    Event
		want bool
	}{
		{Event{Type: EmailReceived, IdentityID: "i1"}, true},
		{Event{Type: SMSStatusEvent, IdentityID: "i1"}, true},
		{Event{Type: SMSReceivedEvent, IdentityID: "i1"}, false},
		{Event{Type: EmailReceived, IdentityID: "i2"}, false},
		{Event{Type: WebhookTest, IdentityID: "i1"}, false},
	} {
		if got := w.Wants(tc.e); got != tc.want {
			t.Errorf("%+v: %v", tc.e, got)
		}
	}
	all := Webhook{AccountID: "a", Enabled: true}
	if !all.Wants(Event{Type: IdentityDeleted}) || (Webhook{}).Wants(Event{Type: EmailSent}) {
		t.Fatal("no filters: every event of an enabled endpoint")
	}
	if !w.ManagedBy(Principal{AccountID: "a", KeyType: KeyIdentity, IdentityID: "i1"}) ||
		w.ManagedBy(Principal{AccountID: "a", KeyType: KeyIdentity, IdentityID: "i2"}) ||
		all.ManagedBy(Principal{AccountID: "a", KeyType: KeyIdentity, IdentityID: "i1"}) ||
		!all.ManagedBy(Principal{AccountID: "a", KeyType: KeyManagement}) || all.ManagedBy(Principal{AccountID: "b", KeyType: KeyManagement}) {
		t.Fatal("managed by")
	}
}

func TestWebhookAttemptsBackOffThenFail(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	d := WebhookDelivery{Status: WebhookPending, CreatedAt: t0}
	now := t0
	want := []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		d = WebhookAttempted(d, now, 500, "status 500", time.Millisecond)
		if wait := d.NextAt.Sub(now); d.Status != WebhookPending || wait < w*9/10 || wait > w*11/10 || d.Attempts != i+1 {
			t.Fatalf("attempt %d: %+v (waits %v)", i+1, d, wait)
		}
		now = d.NextAt
	}
	for d.Status == WebhookPending {
		now = d.NextAt
		d = WebhookAttempted(d, now, 0, "connect", 0)
	}
	if d.Status != WebhookFailed || now.Sub(t0) > WebhookGiveUp || now.Sub(t0) < WebhookGiveUp-2*time.Hour {
		t.Fatalf("failed at %v after creation: %+v", now.Sub(t0), d)
	}
	if ok := WebhookAttempted(WebhookDelivery{CreatedAt: t0}, t0, 204, "", 0); ok.Status != WebhookDelivered || ok.Error != "" {
		t.Fatalf("a 2xx: %+v", ok)
	}
	w := Webhook{CreatedAt: t0, LastSuccessAt: t0.Add(time.Hour)}
	if WebhookDisabledReason(w, t0.Add(24*time.Hour)) != "" || WebhookDisabledReason(w, t0.Add(25*time.Hour)) == "" {
		t.Fatal("disabled after 24 hours without a success")
	}
}

func TestWebhookRoomCapsEachIdentityKeyAndTheAccount(t *testing.T) {
	mgmt := Principal{AccountID: "a", KeyType: KeyManagement}
	one := Principal{AccountID: "a", KeyType: KeyIdentity, IdentityID: "i1"}
	two := Principal{AccountID: "a", KeyType: KeyIdentity, IdentityID: "i2"}
	var account []Webhook
	for range 3 {
		account = append(account, Webhook{AccountID: "a", Identities: []string{"i1"}})
	}
	account = append(account, Webhook{AccountID: "a"}) // the account's, of every identity
	err := WebhookRoom(one, account, 3)
	if KindOf(err) != KindForbidden || QuotaOf(err) != QuotaWebhooksPerIdentity || !strings.Contains(err.Error(), "3 of 3") {
		t.Fatalf("an identity at its cap: %v", err)
	}
	for _, tc := range []struct {
		p           Principal
		perIdentity int64
	}{{one, 4}, {one, 0}, {two, 3}, {mgmt, 3}} {
		if err := WebhookRoom(tc.p, account, tc.perIdentity); err != nil {
			t.Errorf("%s with %d per identity: %v", tc.p.KeyType, tc.perIdentity, err)
		}
	}
	for len(account) < MaxWebhooks {
		account = append(account, Webhook{AccountID: "a"})
	}
	for _, p := range []Principal{mgmt, two} {
		if err := WebhookRoom(p, account, 10); KindOf(err) != KindConflict {
			t.Errorf("a full account, %s: %v", p.KeyType, err)
		}
	}
}

func TestWebhookExchangeIsBounded(t *testing.T) {
	long := strings.Repeat("é", WebhookExchangeLimit) // 2 bytes a rune: cut inside one
	ex := NewWebhookExchange(map[string][]string{"b": {"2"}, "a": {"1", strings.Repeat("x", WebhookExchangeLimit)}}, []byte(long),
		map[string][]string{"Content-Type": {"text/plain"}}, []byte("ok"))
	if len(ex.RequestBody) > WebhookExchangeLimit || !utf8.ValidString(ex.RequestBody) || len(ex.RequestBody) < WebhookExchangeLimit-1 {
		t.Fatalf("request body of %d bytes", len(ex.RequestBody))
	}
	if len(ex.RequestHeaders) != 1 || ex.RequestHeaders[0] != (HeaderField{"a", "1"}) {
		t.Fatalf("request headers: sorted, and cut at the limit: %+v", ex.RequestHeaders)
	}
	if ex.ResponseBody != "ok" || len(ex.ResponseHeaders) != 1 {
		t.Fatalf("response: %+v", ex)
	}
}
