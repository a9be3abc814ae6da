package httpapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
)

// TestQuotas fills every quota of an account over the memory store: counts
// and sizes are 403 naming the quota, sends per hour 429 with Retry-After,
// and mail over the storage quota is refused at the recipient (the SMTP
// listener's 452 4.2.2, tested end to end in e2e's TestQuotas)
// until mail is deleted.
func TestQuotas(t *testing.T) {
	limits := core.Limits{core.QuotaStorage: 16 << 10, core.QuotaIdentities: 2, core.QuotaInboxes: 3, core.QuotaPhones: 1,
		core.QuotaVaultItems: 2, core.QuotaSendsPerHour: 2}
	h := newHarnessWith(t, func(d *app.Deps) { d.Quotas = limits })
	mgmt := h.account()
	refused := func(status int, method, path, key string, body any, quota string) {
		t.Helper()
		r := h.do(method, path, body, key)
		e := map[string]any{}
		if r.Status == status {
			e = r.object(t)
		}
		if detail, _ := e["detail"].(string); r.Status != status || !strings.Contains(detail, "Quota "+quota+" reached") {
			t.Fatalf("%s %s: %d %s, want %d naming %s", method, path, r.Status, r.Body, status, quota)
		}
		if retry, err := strconv.Atoi(r.Header.Get("Retry-After")); (status == 429) != (err == nil && retry > 0) {
			t.Fatalf("%s %s: Retry-After %q", method, path, r.Header.Get("Retry-After"))
		}
	}
	ada := h.do("POST", "/api/identities/", map[string]any{"name": "ada", "provision_phone": true}, mgmt).want(t, 201).object(t)
	// A second number is over phones: no identity is made either.
	refused(403, "POST", "/api/identities/", mgmt, map[string]any{"name": "bob", "provision_phone": true}, "phones")
	bob := h.do("POST", "/api/identities/", map[string]any{"name": "bob"}, mgmt).want(t, 201).object(t)
	adaID, bobID := ada["uuid"].(string), bob["uuid"].(string)
	refused(403, "POST", "/api/identities/", mgmt, map[string]any{"name": "cy"}, "identities")
	refused(403, "POST", "/api/identities/"+bobID+"/provision-phone/", mgmt, map[string]any{}, "phones")
	h.do("POST", "/api/email/?identity="+adaID, map[string]any{}, mgmt).want(t, 201)
	refused(403, "POST", "/api/email/?identity="+bobID, mgmt, map[string]any{}, "inboxes")

	// vault_items is per identity: ada's are full, bob has room.
	adaKey := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": adaID}, mgmt).want(t, 201).object(t)["key"].(string)
	bobKey := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": bobID}, mgmt).want(t, 201).object(t)["key"].(string)
	password, secret := map[string]any{"domain": "example.com", "password": "pw"}, map[string]any{"key": "TOKEN", "value": "v"}
	for _, c := range []struct {
		path, key string
		body      map[string]any
	}{{"/api/passwords/", adaKey, password}, {"/api/secrets/", adaKey, secret}, {"/api/secrets/", bobKey, secret}} {
		h.do("POST", c.path, c.body, c.key).want(t, 201)
	}
	refused(403, "POST", "/api/passwords/", adaKey, map[string]any{"domain": "example.org", "password": "pw"}, "vault_items")
	refused(403, "POST", "/api/secrets/?identity="+adaID, mgmt, map[string]any{"key": "OTHER", "value": "v"}, "vault_items")

	// Two sends in the hour, mail and text alike; the third waits.
	sent := h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": bob["inbox"], "subject": "Hi", "content": "x"}, adaKey).want(t, 201).object(t)
	h.do("POST", "/api/messages/send/", map[string]any{"to": "+14155550142", "body": "hi"}, adaKey).want(t, 201)
	refused(429, "POST", path("/api/email-messages/%v/forward/", sent["id"]), adaKey, map[string]any{"to_email": "c@example.org", "content": "fyi"}, "sends_per_hour")
	refused(429, "POST", "/api/messages/send/", adaKey, map[string]any{"to": "+14155550142", "body": "again"}, "sends_per_hour")
	// Deleting what was sent does not give the send back.
	h.do("DELETE", path("/api/email-messages/%v/", sent["id"]), nil, adaKey).want(t, 204)
	refused(429, "POST", "/api/messages/send/", adaKey, map[string]any{"to": "+14155550142", "body": "and again"}, "sends_per_hour")
	// A draft waits for nothing, but sending it is a send.
	draft := h.do("POST", "/api/email-drafts/", map[string]any{"to_email": bob["inbox"], "subject": "Later", "content": "x"}, adaKey).want(t, 201).object(t)
	refused(429, "POST", path("/api/email-drafts/%v/send/", draft["id"]), adaKey, map[string]any{}, "sends_per_hour")

	var who struct {
		Usage  map[string]int64  `json:"usage"`
		Quotas map[string]*int64 `json:"quotas"`
	}
	h.do("GET", "/api/health/whoami/", nil, mgmt).want(t, 200).decode(t, &who)
	if who.Usage["identities"] != 2 || who.Usage["inboxes"] != 3 || who.Usage["phones"] != 1 || who.Usage["vault_items"] != 2 ||
		who.Usage["sends_per_hour"] != 2 || who.Usage["storage"] <= 0 || len(who.Usage) != len(core.Quotas) {
		t.Fatalf("usage %v", who.Usage)
	}
	for name, want := range limits {
		if q := who.Quotas[string(name)]; q == nil || *q != want {
			t.Fatalf("quota %s: %v, want %d", name, q, want)
		}
	}
	if h.do("GET", "/api/health/whoami/", nil, bobKey).want(t, 200).decode(t, &who); who.Usage["vault_items"] != 1 {
		t.Fatalf("bob's whoami: %v", who.Usage)
	}

	// Storage: a message that fills it is taken; then every recipient of
	// the account is refused on storage, and so are a compose and a draft.
	big := fmt.Sprintf("From: carol@example.org\r\nTo: %s\r\nSubject: big\r\nMessage-ID: <big@example.org>\r\n\r\n%s\r\n",
		ada["inbox"], strings.Repeat("0123456789abcdef", 1100))
	h.receive(ada["inbox"].(string), big)
	if _, err := h.app.Receiving.ResolveRecipient(context.Background(), "carol@example.org", bob["inbox"].(string)); core.QuotaOf(err) != core.QuotaStorage {
		t.Fatalf("a recipient over the storage quota: %v", err)
	}
	refused(403, "POST", "/api/email-messages/compose/", bobKey, map[string]any{"to_email": ada["inbox"], "content": "x"}, "storage")
	refused(403, "POST", "/api/email-drafts/", bobKey, map[string]any{"to_email": ada["inbox"], "content": "x"}, "storage")
	var found struct{ Results []map[string]any }
	h.do("GET", "/api/email-messages/?identity="+adaID+"&q=big", nil, mgmt).want(t, 200).decode(t, &found)
	if len(found.Results) != 1 {
		t.Fatalf("the big message: %+v", found)
	}
	h.do("DELETE", path("/api/email-messages/%v/", found.Results[0]["id"]), nil, mgmt).want(t, 204)
	if _, err := h.app.Receiving.ResolveRecipient(context.Background(), "carol@example.org", bob["inbox"].(string)); err != nil {
		t.Fatalf("a recipient after deleting mail: %v", err)
	}
}
