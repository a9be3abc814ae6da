package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestConsoleShowsWhatHappened is a person reading, in Chromium on a phone
// and on a laptop, what agents and endpoints did: the code in a mail, the
// mail's frame sized to its content, its header fields and source, the
// events filtered, a webhook's deliveries with their request and answer,
// and the drafts awaiting approval counted in the navigation.
func TestConsoleShowsWhatHappened(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	var hooked atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hooked.Add(1)
		w.Header().Set("X-Receiver", "teapot <b>")
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, `{"error": "<not today>"}`)
	}))
	t.Cleanup(receiver.Close)
	r := startPublic(t, sqlstore.SQLite, map[string]string{"CALLSIGN_RATE_LIMIT": "100:200", "CALLSIGN_WEBHOOK_ALLOW_PRIVATE": "true"})
	out, errOut, code := r.cli(ownerPassword+"\n", "account", "create", "--email", "owner@example.com", "--password-stdin")
	var acct struct {
		ManagementKey string `json:"management_key"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &acct) != nil {
		t.Fatalf("account create: %d %s %s", code, out, errOut)
	}
	mgmt := acct.ManagementKey
	var ident struct{ UUID string }
	r.call("POST", "/api/identities/", mgmt, map[string]any{"name": "Ada", "email_identifier": "ada"}, &ident)
	var intern struct{ Key string }
	r.call("POST", "/api/auth/keys/identity/", mgmt, map[string]any{"name": "intern", "identity": ident.UUID, "can_send": false}, &intern)
	if s := r.call("POST", "/api/email-drafts/", intern.Key, map[string]any{"to_email": "boss@example.org", "subject": "Report", "content": "x"}, nil); s != 201 {
		t.Fatalf("a draft awaiting approval: %d", s)
	}
	var hook struct{ ID string }
	r.call("POST", "/api/webhooks/", mgmt, map[string]any{"url": receiver.URL + "/hook", "event_types": []string{"email.received"}}, &hook)

	// A sign-in mail: a code, in an HTML body taller than a phone's screen.
	var paragraphs strings.Builder
	for n := range 30 {
		fmt.Fprintf(&paragraphs, "<p>Paragraph %d of the small print.</p>", n+1)
	}
	html := `<h1>Welcome</h1><p>Your verification code is <b>482913</b>.</p>` + paragraphs.String() + `<p id="last">The end.</p>`
	raw := "From: Shop <noreply@shop.example>\r\nTo: ada@agents.test\r\nSubject: =?UTF-8?Q?Your_code_=E2=9C=93?=\r\nMessage-ID: <code@shop.example>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b2\r\n\r\n" +
		"--b2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYour verification code is 482913.\r\n" +
		"--b2\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html + "\r\n--b2--\r\n"
	sendSMTP(t, r.svc.SMTPAddr(), "noreply@shop.example", []string{"ada@agents.test"}, raw)

	tab := phone(t, browser)
	at := func(path string) chromedp.Action[chromedp.Void] { return chromedp.Navigate(r.baseURL + path) }
	text := func(sel string) string { t.Helper(); return read(t, tab, chromedp.Text(chromedp.CSS(sel))) }
	do(t, tab, at("/console/"), chromedp.WaitVisible(chromedp.ID("email")),
		chromedp.SendKeys(chromedp.ID("email"), "owner@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), ownerPassword),
		chromedp.Click(chromedp.CSS(`button.primary`)),
		chromedp.WaitVisible(chromedp.ID("new-h")),
	)
	if got := text(`#pending`); !strings.HasPrefix(got, "1") {
		t.Errorf("the Approvals badge: %q", got)
	}

	// The thread: the code at the top and on the message; the frame as tall as the mail.
	poll(t, "the mail listed", func() bool {
		do(t, tab, at("/console/identities/"+ident.UUID+"/mail/"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		return read(t, tab, chromedp.Evaluate[bool](`!!document.querySelector('.rows .row-title')`))
	})
	do(t, tab, chromedp.Click(chromedp.CSS(`.rows .row-title`)), chromedp.WaitVisible(chromedp.CSS(`iframe.body-html`)))
	if got := text(`#latest-code + .verification .otp`); got != "482913" {
		t.Errorf("the thread's code: %q", got)
	}
	fitted := `(() => { const f = document.querySelector('iframe.body-html'); const d = f.contentDocument;
		return f.dataset.fitted === "1" && d.readyState === "complete" &&
			d.documentElement.scrollHeight <= f.clientHeight + 1 &&
			Math.abs(f.clientHeight - d.documentElement.getBoundingClientRect().height) <= 2; })()`
	waitUntil(t, tab, fitted)
	if h := read(t, tab, chromedp.Evaluate[float64](`document.querySelector('iframe.body-html').clientHeight`)); h < 900 {
		t.Errorf("a long mail's frame is %v px tall on a phone", h)
	}
	consoleLooksRight(t, tab, "phone-thread-code")

	// Its header fields, decoded, and its source.
	do(t, tab, chromedp.Click(chromedp.CSS(`a[href$="/"][href*="/console/messages/"].button`)), chromedp.WaitVisible(chromedp.CSS(`table.headers`)))
	if got := text(`table.headers`); !strings.Contains(got, "Message-ID") || !strings.Contains(got, "Your code ✓") {
		t.Errorf("the header fields: %q", got)
	}
	if got := text(`pre.source`); !strings.Contains(got, "=?UTF-8?Q?Your_code") || !strings.Contains(got, "<b>482913</b>") {
		t.Errorf("the source: %q", got)
	}
	consoleLooksRight(t, tab, "phone-message-source")

	// Events, newest first, filtered by type; payloads indented and escaped.
	do(t, tab, at("/console/events/?type=email.received&identity="+ident.UUID), chromedp.WaitVisible(chromedp.CSS(`.event-filters`)))
	types := read(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.event code.nowrap')].map(e => e.textContent)`))
	if len(types) != 1 || types[0] != "email.received" {
		t.Errorf("events of type email.received: %v", types)
	}
	if got := read(t, tab, chromedp.Evaluate[string](`document.querySelector('.event pre.payload').textContent`)); !strings.Contains(got, "\n  \"") {
		t.Errorf("the payload is not indented: %q", got)
	}
	consoleLooksRight(t, tab, "phone-events")
	do(t, tab, at("/console/events/"), chromedp.WaitVisible(chromedp.CSS(`.event-filters`)))
	ids := read(t, tab, chromedp.Evaluate[[]float64](`[...document.querySelectorAll('.event .muted')].map(e => +e.textContent.slice(1))`))
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Fatalf("events are not newest first: %v", ids)
		}
	}

	// The webhook: the delivery's request and answer, shown as text.
	hookPath := "/console/webhooks/" + hook.ID + "/"
	poll(t, "the delivery's exchange", func() bool {
		do(t, tab, at(hookPath), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		return read(t, tab, chromedp.Evaluate[bool](`!!document.querySelector('.delivery details')`))
	})
	do(t, tab, chromedp.Click(chromedp.CSS(`.delivery summary`)))
	got := text(`.delivery`)
	for _, want := range []string{"HTTP 418", "Webhook-Signature: v1,", "X-Receiver: teapot <b>", `{"error": "<not today>"}`, `"email.received"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the delivery does not show %q:\n%s", want, got)
		}
	}
	consoleLooksRight(t, tab, "phone-webhook")
	before := hooked.Load()
	do(t, tab, chromedp.Click(chromedp.CSS(`.delivery form button`)))
	waitUntil(t, tab, `document.readyState === "complete" && !!document.querySelector('p.ok')`)
	poll(t, "the delivery sent again", func() bool { return hooked.Load() > before })
	do(t, tab, chromedp.Click(chromedp.CSS(`form[action$="/enabled/"] button`)))
	waitUntil(t, tab, `document.readyState === "complete" && document.getElementById('state').textContent.startsWith('off')`)
	do(t, tab, chromedp.Click(chromedp.CSS(`form[action$="/rotate-secret/"] button`)))
	waitUntil(t, tab, `document.readyState === "complete" && (document.getElementById('new-secret') || {}).textContent?.startsWith('whsec_')`)
	consoleLooksRight(t, tab, "phone-webhook-rotated")

	// The same pages on a laptop.
	laptop, cancelLaptop := chromedp.NewContext(tab)
	t.Cleanup(cancelLaptop)
	if err := chromedp.Do(laptop, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	threadURL := ""
	do(t, laptop, at("/console/identities/"+ident.UUID+"/mail/"), chromedp.WaitVisible(chromedp.CSS(`.rows .row-title`)),
		chromedp.Click(chromedp.CSS(`.rows .row-title`)), chromedp.WaitVisible(chromedp.CSS(`iframe.body-html`)))
	waitUntil(t, laptop, fitted)
	threadURL = read(t, laptop, chromedp.Location())
	consoleLooksRight(t, laptop, "laptop-thread-code")
	for name, path := range map[string]string{"events": "/console/events/", "webhook": hookPath, "approvals": "/console/approvals/",
		"message-source": strings.TrimPrefix(threadURL, r.baseURL)} {
		if name == "message-source" {
			do(t, laptop, chromedp.Navigate(threadURL), chromedp.WaitVisible(chromedp.CSS(`h1`)),
				chromedp.Click(chromedp.CSS(`a[href$="/"][href*="/console/messages/"].button`)), chromedp.WaitVisible(chromedp.CSS(`table.headers`)))
		} else {
			do(t, laptop, at(path), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		}
		consoleLooksRight(t, laptop, "laptop-"+name)
	}
}
