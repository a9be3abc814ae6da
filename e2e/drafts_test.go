package e2e

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestDraftsAndApproval is the approval's wiring: a drafts-only key's
// reply to mail that came over SMTP is stored on both databases, its
// compose is 403, and a management key's approval of it as read sends it
// through the real outbox to the relay, threaded. The approval's rules are
// adapters/httpapi's TestDraftsAndApproval.
func TestDraftsAndApproval(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		relay := newTestRelay(t)
		relay.listen(t, "127.0.0.1:0")
		r := start(t, d, relayEnv(relay), fastRetry)
		mgmt := r.bootstrap("drafts@example.com")
		var ident struct{ UUID, Inbox string }
		r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Drafter"}, &ident)
		var drafter struct{ Key string }
		r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID, "can_send": false}, &drafter)
		sendSMTP(t, r.svc.SMTPAddr(), "carol@example.org", []string{ident.Inbox}, plainMail(ident.Inbox, "q1@example.org", "Question"))
		var inbound apiPage
		poll(t, "the inbound message", func() bool {
			r.call("GET", "/api/email-messages/?direction=incoming&limit=5", drafter.Key, nil, &inbound)
			return inbound.Count == 1
		})
		question := inbound.Results[0].ID
		if s, b := r.callRaw("POST", "/api/email-messages/compose/", drafter.Key, map[string]any{"to_email": "dave@example.org", "content": "Hi."}); s != 403 || !strings.Contains(string(b), "can_send") {
			t.Fatalf("compose without send rights: %d %s", s, b)
		}
		var reply struct {
			ID               string `json:"id"`
			AwaitingApproval bool   `json:"awaiting_approval"`
			UpdatedDT        string `json:"updated_dt"`
		}
		if s := r.call("POST", "/api/email-drafts/", drafter.Key, map[string]any{"reply_to": question, "content": "Yes."}, &reply); s != 201 || !reply.AwaitingApproval {
			t.Fatalf("reply draft: %d %+v", s, reply)
		}
		var sent apiMessage
		if s := r.call("POST", "/api/email-drafts/"+reply.ID+"/send/", mgmt, map[string]any{"updated_dt": reply.UpdatedDT}, &sent); s != 201 ||
			sent.Subject != "Re: Question" || sent.ThreadID != inbound.Results[0].ThreadID {
			t.Fatalf("approve the reply: %d %+v", s, sent)
		}
		poll(t, "the reply at the relay", func() bool { return len(relay.received()) == 1 })
		if m := relay.received()[0]; !strings.Contains(m.data, "In-Reply-To: <q1@example.org>") {
			t.Fatalf("the reply is not threaded: %+v", m)
		}
		poll(t, "delivery_status sent", func() bool {
			var m apiMessage
			r.call("GET", fmt.Sprintf("/api/email-messages/%d/", sent.ID), mgmt, nil, &m)
			return m.DeliveryStatus == "sent"
		})
	})
}

