package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/twilio"
	"github.com/callsign/callsign/adapters/twilio/twiliotest"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// results is the body as a page's results.
func (r *response) results(t *testing.T) []map[string]any {
	t.Helper()
	var p struct{ Results []map[string]any }
	r.decode(t, &p)
	return p.Results
}

// TestDeletes walks every delete over the memory store, with the
// simulator: a message, a text, an inbox, an identity. That SQL removes
// what an identity held is e2e's TestDeletes.
func TestDeletes(t *testing.T) {
	h := newHarness(t)
	h.sim.Report = h.app.SMS.SimulatedReport
	mgmt := h.account()
	newIdentity := func(name string) (map[string]any, string) {
		ident := h.do("POST", "/api/identities/", map[string]any{"name": name, "provision_phone": true}, mgmt).want(t, 201).object(t)
		return ident, h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": ident["uuid"]}, mgmt).want(t, 201).object(t)["key"].(string)
	}
	ann, annKey := newIdentity("Ann")
	_, bobKey := newIdentity("Bob")
	annUUID, annInbox, annPhone := ann["uuid"].(string), ann["inbox"].(string), ann["phone"].(string)
	ctx := context.Background()

	// A message: its thread is counted again; another identity's key cannot touch it.
	for _, i := range []string{"0", "1"} {
		h.receive(annInbox, "From: carol@example.org\r\nTo: "+annInbox+"\r\nSubject: Plans\r\nMessage-ID: <plans-"+i+"@example.org>\r\n"+
			"In-Reply-To: <plans-0@example.org>\r\n\r\nPart "+i+"\r\n")
	}
	mail := h.do("GET", "/api/email-messages/", nil, annKey).want(t, 200).results(t)
	if len(mail) != 2 || mail[0]["thread_id"] != mail[1]["thread_id"] {
		t.Fatalf("mail: %v", mail)
	}
	latest := path("/api/email-messages/%v/", mail[1]["id"])
	h.do("DELETE", latest, nil, bobKey).want(t, 404)
	h.do("DELETE", latest, nil, annKey).want(t, 204)
	if th := h.do("GET", "/api/email-inbox/", nil, annKey).want(t, 200).list(t); len(th) != 1 || th[0]["message_count"] != float64(1) ||
		th[0]["unread_count"] != float64(1) || th[0]["preview"] != "Part 0" {
		t.Fatalf("the thread after a delete: %v", th)
	}
	h.do("GET", latest, nil, annKey).want(t, 404)

	// A text: its conversation is counted again.
	h.do("POST", "/api/messages/send/", map[string]any{"to": annPhone, "body": "first"}, bobKey).want(t, 201)
	sent := h.do("POST", "/api/messages/send/", map[string]any{"to": annPhone, "body": "second"}, bobKey).want(t, 201).object(t)
	h.sim.Wait() // delivered, and reported so
	text := path("/api/messages/%v/", sent["id"])
	if got := h.do("GET", text, nil, bobKey).want(t, 200).object(t); got["status"] != "delivered" {
		t.Fatalf("a text between two of our numbers: %v", got)
	}
	h.do("DELETE", text, nil, bobKey).want(t, 204)
	if c := h.do("GET", "/api/sms-inbox/", nil, bobKey).want(t, 200).list(t); len(c) != 1 || c[0]["message_count"] != float64(1) {
		t.Fatalf("the conversation after a delete: %v", c)
	}

	// An inbox: an identity key deletes its own; the last one stays.
	more := h.do("POST", "/api/email/", map[string]any{}, annKey).want(t, 201).object(t)
	h.receive(more["email"].(string), "From: carol@example.org\r\nSubject: x\r\n\r\nto the second inbox\r\n")
	h.do("DELETE", path("/api/email/%v/", more["id"]), nil, bobKey).want(t, 404)
	h.do("DELETE", path("/api/email/%v/", more["id"]), nil, annKey).want(t, 204)
	if _, err := h.app.Receiving.ResolveRecipient(ctx, "carol@example.org", more["email"].(string)); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("a deleted inbox as a recipient: %v", err)
	}
	if l := h.do("GET", "/api/email-messages/", nil, annKey).want(t, 200).results(t); len(l) != 1 {
		t.Fatalf("the deleted inbox's mail is still listed: %v", l)
	}
	inboxes := h.do("GET", "/api/email/", nil, annKey).want(t, 200).list(t)
	if len(inboxes) != 1 {
		t.Fatalf("inboxes: %v", inboxes)
	}
	h.do("DELETE", path("/api/email/%v/", inboxes[0]["id"]), nil, annKey).want(t, 409)

	// An identity: confirmed, by a management key, with its number released.
	var e map[string][]string
	h.do("DELETE", "/api/identities/"+annUUID+"/", nil, mgmt).want(t, 400).decode(t, &e)
	if len(e["confirm"]) != 1 || !strings.Contains(e["confirm"][0], annPhone) || !strings.Contains(e["confirm"][0], annInbox) {
		t.Fatalf("without confirm: %v", e)
	}
	h.do("DELETE", "/api/identities/"+annUUID+"/?confirm=true", nil, annKey).want(t, 403)
	held := len(h.sim.Held())
	h.do("DELETE", "/api/identities/"+annUUID+"/?confirm=true", nil, mgmt).want(t, 204)
	h.do("GET", "/api/identities/"+annUUID+"/", nil, mgmt).want(t, 404)
	h.do("GET", "/api/health/whoami/", nil, annKey).want(t, 401)
	for _, n := range h.sim.Held() {
		if n == annPhone {
			t.Fatalf("the number %s is still held at the simulator", n)
		}
	}
	if len(h.sim.Held()) != held-1 {
		t.Fatalf("held %d numbers, then %d", held, len(h.sim.Held()))
	}
	if _, err := h.app.Receiving.ResolveRecipient(ctx, "carol@example.org", annInbox); core.KindOf(err) != core.KindNotFound {
		t.Fatalf("a deleted identity's address as a recipient: %v", err)
	}
	for _, p := range []string{"/api/email-messages/?limit=1&identity=" + annUUID, "/api/contacts/?limit=1&identity=" + annUUID,
		"/api/messages/?limit=1&identity=" + annUUID, "/api/auth/keys/identity/?limit=1&identity=" + annUUID} {
		if got := h.do("GET", p, nil, mgmt).want(t, 200).object(t); got["count"] != float64(0) {
			t.Errorf("GET %s after the delete: %v", p, got)
		}
	}
	// Bob's conversation with Ann's old number stays; a new text to it
	// goes nowhere, and nothing warns of a number nobody owns.
	if again := h.do("POST", "/api/messages/send/", map[string]any{"to": annPhone, "body": "still there?"}, bobKey).want(t, 201).object(t); again["status"] != "sent" {
		t.Fatalf("a text to a released number: %v", again)
	}
	h.sim.Wait()
	if c := h.do("GET", "/api/sms-inbox/", nil, bobKey).want(t, 200).list(t); len(c) != 1 || c[0]["message_count"] != float64(2) {
		t.Fatalf("bob's conversation: %v", c)
	}
	logs := h.logs.String()
	for _, want := range []string{`"msg":"identity deleted"`, `"msg":"phone released"`, `"msg":"inbox deleted"`, `"msg":"mail deleted"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %s in the log", want)
		}
	}
	if strings.Contains(logs, "do not own") {
		t.Errorf("a warning about a number nobody owns:\n%s", logs)
	}
}

// TestDeleteReleasesAtTwilio: the number goes back to Twilio before the
// identity goes; while Twilio is down nothing is deleted.
func TestDeleteReleasesAtTwilio(t *testing.T) {
	fake := twiliotest.NewServer()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	h := newHarnessWith(t, func(d *app.Deps) {
		d.Telephony = twilio.New(twilio.Config{AccountSID: twiliotest.AccountSID, AuthToken: twiliotest.AuthToken, APIBaseURL: srv.URL,
			HTTPClient: &http.Client{Timeout: 2 * time.Second}})
	})
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Leaving", "provision_phone": true}, mgmt).want(t, 201).object(t)
	if len(fake.Numbers()) != 1 || ident["phone"] == nil {
		t.Fatalf("bought %v for %v", fake.Numbers(), ident)
	}
	gone := "/api/identities/" + ident["uuid"].(string) + "/"
	fake.Down.Store(true)
	h.do("DELETE", gone+"?confirm=true", nil, mgmt).want(t, 503)
	h.do("GET", gone, nil, mgmt).want(t, 200)
	fake.Down.Store(false)
	h.do("DELETE", gone+"?confirm=true", nil, mgmt).want(t, 204)
	if n := fake.Numbers(); len(n) != 0 {
		t.Fatalf("still bought at Twilio: %v", n)
	}
}
