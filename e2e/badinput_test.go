package e2e

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestNULAndInvalidUTF8AreStored: NUL bytes in an 8bit body, a base64
// body and an encoded subject, and invalid UTF-8 in form input, are stored
// on both dialects (PostgreSQL refused them: 451 on every try, 500), with
// U+FFFD in their place and the source kept as sent. An encoded CR/LF in
// a received subject is stored as spaces, so a reply is not refused for a
// field its caller never sent.
func TestNULAndInvalidUTF8AreStored(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("nul@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Nul"}, &ident)
		head := "From: zed@example.org\r\nTo: " + ident.Inbox + "\r\nMIME-Version: 1.0\r\n"
		mails := map[string]string{
			"8bit": head + "Subject: eight\r\nMessage-ID: <nul-1@example.org>\r\nContent-Type: text/plain; charset=utf-8\r\n" +
				"Content-Transfer-Encoding: 8bit\r\n\r\nbefore\x00after \xff\r\n",
			"base64": head + "Subject: b64\r\nMessage-ID: <nul-2@example.org>\r\nContent-Type: text/plain; charset=utf-8\r\n" +
				"Content-Transfer-Encoding: base64\r\n\r\n" + base64.StdEncoding.EncodeToString([]byte("one\x00two")) + "\r\n",
			"subject": head + "Subject: =?utf-8?B?" + base64.StdEncoding.EncodeToString([]byte("nul\x00 and\r\nBcc: x@evil.example")) + "?=\r\n" +
				"Message-ID: <nul-3@example.org>\r\nContent-Type: text/plain\r\n\r\nhello\r\n",
		}
		smtpAddr := r.svc.SMTPAddr()
		for name, raw := range mails {
			if err := smtpSend(smtpAddr, "zed@example.org", []string{ident.Inbox}, raw); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		var pg apiPage
		r.call("GET", "/api/email-messages/?identity="+ident.UUID, mgmt, nil, &pg)
		if pg.Count != 3 {
			t.Fatalf("stored %d of 3", pg.Count)
		}
		for _, listed := range pg.Results {
			var m apiMessage
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", listed.ID), mgmt, nil, &m)
			switch listed.MessageID {
			case "nul-1@example.org":
				if !strings.HasPrefix(m.Content, "before\uFFFDafter ") {
					t.Errorf("8bit body %q", m.Content)
				}
				if _, raw := r.callRaw("GET", fmt.Sprintf("/api/email-messages/%d/raw/", m.ID), mgmt, nil); !strings.Contains(string(raw), "before\x00after \xff") {
					t.Errorf("the source lost its bytes: %q", raw)
				}
			case "nul-2@example.org":
				if m.Content != "one\uFFFDtwo" {
					t.Errorf("base64 body %q", m.Content)
				}
			case "nul-3@example.org":
				if strings.ContainsAny(m.Subject, "\x00\r\n") || !strings.Contains(m.Subject, "Bcc: x@evil.example") {
					t.Errorf("subject %q", m.Subject)
				}
				if s := r.call("POST", fmt.Sprintf("/api/email-messages/%d/reply/?identity=%s", m.ID, ident.UUID), mgmt,
					map[string]any{"content": "Got it."}, nil); s != http.StatusCreated {
					t.Errorf("reply to a subject that carried CR/LF: %d", s)
				}
			}
		}
		req, _ := http.NewRequest("POST", r.baseURL+"/api/identities/", strings.NewReader("name=bad%FF%00name"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+mgmt)
		res, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusBadRequest {
			t.Errorf("invalid UTF-8 in form input: %d", res.StatusCode)
		}
	})
}

// TestSMTPRetryMakesNoCopy: a sender that delivers the same message again
// (it never heard the 250: a crash, a dropped connection) hears 250 and
// the inbox keeps one copy; another message under the same Message-ID is
// stored.
func TestSMTPRetryMakesNoCopy(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		mgmt := r.bootstrap("retry@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Retry"}, &ident)
		raw := "From: zed@example.org\r\nTo: " + ident.Inbox + "\r\nSubject: once\r\nMessage-ID: <retry-1@example.org>\r\n\r\nhello\r\n"
		smtpAddr := r.svc.SMTPAddr()
		for range 3 {
			sendSMTP(t, smtpAddr, "zed@example.org", []string{ident.Inbox}, raw)
		}
		sendSMTP(t, smtpAddr, "zed@example.org", []string{ident.Inbox}, strings.Replace(raw, "hello", "changed", 1))
		var pg apiPage
		r.call("GET", "/api/email-messages/?identity="+ident.UUID, mgmt, nil, &pg)
		if pg.Count != 2 {
			t.Fatalf("three deliveries of one message and one other: %d stored", pg.Count)
		}
	})
}