// TestScheduledSendOnce: messages scheduled by drafts' send_at wait in the
// outbox, survive the instance that queued them stopping, and are sent
// once each, not before send_at, by whichever instance runs: on PostgreSQL
// two instances share the database and the relay counts every message
// exactly once.
func TestScheduledSendOnce(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		relay := newTestRelay(t)
		relay.listen(t, "127.0.0.1:0")
		first := start(t, d, relayEnv(relay))
		mgmt := first.bootstrap("scheduled@example.com")
		var ident struct{ UUID string }
		first.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Scheduler"}, &ident)
		const n = 5
		sendAt := time.Now().Add(6 * time.Second).UTC().Truncate(time.Millisecond)
		ids := map[string]bool{}
		for i := range n {
			var dr struct{ ID string }
			if s := first.call("POST", "/api/email-drafts/?identity="+ident.UUID, mgmt, map[string]any{"to_email": fmt.Sprintf("r%d@example.org", i),
				"content": "Later.", "send_at": sendAt.Format(time.RFC3339Nano)}, &dr); s != 201 {
				t.Fatalf("draft: %d", s)
			}
			var m apiMessage
			if s := first.call("POST", "/api/email-drafts/"+dr.ID+"/send/", mgmt, nil, &m); s != 201 || m.DeliveryStatus != "queued" {
				t.Fatalf("send: %d %+v", s, m)
			}
			ids["<"+m.MessageID+">"] = true
		}
		// On a loaded machine the five drafts can take past send_at to queue;
		// a message queued late goes at once, dated when it was sent.
		queuedInTime := time.Now().Before(sendAt)
		first.stop()
		if time.Now().Before(sendAt) && len(relay.received()) != 0 {
			t.Fatalf("sent before send_at: %d", len(relay.received()))
		}
		instances := 1
		if d == sqlstore.Postgres {
			instances = 2
		}
		var last *running
		for range instances {
			last = start(t, d, sameDatabase(first, relayEnv(relay)))
		}
		poll(t, "every scheduled message sent", func() bool {
			var sent apiPage
			last.call("GET", "/api/email-messages/?direction=outgoing&limit=50", mgmt, nil, &sent)
			done := 0
			for _, m := range sent.Results {
				if m.DeliveryStatus == "sent" {
					done++
				}
			}
			return done == n
		})
		if got := len(relay.received()); got != n {
			t.Fatalf("the relay received %d messages, want %d", got, n)
		}
		var late time.Duration
		for _, m := range relay.received() {
			msg, err := mail.ReadMessage(strings.NewReader(m.data))
			if err != nil {
				t.Fatal(err)
			}
			id := msg.Header.Get("Message-Id")
			if !ids[id] {
				t.Fatalf("message %q relayed twice, or unknown", id)
			}
			delete(ids, id)
			if m.at.Before(sendAt) {
				t.Fatalf("relayed at %v, before send_at %v", m.at, sendAt)
			}
			if date, err := msg.Header.Date(); err != nil || (queuedInTime && !date.Equal(sendAt.Truncate(time.Second))) {
				t.Errorf("Date %v (%v), want send_at %v", date, err, sendAt)
			}
			late = max(late, m.at.Sub(sendAt))
		}
		t.Logf("%s, %d instance(s): the last of %d scheduled messages reached the relay %v after send_at", d, instances, n, late)
	})
}

