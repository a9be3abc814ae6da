package httpapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/adapters/twilio/twiliotest"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// provision gives identity a number and returns it.
func (h *harness) provision(key, identity string) string {
	h.t.Helper()
	ident := h.do("POST", "/api/identities/"+identity+"/provision-phone/", nil, key).want(h.t, 200).object(h.t)
	return ident["phone"].(string)
}

func TestProvisioningAndPhones(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	path := "/api/identities/" + tn.one + "/provision-phone/"
	h.do("POST", path, map[string]any{"country_code": "USA"}, tn.mgmt).want(t, 400)
	if e := h.do("POST", path, map[string]any{"country_code": "FR"}, tn.mgmt).want(t, 400).object(t); e["country_code"] == nil {
		t.Fatalf("a country the provider has no numbers in: %v", e)
	}
	ident := h.do("POST", path, map[string]any{"country_code": "gb"}, tn.mgmt).want(t, 200).object(t)
	number := ident["phone"].(string)
	if !strings.HasPrefix(number, "+447700900") {
		t.Fatalf("provisioned %v", ident)
	}
	h.do("POST", path, nil, tn.mgmt).want(t, 409)
	h.do("POST", "/api/identities/"+tn.one+"/provision-phone/", nil, tn.keyTwo).want(t, 404)
	if got := h.do("GET", "/api/identities/"+tn.one+"/", nil, tn.keyOne).want(t, 200).object(t); got["phone"] != number {
		t.Fatalf("identity %v", got)
	}
	phones := h.do("GET", "/api/phone/", nil, tn.mgmt).want(t, 200).list(t)
	if len(phones) != 1 || phones[0]["number"] != number || phones[0]["country_code"] != "GB" || phones[0]["provider"] != "sim" ||
		phones[0]["capabilities"].(map[string]any)["sms"] != true {
		t.Fatalf("phones %v", phones)
	}
	p := fmt.Sprintf("/api/phone/%v/", phones[0]["id"])
	h.do("GET", p, nil, tn.keyOne).want(t, 200)
	h.do("GET", p, nil, tn.keyTwo).want(t, 404)
	h.do("GET", p, nil, tn.otherAccount).want(t, 404)

	// provision_phone on create makes the identity and its number together.
	made := h.do("POST", "/api/identities/", map[string]any{"name": "caller", "provision_phone": true}, tn.mgmt).want(t, 201).object(t)
	if !strings.HasPrefix(made["phone"].(string), "+1") {
		t.Fatalf("created with a phone: %v", made)
	}
	h.do("POST", "/api/identities/", map[string]any{"name": "nowhere", "provision_phone": true, "country_code": "FR"}, tn.mgmt).want(t, 400)
	if l := h.do("GET", "/api/identities/", nil, tn.mgmt).want(t, 200).list(t); len(l) != 3 {
		t.Fatalf("a failed provisioning left an identity behind: %d identities", len(l))
	}
}

// downTel is a provider that is down for everything.
type downTel struct{ ports.Telephony }

func (downTel) BuyNumber(context.Context, ports.BuyNumber) (ports.BoughtNumber, error) {
	return ports.BoughtNumber{}, core.Unavailable("The provider did not answer in time.")
}
func (downTel) SendSMS(context.Context, ports.SendSMS) (ports.SentSMS, error) {
	return ports.SentSMS{}, core.Unavailable("The provider did not answer in time.")
}
func (downTel) PointCalls(context.Context, string, ports.VoiceWebhooks) error {
	return core.Unavailable("The provider did not answer in time.")
}

