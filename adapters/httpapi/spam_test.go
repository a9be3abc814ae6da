package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// offer delivers raw to one@agents.test as the SMTP listener would (an
// origin: refusable) or, without smtp, as an IMAP source or a provider's
// webhook would (accepted elsewhere already).
func (h *harness) offer(smtp bool, raw string) error {
	h.t.Helper()
	in, err := h.app.Receiving.ResolveRecipient(context.Background(), "x@example.org", "one@agents.test")
	if err != nil {
		h.t.Fatal(err)
	}
	mail := app.InboundMail{EnvelopeFrom: "x@example.org", Inboxes: []core.Inbox{in}, Raw: []byte(raw), Envelope: []string{"one@agents.test"}}
	if smtp {
		mail.Origin = &ports.InboundOrigin{IP: net.ParseIP("192.0.2.7"), HELO: "mx.example.org", MailFrom: "x@example.org"}
	}
	_, err = h.app.Receiving.Deliver(context.Background(), mail)
	return err
}

func spamMail(id, action, body string) string {
	extra := ""
	if action != "" {
		extra = memory.SpamActionField + action + "\r\n"
	}
	return mailFrom("bob@example.org", id+"@example.org", "Mail "+id, body, extra)
}

// TestSpam: rspamd's verdicts (a fake filter) refuse, defer, file as spam
// or pass received mail; spam is hidden from lists and threads and
// announced as email.spam, include_spam shows it, and a person's move
// flips it, finds its code, teaches the filter, and stands when the
// filter is down. Identity keys move their own mail only.
func TestSpam(t *testing.T) {
	filter := &memory.SpamFilter{}
	h := newHarnessWith(t, func(d *app.Deps) { d.Spam = filter })
	tn := newTenants(t, h)

	if err := h.offer(true, spamMail("ham", "", "Hello.")); err != nil {
		t.Fatal(err)
	}
	if q := filter.Queries(); len(q) != 1 || q[0].IP.String() != "192.0.2.7" || q[0].HELO != "mx.example.org" ||
		q[0].MailFrom != "x@example.org" || len(q[0].Recipients) != 1 || q[0].Recipients[0] != "one@agents.test" {
		t.Fatalf("asked %+v", q)
	}
	if err := h.offer(true, spamMail("rejected", "reject", "Buy now.")); !errors.Is(err, app.ErrSpamRefused) {
		t.Fatalf("reject over SMTP: %v", err)
	}
	if err := h.offer(true, spamMail("deferred", "soft reject", "Buy later.")); !errors.Is(err, app.ErrSpamDeferred) {
		t.Fatalf("soft reject over SMTP: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.offer(true, spamMail("junk", "add header", "Your code is 482913.")))
	must(h.offer(false, spamMail("fetched", "reject", "Accepted elsewhere."))) // an IMAP source's: filed, not lost
	filter.SetDown(true)
	must(h.offer(true, spamMail("unjudged", "reject", "The filter is down.")))
	filter.SetDown(false)

	list := func(query string) map[string]map[string]any {
		t.Helper()
		out := map[string]map[string]any{}
		for _, m := range h.do("GET", "/api/email-messages/"+query, nil, tn.keyOne).want(t, 200).object(t)["results"].([]any) {
			m := m.(map[string]any)
			out[strings.TrimPrefix(m["subject"].(string), "Mail ")] = m
		}
		return out
	}
	shown := list("")
	if len(shown) != 2 || shown["ham"] == nil || shown["unjudged"] == nil {
		t.Fatalf("listed %v", shown)
	}
	if ham := shown["ham"]; ham["is_spam"] != false || asJSON(ham["spam"]) != `{"action":"no action","score":0.5,"symbols":[]}` {
		t.Fatalf("ham: %v %v", ham["is_spam"], asJSON(ham["spam"]))
	}
	if shown["unjudged"]["spam"] != nil || shown["unjudged"]["is_spam"] != false {
		t.Fatalf("unjudged: %v", shown["unjudged"])
	}
	all := list("?include_spam=true")
	junk := all["junk"]
	if len(all) != 4 || junk["is_spam"] != true || all["fetched"]["is_spam"] != true || junk["verification"] != nil ||
		asJSON(junk["spam"]) != `{"action":"add header","score":10,"symbols":[{"name":"TEST_SPAM","score":10}]}` {
		t.Fatalf("with spam: %v", all)
	}
	threads := h.do("GET", "/api/email-inbox/", nil, tn.keyOne).want(t, 200).list(t)
	if len(threads) != 2 {
		t.Fatalf("threads: %v", threads)
	}
	mailEvents := func() string {
		return strings.Join(eventTypesOf(t, h.do("GET", "/api/events/?types=email.received,email.spam", nil, tn.keyOne).want(t, 200).object(t)), " ")
	}
	if got := mailEvents(); got != "email.received email.spam email.spam email.received" {
		t.Fatalf("events: %s", got)
	}

	junkPath := fmt.Sprintf("/api/email-messages/%v/", junk["id"])
	h.do("POST", junkPath+"not-spam/", nil, tn.keyTwo).want(t, 404)
	h.do("POST", junkPath+"not-spam/", nil, tn.otherAccount).want(t, 404)
	res := h.do("POST", junkPath+"not-spam/", nil, tn.keyOne).want(t, 200)
	moved := res.object(t)
	if res.Header.Get(spamLearnedHeader) != "true" || moved["is_spam"] != false || !strings.Contains(asJSON(moved["verification"]), `"code":"482913"`) {
		t.Fatalf("moved out: %s %v %v", res.Header.Get(spamLearnedHeader), moved["is_spam"], asJSON(moved["verification"]))
	}
	if shown = list(""); len(shown) != 3 || shown["junk"] == nil {
		t.Fatalf("after the move: %v", shown)
	}
	if got := mailEvents(); got != "email.received email.spam email.spam email.received email.received" {
		t.Fatalf("events after the move: %s", got)
	}
	if threads := h.do("GET", "/api/email-inbox/", nil, tn.keyOne).want(t, 200).list(t); len(threads) != 3 {
		t.Fatalf("threads after the move: %v", threads)
	}

	// Into spam while the filter is down: the move stands, unlearned.
	filter.SetDown(true)
	res = h.do("POST", fmt.Sprintf("/api/email-messages/%v/spam/", shown["ham"]["id"]), nil, tn.mgmt).want(t, 200)
	if res.Header.Get(spamLearnedHeader) != "false" || res.object(t)["is_spam"] != true {
		t.Fatalf("moved in: %s %s", res.Header.Get(spamLearnedHeader), res.Body)
	}
	if shown = list(""); len(shown) != 2 || shown["ham"] != nil {
		t.Fatalf("after moving in: %v", shown)
	}
	if lessons := filter.Lessons(); len(lessons) != 1 || lessons[0] {
		t.Fatalf("lessons %v", lessons)
	}
	h.do("POST", "/api/email-messages/999999/spam/", nil, tn.keyOne).want(t, 404)
}
