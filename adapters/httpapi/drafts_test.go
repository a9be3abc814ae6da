package httpapi

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/memory"
)

// TestDraftRoutes: every answer of the draft routes and the key's can_send
// matches the OpenAPI document, on the memory store; the approval's rules
// are TestDraftsAndApproval's.
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

// TestDraftsAndApproval: a key without send rights (can_send false) gets
// 403 on every send route, may draft (a new message, a reply), and its
// drafts await approval, listed with awaiting_approval=true; neither it
// nor a sending key of its identity sends them; a management key's send/
// is the approval, and the message reaches the relay. Bad input is 400
// naming the field, rules apply at send, a draft is sent once, and a
// management key gives the right back. One draft approved and sent through
// the real outbox on both databases is e2e's TestDraftsAndApproval.
func TestDraftsAndApproval(t *testing.T) {
	h := newHarness(t)
	h.runOutbox()
	mgmt := h.account()
	ident := h.do("POST", "/api/identities/", map[string]any{"name": "Drafter"}, mgmt).want(t, 201).object(t)
	identUUID, inbox := ident["uuid"].(string), ident["inbox"].(string)
	drafterKey := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": identUUID, "can_send": false}, mgmt).want(t, 201).object(t)
	sender := h.do("POST", "/api/auth/keys/identity/", map[string]any{"identity": identUUID}, mgmt).want(t, 201).object(t)
	if drafterKey["can_send"] != false || sender["can_send"] != true {
		t.Fatalf("keys: %v %v", drafterKey, sender)
	}
	drafter, senderKey := drafterKey["key"].(string), sender["key"].(string)
	h.receive(inbox, "From: carol@example.org\r\nTo: "+inbox+"\r\nSubject: Question\r\nMessage-ID: <q1@example.org>\r\n\r\nWell?\r\n")
	inbound := h.do("GET", "/api/email-messages/?direction=incoming&limit=5", nil, drafter).want(t, 200).results(t)
	if len(inbound) != 1 {
		t.Fatalf("inbound: %v", inbound)
	}
	question := inbound[0]["id"]

	// Every direct send is 403.
	letter := map[string]any{"to_email": "dave@example.org", "subject": "Hello", "content": "Hi."}
	for _, route := range []string{"/api/email-messages/compose/", path("/api/email-messages/%v/reply/", question),
		path("/api/email-messages/%v/reply-all/", question), path("/api/email-messages/%v/forward/", question), "/api/messages/send/"} {
		body := letter
		if route == "/api/messages/send/" {
			body = map[string]any{"to": "+14155550100", "body": "Hi."}
		}
		if r := h.do("POST", route, body, drafter).want(t, 403); !strings.Contains(string(r.Body), "can_send") {
			t.Errorf("%s: %s", route, r.Body)
		}
	}

	// Bad drafts: 400 naming each field.
	for field, body := range map[string]map[string]any{
		"to_email":   {"to_email": "not an address", "content": "x"},
		"content":    {"to_email": "dave@example.org"},
		"send_at":    {"to_email": "dave@example.org", "content": "x", "send_at": "tomorrow"},
		"forward_of": {"reply_to": question, "forward_of": question, "content": "x"},
		"reply_to":   {"reply_to": 999999999, "content": "x"},
		"reply_all":  {"reply_all": true, "to_email": "dave@example.org", "content": "x"},
	} {
		if out := h.do("POST", "/api/email-drafts/", body, drafter).want(t, 400).object(t); out[field] == nil {
			t.Errorf("%s: %v", field, out)
		}
	}
	past := h.clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if out := h.do("POST", "/api/email-drafts/", map[string]any{"to_email": "dave@example.org", "content": "x", "send_at": past}, drafter).
		want(t, 400).object(t); out["send_at"] == nil {
		t.Errorf("send_at in the past: %v", out)
	}

	fresh := h.do("POST", "/api/email-drafts/", letter, drafter).want(t, 201).object(t)
	if fresh["awaiting_approval"] != true || fresh["kind"] != "compose" {
		t.Fatalf("draft: %v", fresh)
	}
	reply := h.do("POST", "/api/email-drafts/", map[string]any{"reply_to": question, "content": "Yes."}, drafter).want(t, 201).object(t)
	if reply["awaiting_approval"] != true || reply["kind"] != "reply" || reply["reply_to"] != question {
		t.Fatalf("reply draft: %v", reply)
	}
	freshPath, replyPath := "/api/email-drafts/"+fresh["id"].(string)+"/", "/api/email-drafts/"+reply["id"].(string)+"/"
	if l := h.do("GET", "/api/email-drafts/?awaiting_approval=true", nil, mgmt).want(t, 200).list(t); len(l) != 2 {
		t.Fatalf("awaiting approval: %v", l)
	}
	if l := h.do("GET", "/api/email-drafts/?awaiting_approval=false", nil, drafter).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("not awaiting: %v", l)
	}

	// The list carries previews, not bodies: a page's size does not
	// follow what the drafts hold (two of 390 kB here).
	big := strings.Repeat("Long letter. ", 30_000)
	bulky := h.do("POST", "/api/email-drafts/?identity="+identUUID, map[string]any{"to_email": "erin@example.org", "content": big, "html": "<p>" + big + "</p>"}, mgmt).
		want(t, 201).object(t)
	if b := h.do("GET", "/api/email-drafts/?identity="+identUUID, nil, mgmt).want(t, 200).Body; len(b) > 4096 ||
		strings.Contains(string(b), `"content"`) || strings.Contains(string(b), `"html"`) || !strings.Contains(string(b), `"preview":"Long letter. Long`) {
		t.Fatalf("list of drafts, %d bytes: %.300s", len(b), b)
	}
	bulkyPath := "/api/email-drafts/" + bulky["id"].(string) + "/"
	if whole := h.do("GET", bulkyPath, nil, mgmt).want(t, 200).object(t); whole["content"] != big {
		t.Fatal("one draft does not carry its whole text")
	}
	h.do("DELETE", bulkyPath, nil, mgmt).want(t, 204)

	// Editing keeps it awaiting; neither identity key sends it.
	if edited := h.do("PATCH", freshPath, map[string]any{"content": "Hi again."}, drafter).want(t, 200).object(t); edited["content"] != "Hi again." ||
		edited["awaiting_approval"] != true || len(edited["to_email"].([]any)) != 1 {
		t.Fatalf("patch: %v", edited)
	}
	if r := h.do("PATCH", freshPath, map[string]any{"reply_to": question}, drafter).want(t, 400); !strings.Contains(string(r.Body), "reply_to") {
		t.Fatalf("patch reply_to: %s", r.Body)
	}
	for _, k := range []string{drafter, senderKey} {
		h.do("POST", freshPath+"send/", nil, k).want(t, 403)
	}
	h.do("PATCH", path("/api/auth/keys/identity/%v/", drafterKey["id"]), map[string]any{"can_send": true}, senderKey).want(t, 403)

	// An approval of the draft as it was read: refused once the key has
	// changed it since (409, not sent), bad input 400.
	read := h.do("GET", freshPath, nil, mgmt).want(t, 200).object(t)
	h.do("PATCH", freshPath, map[string]any{"content": "Hi again."}, drafter).want(t, 200)
	h.do("POST", freshPath+"send/", map[string]any{"updated_dt": read["updated_dt"]}, mgmt).want(t, 409)
	if out := h.do("POST", freshPath+"send/", map[string]any{"updated_dt": "yesterday"}, mgmt).want(t, 400).object(t); out["updated_dt"] == nil {
		t.Fatalf("a bad updated_dt: %v", out)
	}
	read = h.do("GET", freshPath, nil, mgmt).want(t, 200).object(t)

	// The approval: a management key sends both; each is sent once.
	if sent := h.do("POST", freshPath+"send/", map[string]any{"updated_dt": read["updated_dt"]}, mgmt).want(t, 201).object(t); sent["content"] != "Hi again." {
		t.Fatalf("approve: %v", sent)
	}
	h.do("GET", freshPath, nil, mgmt).want(t, 404)
	h.do("POST", freshPath+"send/", nil, mgmt).want(t, 404)
	if sent := h.do("POST", replyPath+"send/", nil, mgmt).want(t, 201).object(t); sent["subject"] != "Re: Question" || sent["thread_id"] != inbound[0]["thread_id"] {
		t.Fatalf("approve the reply: %v", sent)
	}
	relayed := h.waitForRelay(2)
	for _, m := range relayed {
		if m.Recipients[0] == "carol@example.org" && !strings.Contains(string(m.Raw), "In-Reply-To: <q1@example.org>") {
			t.Fatalf("the reply is not threaded: %s", m.Raw)
		}
	}

	// A sending key's own draft, and the rules asked at send.
	h.do("POST", "/api/rules/", map[string]any{"identity": identUUID, "channel": "email", "direction": "outbound", "action": "block", "pattern": "@blocked.example"}, mgmt).want(t, 201)
	blocked := h.do("POST", "/api/email-drafts/", map[string]any{"to_email": "x@blocked.example", "content": "x"}, senderKey).want(t, 201).object(t)
	if blocked["awaiting_approval"] != false {
		t.Fatalf("a sending key's draft: %v", blocked)
	}
	blockedPath := "/api/email-drafts/" + blocked["id"].(string) + "/"
	if out := h.do("POST", blockedPath+"send/", nil, senderKey).want(t, 400).object(t); out["to_email"] == nil {
		t.Fatalf("a blocked recipient at send: %v", out)
	}
	// Two sends of one draft at once (different keys): one message.
	h.do("PATCH", blockedPath, map[string]any{"to_email": "erin@example.org"}, senderKey).want(t, 200)
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = h.keyed("POST", blockedPath+"send/", fmt.Sprintf("send-%d", i), map[string]any{}, senderKey).Status
		}()
	}
	wg.Wait()
	if !(statuses[0] == 201 && statuses[1] == 404 || statuses[0] == 404 && statuses[1] == 201) {
		t.Fatalf("two sends of one draft: %v", statuses)
	}
	// An Idempotency-Key on create: a repeat shows the same draft.
	first := h.keyed("POST", "/api/email-drafts/", "draft-1", letter, senderKey).want(t, 201)
	again := h.keyed("POST", "/api/email-drafts/", "draft-1", letter, senderKey).want(t, 201)
	wantReplayed(t, first, false)
	wantReplayed(t, again, true)
	if string(first.Body) != string(again.Body) {
		t.Fatalf("keyed create: %s %s", first.Body, again.Body)
	}
	listed := h.do("GET", "/api/email-drafts/", nil, senderKey).want(t, 200).list(t)
	if len(listed) != 1 {
		t.Fatalf("drafts after a keyed repeat: %v", listed)
	}
	h.do("DELETE", "/api/email-drafts/"+listed[0]["id"].(string)+"/", nil, senderKey).want(t, 204)

	// The right given back by a management key.
	if k := h.do("PATCH", path("/api/auth/keys/identity/%v/", drafterKey["id"]), map[string]any{"can_send": true}, mgmt).want(t, 200).object(t); k["can_send"] != true {
		t.Fatalf("give the right: %v", k)
	}
	h.do("POST", "/api/email-messages/compose/", letter, drafter).want(t, 201)
	h.waitForRelay(4)
}

// waitForRelay waits until n messages reached the relay, and returns them.
func (h *harness) waitForRelay(n int) []memory.Relayed {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		sent := h.relay.Sent()
		if len(sent) >= n || time.Now().After(deadline) {
			if len(sent) != n {
				h.t.Fatalf("%d messages at the relay, want %d", len(sent), n)
			}
			return sent
		}
		time.Sleep(5 * time.Millisecond)
	}
}
