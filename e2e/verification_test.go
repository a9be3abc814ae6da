package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
)

type apiVerification struct {
	Source    string
	Message   int64
	From      string
	Code      *string
	Link      *string
	Kind      string
	CreatedDT string `json:"created_dt"`
}

// TestVerificationsEndToEnd: a code by mail (SMTP) and one by text reach
// the identity's verifications and the messages' verification field; a
// waiting call returns as soon as one arrives; filters and scoping hold.
func TestVerificationsEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("verify@example.com")
		var ident, other struct{ UUID, Inbox, Phone string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "signer", "provision_phone": true}, &ident)
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "other"}, &other)
		key, otherKey := identityKey(r, mgmt, ident.UUID), identityKey(r, mgmt, other.UUID)
		list := "/api/identities/" + ident.UUID + "/verifications/"
		smtpAddr := r.svc.SMTPAddr()

		// Nothing yet: an empty list, and a wait that ends empty.
		var got []apiVerification
		start := time.Now()
		if s := r.call("GET", list+"?wait=1", key, nil, &got); s != 200 || len(got) != 0 || time.Since(start) < time.Second {
			t.Fatalf("empty wait: %d %+v after %v", s, got, time.Since(start))
		}

		// A waiting call hears the mail that arrives while it waits.
		before := time.Now().UTC()
		done := make(chan []apiVerification, 1)
		go func() {
			var w []apiVerification
			if s := r.call("GET", list+"?wait=30&after="+before.Format(time.RFC3339Nano), key, nil, &w); s != 200 {
				t.Errorf("wait: %d", s)
			}
			done <- w
		}()
		time.Sleep(300 * time.Millisecond)
		sendSMTP(t, smtpAddr, "no-reply@accounts.example.com", []string{ident.Inbox}, fmt.Sprintf(
			"From: Example <no-reply@accounts.example.com>\r\nTo: %s\r\nSubject: Your Example verification code\r\nMessage-ID: <v1@example.com>\r\n\r\n"+
				"Your verification code is 482913. It expires in 10 minutes.\r\n\r\nOrder questions? Call 1-800-555-0100.\r\n", ident.Inbox))
		var waited []apiVerification
		select {
		case waited = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the waiting call did not return when the code arrived")
		}
		if len(waited) != 1 || waited[0].Source != "email" || waited[0].Code == nil || *waited[0].Code != "482913" ||
			waited[0].Link != nil || waited[0].Kind != "code" || waited[0].From != "no-reply@accounts.example.com" {
			t.Fatalf("waited: %+v", waited)
		}
		var msg struct {
			Verification *struct {
				Code *string
				Link *string
				Kind string
			}
		}
		r.call("GET", fmt.Sprintf("/api/email-messages/%d/", waited[0].Message), key, nil, &msg)
		if msg.Verification == nil || *msg.Verification.Code != "482913" || msg.Verification.Kind != "code" {
			t.Fatalf("message verification: %+v", msg.Verification)
		}

		// A newsletter carries none; a sign-in link by mail and a code by text do.
		sendSMTP(t, smtpAddr, "news@shop.example", []string{ident.Inbox}, fmt.Sprintf(
			"From: news@shop.example\r\nTo: %s\r\nSubject: Our autumn sale\r\nMessage-ID: <n1@shop.example>\r\n\r\n"+
				"Save 20%% on order 123456 until 2026-12-01. Unsubscribe: https://shop.example/unsubscribe?u=77\r\n", ident.Inbox))
		sendSMTP(t, smtpAddr, "security@bank.example", []string{ident.Inbox}, fmt.Sprintf(
			"From: security@bank.example\r\nTo: %s\r\nSubject: Sign in to Bank\r\nMessage-ID: <l1@bank.example>\r\n\r\n"+
				"Click to sign in to your account:\r\nhttps://bank.example/login/magic?token=c0ffee1234\r\n", ident.Inbox))
		if s, _ := r.callRaw("POST", "/webhooks/sim/sms/", mgmt, map[string]any{"From": "+14155550199", "To": ident.Phone,
			"Body": "G-771204 is your Google verification code."}); s/100 != 2 {
			t.Fatalf("sms: %d", s)
		}
		r.call("GET", list, key, nil, &got)
		if len(got) != 3 || got[0].Source != "sms" || *got[0].Code != "G-771204" || got[1].Kind != "link" ||
			*got[1].Link != "https://bank.example/login/magic?token=c0ffee1234" || *got[2].Code != "482913" {
			t.Fatalf("list: %+v", got)
		}
		var sms struct{ Verification *struct{ Code string } }
		r.call("GET", fmt.Sprintf("/api/messages/%d/", got[0].Message), key, nil, &sms)
		if sms.Verification == nil || sms.Verification.Code != "G-771204" {
			t.Fatalf("sms verification: %+v", sms.Verification)
		}

		// Filters: source, from (a substring, any case), limit, after.
		for q, want := range map[string]int{"?source=sms": 1, "?source=email": 2, "?from=BANK.": 1, "?from=4155": 1,
			"?limit=1": 1, "?after=" + time.Now().UTC().Add(time.Minute).Format(time.RFC3339): 0} {
			r.call("GET", list+q, key, nil, &got)
			if len(got) != want {
				t.Errorf("%s: %d, want %d", q, len(got), want)
			}
		}
		// Bad parameters are 400 naming them; another identity's key sees 404.
		for _, q := range []string{"?wait=61", "?wait=-1", "?limit=0", "?limit=101", "?source=fax", "?after=yesterday", "?color=red"} {
			if s := r.call("GET", list+q, key, nil, nil); s != 400 {
				t.Errorf("%s: %d", q, s)
			}
		}
		if s := r.call("GET", list, otherKey, nil, nil); s != 404 {
			t.Fatalf("another identity's key: %d", s)
		}
		r.call("GET", "/api/identities/"+other.UUID+"/verifications/", otherKey, nil, &got)
		if len(got) != 0 {
			t.Fatalf("the other identity sees %+v", got)
		}
	})
}
