package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

type apiIdentity struct {
	UUID, Name, Inbox string
	Phone             *string
}

// TestDeletes walks every delete through the real service on both
// databases, with the simulator: a message, a text, an inbox, an identity.
func TestDeletes(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, map[string]string{"CALLSIGN_LOG_LEVEL": "info"}, fastRetry)
		mgmt := r.bootstrap("deletes@example.com")
		var ann, bob apiIdentity
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Ann", "provision_phone": true}, &ann)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Bob", "provision_phone": true}, &bob)
		annKey, bobKey := identityKey(r, mgmt, ann.UUID), identityKey(r, mgmt, bob.UUID)
		smtpAddr := r.svc.smtpLn.Addr().String()

		// A message: its thread is counted again; another identity's key cannot touch it.
		for i := range 2 {
			sendSMTP(t, smtpAddr, "carol@example.org", []string{ann.Inbox}, fmt.Sprintf("From: carol@example.org\r\nTo: %s\r\n"+
				"Subject: Plans\r\nMessage-ID: <plans-%d@example.org>\r\nIn-Reply-To: <plans-0@example.org>\r\n\r\nPart %d\r\n", ann.Inbox, i, i))
		}
		var pg apiPage
		r.call("GET", "/api/email-messages/", annKey, nil, &pg)
		if pg.Count != 2 || pg.Results[0].ThreadID != pg.Results[1].ThreadID {
			t.Fatalf("mail: %+v", pg)
		}
		latest := pg.Results[1]
		if s := r.call("DELETE", fmt.Sprintf("/api/email-messages/%d/", latest.ID), bobKey, nil, nil); s != 404 {
			t.Fatalf("another identity's key deleted a message: %d", s)
		}
		if s := r.call("DELETE", fmt.Sprintf("/api/email-messages/%d/", latest.ID), annKey, nil, nil); s != 204 {
			t.Fatalf("delete a message: %d", s)
		}
		var threads []struct {
			MessageCount int    `json:"message_count"`
			UnreadCount  int    `json:"unread_count"`
			Preview      string `json:"preview"`
		}
		r.call("GET", "/api/email-inbox/", annKey, nil, &threads)
		if len(threads) != 1 || threads[0].MessageCount != 1 || threads[0].UnreadCount != 1 || threads[0].Preview != "Part 0" {
			t.Fatalf("the thread after a delete: %+v", threads)
		}
		if s := r.call("GET", fmt.Sprintf("/api/email-messages/%d/", latest.ID), annKey, nil, nil); s != 404 {
			t.Fatalf("a deleted message: %d", s)
		}

		// A text: its conversation is counted again.
		var sent apiSMS
		r.call("POST", "/api/messages/send/", bobKey, map[string]any{"to": *ann.Phone, "body": "first"}, &sent)
		r.call("POST", "/api/messages/send/", bobKey, map[string]any{"to": *ann.Phone, "body": "second"}, &sent)
		r.svc.sim.Wait() // delivered, and reported so
		r.call("GET", fmt.Sprintf("/api/messages/%d/", sent.ID), bobKey, nil, &sent)
		if sent.Status != "delivered" {
			t.Fatalf("a text between two of our numbers: %+v", sent)
		}
		if s := r.call("DELETE", fmt.Sprintf("/api/messages/%d/", sent.ID), bobKey, nil, nil); s != 204 {
			t.Fatalf("delete a text: %d", s)
		}
		var convs []apiConversation
		r.call("GET", "/api/sms-inbox/", bobKey, nil, &convs)
		if len(convs) != 1 || convs[0].MessageCount != 1 {
			t.Fatalf("the conversation after a delete: %+v", convs)
		}

		// An inbox: an identity key deletes its own; the last one stays.
		var more struct {
			ID    int64
			Email string
		}
		r.call("POST", "/api/email/", annKey, map[string]any{}, &more)
		sendSMTP(t, smtpAddr, "carol@example.org", []string{more.Email}, "From: carol@example.org\r\nSubject: x\r\n\r\nto the second inbox\r\n")
		if s := r.call("DELETE", fmt.Sprintf("/api/email/%d/", more.ID), bobKey, nil, nil); s != 404 {
			t.Fatalf("another identity's key deleted an inbox: %d", s)
		}
		if s := r.call("DELETE", fmt.Sprintf("/api/email/%d/", more.ID), annKey, nil, nil); s != 204 {
			t.Fatalf("delete an inbox: %d", s)
		}
		if err := rcpt(smtpAddr, more.Email); err == nil || err.Code != 550 {
			t.Fatalf("RCPT to a deleted inbox: %v", err)
		}
		r.call("GET", "/api/email-messages/", annKey, nil, &pg)
		if pg.Count != 1 {
			t.Fatalf("the deleted inbox's mail is still listed: %+v", pg)
		}
		var inboxes []struct{ ID int64 }
		r.call("GET", "/api/email/", annKey, nil, &inboxes)
		if len(inboxes) != 1 {
			t.Fatalf("inboxes: %+v", inboxes)
		}
		if s := r.call("DELETE", fmt.Sprintf("/api/email/%d/", inboxes[0].ID), annKey, nil, nil); s != 409 {
			t.Fatalf("the last inbox: %d", s)
		}

		// An identity: confirmed, by a management key, with its number released.
		var e map[string][]string
		if s := r.call("DELETE", "/api/identities/"+ann.UUID+"/", mgmt, nil, &e); s != 400 || len(e["confirm"]) != 1 ||
			!strings.Contains(e["confirm"][0], *ann.Phone) || !strings.Contains(e["confirm"][0], ann.Inbox) {
			t.Fatalf("without confirm: %d %v", s, e)
		}
		if s := r.call("DELETE", "/api/identities/"+ann.UUID+"/?confirm=true", annKey, nil, nil); s != 403 {
			t.Fatalf("an identity key deleted its identity: %d", s)
		}
		held := len(r.svc.sim.Held())
		if s := r.call("DELETE", "/api/identities/"+ann.UUID+"/?confirm=true", mgmt, nil, nil); s != 204 {
			t.Fatalf("delete an identity: %d", s)
		}
		if s := r.call("GET", "/api/identities/"+ann.UUID+"/", mgmt, nil, nil); s != 404 {
			t.Fatalf("a deleted identity: %d", s)
		}
		if s := r.call("GET", "/api/health/whoami/", annKey, nil, nil); s != 401 {
			t.Fatalf("a deleted identity's key: %d", s)
		}
		for _, n := range r.svc.sim.Held() {
			if n == *ann.Phone {
				t.Fatalf("the number %s is still held at the simulator", n)
			}
		}
		if len(r.svc.sim.Held()) != held-1 {
			t.Fatalf("held %d numbers, then %d", held, len(r.svc.sim.Held()))
		}
		if err := rcpt(smtpAddr, ann.Inbox); err == nil || err.Code != 550 {
			t.Fatalf("RCPT to a deleted identity's address: %v", err)
		}
		for _, path := range []string{"/api/email-messages/?identity=" + ann.UUID, "/api/contacts/?limit=1&identity=" + ann.UUID,
			"/api/messages/?limit=1&identity=" + ann.UUID, "/api/auth/keys/identity/?limit=1&identity=" + ann.UUID} {
			var p listPage
			if s := r.call("GET", path, mgmt, nil, &p); s != 200 || p.Count != 0 {
				t.Errorf("GET %s after the delete: %d %+v", path, s, p)
			}
		}
		// Bob's conversation with Ann's old number stays; a new text to it
		// goes nowhere, and nothing warns of a number nobody owns.
		r.call("POST", "/api/messages/send/", bobKey, map[string]any{"to": *ann.Phone, "body": "still there?"}, &sent)
		r.svc.sim.Wait()
		if sent.Status != "sent" {
			t.Fatalf("a text to a released number: %+v", sent)
		}
		r.call("GET", "/api/sms-inbox/", bobKey, nil, &convs)
		if len(convs) != 1 || convs[0].MessageCount != 2 {
			t.Fatalf("bob's conversation: %+v", convs)
		}
		logs := r.logs()
		for _, want := range []string{`msg="identity deleted"`, `msg="phone released"`, `msg="inbox deleted"`, `msg="mail deleted"`} {
			if !strings.Contains(logs, want) {
				t.Errorf("no %s in the log", want)
			}
		}
		if strings.Contains(logs, "do not own") {
			t.Errorf("a warning about a number nobody owns:\n%s", logs)
		}
	})
}

