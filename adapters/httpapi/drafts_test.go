package httpapi

import (
	"testing"
	"time"
)

// TestDraftRoutes: every answer of the draft routes and the key's can_send
// matches the OpenAPI document, on the memory store; the flows themselves
// are tested on SQLite and PostgreSQL in cmd/callsign (TestDraftsAndApproval).
func TestDraftRoutes(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Drafter"}, mgmt).want(t, 201).object(t)
	key := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": ident["uuid"], "can_send": false}, mgmt).want(t, 201).object(t)
	if key["can_send"] != false {
		t.Fatalf("key: %v", key)
	}
	drafter := key["key"].(string)
	letter := map[string]any{"to_email": []string{"ann@example.org"}, "subject": "Hi", "content": "Hello."}
	h.do("POST", "/api/email-messages/compose/", letter, drafter).want(t, 403)
	h.do("POST", "/api/messages/send/", map[string]any{"to": "+14155550100", "body": "x"}, drafter).want(t, 403)

	later := h.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	d := h.do("POST", "/api/email-drafts/", map[string]any{"to_email": "ann@example.org", "content": "Hello.", "send_at": later}, drafter).want(t, 201).object(t)
	if d["awaiting_approval"] != true || d["kind"] != "compose" || d["send_at"] == nil {
		t.Fatalf("draft: %v", d)
	}
	id := d["id"].(string)
	h.do("POST", "/api/email-drafts/", map[string]any{"to_email": "ann@example.org"}, drafter).want(t, 400)
	if l := h.do("GET", "/api/email-drafts/?awaiting_approval=true", nil, mgmt).want(t, 200).list(t); len(l) != 1 {
		t.Fatalf("list: %v", l)
	}
	if p := h.do("GET", "/api/email-drafts/?limit=10", nil, drafter).want(t, 200).object(t); p["count"] != float64(1) {
		t.Fatalf("page: %v", p)
	}
	h.do("GET", "/api/email-drafts/"+id+"/", nil, drafter).want(t, 200)
	h.do("PATCH", "/api/email-drafts/"+id+"/", map[string]any{"send_at": nil}, drafter).want(t, 200)
	h.do("POST", "/api/email-drafts/"+id+"/send/", nil, drafter).want(t, 403)
	m := h.do("POST", "/api/email-drafts/"+id+"/send/", nil, mgmt).want(t, 201).object(t)
	if m["delivery_status"] != "queued" {
		t.Fatalf("sent: %v", m)
	}
	h.do("GET", "/api/email-drafts/"+id+"/", nil, mgmt).want(t, 404)
	h.do("PATCH", path("/api/auth/keys/identity/%v/", key["id"]), map[string]any{"can_send": true}, drafter).want(t, 403)
	if k := h.do("PATCH", path("/api/auth/keys/identity/%v/", key["id"]), map[string]any{"can_send": true}, mgmt).want(t, 200).object(t); k["can_send"] != true {
		t.Fatalf("key: %v", k)
	}
	h.do("POST", "/api/email-messages/compose/", letter, drafter).want(t, 201)
	other := h.do("POST", "/api/email-drafts/", letter, drafter).want(t, 201).object(t)
	h.do("DELETE", "/api/email-drafts/"+other["id"].(string)+"/", nil, drafter).want(t, 204)
}

// TestDraftWhoseTimePassed: a draft whose send_at passed while it waited
// can still be edited (its time is checked only when it changes), and
// sending it sends at once.
func TestDraftWhoseTimePassed(t *testing.T) {
	h := newHarness(t)
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Late"}, mgmt).want(t, 201).object(t)
	soon := h.clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	d := h.do("POST", path("/api/email-drafts/?identity=%s", ident["uuid"]), map[string]any{"to_email": "ann@example.org", "content": "Hi.", "send_at": soon}, mgmt).
		want(t, 201).object(t)
	h.clock.Advance(time.Hour)
	id := d["id"].(string)
	h.do("PATCH", "/api/email-drafts/"+id+"/", map[string]any{"content": "Hi, late."}, mgmt).want(t, 200)
	past := h.clock.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	h.do("PATCH", "/api/email-drafts/"+id+"/", map[string]any{"send_at": past}, mgmt).want(t, 400)
	h.runOutbox()
	m := h.do("POST", "/api/email-drafts/"+id+"/send/", nil, mgmt).want(t, 201).object(t)
	if done := h.waitFor(mgmt, m["id"]); done["delivery_status"] != "sent" {
		t.Fatalf("the late draft: %v", done)
	}
}
