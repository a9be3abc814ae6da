package e2e

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

// TestQuotas is the quotas' wiring: CALLSIGN_QUOTA_* reach the gate, the
// SQL store's counts and triggers (the sends log, stored bytes) enforce
// them on both databases, and the SMTP listener answers 452 4.2.2 at RCPT
// over the storage quota until mail is deleted. Every quota's rule is
// adapters/httpapi's TestQuotas.
func TestQuotas(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, map[string]string{"CALLSIGN_QUOTA_STORAGE": "16KiB", "CALLSIGN_QUOTA_IDENTITIES": "1", "CALLSIGN_QUOTA_SENDS_PER_HOUR": "2"})
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
		var ada struct{ UUID, Inbox string }
		if s := r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "ada", "provision_phone": true}, &ada); s != 201 {
			t.Fatalf("ada: %d", s)
		}
		refused(403, "POST", "/api/identities/", mgmt, map[string]any{"name": "bob"}, "identities")
		adaKey := identityKey(r, mgmt, ada.UUID)
		if s := r.call("POST", "/api/email-messages/compose/", adaKey, map[string]any{"to_email": ada.Inbox, "subject": "Hi", "content": "x"}, nil); s != 201 {
			t.Fatalf("compose: %d", s)
		}
		if s := r.call("POST", "/api/messages/send/", adaKey, map[string]any{"to": "+14155550142", "body": "hi"}, nil); s != 201 {
			t.Fatalf("text: %d", s)
		}
		refused(429, "POST", "/api/messages/send/", adaKey, map[string]any{"to": "+14155550142", "body": "again"}, "sends_per_hour")

		var who whoamiQuotas
		if s := r.call("GET", "/api/health/whoami/", mgmt, nil, &who); s != 200 {
			t.Fatalf("whoami: %d", s)
		}
		if who.Usage["identities"] != 1 || who.Usage["sends_per_hour"] != 2 || who.Usage["storage"] <= 0 || len(who.Usage) != len(core.Quotas) {
			t.Fatalf("usage %v", who.Usage)
		}
		for name, want := range map[string]int64{"storage": 16 << 10, "identities": 1, "sends_per_hour": 2} {
			if q := who.Quotas[name]; q == nil || *q != want {
				t.Fatalf("quota %s: %v, want %d", name, q, want)
			}
		}

		// Storage: a message that fills it is taken; then RCPT is 452 4.2.2
		// (the sender keeps the message), until mail is deleted.
		big := fmt.Sprintf("From: carol@example.org\r\nTo: %s\r\nSubject: big\r\nMessage-ID: <big@example.org>\r\n\r\n%s\r\n",
			ada.Inbox, strings.Repeat("0123456789abcdef", 1100))
		if err := smtpSend(r.svc.SMTPAddr(), "carol@example.org", []string{ada.Inbox}, big); err != nil {
			t.Fatal(err)
		}
		if e := rcpt(r.svc.SMTPAddr(), ada.Inbox); e == nil || e.Code != 452 || e.EnhancedCode != [3]int{4, 2, 2} {
			t.Fatalf("RCPT over the storage quota: %+v", e)
		}
		var list struct{ Results []struct{ ID int64 } }
		r.call("GET", "/api/email-messages/?identity="+ada.UUID+"&q=big", mgmt, nil, &list)
		if len(list.Results) != 1 {
			t.Fatalf("the big message: %+v", list)
		}
		if s := r.call("DELETE", "/api/email-messages/"+strconv.FormatInt(list.Results[0].ID, 10)+"/", mgmt, nil, nil); s != 204 {
			t.Fatalf("delete: %d", s)
		}
		if e := rcpt(r.svc.SMTPAddr(), ada.Inbox); e != nil {
			t.Fatalf("RCPT after deleting mail: %+v", e)
		}
	})
}

// The configuration's quota names are core's: those whoami shows, then
// webhooks_per_identity.
func TestQuotaNames(t *testing.T) {
	t.Parallel()
	var names []string
	for _, q := range config.QuotaDefaults {
		names = append(names, q.Name)
	}
	var want []string
	// The counted quotas, then those checked from what creation reads.
	for _, q := range append(core.Quotas, core.QuotaActiveCalls, core.QuotaWebhooksPerIdentity) {
		want = append(want, string(q))
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("config names %v, core's %v", names, want)
	}
}