func TestProviderOutageStoresNothing(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	number := h.provision(tn.mgmt, tn.one)
	h.do("PUT", "/api/identities/"+tn.one+"/voice-agent/", map[string]any{"response_url": "https://agent.example/v1"}, tn.mgmt).want(t, 200)
	// Now the provider goes down.
	down := newHarnessWith(t, func(d *app.Deps) { d.Store = h.store; d.Telephony = downTel{h.sim} })
	down.do("POST", "/api/identities/"+tn.two+"/provision-phone/", nil, tn.mgmt).want(t, 503)
	down.do("POST", "/api/identities/", map[string]any{"name": "later", "provision_phone": true}, tn.mgmt).want(t, 503)
	if got := down.do("GET", "/api/identities/"+tn.two+"/", nil, tn.mgmt).want(t, 200).object(t); got["phone"] != nil {
		t.Fatalf("a failed provisioning stored a number: %v", got)
	}
	if l := down.do("GET", "/api/identities/", nil, tn.mgmt).want(t, 200).list(t); len(l) != 2 {
		t.Fatalf("a failed identity create stored the identity: %d", len(l))
	}
	down.do("POST", "/api/messages/send/?identity="+tn.one, map[string]any{"to": "+14155550100", "body": "hi"}, tn.mgmt).want(t, 503)
	if l := down.do("GET", "/api/messages/", nil, tn.mgmt).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("a message that never left was kept: %v", l)
	}
	down.do("PATCH", "/api/identities/"+tn.one+"/voice-agent/", map[string]any{"response_url": "https://agent.example/v2"}, tn.mgmt).want(t, 503)
	if v := down.do("GET", "/api/identities/"+tn.one+"/voice-agent/", nil, tn.mgmt).want(t, 200).object(t); v["response_url"] != "https://agent.example/v1" {
		t.Fatalf("the stored configuration changed although the provider failed: %v", v)
	}
	_ = number
}