// TestDeleteReleasesAtTwilio: the number goes back to Twilio before the
// identity goes; while Twilio is down nothing is deleted.
func TestDeleteReleasesAtTwilio(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r, fake := startWithTwilio(t, d)
		mgmt := r.bootstrap("twilio-deletes@example.com")
		var ident apiIdentity
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Leaving", "provision_phone": true}, &ident)
		if len(fake.Numbers()) != 1 || ident.Phone == nil {
			t.Fatalf("bought %v for %+v", fake.Numbers(), ident)
		}
		fake.Down.Store(true)
		if s := r.call("DELETE", "/api/identities/"+ident.UUID+"/?confirm=true", mgmt, nil, nil); s != 503 {
			t.Fatalf("delete while Twilio is down: %d", s)
		}
		if s := r.call("GET", "/api/identities/"+ident.UUID+"/", mgmt, nil, nil); s != 200 {
			t.Fatalf("the identity after a failed delete: %d", s)
		}
		fake.Down.Store(false)
		if s := r.call("DELETE", "/api/identities/"+ident.UUID+"/?confirm=true", mgmt, nil, nil); s != 204 {
			t.Fatalf("delete: %d", s)
		}
		if n := fake.Numbers(); len(n) != 0 {
			t.Fatalf("still bought at Twilio: %v", n)
		}
	})
}

// identityKey makes a key for an identity.
func identityKey(r *running, mgmt, identity string) string {
	var key struct{ Key string }
	r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": identity}, &key)
	return key.Key
}

// rcpt asks the SMTP listener to take mail for to, and returns its refusal.
func rcpt(addr, to string) *smtp.SMTPError {
	c, err := smtp.Dial(addr)
	if err != nil {
		return &smtp.SMTPError{Message: err.Error()}
	}
	defer c.Close()
	if err := c.Mail("carol@example.org", nil); err != nil {
		return &smtp.SMTPError{Message: err.Error()}
	}
	var se *smtp.SMTPError
	if err := c.Rcpt(to, nil); errors.As(err, &se) {
		return se
	} else if err != nil {
		return &smtp.SMTPError{Message: err.Error()}
	}
	return nil
}
