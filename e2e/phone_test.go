package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/adapters/twilio/twiliotest"
	"github.com/callsign/callsign/app"
)

type apiSMS struct {
	ID             int64  `json:"id"`
	Body           string `json:"body"`
	Direction      string `json:"direction"`
	Status         string `json:"status"`
	IsRead         bool   `json:"is_read"`
	FromNumber     string `json:"from_number"`
	ConversationID string `json:"conversation_id"`
	ProviderSID    string `json:"provider_sid"`
}

type apiConversation struct {
	ConversationID string   `json:"conversation_id"`
	Counterpart    string   `json:"counterpart"`
	MessageCount   int      `json:"message_count"`
	UnreadCount    int      `json:"unread_count"`
	Messages       []apiSMS `json:"messages"`
}

// telephonyFlow walks provisioning, sending, receiving, conversations,
// read state and the voice agent through the API; inject delivers an
// inbound message the way the provider in use does (mgmt is the account's key).
func telephonyFlow(t *testing.T, r *running, inject func(mgmt, from, to, body string) int) {
	mgmt := r.bootstrap("phone@example.com")
	var ident struct{ UUID, Phone string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Caller", "provision_phone": true}, &ident)
	if ident.Phone == "" {
		t.Fatalf("created without a phone: %+v", ident)
	}
	var key struct{ Key string }
	r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID}, &key)
	if s := r.call("POST", "/api/identities/"+ident.UUID+"/provision-phone/", mgmt, nil, nil); s != 409 {
		t.Fatalf("a second number: %d", s)
	}
	if s := r.call("POST", "/api/identities/"+ident.UUID+"/provision-phone/", key.Key, nil, nil); s != 403 {
		t.Fatalf("an identity key without can_provision: %d", s)
	}
	var voice struct {
		ResponseURL string `json:"response_url"`
		Enabled     bool
	}
	if s := r.call("PUT", "/api/identities/"+ident.UUID+"/voice-agent/", key.Key, map[string]any{"response_url": "https://agent.example/call"}, &voice); s != 200 || !voice.Enabled {
		t.Fatalf("voice agent: %d %+v", s, voice)
	}
	var sent apiSMS
	if s := r.call("POST", "/api/messages/send/", key.Key, map[string]any{"to": "+14155550142", "body": "Your code is 123456"}, &sent); s != 201 || sent.ProviderSID == "" {
		t.Fatalf("send: %d %+v", s, sent)
	}
	if s := inject(mgmt, "+14155550142", ident.Phone, "Thanks, got it"); s/100 != 2 {
		t.Fatalf("inbound: %d", s)
	}
	var convs []apiConversation
	r.call("GET", "/api/sms-inbox/", key.Key, nil, &convs)
	if len(convs) != 1 || convs[0].MessageCount != 2 || convs[0].UnreadCount != 1 || convs[0].Counterpart != "+14155550142" {
		t.Fatalf("conversations: %+v", convs)
	}
	var conv apiConversation
	if s := r.call("GET", "/api/sms-inbox/"+url.PathEscape(convs[0].ConversationID)+"/", key.Key, nil, &conv); s != 200 || len(conv.Messages) != 2 ||
		conv.Messages[0].Direction != "outgoing" || conv.Messages[1].Body != "Thanks, got it" {
		t.Fatalf("conversation: %d %+v", s, conv)
	}
	var read apiSMS
	r.call("PATCH", fmt.Sprintf("/api/messages/%d/", conv.Messages[1].ID), key.Key, map[string]any{"is_read": true}, &read)
	r.call("GET", "/api/sms-inbox/?has_unread=true", key.Key, nil, &convs)
	if !read.IsRead || len(convs) != 0 {
		t.Fatalf("after reading: %+v %+v", read, convs)
	}
}

func TestTelephonyWithTheSimulator(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		telephonyFlow(t, r, func(mgmt, from, to, body string) int {
			s, _ := r.callRaw("POST", "/webhooks/sim/sms/", mgmt, map[string]any{"From": from, "To": to, "Body": body})
			return s
		})
	})
}

