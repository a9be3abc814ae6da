package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/config"
	"github.com/callsign/callsign/core"
)

// whoamiQuotas is what GET /api/health/whoami/ tells of quotas.
type whoamiQuotas struct {
	Usage  map[string]int64  `json:"usage"`
	Quotas map[string]*int64 `json:"quotas"`
}

// TestQuotas fills every quota of an account through the real router and
// SMTP listener, with small CALLSIGN_QUOTA_* values: counts and sizes are
// 403 naming the quota, sends per hour 429 with Retry-After, and mail over
// the storage quota is 452 4.2.2 at RCPT, until mail is deleted.
func TestQuotas(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, map[string]string{"CALLSIGN_QUOTA_STORAGE": "16KiB", "CALLSIGN_QUOTA_IDENTITIES": "2",
			"CALLSIGN_QUOTA_INBOXES": "3", "CALLSIGN_QUOTA_PHONES": "1", "CALLSIGN_QUOTA_VAULT_ITEMS": "2",
			"CALLSIGN_QUOTA_SENDS_PER_HOUR": "2"})
		mgmt := r.bootstrap("quotas@example.com")
		refused := func(status int, method, path, key string, body any, quota string) {
			t.Helper()
			code, header, raw := r.sendKeyed(method, path, key, "", body)
			var e struct{ Detail string }
			_ = json.Unmarshal(raw, &e)
			if code != status || !strings.Contains(e.Detail, "Quota "+quota+" reached") {
				t.Fatalf("%s %s: %d %s, want %d naming %s", method, path, code, raw, status, quota)
			}
			if retry, err := strconv.Atoi(header.Get("Retry-After")); (status == 429) != (err == nil && retry > 0) {
				t.Fatalf("%s %s: Retry-After %q", method, path, header.Get("Retry-After"))
			}
		}
		var ada, bob struct{ UUID, Inbox, Phone string }
		if s := r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ada", "provision_phone": true}, &ada); s != 201 {
			t.Fatalf("ada: %d", s)
		}
		// A second number is over phones: no identity is made either.
		refused(403, "POST", "/api/identities/", mgmt, map[string]any{"name": "bob", "provision_phone": true}, "phones")
		if s := r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "bob"}, &bob); s != 201 {
			t.Fatalf("bob: %d", s)
		}
		refused(403, "POST", "/api/identities/", mgmt, map[string]any{"name": "cy"}, "identities")
		refused(403, "POST", "/api/identities/"+bob.UUID+"/provision-phone/", mgmt, map[string]any{}, "phones")
		if s := r.call("POST", "/api/email/?identity="+ada.UUID, mgmt, map[string]any{}, nil); s != 201 {
			t.Fatalf("third inbox: %d", s)
		}
		refused(403, "POST", "/api/email/?identity="+bob.UUID, mgmt, map[string]any{}, "inboxes")

		// vault_items is per identity: ada's are full, bob has room.
		adaKey, bobKey := identityKey(r, mgmt, ada.UUID), identityKey(r, mgmt, bob.UUID)
		for _, c := range []struct{ path, key string }{{"/api/passwords/", adaKey}, {"/api/secrets/", adaKey}, {"/api/secrets/", bobKey}} {
			if s := r.call("POST", c.path, c.key, map[string]any{"domain": "example.com", "password": "pw", "key": "TOKEN", "value": "v"}, nil); s != 201 {
				t.Fatalf("POST %s: %d", c.path, s)
			}
		}
		refused(403, "POST", "/api/passwords/", adaKey, map[string]any{"domain": "example.org", "password": "pw"}, "vault_items")
		refused(403, "POST", "/api/secrets/?identity="+ada.UUID, mgmt, map[string]any{"key": "OTHER", "value": "v"}, "vault_items")

		// Two sends in the hour, mail and text alike; the third waits.
		var sent struct{ ID int64 }
		if s := r.call("POST", "/api/email-messages/compose/", adaKey, map[string]any{"to_email": bob.Inbox, "subject": "Hi", "content": "x"}, &sent); s != 201 {
			t.Fatalf("compose: %d", s)
		}
		if s := r.call("POST", "/api/messages/send/", adaKey, map[string]any{"to": "+14155550142", "body": "hi"}, nil); s != 201 {
			t.Fatalf("text: %d", s)
		}
		refused(429, "POST", "/api/email-messages/"+strconv.FormatInt(sent.ID, 10)+"/forward/", adaKey, map[string]any{"to_email": "c@example.org", "content": "fyi"}, "sends_per_hour")
		refused(429, "POST", "/api/messages/send/", adaKey, map[string]any{"to": "+14155550142", "body": "again"}, "sends_per_hour")
		// Deleting what was sent does not give the send back.
		if s := r.call("DELETE", "/api/email-messages/"+strconv.FormatInt(sent.ID, 10)+"/", adaKey, nil, nil); s != 204 {
			t.Fatalf("delete the sent message: %d", s)
		}
		refused(429, "POST", "/api/messages/send/", adaKey, map[string]any{"to": "+14155550142", "body": "and again"}, "sends_per_hour")
		// A draft waits for nothing, but sending it is a send.
		var draft struct{ ID string }
		if s := r.call("POST", "/api/email-drafts/", adaKey, map[string]any{"to_email": bob.Inbox, "subject": "Later", "content": "x"}, &draft); s != 201 {
			t.Fatalf("draft: %d", s)
		}
		refused(429, "POST", "/api/email-drafts/"+draft.ID+"/send/", adaKey, map[string]any{}, "sends_per_hour")

		var who whoamiQuotas
		if s := r.call("GET", "/api/health/whoami/", mgmt, nil, &who); s != 200 {
			t.Fatalf("whoami: %d", s)
		}
		if who.Usage["identities"] != 2 || who.Usage["inboxes"] != 3 || who.Usage["phones"] != 1 || who.Usage["vault_items"] != 2 ||
			who.Usage["sends_per_hour"] != 2 || who.Usage["storage"] <= 0 || len(who.Usage) != len(core.Quotas) {
			t.Fatalf("usage %v", who.Usage)
		}
		for name, want := range map[string]int64{"storage": 16 << 10, "identities": 2, "inboxes": 3, "phones": 1, "vault_items": 2, "sends_per_hour": 2} {
			if q := who.Quotas[name]; q == nil || *q != want {
				t.Fatalf("quota %s: %v, want %d", name, q, want)
			}
		}
		if s := r.call("GET", "/api/health/whoami/", bobKey, nil, &who); s != 200 || who.Usage["vault_items"] != 1 {
			t.Fatalf("bob's whoami: %d %v", s, who.Usage)
		}

		// Storage: a message that fills it is taken; then RCPT is 452 4.2.2
		// (the sender keeps the message), and so is an IMAP source's wait.
		big := fmt.Sprintf("From: carol@example.org\r\nTo: %s\r\nSubject: big\r\nMessage-ID: <big@example.org>\r\n\r\n%s\r\n",
			ada.Inbox, strings.Repeat("0123456789abcdef", 1100))
		if err := smtpSend(r.svc.smtpLn.Addr().String(), "carol@example.org", []string{ada.Inbox}, big); err != nil {
			t.Fatal(err)
		}
		if e := rcpt(r.svc.smtpLn.Addr().String(), bob.Inbox); e == nil || e.Code != 452 || e.EnhancedCode != [3]int{4, 2, 2} {
			t.Fatalf("RCPT over the storage quota: %+v", e)
		}
		refused(403, "POST", "/api/email-messages/compose/", bobKey, map[string]any{"to_email": ada.Inbox, "content": "x"}, "storage")
		refused(403, "POST", "/api/email-drafts/", bobKey, map[string]any{"to_email": ada.Inbox, "content": "x"}, "storage")
		var list struct{ Results []struct{ ID int64 } }
		r.call("GET", "/api/email-messages/?identity="+ada.UUID+"&q=big", mgmt, nil, &list)
		for _, m := range list.Results {
			r.call("DELETE", "/api/email-messages/"+strconv.FormatInt(m.ID, 10)+"/", mgmt, nil, nil)
		}
		if e := rcpt(r.svc.smtpLn.Addr().String(), bob.Inbox); e != nil {
			t.Fatalf("RCPT after deleting mail: %+v", e)
		}
	})
}

// The configuration's quota names are core's, which whoami shows.
func TestQuotaNames(t *testing.T) {
	t.Parallel()
	var names []string
	for _, q := range config.QuotaDefaults {
		names = append(names, q.Name)
	}
	var want []string
	for _, q := range core.Quotas {
		want = append(want, string(q))
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("config names %v, core's %v", names, want)
	}
}