func TestSendAndReceiveSMS(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	one, two := h.provision(tn.mgmt, tn.one), h.provision(tn.mgmt, tn.two)

	for body, field := range map[string]string{
		`{"to": "555-0100", "body": "hi"}`:                                    "to",
		`{"to": "+14155550100", "body": "  "}`:                                "body",
		`{"to": "+14155550100", "body": "` + strings.Repeat("x", 1601) + `"}`: "body",
		`{"body": "hi"}`: "to",
	} {
		if e := h.raw("POST", "/api/messages/send/", "application/json", strings.NewReader(body), tn.keyOne).want(t, 400).object(t); e[field] == nil {
			t.Errorf("%s should name %s: %v", body[:20], field, e)
		}
	}
	h.do("POST", "/api/messages/send/", map[string]any{"to": two, "body": "hi"}, tn.mgmt).want(t, 400)
	noPhone := h.do("POST", "/api/identities/", map[string]any{"name": "mute"}, tn.mgmt).want(t, 201).object(t)["uuid"].(string)
	h.do("POST", "/api/messages/send/?identity="+noPhone, map[string]any{"to": two, "body": "hi"}, tn.mgmt).want(t, 404)

	// One texts two: both are simulated numbers, so it arrives.
	sent := h.do("POST", "/api/messages/send/", map[string]any{"to": two, "body": "Lunch at noon?"}, tn.keyOne).want(t, 201).object(t)
	if sent["direction"] != "outgoing" || sent["from_number"] != one || sent["status"] != "sent" || sent["provider_sid"] == nil ||
		sent["conversation_id"] != fmt.Sprintf("%s_%s", phoneID(t, h, tn.mgmt, one), two) {
		t.Fatalf("sent %v", sent)
	}
	h.sim.Wait()
	got := h.do("GET", "/api/messages/", nil, tn.keyTwo).want(t, 200).list(t)
	if len(got) != 1 || got[0]["direction"] != "incoming" || got[0]["from_number"] != one || got[0]["body"] != "Lunch at noon?" || got[0]["is_read"] != false {
		t.Fatalf("received %v", got)
	}
	// Another from outside, through the simulator's webhook.
	form := url.Values{"From": {"+14155550123"}, "To": {two}, "Body": {"Are you there?"}}
	h.raw("POST", "/webhooks/sim/sms/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), tn.mgmt).want(t, 201)
	h.raw("POST", "/webhooks/sim/sms/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), tn.keyTwo).want(t, 403)
	h.raw("POST", "/webhooks/sim/sms/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), tn.otherAccount).want(t, 404)
	h.raw("POST", "/webhooks/sim/sms/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), "").want(t, 401)
	convs := h.do("GET", "/api/sms-inbox/", nil, tn.keyTwo).want(t, 200).list(t)
	if len(convs) != 2 || convs[0]["counterpart"] != "+14155550123" || convs[0]["unread_count"] != 1.0 || convs[0]["preview"] != "Are you there?" {
		t.Fatalf("conversations %v", convs)
	}
	if l := h.do("GET", "/api/sms-inbox/?phone="+url.QueryEscape(two), nil, tn.keyTwo).want(t, 200).list(t); len(l) != 2 {
		t.Fatalf("by number %v", l)
	}
	if l := h.do("GET", "/api/sms-inbox/?phone="+url.QueryEscape(one), nil, tn.keyTwo).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("another identity's number %v", l)
	}
	h.do("GET", "/api/sms-inbox/?phone=nonsense", nil, tn.keyTwo).want(t, 400)

	// Reading the conversation, marking read.
	cid := convs[1]["conversation_id"].(string)
	h.do("GET", "/api/sms-inbox/not-an-id/", nil, tn.keyTwo).want(t, 400)
	h.do("GET", "/api/sms-inbox/99999_+14155550100/", nil, tn.keyTwo).want(t, 404)
	h.do("GET", "/api/sms-inbox/"+url.PathEscape(cid)+"/", nil, tn.keyOne).want(t, 404)
	detail := h.do("GET", "/api/sms-inbox/"+url.PathEscape(cid)+"/", nil, tn.keyTwo).want(t, 200).object(t)
	if detail["message_count"] != 1.0 || len(detail["messages"].([]any)) != 1 {
		t.Fatalf("detail %v", detail)
	}
	msg := fmt.Sprintf("/api/messages/%v/", got[0]["id"])
	h.do("PUT", msg, map[string]any{}, tn.keyTwo).want(t, 400)
	h.do("PATCH", msg, map[string]any{"is_read": true}, tn.keyOne).want(t, 404)
	if m := h.do("PATCH", msg, map[string]any{"is_read": true}, tn.keyTwo).want(t, 200).object(t); m["is_read"] != true {
		t.Fatalf("patch %v", m)
	}
	if m := h.do("PATCH", msg, map[string]any{}, tn.keyTwo).want(t, 200).object(t); m["is_read"] != true {
		t.Fatalf("a PATCH without is_read changed it: %v", m)
	}
	if l := h.do("GET", "/api/sms-inbox/?has_unread=true", nil, tn.keyTwo).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("unread conversations %v", l)
	}
	if l := h.do("GET", "/api/messages/?direction=incoming&is_read=false", nil, tn.keyTwo).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("unread incoming %v", l)
	}
	h.do("GET", "/api/messages/?direction=up", nil, tn.keyTwo).want(t, 400)
	// The outside sender became an auto contact.
	if c := h.do("GET", "/api/contacts/find/?phone_number=%2B14155550123", nil, tn.keyTwo).want(t, 200).object(t); c["source"] != "auto" {
		t.Fatalf("auto contact %v", c)
	}
}

// phoneID is the id of one of the account's numbers.
func phoneID(t *testing.T, h *harness, key, number string) string {
	for _, p := range h.do("GET", "/api/phone/", nil, key).want(t, 200).list(t) {
		if p["number"] == number {
			return fmt.Sprint(p["id"])
		}
	}
	t.Fatalf("no phone %s", number)
	return ""
}

func TestVoiceAgent(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	path := "/api/identities/" + tn.one + "/voice-agent/"
	if v := h.do("GET", path, nil, tn.keyOne).want(t, 200).object(t); v["response_url"] != nil || v["enabled"] != false || v["method"] != "POST" || v["updated_dt"] != nil {
		t.Fatalf("default %v", v)
	}
	h.do("PUT", path, map[string]any{"method": "GET"}, tn.keyOne).want(t, 400)
	for _, bad := range []string{"ftp://x.example/", "not a url", "/relative"} {
		h.do("PUT", path, map[string]any{"response_url": bad}, tn.keyOne).want(t, 400)
	}
	h.do("PUT", path, map[string]any{"response_url": "https://agent.example/voice", "method": "DELETE"}, tn.keyOne).want(t, 400)
	v := h.do("PUT", path, map[string]any{"response_url": "https://agent.example/voice"}, tn.keyOne).want(t, 200).object(t)
	if v["enabled"] != true || v["method"] != "POST" || v["updated_dt"] == nil {
		t.Fatalf("put %v", v)
	}
	h.provision(tn.mgmt, tn.one) // gets the voice URL at purchase
	if v := h.do("PATCH", path, map[string]any{"enabled": false}, tn.keyOne).want(t, 200).object(t); v["enabled"] != false || v["response_url"] != "https://agent.example/voice" {
		t.Fatalf("patch %v", v)
	}
	h.do("GET", path, nil, tn.keyTwo).want(t, 404)
	h.do("PATCH", path, map[string]any{"enabled": true}, tn.otherAccount).want(t, 404)
}

func TestTwilioWebhooks(t *testing.T) {
	const token = twiliotest.AuthToken
	h := newHarness(t)
	tn := newTenants(t, h)
	number := h.provision(tn.mgmt, tn.one) // through the simulator; the webhook below only needs the number
	tw := newHarnessWith(t, func(d *app.Deps) {
		d.Store = h.store
		d.Telephony = twilio.New(twilio.Config{AccountSID: twiliotest.AccountSID, AuthToken: token})
	})
	post := func(path string, form url.Values, signature string) *response {
		req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Twilio-Signature", signature)
		return tw.serve(req)
	}
	in := url.Values{"MessageSid": {"SM0001"}, "From": {"+14155550199"}, "To": {number}, "Body": {"Hello from Twilio"}, "AccountSid": {twiliotest.AccountSID}}
	good := twiliotest.Signature(token, "http://api.test/webhooks/twilio/sms/", in)
	res := post("/webhooks/twilio/sms/", in, good).want(t, 200)
	if !strings.Contains(string(res.Body), "<Response/>") || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/xml") {
		t.Fatalf("TwiML %q", res.Body)
	}
	post("/webhooks/twilio/sms/", in, good).want(t, 200) // the same MessageSid again
	tampered := url.Values{}
	for k, v := range in {
		tampered[k] = v
	}
	tampered.Set("Body", "Hello from someone else")
	post("/webhooks/twilio/sms/", tampered, good).want(t, 403)
	post("/webhooks/twilio/sms/", in, "").want(t, 403)
	post("/webhooks/twilio/sms/", in, twiliotest.Signature(token, "http://evil.test/webhooks/twilio/sms/", in)).want(t, 403)
	// Every value of a repeated parameter is signed: one added to a signed
	// request is refused, and a request signed with it is taken.
	appended := url.Values{"Body": {"Hello from Twilio", "and a forged second value"}}
	for k, v := range in {
		if k != "Body" {
			appended[k] = v
		}
	}
	post("/webhooks/twilio/sms/", appended, good).want(t, 403)
	appended.Set("MessageSid", "SM0004")
	post("/webhooks/twilio/sms/", appended, twiliotest.Signature(token, "http://api.test/webhooks/twilio/sms/", appended)).want(t, 200)
	// Only form bodies: the signature covers nothing else.
	for _, path := range []string{"/webhooks/twilio/sms/", "/webhooks/twilio/status/"} {
		for _, contentType := range []string{"", "application/json", "multipart/form-data; boundary=x", "text/plain"} {
			req := httptest.NewRequest("POST", path, strings.NewReader(`{"MessageSid":"SM0005"}`))
			if contentType != "" {
				req.Header.Set("Content-Type", contentType)
			}
			req.Header.Set("X-Twilio-Signature", twiliotest.Signature(token, "http://api.test"+path, nil))
			if res := tw.serve(req).want(t, 415).object(t); !strings.Contains(fmt.Sprint(res["detail"]), "application/x-www-form-urlencoded") {
				t.Errorf("%s with %q: %v", path, contentType, res)
			}
		}
	}
	charset := httptest.NewRequest("POST", "/webhooks/twilio/sms/", strings.NewReader(in.Encode()))
	charset.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	charset.Header.Set("X-Twilio-Signature", good)
	tw.serve(charset).want(t, 200)
	if l := tw.do("GET", "/api/messages/", nil, tn.keyOne).want(t, 200).list(t); len(l) != 2 || l[0]["provider_sid"] != "SM0004" || l[1]["provider_sid"] != "SM0001" {
		t.Fatalf("stored once each: %v", l)
	}
	// A number that is not ours is acknowledged, not stored.
	stray := url.Values{"MessageSid": {"SM0002"}, "From": {"+14155550199"}, "To": {"+14155550000"}, "Body": {"?"}}
	post("/webhooks/twilio/sms/", stray, twiliotest.Signature(token, "http://api.test/webhooks/twilio/sms/", stray)).want(t, 200)

	// An MMS: its media are kept as attachments (URL and type); a text has none.
	mms := url.Values{"MessageSid": {"MM0003"}, "From": {"+14155550199"}, "To": {number}, "Body": {"Look"}, "NumMedia": {"3"},
		"MediaUrl0": {"https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM0003/Media/ME1"}, "MediaContentType0": {"image/jpeg"},
		"MediaUrl1": {"javascript:alert(1)"}, "MediaContentType1": {"image/png"},
		"MediaUrl2": {"https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM0003/Media/ME3"}}
	post("/webhooks/twilio/sms/", mms, twiliotest.Signature(token, "http://api.test/webhooks/twilio/sms/", mms)).want(t, 200)
	got := tw.do("GET", "/api/messages/", nil, tn.keyOne).want(t, 200).list(t)
	if fmt.Sprint(got[0]["attachments"]) != "[map[content_type:image/jpeg url:https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM0003/Media/ME1] "+
		"map[content_type:application/octet-stream url:https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM0003/Media/ME3]]" ||
		fmt.Sprint(got[1]["attachments"]) != "[]" {
		t.Fatalf("media %v / %v", got[0]["attachments"], got[1]["attachments"])
	}

	// A delivery report moves an outgoing message forward, never back, and
	// never out of a final state.
	sent := h.do("POST", "/api/messages/send/", map[string]any{"to": "+14155550199", "body": "out"}, tn.keyOne).want(t, 201).object(t)
	for _, st := range []string{"delivered", "sent", "undelivered"} {
		report := url.Values{"MessageSid": {sent["provider_sid"].(string)}, "MessageStatus": {st}}
		post("/webhooks/twilio/status/", report, twiliotest.Signature(token, "http://api.test/webhooks/twilio/status/", report)).want(t, 204)
	}
	if m := tw.do("GET", fmt.Sprintf("/api/messages/%v/", sent["id"]), nil, tn.keyOne).want(t, 200).object(t); m["status"] != "delivered" {
		t.Fatalf("status %v", m)
	}
	failed := url.Values{"MessageSid": {sent["provider_sid"].(string)}, "MessageStatus": {"bogus"}}
	post("/webhooks/twilio/status/", failed, twiliotest.Signature(token, "http://api.test/webhooks/twilio/status/", failed)).want(t, 400)
}

