package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-smtp"

	"github.com/callsign/callsign/adapters/rspamd/rspamdtest"
	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestSpamWithRspamd runs a real rspamd: over SMTP the GTUBE message is
// refused at the end of DATA (550 5.7.1, nothing stored), an ordinary
// message passes with its score, the add-header test pattern is filed as
// spam (hidden, shown with include_spam), the moves teach rspamd, and
// with rspamd stopped mail is still accepted (spam null): nothing lost.
// SQLite only: the store's side runs on both dialects in storetest.
func TestSpamWithRspamd(t *testing.T) {
	t.Parallel()
	rsp := rspamdtest.Start(t)
	t.Cleanup(rsp.Stop)
	r := start(t, sqlstore.SQLite, map[string]string{"CALLSIGN_RSPAMD_URL": rsp.URL})
	mgmt := r.bootstrap("spam@example.com")
	var ident struct{ UUID, Inbox string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Spam"}, &ident)
	key := identityKey(r, mgmt, ident.UUID)
	smtpAddr := r.svc.SMTPAddr()
	mail := func(id, body string) string {
		return "From: Alice <alice@example.org>\r\nTo: " + ident.Inbox + "\r\nSubject: " + id + "\r\nMessage-ID: <" + id +
			"@example.org>\r\nDate: Sat, 21 Nov 2026 08:00:00 +0000\r\n\r\n" + body + "\r\n"
	}

	err := smtpSend(smtpAddr, "alice@example.org", []string{ident.Inbox}, mail("gtube", rspamdtest.GTUBE))
	var refused *smtp.SMTPError
	if !errors.As(err, &refused) || refused.Code != 550 || refused.EnhancedCode != (smtp.EnhancedCode{5, 7, 1}) {
		t.Fatalf("GTUBE: %v", err)
	}
	sendSMTP(t, smtpAddr, "alice@example.org", []string{ident.Inbox}, mail("ordinary",
		"Hello Bob, shall we meet for lunch on Thursday at the usual place near the station? I will bring the figures."))
	sendSMTP(t, smtpAddr, "alice@example.org", []string{ident.Inbox}, mail("marked", rspamdtest.AddHeaderGTUBE))

	type page struct {
		Count   int              `json:"count"`
		Results []map[string]any `json:"results"`
	}
	var p page
	r.call("GET", "/api/email-messages/?limit=50", key, nil, &p)
	if p.Count != 1 || p.Results[0]["subject"] != "ordinary" || p.Results[0]["is_spam"] != false {
		t.Fatalf("listed: %+v", p)
	}
	if v, _ := p.Results[0]["spam"].(map[string]any); v == nil || v["action"] != "no action" {
		t.Fatalf("ordinary's verdict: %v", p.Results[0]["spam"])
	}
	path := func(m map[string]any) string { return r.baseURL + "/api/email-messages/" + fmt.Sprint(m["id"]) + "/" }
	ordinary := path(p.Results[0])
	r.call("GET", "/api/email-messages/?limit=50&include_spam=true", key, nil, &p)
	if p.Count != 2 || p.Results[1]["subject"] != "marked" || p.Results[1]["is_spam"] != true {
		t.Fatalf("with spam: %+v", p)
	}
	marked := path(p.Results[1])

	move := func(url, route string) http.Header {
		t.Helper()
		req, _ := http.NewRequest("POST", url+route, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s%s: %d", url, route, resp.StatusCode)
		}
		return resp.Header
	}
	if h := move(marked, "not-spam/"); h.Get("Callsign-Spam-Learned") != "true" {
		t.Fatalf("not-spam: learned %q", h.Get("Callsign-Spam-Learned"))
	}
	if h := move(ordinary, "spam/"); h.Get("Callsign-Spam-Learned") != "true" {
		t.Fatalf("spam: learned %q", h.Get("Callsign-Spam-Learned"))
	}
	r.call("GET", "/api/email-messages/?limit=50", key, nil, &p)
	if p.Count != 1 || p.Results[0]["subject"] != "marked" {
		t.Fatalf("after the moves: %+v", p)
	}

	// IMAP follows: the message filed as spam is in Junk, the other in INBOX.
	c, err := imapclient.DialInsecure(r.svc.IMAPAddr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(ident.Inbox, key).Wait(); err != nil {
		t.Fatal(err)
	}
	for box, want := range map[string]uint32{"INBOX": 1, "Junk": 1} {
		if sel, err := c.Select(box, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil || sel.NumMessages != want {
			t.Fatalf("IMAP SELECT %s: %v %+v", box, err, sel)
		}
	}

	rsp.Stop()
	sendSMTP(t, smtpAddr, "alice@example.org", []string{ident.Inbox}, mail("unjudged", rspamdtest.GTUBE))
	r.call("GET", "/api/email-messages/?limit=50", key, nil, &p)
	if p.Count != 2 || p.Results[1]["subject"] != "unjudged" || p.Results[1]["spam"] != nil {
		t.Fatalf("with rspamd stopped: %+v", p)
	}
	if h := move(marked, "spam/"); h.Get("Callsign-Spam-Learned") != "false" {
		t.Fatalf("spam with rspamd stopped: learned %q", h.Get("Callsign-Spam-Learned"))
	}
}