// TestSendRightInMCPAndCLI: the MCP server and the agent CLI act through
// the API, so a key without send rights is refused there too, with the
// API's message saying to draft instead; draft_email drafts for approval.
func TestSendRightInMCPAndCLI(t *testing.T) {
	t.Parallel()
	r := start(t, sqlstore.SQLite, nil)
	mgmt := r.bootstrap("rights@example.com")
	var ident struct{ UUID string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Quiet"}, &ident)
	var k struct{ Key string }
	r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"identity": ident.UUID, "can_send": false}, &k)
	var refused struct{ Detail string }
	if s := r.call("POST", "/api/email-messages/compose/", k.Key, map[string]any{"to_email": "a@example.org", "content": "x"}, &refused); s != 403 || !strings.Contains(refused.Detail, "email-drafts") {
		t.Fatalf("compose: %d %q", s, refused.Detail)
	}
	var who map[string]any
	if r.call("GET", "/api/health/whoami/", k.Key, nil, &who); who["can_send"] != false {
		t.Fatalf("whoami: %v", who)
	}
	transports(t, r, k.Key, nil, func(t *testing.T, cs *mcp.ClientSession) {
		var me struct {
			CanSend *bool `json:"can_send"`
		}
		if res := callTool(t, cs, "whoami", nil, &me); res.IsError || me.CanSend == nil || *me.CanSend {
			t.Errorf("whoami tool: %v %q", res.IsError, toolText(res))
		}
		if res := callTool(t, cs, "send_email", map[string]any{"to": []string{"a@example.org"}, "body": "x"}, nil); !res.IsError || toolText(res) != refused.Detail {
			t.Errorf("send_email: %v %q, want %q", res.IsError, toolText(res), refused.Detail)
		}
		var drafted struct {
			ID               string `json:"id"`
			AwaitingApproval bool   `json:"awaiting_approval"`
		}
		if res := callTool(t, cs, "draft_email", map[string]any{"to": []string{"a@example.org"}, "subject": "For approval", "body": "x"}, &drafted); res.IsError || !drafted.AwaitingApproval {
			t.Errorf("draft_email: %v %q", res.IsError, toolText(res))
		}
		if res := callTool(t, cs, "draft_email", map[string]any{"reply_to": 999999, "body": "x"}, nil); !res.IsError || !strings.HasPrefix(toolText(res), "reply_to: ") {
			t.Errorf("draft_email of an unknown message: %v %q", res.IsError, toolText(res))
		}
	})
	out, errOut, code := agentCLI(t, t.TempDir(), map[string]string{"CALLSIGN_SERVER": r.baseURL, "CALLSIGN_API_KEY": k.Key}, "",
		"mail", "send", "--to", "a@example.org", "--subject", "x", "--body", "x")
	if code != 1 || out != "" || errOut != "callsign: "+refused.Detail+"\n" {
		t.Errorf("agent CLI: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = agentCLI(t, t.TempDir(), map[string]string{"CALLSIGN_SERVER": r.baseURL, "CALLSIGN_API_KEY": k.Key}, "",
		"mail", "draft", "--to", "a@example.org", "--subject", "x", "--body", "x")
	if code != 0 || errOut != "" || !strings.Contains(out, "waits for a person's approval") {
		t.Errorf("agent CLI draft: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestConsoleApprovals: a person makes a drafts-only key in the console,
// sees what it drafted under Approvals, approves one (it reaches the
// relay) and discards another; another account can do neither.
func TestConsoleApprovals(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		relay := newTestRelay(t)
		relay.listen(t, "127.0.0.1:0")
		r := startPublic(t, d, relayEnv(relay))
		out, errOut, code := r.cli(ownerPassword+"\n", "account", "create", "--email", "approver@example.com", "--password-stdin")
		var acct struct {
			ManagementKey string `json:"management_key"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &acct) != nil {
			t.Fatalf("account create: %d %s %s", code, out, errOut)
		}
		r.owner("stranger@example.com")
		var ident struct{ UUID string }
		r.call("POST", "/api/identities/", acct.ManagementKey, map[string]any{"name": "Intern"}, &ident)
		ann, bea := r.person(t), r.person(t)
		ann.signIn("approver@example.com")
		bea.signIn("stranger@example.com")

		s, _, page := ann.post("/console/keys/", url.Values{"name": {"intern"}, "identity": {ident.UUID}, "drafts_only": {"1"}})
		key := regexp.MustCompile(`id="new-key">(svc_id_\w+)<`).FindStringSubmatch(page)
		if s != 201 || key == nil || !strings.Contains(page, "(drafts only)") {
			t.Fatalf("a drafts-only key: %d\n%s", s, page)
		}
		if s := r.call("POST", "/api/email-messages/compose/", key[1], map[string]any{"to_email": "boss@example.org", "content": "x"}, nil); s != 403 {
			t.Fatalf("the drafts-only key composed: %d", s)
		}
		var keep, drop struct{ ID string }
		r.call("POST", "/api/email-drafts/", key[1], map[string]any{"to_email": "boss@example.org", "subject": "Weekly report", "content": "All <b>done</b>."}, &keep)
		r.call("POST", "/api/email-drafts/", key[1], map[string]any{"to_email": "everyone@example.org", "subject": "Oops", "content": "Reply-all storm."}, &drop)

		s, _, page = ann.get("/console/approvals/")
		if s != 200 || !strings.Contains(page, "Weekly report") || !strings.Contains(page, "All &lt;b&gt;done&lt;/b&gt;.") || !strings.Contains(page, "/console/drafts/"+keep.ID+"/send/") {
			t.Fatalf("approvals: %d\n%s", s, page)
		}
		if s, _, page := bea.get("/console/approvals/"); s != 200 || strings.Contains(page, "Weekly report") {
			t.Fatalf("another account sees the drafts: %d", s)
		}
		seen := regexp.MustCompile(`/console/drafts/` + keep.ID + `/send/"><input [^>]*><input type="hidden" name="seen" value="(\d+)">`).FindStringSubmatch(page)
		if seen == nil {
			t.Fatalf("the approval form carries no version:\n%s", page)
		}
		for _, action := range []string{"send", "delete"} {
			if s, _, _ := bea.post("/console/drafts/"+keep.ID+"/"+action+"/", url.Values{"seen": {seen[1]}}); s != 404 {
				t.Errorf("another account's %s: %d", action, s)
			}
		}
		// The key edits its draft after the person read it: that is not
		// what they approve (409, nothing sent); read again, it is.
		if s := r.call("PATCH", "/api/email-drafts/"+keep.ID+"/", key[1], map[string]any{"to_email": "rival@example.org", "content": "Changed."}, nil); s != 200 {
			t.Fatalf("edit: %d", s)
		}
		if s, _, page := ann.post("/console/drafts/"+keep.ID+"/send/", url.Values{"seen": {seen[1]}}); s != 409 || !strings.Contains(page, "changed after you read it") {
			t.Fatalf("approve a draft changed since it was read: %d\n%s", s, page)
		}
		if s, _, page := ann.post("/console/drafts/"+keep.ID+"/send/", url.Values{}); s != 400 {
			t.Fatalf("approve without a version: %d\n%s", s, page)
		}
		r.call("PATCH", "/api/email-drafts/"+keep.ID+"/", key[1], map[string]any{"to_email": "boss@example.org", "content": "All <b>done</b>."}, nil)
		_, _, page = ann.get("/console/approvals/")
		seen = regexp.MustCompile(`/console/drafts/` + keep.ID + `/send/"><input [^>]*><input type="hidden" name="seen" value="(\d+)">`).FindStringSubmatch(page)
		if s, _, page := ann.post("/console/drafts/"+keep.ID+"/send/", url.Values{"seen": {seen[1]}}); s != 200 || !strings.Contains(page, "Approved: the message to boss@example.org") || strings.Contains(page, "Weekly report") {
			t.Fatalf("approve: %d\n%s", s, page)
		}
		if s, loc, _ := ann.post("/console/drafts/"+drop.ID+"/delete/", url.Values{}); s != 303 || loc != "/console/approvals/" {
			t.Fatalf("discard: %d %s", s, loc)
		}
		var left []map[string]any
		if r.call("GET", "/api/email-drafts/", acct.ManagementKey, nil, &left); len(left) != 0 {
			t.Fatalf("drafts left: %v", left)
		}
		poll(t, "the approved message at the relay", func() bool { return len(relay.received()) == 1 })
		if m := relay.received()[0]; m.to[0] != "boss@example.org" || !strings.Contains(m.data, "Weekly report") {
			t.Fatalf("relayed: %+v", m)
		}
	})
}

// TestConsoleApprovalsInABrowser: on a phone, the Approvals page reads
// well (no sideways scrolling, buttons to tap) and its button sends the
// draft.
func TestConsoleApprovalsInABrowser(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	r := startPublic(t, sqlstore.SQLite, nil)
	out, _, _ := r.cli(ownerPassword+"\n", "account", "create", "--email", "owner@example.com", "--password-stdin")
	var acct struct {
		ManagementKey string `json:"management_key"`
	}
	if err := json.Unmarshal([]byte(out), &acct); err != nil {
		t.Fatal(err)
	}
	var ident struct{ UUID string }
	r.call("POST", "/api/identities/", acct.ManagementKey, map[string]any{"name": "Intern"}, &ident)
	var key struct{ Key string }
	r.call("POST", "/api/auth/keys/identity/", acct.ManagementKey, map[string]any{"identity": ident.UUID, "can_send": false}, &key)
	r.call("POST", "/api/email-drafts/", key.Key, map[string]any{"to_email": "a-rather-long-address-of-the-boss@customer.example", "subject": "Weekly report",
		"content": strings.Repeat("A long line of the report that a phone must wrap. ", 10), "send_at": time.Now().Add(time.Hour).Format(time.RFC3339)}, nil)

	tab := phone(t, browser)
	do(t, tab, chromedp.Navigate(r.baseURL+"/console/"), chromedp.WaitVisible(chromedp.ID("email")),
		chromedp.SendKeys(chromedp.ID("email"), "owner@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), ownerPassword),
		chromedp.Click(chromedp.CSS(`button.primary`)),
		chromedp.WaitVisible(chromedp.ID("new-h")),
		chromedp.Navigate(r.baseURL+"/console/approvals/"),
		chromedp.WaitVisible(chromedp.CSS(`article.card`)),
	)
	consoleLooksRight(t, tab, "phone-approvals")
	do(t, tab, chromedp.Click(chromedp.CSS(`article.card button.primary`)))
	waitUntil(t, tab, `!!document.querySelector('p.ok') && document.querySelector('p.ok').textContent.includes('Approved')`)
	var left []map[string]any
	if r.call("GET", "/api/email-drafts/", acct.ManagementKey, nil, &left); len(left) != 0 {
		t.Fatalf("drafts left after approval: %v", left)
	}
}
