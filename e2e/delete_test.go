package e2e

import (
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

type apiIdentity struct {
	UUID, Name, Inbox string
	Phone             *string
}

// TestDeletes is the deletes' wiring: deleting an identity on both
// databases removes, in SQL, what it held (mail that came over SMTP, a
// second inbox, texts, contacts, keys), releases its number at the
// simulator, and the SMTP listener refuses its addresses (550). Every
// delete's rules are adapters/httpapi's TestDeletes.
func TestDeletes(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, map[string]string{"CALLSIGN_LOG_LEVEL": "info"}, fastRetry)
		mgmt := r.bootstrap("deletes@example.com")
		var ann, bob apiIdentity
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Ann", "provision_phone": true}, &ann)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Bob", "provision_phone": true}, &bob)
		annKey, bobKey := identityKey(r, mgmt, ann.UUID), identityKey(r, mgmt, bob.UUID)
		smtpAddr := r.svc.SMTPAddr()

		var more struct {
			ID    int64
			Email string
		}
		r.call("POST", "/api/email/", annKey, map[string]any{}, &more)
		for _, to := range []string{ann.Inbox, more.Email} {
			sendSMTP(t, smtpAddr, "carol@example.org", []string{to}, "From: carol@example.org\r\nTo: "+to+"\r\nSubject: Plans\r\n\r\nHello\r\n")
		}
		var sent apiSMS
		r.call("POST", "/api/messages/send/", bobKey, map[string]any{"to": *ann.Phone, "body": "first"}, &sent)
		r.svc.Sim().Wait() // delivered to Ann, and reported so
		var pg apiPage
		if r.call("GET", "/api/email-messages/?identity="+ann.UUID, mgmt, nil, &pg); pg.Count != 2 {
			t.Fatalf("mail before the delete: %+v", pg)
		}

		held := len(r.svc.Sim().Held())
		if s := r.call("DELETE", "/api/identities/"+ann.UUID+"/?confirm=true", mgmt, nil, nil); s != 204 {
			t.Fatalf("delete an identity: %d", s)
		}
		if s := r.call("GET", "/api/health/whoami/", annKey, nil, nil); s != 401 {
			t.Fatalf("a deleted identity's key: %d", s)
		}
		for _, n := range r.svc.Sim().Held() {
			if n == *ann.Phone {
				t.Fatalf("the number %s is still held at the simulator", n)
			}
		}
		if len(r.svc.Sim().Held()) != held-1 {
			t.Fatalf("held %d numbers, then %d", held, len(r.svc.Sim().Held()))
		}
		for _, addr := range []string{ann.Inbox, more.Email} {
			if err := rcpt(smtpAddr, addr); err == nil || err.Code != 550 {
				t.Fatalf("RCPT to a deleted identity's address %s: %v", addr, err)
			}
		}
		for _, path := range []string{"/api/email-messages/?identity=" + ann.UUID, "/api/contacts/?limit=1&identity=" + ann.UUID,
			"/api/messages/?limit=1&identity=" + ann.UUID, "/api/auth/keys/identity/?limit=1&identity=" + ann.UUID} {
			var p listPage
			if s := r.call("GET", path, mgmt, nil, &p); s != 200 || p.Count != 0 {
				t.Errorf("GET %s after the delete: %d %+v", path, s, p)
			}
		}
		// Bob's side of the conversation stays.
		var convs []apiConversation
		if r.call("GET", "/api/sms-inbox/", bobKey, nil, &convs); len(convs) != 1 || convs[0].MessageCount != 1 {
			t.Fatalf("bob's conversation: %+v", convs)
		}
		logs := r.logs()
		for _, want := range []string{`msg="identity deleted"`, `msg="phone released"`} {
			if !strings.Contains(logs, want) {
				t.Errorf("no %s in the log", want)
			}
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