func TestPhoneScoping(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	number := h.provision(tn.mgmt, tn.one)
	two := h.provision(tn.mgmt, tn.two)
	h.do("POST", "/api/messages/send/?identity="+tn.two, map[string]any{"to": number, "body": "hi one"}, tn.mgmt).want(t, 201)
	h.sim.Wait()
	msgs := h.do("GET", "/api/messages/?identity="+tn.one, nil, tn.mgmt).want(t, 200).list(t)
	if len(msgs) != 1 {
		t.Fatalf("messages %v", msgs)
	}
	q := "?identity=" + tn.one
	msg := fmt.Sprintf("/api/messages/%v/", msgs[0]["id"])
	conv := "/api/sms-inbox/" + url.PathEscape(msgs[0]["conversation_id"].(string)) + "/"
	phone := "/api/phone/" + phoneID(t, h, tn.mgmt, number) + "/"
	ok4, nf := [4]int{200, 200, 404, 404}, -1
	runScopeCases(t, h, tn, []scopeCase{
		{"GET", "/api/phone/" + q, nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", phone, nil, ok4, nf},
		{"GET", "/api/messages/" + q, nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", msg, nil, ok4, nf},
		{"PATCH", msg, map[string]any{"is_read": true}, ok4, nf},
		{"PUT", msg, map[string]any{"is_read": false}, ok4, nf},
		{"GET", "/api/sms-inbox/" + q, nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", conv, nil, ok4, nf},
		{"POST", "/api/messages/send/" + q, map[string]any{"to": two, "body": "back"}, [4]int{201, 201, 404, 404}, nf},
		{"GET", "/api/identities/" + tn.one + "/voice-agent/", nil, ok4, nf},
		{"PUT", "/api/identities/" + tn.one + "/voice-agent/", map[string]any{"response_url": "https://a.example/"}, ok4, nf},
		{"POST", "/api/identities/" + tn.one + "/provision-phone/", nil, [4]int{409, 403, 404, 404}, nf},
	})
}

// TestWhatAnIdentityKeyMayDoToItsIdentity: it reads, renames and sets the
// voice agent of its identity; buying a number needs a management key or
// an identity key made with can_provision, which only such keys can give.
func TestWhatAnIdentityKeyMayDoToItsIdentity(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	own := "/api/identities/" + tn.one + "/"
	h.do("GET", own, nil, tn.keyOne).want(t, 200)
	if got := h.do("PATCH", own, map[string]any{"name": "renamed"}, tn.keyOne).want(t, 200).object(t); got["name"] != "renamed" {
		t.Fatalf("rename: %v", got)
	}
	h.do("PUT", own+"voice-agent/", map[string]any{"response_url": "https://agent.example/"}, tn.keyOne).want(t, 200)
	h.do("POST", "/api/identities/", map[string]any{"name": "more"}, tn.keyOne).want(t, 403)
	h.do("DELETE", own+"?confirm=true", nil, tn.keyOne).want(t, 403)

	e := h.do("POST", own+"provision-phone/", nil, tn.keyOne).want(t, 403).object(t)
	if !strings.Contains(e["detail"].(string), "can_provision") {
		t.Fatalf("the refusal should say how: %v", e)
	}
	if l := h.do("GET", "/api/phone/", nil, tn.mgmt).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("a refused provisioning bought %v", l)
	}
	// A plain identity key cannot give the right; a management key can.
	h.do("POST", "/api/auth/keys/identity/", map[string]any{"can_provision": true}, tn.keyOne).want(t, 403)
	made := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": tn.one, "can_provision": true}, tn.mgmt).want(t, 201).object(t)
	if made["can_provision"] != true {
		t.Fatalf("the key: %v", made)
	}
	if plain := h.do("GET", "/api/auth/keys/identity/?identity="+tn.one, nil, tn.mgmt).want(t, 200).list(t); plain[0]["can_provision"] != false {
		t.Fatalf("a plain key: %v", plain[0])
	}
	canBuy := made["key"].(string)
	// It still sees only its own identity.
	h.do("POST", "/api/identities/"+tn.two+"/provision-phone/", nil, canBuy).want(t, 404)
	// It mints no keys: identity keys never do.
	h.do("POST", "/api/auth/keys/identity/", map[string]any{"can_provision": true}, canBuy).want(t, 403)
	if got := h.do("POST", own+"provision-phone/", nil, canBuy).want(t, 200).object(t); got["phone"] == nil {
		t.Fatalf("provisioned: %v", got)
	}
}

// A number that is E.164 in shape but that its country's numbering plan
// does not allow (+1415: too short for North America) is refused on its
// field wherever the API takes a number, as Twilio would refuse to text it;
// the simulator's fictional +44 7700 900xxx range stays possible.
func TestImpossibleNumbersAreRefused(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	number := h.provision(tn.mgmt, tn.one)
	for _, c := range []struct {
		method, path, field string
		body                map[string]any
	}{
		{"POST", "/api/messages/send/", "to", map[string]any{"to": "+1415", "body": "hi"}},
		{"POST", "/api/contacts/", "phone_number", map[string]any{"phone_number": "+1415"}},
		{"GET", "/api/contacts/find/?phone_number=%2B1415", "phone_number", nil},
		{"GET", "/api/sms-inbox/?phone=%2B1415", "phone", nil},
		{"POST", "/api/rules/", "pattern", map[string]any{"channel": "sms", "direction": "outbound", "action": "block", "pattern": "+999"}},
		{"POST", "/webhooks/sim/sms/", "From", map[string]any{"From": "+1415", "To": number, "Body": "hi"}},
		{"POST", "/webhooks/sim/call/", "From", map[string]any{"From": "+1415", "To": number}},
	} {
		key := tn.keyOne
		if strings.HasPrefix(c.path, "/webhooks/") || c.path == "/api/rules/" {
			key = tn.mgmt
		}
		e := h.do(c.method, c.path, c.body, key).want(t, 400).object(t)
		if msgs, _ := e[c.field].([]any); len(msgs) != 1 || !strings.Contains(msgs[0].(string), "numbering plan") {
			t.Errorf("%s %s: %v, want the numbering plan's word on %s", c.method, c.path, e, c.field)
		}
	}
	// Possible numbers, prefixes and the simulator's range pass.
	h.do("POST", "/api/messages/send/", map[string]any{"to": "+447700900130", "body": "hi"}, tn.keyOne).want(t, 201)
	h.do("POST", "/api/contacts/", map[string]any{"phone_number": "+14155550100"}, tn.keyOne).want(t, 201)
	h.do("POST", "/api/rules/", map[string]any{"channel": "sms", "direction": "outbound", "action": "block", "pattern": "+1415"}, tn.mgmt).want(t, 201)
}

// Twilio's inbound webhook and the simulator's read one set of fields.
func TestTwilioInboundSMSFields(t *testing.T) {
	in := &input{form: url.Values{"MessageSid": {"MM0001"}, "From": {"+14155550199"}, "To": {"+14155550100"}, "Body": {"Look"},
		"NumMedia": {"2"}, "MediaUrl0": {"https://media.example/1"}, "MediaContentType0": {"image/jpeg"},
		"MediaUrl1": {"https://media.example/2"}, "MediaContentType1": {"video/mp4"}, "MediaUrl2": {"https://media.example/3"}}}
	got := twilioInboundSMS(in)
	want := app.InboundSMS{From: "+14155550199", To: "+14155550100", Body: "Look", SID: "MM0001",
		Media: []core.SMSMedia{{URL: "https://media.example/1", ContentType: "image/jpeg"}, {URL: "https://media.example/2", ContentType: "video/mp4"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %+v, want %+v", got, want)
	}
}

// The simulator's inbound webhook keeps an MMS's media, as Twilio's does,
// and takes a message of media alone.
func TestSimulatedMMSKeepsMedia(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	number := h.provision(tn.mgmt, tn.one)
	form := url.Values{"From": {"+14155550123"}, "To": {number}, "Body": {"Look"}, "NumMedia": {"1"},
		"MediaUrl0": {"https://media.example/cat.jpg"}, "MediaContentType0": {"image/jpeg"}}
	made := h.raw("POST", "/webhooks/sim/sms/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), tn.mgmt).want(t, 201).object(t)
	stored := h.do("GET", fmt.Sprintf("/api/messages/%v/", made["id"]), nil, tn.keyOne).want(t, 200).object(t)
	if fmt.Sprint(stored["attachments"]) != "[map[content_type:image/jpeg url:https://media.example/cat.jpg]]" {
		t.Errorf("stored attachments %v", stored["attachments"])
	}
	form.Del("Body")
	h.raw("POST", "/webhooks/sim/sms/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), tn.mgmt).want(t, 201)
	form.Del("NumMedia")
	if e := h.raw("POST", "/webhooks/sim/sms/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), tn.mgmt).want(t, 400).object(t); e["MediaUrl0"] == nil {
		t.Errorf("media without NumMedia: %v", e)
	}
	form.Del("MediaUrl0")
	form.Del("MediaContentType0")
	if e := h.raw("POST", "/webhooks/sim/sms/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), tn.mgmt).want(t, 400).object(t); e["Body"] == nil {
		t.Errorf("neither body nor media: %v", e)
	}
}