func TestTelephonyWithTwilio(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r, fake := startWithTwilio(t, d)
		webhook := func(path string, form url.Values, signature string) int {
			s, _ := r.signedPost(path, form, signature)
			return s
		}
		public := r.svc.Config().BaseURL // what Twilio was told, and signs
		n := 0
		telephonyFlow(t, r, func(_, from, to, body string) int {
			n++
			form := url.Values{"MessageSid": {fmt.Sprint("SMin", n)}, "AccountSid": {twiliotest.AccountSID}, "From": {from}, "To": {to}, "Body": {body}}
			return webhook("/webhooks/twilio/sms/", form, twiliotest.Signature(twiliotest.AuthToken, public+"/webhooks/twilio/sms/", form))
		})

		var bought url.Values
		for _, v := range fake.Numbers() {
			bought = v
		}
		msg := fake.Messages()[0]
		if bought.Get("SmsUrl") != public+"/webhooks/twilio/sms/" || bought.Get("VoiceUrl") != public+"/webhooks/twilio/voice/" || bought.Get("VoiceMethod") != "POST" {
			t.Fatalf("the number was set up with %v", bought)
		}
		if msg.Get("StatusCallback") != public+"/webhooks/twilio/status/" || msg.Get("Body") != "Your code is 123456" || msg.Get("To") != "+14155550142" {
			t.Fatalf("the message was sent with %v", msg)
		}

		// A tampered request is refused.
		form := url.Values{"MessageSid": {"SMevil"}, "From": {"+14155550142"}, "To": {"+14155551001"}, "Body": {"original"}}
		good := twiliotest.Signature(twiliotest.AuthToken, public+"/webhooks/twilio/sms/", form)
		form.Set("Body", "tampered")
		if s := webhook("/webhooks/twilio/sms/", form, good); s != 403 {
			t.Fatalf("tampered webhook: %d", s)
		}

		mgmt := r.bootstrap("twilio-errors@example.com")
		var ident struct{ UUID string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Errors"}, &ident)
		var e map[string][]string
		if s := r.call("POST", "/api/identities/"+ident.UUID+"/provision-phone/", mgmt, map[string]any{"country_code": "FR"}, &e); s != 400 || len(e["country_code"]) == 0 {
			t.Fatalf("unsupported country: %d %v", s, e)
		}
		fake.Down.Store(true)
		if s := r.call("POST", "/api/identities/"+ident.UUID+"/provision-phone/", mgmt, nil, nil); s != 503 {
			t.Fatalf("provider down: %d", s)
		}
		var phones []any
		r.call("GET", "/api/phone/?identity="+ident.UUID, mgmt, nil, &phones)
		if len(phones) != 0 {
			t.Fatalf("stored while the provider was down: %v", phones)
		}
		fake.Down.Store(false)
		r.call("POST", "/api/identities/"+ident.UUID+"/provision-phone/", mgmt, nil, nil)
		e = nil
		if s := r.call("POST", "/api/messages/send/?identity="+ident.UUID, mgmt, map[string]any{"to": twiliotest.InvalidNumber, "body": "x"}, &e); s != 400 ||
			len(e["to"]) == 0 || !strings.Contains(e["to"][0], "21211") {
			t.Fatalf("rejected destination: %d %v", s, e)
		}
		var list []apiSMS
		r.call("GET", "/api/messages/?identity="+ident.UUID, mgmt, nil, &list)
		if len(list) != 0 {
			t.Fatalf("a refused message was kept: %+v", list)
		}
	})
}

// startWithTwilio runs the service with Twilio as its provider, answered
// by a fake of Twilio's REST API.
func startWithTwilio(t *testing.T, d sqlstore.Dialect) (*running, *twiliotest.Server) {
	fake := twiliotest.NewServer()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	r := start(t, d, map[string]string{"CALLSIGN_TELEPHONY": "twilio", "TWILIO_ACCOUNT_SID": twiliotest.AccountSID, "TWILIO_AUTH_TOKEN": twiliotest.AuthToken},
		func(deps *app.Deps) {
			deps.Telephony = twilio.New(twilio.Config{AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken, APIBaseURL: srv.URL,
				HTTPClient: &http.Client{Timeout: 2 * time.Second}})
		})
	return r, fake
}

// signedPost posts a form as Twilio does, with the X-Twilio-Signature
// given, and returns the status and body of the answer.
func (r *running) signedPost(path string, form url.Values, signature string) (int, string) {
	r.t.Helper()
	req, _ := http.NewRequest("POST", r.baseURL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", signature)
	res, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}
