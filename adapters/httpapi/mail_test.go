package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// receive delivers a raw message to the inbox with the address, as the
// SMTP listener would.
func (h *harness) receive(to string, raw string) {
	h.t.Helper()
	in, err := h.app.Receiving.ResolveRecipient(context.Background(), "x@example.org", to)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.app.Receiving.Deliver(context.Background(), app.InboundMail{EnvelopeFrom: "x@example.org", Inboxes: []core.Inbox{in}, Raw: []byte(raw)}); err != nil {
		h.t.Fatal(err)
	}
}

func mailFrom(from, msgID, subject, body string, extra ...string) string {
	return "From: " + from + "\r\nTo: one@agents.test\r\nCc: carol@example.org\r\nMessage-ID: <" + msgID + ">\r\nSubject: " + subject +
		"\r\n" + strings.Join(extra, "") + "\r\n" + body + "\r\n"
}

// waitFor polls a message until its delivery status is final.
func (h *harness) waitFor(key string, id any) map[string]any {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := h.do("GET", fmt.Sprintf("/api/email-messages/%v/", id), nil, key).want(h.t, 200).object(h.t)
		if m["delivery_status"] != "queued" || time.Now().After(deadline) {
			return m
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestInboxesAndDomains(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	if err := h.store.CreateCustomDomain(context.Background(), core.Domain{Name: "mail.example.com", Status: core.DomainPending,
		AccountID: principalOf(t, h, tn.mgmt).AccountID}, ports.StoredDKIMKey{Domain: "mail.example.com", Key: core.DKIMKey{Selector: "cs1", Active: true}}); err != nil {
		t.Fatal(err)
	}
	d := h.do("GET", "/api/domains/", nil, tn.mgmt).want(t, 200).list(t)
	if len(d) != 3 || d[0]["domain"] != "agents.test" || d[0]["type"] != "platform" || d[2]["type"] != "custom" || d[2]["status"] != "pending" {
		t.Fatalf("domains %v", d)
	}
	gen := h.do("POST", "/api/email/", nil, tn.keyOne).want(t, 201).object(t)
	if !strings.HasPrefix(gen["email"].(string), "one-") || gen["identity"] != tn.one {
		t.Fatalf("generated inbox %v", gen)
	}
	own := h.do("POST", "/api/email/?identity="+tn.one, map[string]any{"email": "Sales@bots.test"}, tn.mgmt).want(t, 201).object(t)
	if own["email"] != "sales@bots.test" {
		t.Fatalf("inbox %v", own)
	}
	h.do("POST", "/api/email/?identity="+tn.two, map[string]any{"email": "sales@bots.test"}, tn.mgmt).want(t, 409)
	h.do("POST", "/api/email/", map[string]any{"email": "x@bots.test"}, tn.mgmt).want(t, 400)
	for _, bad := range []string{"not-an-address", "x@gmail.com", "x@mail.example.com", "a b@agents.test"} {
		if e := h.do("POST", "/api/email/?identity="+tn.one, map[string]any{"email": bad}, tn.mgmt).want(t, 400).object(t); e["email"] == nil {
			t.Errorf("%s: %v", bad, e)
		}
	}
	if a := h.do("GET", "/api/email/check-availability/?email=SALES@bots.test", nil, tn.keyTwo).want(t, 200).object(t); a["available"] != false || a["email"] != "sales@bots.test" {
		t.Fatalf("availability %v", a)
	}
	if a := h.do("GET", "/api/email/check-availability/?email=free@bots.test", nil, tn.keyTwo).want(t, 200).object(t); a["available"] != true {
		t.Fatalf("availability %v", a)
	}
	h.do("GET", "/api/email/check-availability/", nil, tn.keyTwo).want(t, 400)
	h.do("GET", "/api/email/check-availability/?email=x@gmail.com", nil, tn.keyTwo).want(t, 400)

	if l := h.do("GET", "/api/email/", nil, tn.keyOne).want(t, 200).list(t); len(l) != 3 || l[0]["email"] != "sales@bots.test" {
		t.Fatalf("inboxes newest first %v", l)
	}
	if l := h.do("GET", "/api/email/", nil, tn.mgmt).want(t, 200).list(t); len(l) != 4 {
		t.Fatalf("account inboxes %v", l)
	}
	path := fmt.Sprintf("/api/email/%v/", own["id"])
	h.do("GET", path, nil, tn.keyOne).want(t, 200)
	h.do("GET", path, nil, tn.keyTwo).want(t, 404)
	h.do("GET", path, nil, tn.otherAccount).want(t, 404)

	// No subscription, no new inbox.
	if err := h.app.Accounts.SetSubscription(context.Background(), principalOf(t, h, tn.mgmt).AccountID, false); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/api/email/", nil, tn.keyOne).want(t, 402)
}

func principalOf(t *testing.T, h *harness, key string) core.Principal {
	p, err := h.app.Auth.Authenticate(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadingMail(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.receive("one@agents.test", mailFrom("Ann <ann@example.org>", "m1@example.org", "Plans", "First message"))
	h.receive("one@agents.test", mailFrom("Bob <bob@example.org>", "m2@example.org", "Re: Plans", "Second", "In-Reply-To: <m1@example.org>\r\n"))
	h.receive("one@agents.test", "From: zed@example.org\r\nMessage-ID: <m3@x>\r\nSubject: Other\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nSee attached\r\n"+
		"--b\r\nContent-Type: text/csv\r\nContent-Disposition: attachment; filename=\"data.csv\"\r\n\r\na,b\r\n--b--\r\n")
	h.receive("two@agents.test", mailFrom("ann@example.org", "m4@example.org", "For two", "Hi two"))

	threads := h.do("GET", "/api/email-inbox/", nil, tn.keyOne).want(t, 200).list(t)
	if len(threads) != 2 || threads[0]["subject"] != "Other" || threads[1]["message_count"] != 2.0 || threads[1]["unread_count"] != 2.0 ||
		threads[1]["preview"] != "Second" || len(threads[0]["attachment_names"].([]any)) != 1 {
		t.Fatalf("threads %v", threads)
	}
	plans := threads[1]["thread_id"].(string)
	detail := h.do("GET", "/api/email-inbox/"+plans+"/", nil, tn.keyOne).want(t, 200).object(t)
	msgs := detail["messages"].([]any)
	if detail["subject"] != "Plans" || len(msgs) != 2 || msgs[0].(map[string]any)["preview"] != "First message" {
		t.Fatalf("thread detail %v", detail)
	}
	first := msgs[0].(map[string]any)
	if _, has := first["content"]; has {
		t.Fatalf("a thread's detail carries bodies: %v", first)
	}
	if first["from_email"] != "ann@example.org" || first["from_display_name"] != "Ann" || first["to_email"] != "one@agents.test" ||
		first["direction"] != "incoming" || first["is_read"] != false || first["delivery_status"] != nil || first["url"] != fmt.Sprintf("http://api.test/api/email-messages/%v/", first["id"]) {
		t.Fatalf("message %v", first)
	}
	h.do("GET", "/api/email-inbox/"+plans+"/", nil, tn.keyTwo).want(t, 404)
	h.do("GET", "/api/email-inbox/nope/", nil, tn.keyOne).want(t, 404)
	if l := h.do("GET", "/api/email-inbox/?has_unread=false", nil, tn.keyOne).want(t, 200).list(t); len(l) != 0 {
		t.Fatalf("no thread is fully read yet: %v", l)
	}
	h.do("GET", "/api/email-inbox/?has_unread=maybe", nil, tn.keyOne).want(t, 400)
	// Paged, the thread list is an envelope like every list.
	pt := h.do("GET", "/api/email-inbox/?limit=1", nil, tn.keyOne).want(t, 200).object(t)
	if rs := pt["results"].([]any); pt["count"] != 2.0 || len(rs) != 1 || rs[0].(map[string]any)["subject"] != "Other" ||
		pt["next"] != "http://api.test/api/email-inbox/?limit=1&offset=1" || pt["previous"] != nil {
		t.Fatalf("a page of threads %v", pt)
	}
	if rs := h.do("GET", "/api/email-inbox/?limit=1&offset=1", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any); len(rs) != 1 ||
		rs[0].(map[string]any)["thread_id"] != plans {
		t.Fatalf("the second page of threads %v", rs)
	}

	// Mark read: the thread's unread count follows.
	path := fmt.Sprintf("/api/email-messages/%v/", first["id"])
	h.do("PUT", path, map[string]any{"subject": "ignored"}, tn.keyOne).want(t, 400)
	if m := h.do("PATCH", path, map[string]any{"is_read": true}, tn.keyOne).want(t, 200).object(t); m["is_read"] != true {
		t.Fatalf("patch %v", m)
	}
	h.do("PATCH", path, map[string]any{"is_read": true}, tn.keyTwo).want(t, 404)
	h.do("PATCH", path, map[string]any{"is_read": "perhaps"}, tn.keyOne).want(t, 400)
	if m := h.do("PATCH", path, map[string]any{}, tn.keyOne).want(t, 200).object(t); m["is_read"] != true {
		t.Fatalf("a PATCH without is_read changed it: %v", m)
	}
	if l := h.do("GET", "/api/email-inbox/?has_unread=true", nil, tn.keyOne).want(t, 200).list(t); len(l) != 2 || l[1]["unread_count"] != 1.0 {
		t.Fatalf("after read %v", l)
	}

	// The paginated, cursor-polled list.
	pg := h.do("GET", "/api/email-messages/?limit=2", nil, tn.mgmt).want(t, 200).object(t)
	results := pg["results"].([]any)
	if pg["count"] != 4.0 || len(results) != 2 || pg["previous"] != nil || !strings.Contains(pg["next"].(string), "offset=2") {
		t.Fatalf("page %v", pg)
	}
	cursor := results[1].(map[string]any)["created_dt"].(string)
	rest := h.do("GET", "/api/email-messages/?created_after="+url.QueryEscape(cursor), nil, tn.mgmt).want(t, 200).object(t)
	if rest["count"] != 2.0 {
		t.Fatalf("after the cursor %v", rest)
	}
	for query, want := range map[string]float64{
		"direction=incoming": 4, "direction=outgoing": 0, "is_read=true": 1, "from_email=ANN@example.org": 2,
		"thread_id=" + plans: 2, "identity=" + tn.two: 1, "limit=500": 4,
	} {
		if got := h.do("GET", "/api/email-messages/?"+query, nil, tn.mgmt).want(t, 200).object(t)["count"]; got != want {
			t.Errorf("%s: count %v, want %v", query, got, want)
		}
	}
	if got := h.do("GET", "/api/email-messages/?identity="+tn.two, nil, tn.keyOne).want(t, 200).object(t); got["count"] != 0.0 {
		t.Fatalf("a sibling's messages: %v", got)
	}
	for _, bad := range []string{"limit=0", "limit=x", "offset=-1", "direction=sideways", "created_after=yesterday", "is_read=2x"} {
		h.do("GET", "/api/email-messages/?"+bad, nil, tn.mgmt).want(t, 400)
	}

	// Raw source and attachments.
	other := h.do("GET", "/api/email-messages/?thread_id="+threads[0]["thread_id"].(string), nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)[0].(map[string]any)
	raw := h.do("GET", fmt.Sprintf("/api/email-messages/%v/raw/", other["id"]), nil, tn.keyOne).want(t, 200)
	if !bytes.Contains(raw.Body, []byte("Message-ID: <m3@x>")) || raw.Header.Get("Content-Type") != "message/rfc822" {
		t.Fatalf("raw %q", raw.Body)
	}
	att := other["attachments"].([]any)[0].(map[string]any)
	if att["filename"] != "data.csv" || att["size"] != 3.0 {
		t.Fatalf("attachment %v", att)
	}
	dl := h.do("GET", "/api/attachments/"+att["uuid"].(string)+"/", nil, tn.keyOne).want(t, 200)
	if string(dl.Body) != "a,b" || !strings.HasPrefix(dl.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download %q %v", dl.Body, dl.Header)
	}
	h.do("GET", "/api/attachments/"+att["uuid"].(string)+"/", nil, tn.keyTwo).want(t, 404)
	h.do("GET", fmt.Sprintf("/api/email-messages/%v/raw/", other["id"]), nil, tn.otherAccount).want(t, 404)

	// New correspondents became auto contacts.
	if l := h.do("GET", "/api/contacts/?source=auto", nil, tn.keyOne).want(t, 200).list(t); len(l) != 3 {
		t.Fatalf("auto contacts %v", l)
	}
}

func TestSendingMail(t *testing.T) {
	h := newHarness(t)
	h.runOutbox()
	tn := newTenants(t, h)
	h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": "x@example.org", "content": "hi"}, tn.mgmt).want(t, 400)
	h.do("POST", "/api/email-messages/compose/?inbox=99999", map[string]any{"to_email": "x@example.org", "content": "hi"}, tn.mgmt).want(t, 404)
	for body, field := range map[string]string{
		`{"content": "hi"}`: "to_email",
		`{"to_email": "not an address", "content": "hi"}`:                                                              "to_email",
		`{"to_email": "x@example.org\r\nBcc: y@example.org", "content": "hi"}`:                                         "to_email",
		`{"to_email": "x@example.org", "subject": "a\r\nBcc: y@example.org", "content": "hi"}`:                         "subject",
		`{"to_email": "x@example.org"}`:                                                                                "content",
		`{"to_email": "x@example.org", "content": "hi", "attachment_uuids": ["00000000-0000-4000-8000-000000000000"]}`: "attachment_uuids",
		`{"to_email": "x@example.org", "content": "hi", "cc": ["ok@example.org", "bad"]}`:                              "cc",
	} {
		if e := h.raw("POST", "/api/email-messages/compose/", "application/json", strings.NewReader(body), tn.keyOne).want(t, 400).object(t); e[field] == nil {
			t.Errorf("%s should name %s: %v", body, field, e)
		}
	}

	// The limit applies to the encoded message: 900 KB of binary becomes
	// 1.2 MB of base64, over the harness's 1 MiB.
	var big bytes.Buffer
	bw := multipart.NewWriter(&big)
	bf, _ := bw.CreateFormFile("file", "big.bin")
	bf.Write(bytes.Repeat([]byte{0xfe}, 900_000))
	bw.Close()
	bigUp := h.raw("POST", "/api/attachments/", bw.FormDataContentType(), &big, tn.keyOne).want(t, 201).object(t)
	if e := h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": "x@example.org", "content": "hi",
		"attachment_uuids": []any{bigUp["uuid"]}}, tn.keyOne).want(t, 413).object(t); !strings.Contains(e["detail"].(string), "encoded") {
		t.Errorf("413: %v", e)
	}

	// An upload, then a message carrying it to two people and a Bcc.
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	fw, _ := w.CreateFormFile("file", "notes.txt")
	fw.Write([]byte("attached notes"))
	w.Close()
	up := h.raw("POST", "/api/attachments/", w.FormDataContentType(), &mp, tn.keyOne).want(t, 201).object(t)
	h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": "x@example.org", "content": "hi", "attachment_uuids": []any{up["uuid"]}}, tn.keyTwo).want(t, 400)
	sent := h.do("POST", "/api/email-messages/compose/", map[string]any{
		"to_email": "ann@example.org, bob@example.org", "cc": "carol@example.org", "bcc": []any{"dave@example.org"},
		"subject": "Quarterly", "content": "Numbers attached.", "html": "<p>Numbers attached.</p>", "attachment_uuids": []any{up["uuid"]},
	}, tn.keyOne).want(t, 201).object(t)
	if sent["direction"] != "outgoing" || sent["delivery_status"] != "queued" || sent["from_email"] != "one@agents.test" ||
		sent["to_email"] != "ann@example.org, bob@example.org" || len(sent["bcc"].([]any)) != 1 || len(sent["attachments"].([]any)) != 1 {
		t.Fatalf("sent %v", sent)
	}
	done := h.waitFor(tn.keyOne, sent["id"])
	if done["delivery_status"] != "sent" {
		t.Fatalf("delivery %v", done)
	}
	relayed := h.relay.Sent()
	// The envelope sender is the message's bounce address (VERP).
	if len(relayed) != 1 || len(relayed[0].Recipients) != 4 || !strings.HasPrefix(relayed[0].From, "bounces+") || !strings.HasSuffix(relayed[0].From, "@agents.test") {
		t.Fatalf("relayed %+v", relayed)
	}
	if rcpts := done["recipients"].([]any); len(rcpts) != 4 || rcpts[0].(map[string]any)["status"] != "sent" || rcpts[3].(map[string]any)["email"] != "dave@example.org" {
		t.Fatalf("recipients %v", rcpts)
	}
	raw := string(relayed[0].Raw)
	if strings.Contains(raw, "dave@example.org") || !strings.Contains(raw, "Subject: Quarterly") || !strings.Contains(raw, "notes.txt") {
		t.Fatalf("relayed message:\n%s", raw)
	}

	// A reply: derived subject, threading headers, same thread, to the sender only.
	h.receive("one@agents.test", mailFrom("Ann <ann@example.org>", "q1@example.org", "RE: Quarterly", "Thanks! One question.",
		"In-Reply-To: <"+sent["message_id"].(string)+">\r\n"))
	incoming := h.do("GET", "/api/email-messages/?direction=incoming", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)[0].(map[string]any)
	if incoming["thread_id"] != sent["thread_id"] {
		t.Fatalf("the answer did not join the thread: %v", incoming)
	}
	h.do("POST", fmt.Sprintf("/api/email-messages/%v/reply/", incoming["id"]), map[string]any{}, tn.keyOne).want(t, 400)
	h.do("POST", fmt.Sprintf("/api/email-messages/%v/reply/", incoming["id"]), map[string]any{"content": "x"}, tn.keyTwo).want(t, 404)
	reply := h.do("POST", fmt.Sprintf("/api/email-messages/%v/reply/", incoming["id"]), map[string]any{"content": "Sure.", "subject": "ignored"}, tn.keyOne).want(t, 201).object(t)
	if reply["subject"] != "Re: Quarterly" || reply["to_email"] != "ann@example.org" || reply["thread_id"] != sent["thread_id"] ||
		reply["in_reply_to"] != "q1@example.org" || len(reply["cc"].([]any)) != 0 {
		t.Fatalf("reply %v", reply)
	}
	h.waitFor(tn.keyOne, reply["id"])
	replyRaw := strings.NewReplacer("\r\n ", " ", "\r\n\t", " ").Replace(string(h.relay.Sent()[1].Raw)) // unfolded
	if !strings.Contains(replyRaw, "In-Reply-To: <q1@example.org>") || !strings.Contains(replyRaw, "References: <"+sent["message_id"].(string)+"> <q1@example.org>") {
		t.Fatalf("reply headers:\n%s", replyRaw)
	}
	all := h.do("POST", fmt.Sprintf("/api/email-messages/%v/reply-all/", incoming["id"]), map[string]any{"content": "All of you.", "cc": "erin@example.org"}, tn.keyOne).want(t, 201).object(t)
	if all["to_email"] != "ann@example.org" || fmt.Sprint(all["cc"]) != "[carol@example.org erin@example.org]" {
		t.Fatalf("reply-all %v", all) // one@agents.test (ourselves) is left out
	}

	// Forward carries the attachments and quotes the original.
	fwd := h.do("POST", fmt.Sprintf("/api/email-messages/%v/forward/", sent["id"]), map[string]any{"to_email": "frank@example.org", "content": "FYI"}, tn.keyOne).want(t, 201).object(t)
	if fwd["subject"] != "Fwd: Quarterly" || len(fwd["attachments"].([]any)) != 1 || !strings.Contains(fwd["content"].(string), "---------- Forwarded message ---------") {
		t.Fatalf("forward %v", fwd)
	}
	h.do("POST", fmt.Sprintf("/api/email-messages/%v/forward/", sent["id"]), map[string]any{"content": "FYI"}, tn.keyOne).want(t, 400)
}

func TestLocalAndUndeliverableRecipients(t *testing.T) {
	h := newHarness(t)
	h.runOutbox()
	tn := newTenants(t, h)
	h.relay.Outcome = func(rcpt string) ports.RelayOutcome {
		if strings.HasPrefix(rcpt, "bounce") {
			return ports.RelayOutcome{Err: fmt.Errorf("550 5.1.1 no such user"), Permanent: true}
		}
		return ports.RelayOutcome{}
	}
	m := h.do("POST", "/api/email-messages/compose/", map[string]any{
		"to_email": []any{"two@agents.test", "ghost@agents.test", "bounce@example.org", "ok@example.org"}, "subject": "Hello two", "content": "hi",
	}, tn.keyOne).want(t, 201).object(t)
	done := h.waitFor(tn.keyOne, m["id"])
	if done["delivery_status"] != "failed" || !strings.Contains(done["delivery_error"].(string), "ghost@agents.test") ||
		!strings.Contains(done["delivery_error"].(string), "bounce@example.org: 550") || strings.Contains(done["delivery_error"].(string), "ok@example.org") {
		t.Fatalf("delivery %v", done)
	}
	got := h.do("GET", "/api/email-messages/", nil, tn.keyTwo).want(t, 200).object(t)
	if got["count"] != 1.0 || got["results"].([]any)[0].(map[string]any)["subject"] != "Hello two" {
		t.Fatalf("local delivery %v", got)
	}
}

// A mail provider's id of an accepted message is kept on its recipient,
// for the provider's delivery events to find; a refused one has none.
func TestRecipientsKeepTheProviderID(t *testing.T) {
	h := newHarness(t)
	h.runOutbox()
	tn := newTenants(t, h)
	h.relay.Outcome = func(rcpt string) ports.RelayOutcome {
		if strings.HasPrefix(rcpt, "refused") {
			return ports.RelayOutcome{Err: fmt.Errorf("mailgun refused the message: 400 to parameter is not a valid address"), Permanent: true}
		}
		return ports.RelayOutcome{ProviderID: "0100018c-" + rcpt}
	}
	m := h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": []any{"ok@example.org", "refused@example.org"}, "content": "hi"}, tn.keyOne).want(t, 201).object(t)
	done := h.waitFor(tn.keyOne, m["id"])
	got := map[string]any{}
	for _, r := range done["recipients"].([]any) {
		r := r.(map[string]any)
		got[r["email"].(string)] = r["provider_id"]
	}
	if got["ok@example.org"] != "0100018c-ok@example.org" || got["refused@example.org"] != nil {
		t.Fatalf("provider ids %v in %v", got, done["recipients"])
	}
}

func TestNoRelayConfigured(t *testing.T) {
	h := newHarnessWith(t, func(d *app.Deps) { d.Relay = nil })
	h.runOutbox()
	tn := newTenants(t, h)
	m := h.do("POST", "/api/email-messages/compose/", map[string]any{"to_email": "out@example.org", "content": "hi"}, tn.keyOne).want(t, 201).object(t)
	done := h.waitFor(tn.keyOne, m["id"])
	if done["delivery_status"] != "failed" || !strings.Contains(done["delivery_error"].(string), "CALLSIGN_SMTP_RELAY") {
		t.Fatalf("without a relay: %v", done)
	}
}

func TestMailScoping(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.receive("one@agents.test", "From: ann@example.org\r\nMessage-ID: <s1@x>\r\nSubject: Scoped\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n"+
		"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\n\r\nA\r\n--b--\r\n")
	msgs, _, err := h.app.Reading.Messages(context.Background(), principalOf(t, h, tn.keyOne), "", ports.MessageFilter{Limit: 1})
	if err != nil || len(msgs) != 1 {
		t.Fatal(msgs, err)
	}
	m := msgs[0]
	inbox, thread, att := fmt.Sprintf("/api/email/%d/", m.InboxID), "/api/email-inbox/"+m.ThreadID+"/", "/api/attachments/"+m.Attachments[0].ID+"/"
	msg := fmt.Sprintf("/api/email-messages/%d/", m.ID)
	q := "?identity=" + tn.one
	ok4, created, nf := [4]int{200, 200, 404, 404}, [4]int{201, 201, 404, 404}, -1
	runScopeCases(t, h, tn, []scopeCase{
		{"GET", "/api/email/" + q, nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", inbox, nil, ok4, nf},
		{"POST", "/api/email/" + q, nil, created, nf},
		{"GET", "/api/email-inbox/" + q, nil, [4]int{200, 200, 200, 200}, 1},
		{"GET", thread, nil, ok4, nf},
		{"GET", msg, nil, ok4, nf},
		{"PATCH", msg, map[string]any{"is_read": true}, ok4, nf},
		{"PUT", msg, map[string]any{"is_read": false}, ok4, nf},
		{"GET", msg + "raw/", nil, ok4, nf},
		{"GET", att, nil, ok4, nf},
		{"POST", msg + "reply/", map[string]any{"content": "r"}, created, nf},
		{"POST", msg + "reply-all/", map[string]any{"content": "r"}, created, nf},
		{"POST", msg + "forward/", map[string]any{"to_email": "z@example.org", "content": "f"}, created, nf},
		{"POST", "/api/email-messages/compose/" + q, map[string]any{"to_email": "z@example.org", "content": "c"}, created, nf},
		{"POST", fmt.Sprintf("/api/email-messages/compose/?inbox=%d", m.InboxID), map[string]any{"to_email": "z@example.org", "content": "c"}, created, nf},
	})
	// The paginated list: the sibling and the other account see nothing of identity one.
	for key, want := range map[string]float64{tn.keyTwo: 0, tn.otherAccount: 0} {
		if got := h.do("GET", "/api/email-messages/"+q, nil, key).want(t, 200).object(t)["count"]; got != want {
			t.Errorf("count %v, want %v", got, want)
		}
	}
	if got := h.do("GET", "/api/email-messages/"+q, nil, tn.keyOne).want(t, 200).object(t)["count"].(float64); got < 1 {
		t.Errorf("own identity sees %v", got)
	}
}

// TestInactiveSubscriptionGatesEveryCost: without an active subscription
// an account creates no identity (the API's and the device page's), inbox,
// number or domain, and sends neither mail nor texts: 402 everywhere. It
// still reads what it has.
func TestInactiveSubscriptionGatesEveryCost(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.do("POST", "/api/identities/"+tn.one+"/provision-phone/", nil, tn.mgmt).want(t, 200)
	h.receive("one@agents.test", mailFrom("ann@example.org", "g1@example.org", "Hi", "Hello"))
	msgs := h.do("GET", "/api/email-messages/", nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)
	msg := msgs[0].(map[string]any)["id"]
	ctx := context.Background()
	account := principalOf(t, h, tn.mgmt).AccountID
	if err := h.app.Accounts.SetSubscription(ctx, account, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		body         any
		key          string
	}{
		{"POST", "/api/identities/", map[string]any{"name": "three"}, tn.mgmt},
		{"POST", "/api/email/", nil, tn.keyOne},
		{"POST", "/api/identities/" + tn.two + "/provision-phone/", nil, tn.mgmt},
		{"POST", "/api/domains/", map[string]any{"name": "example.com"}, tn.mgmt},
		{"POST", "/api/email-messages/compose/", map[string]any{"to_email": "x@example.org", "content": "hi"}, tn.keyOne},
		{"POST", path("/api/email-messages/%v/reply/", msg), map[string]any{"content": "hi"}, tn.keyOne},
		{"POST", path("/api/email-messages/%v/forward/", msg), map[string]any{"to_email": "x@example.org", "content": "hi"}, tn.keyOne},
		{"POST", "/api/messages/send/", map[string]any{"to": "+14155550100", "body": "hi"}, tn.keyOne},
	} {
		if res := h.do(c.method, c.path, c.body, c.key); res.Status != 402 {
			t.Errorf("%s %s: %d, want 402: %s", c.method, c.path, res.Status, res.Body)
		}
	}
	start, err := h.app.Device.Start(ctx, app.DeviceRequest{ClientName: "cli", From: "192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	name := "device agent"
	if _, err := h.app.Device.Approve(ctx, account, start.UserCode, app.DeviceChoice{NewName: &name}); core.KindOf(err) != core.KindPaymentRequired {
		t.Errorf("the device page's new identity: %v", err)
	}
	h.do("GET", "/api/email-messages/", nil, tn.keyOne).want(t, 200)
	if err := h.app.Accounts.SetSubscription(ctx, account, true); err != nil {
		t.Fatal(err)
	}
	h.do("POST", "/api/messages/send/", map[string]any{"to": "+14155550100", "body": "hi"}, tn.keyOne).want(t, 201)
}

// TestInboundLogNamesInboxesByAddress: the per-message log line says where
// a message went as an operator searches for it, by inbox address and
// identity uuid, one of each per stored copy.
func TestInboundLogNamesInboxesByAddress(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	var inboxes []core.Inbox
	for _, id := range []string{tn.one, tn.two} {
		addr := h.do("GET", "/api/identities/"+id+"/", nil, tn.mgmt).want(t, 200).object(t)["inbox"].(string)
		in, err := h.app.Receiving.ResolveRecipient(context.Background(), "x@example.org", addr)
		if err != nil {
			t.Fatal(err)
		}
		inboxes = append(inboxes, in)
	}
	raw := mailFrom("x@example.org", "log-1@example.org", "hello", "body")
	if _, err := h.app.Receiving.Deliver(context.Background(), app.InboundMail{EnvelopeFrom: "x@example.org", Inboxes: inboxes, Raw: []byte(raw)}); err != nil {
		t.Fatal(err)
	}
	var line struct {
		Inboxes, Identities []string
	}
	for l := range strings.Lines(h.logs.String()) {
		if strings.Contains(l, `"msg":"mail accepted"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantInboxes, wantIdentities := []string{inboxes[0].Email, inboxes[1].Email}, []string{tn.one, tn.two}
	if !slices.Equal(line.Inboxes, wantInboxes) || !slices.Equal(line.Identities, wantIdentities) {
		t.Fatalf("logged inboxes %v identities %v, want %v %v:\n%s", line.Inboxes, line.Identities, wantInboxes, wantIdentities, h.logs.String())
	}
}

// A message's detail shows its new content beside its bodies; a list
// shows neither.
func TestExtractedReply(t *testing.T) {
	h := newHarness(t)
	tn := newTenants(t, h)
	h.receive("one@agents.test", "From: ann@example.org\r\nTo: one@agents.test\r\nMessage-ID: <r1@example.org>\r\nSubject: Re: Plans\r\n"+
		"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"+
		"Thursday works.\r\n\r\nOn Mon, Feb 3, 2025 at 10:15 AM Bob <bob@example.org> wrote:\r\n> Does Thursday work?\r\n>\r\n> Bob\r\n"+
		"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<div dir=\"ltr\">Thursday works.</div><br><div class=\"gmail_quote\">"+
		"<div dir=\"ltr\" class=\"gmail_attr\">On Mon, Feb 3, 2025 at 10:15 AM Bob &lt;bob@example.org&gt; wrote:<br></div>"+
		"<blockquote class=\"gmail_quote\">Does Thursday work?<br><br>Bob</blockquote></div>\r\n--b--\r\n")
	h.receive("one@agents.test", mailFrom("ann@example.org", "r2@example.org", "New", "Nothing quoted here."))
	list := h.do("GET", "/api/email-messages/?identity="+tn.one, nil, tn.keyOne).want(t, 200).object(t)["results"].([]any)
	if len(list) != 2 {
		t.Fatalf("list %v", list)
	}
	for _, l := range list {
		m := l.(map[string]any)
		if _, has := m["extracted_text"]; has {
			t.Fatalf("a list carries the extraction: %v", m)
		}
		detail := h.do("GET", fmt.Sprintf("/api/email-messages/%v/", m["id"]), nil, tn.keyOne).want(t, 200).object(t)
		switch m["message_id"] {
		case "r1@example.org":
			if detail["extracted_text"] != "Thursday works." || detail["extracted_html"] != `<div dir="ltr">Thursday works.</div>` ||
				!strings.Contains(detail["content"].(string), "Does Thursday work?") {
				t.Fatalf("reply %q %q", detail["extracted_text"], detail["extracted_html"])
			}
		default:
			if detail["extracted_text"] != detail["content"] || detail["extracted_html"] != "" {
				t.Fatalf("nothing quoted: %q, content %q", detail["extracted_text"], detail["content"])
			}
		}
	}
}
