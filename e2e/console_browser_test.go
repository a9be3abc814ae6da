package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/callsign/callsign/adapters/oidc/oidctest"
	"github.com/callsign/callsign/adapters/sqlstore"
)

// hits records the requests a page made to a server that stands for the
// rest of the internet.
type hits struct {
	mu    sync.Mutex
	paths []string
}

func (h *hits) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.paths = append(h.paths, r.URL.Path)
	h.mu.Unlock()
	w.Header().Set("Content-Type", "image/gif")
	_, _ = w.Write([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
}

func (h *hits) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.paths...)
}

// consoleLooksRight checks what makes a console page usable on any
// screen: no sideways scrolling, and controls big enough to tap; it saves
// a screenshot when CALLSIGN_TEST_SCREENSHOTS names a directory.
func consoleLooksRight(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if !read(t, tab, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`)) {
		t.Errorf("%s: the page scrolls sideways", name)
	}
	small := read(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('button:not(.link), .button, input:not([type=hidden]):not([type=checkbox]), select, textarea')]
		.filter(e => e.getBoundingClientRect().height < 40).map(e => e.outerHTML.slice(0, 80))`))
	if len(small) > 0 {
		t.Errorf("%s: too small to tap: %v", name, small)
	}
	unlabelled := read(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
		.filter(e => !(e.labels && e.labels.length)).map(e => e.outerHTML.slice(0, 80))`))
	if len(unlabelled) > 0 {
		t.Errorf("%s: fields without a label: %v", name, unlabelled)
	}
	if dir := os.Getenv(screenshotsVar); dir != "" {
		png := read(t, tab, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// waitUntil waits for a condition on the page a form's answer brings,
// through the navigation (which briefly leaves no page to ask).
func waitUntil(t *testing.T, tab context.Context, condition string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](condition)); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", condition)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConsoleInABrowser is a person using the console in headless
// Chromium, on a phone and on a laptop, against the whole service.
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	r := startPublic(t, sqlstore.SQLite, map[string]string{"CALLSIGN_RATE_LIMIT": "100:200"})
	r.owner("owner@example.com")
	internet := &hits{}
	remote := httptest.NewServer(internet)
	t.Cleanup(remote.Close)

	tab := phone(t, browser)
	at := func(path string) chromedp.Action[chromedp.Void] { return chromedp.Navigate(r.baseURL + path) }
	text := func(sel string) string { t.Helper(); return read(t, tab, chromedp.Text(chromedp.CSS(sel))) }

	// Sign in; the console sends a signed-out person to the sign-in page.
	do(t, tab, at("/console/"), chromedp.WaitVisible(chromedp.ID("email")))
	consoleLooksRight(t, tab, "phone-signin")
	do(t, tab,
		chromedp.SendKeys(chromedp.ID("email"), "owner@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), ownerPassword),
		chromedp.Click(chromedp.CSS(`button.primary`)),
		chromedp.WaitVisible(chromedp.ID("new-h")),
	)

	// Create an identity with a phone number.
	do(t, tab,
		chromedp.SendKeys(chromedp.ID("name"), "Ada"),
		chromedp.SendKeys(chromedp.ID("email_identifier"), "ada"),
		chromedp.Click(chromedp.ID("provision_phone")),
		chromedp.Click(chromedp.CSS(`#new-h + form button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.filters`)),
	)
	if got := text(`.tabs .ident-name`); !strings.Contains(got, "ada@agents.test") || !strings.Contains(got, "+") {
		t.Fatalf("the new identity: %q", got)
	}
	mailURL := read(t, tab, chromedp.Location())
	consoleLooksRight(t, tab, "phone-mail-empty")

	// Mail arrives over SMTP while the page is open: the live indicator
	// says so; the page, reloaded, lists it.
	html := `<p>Hello <b>Ada</b>, the plan is attached.</p>` +
		`<script>fetch("` + remote.URL + `/script")</script>` +
		`<img src="` + remote.URL + `/pixel.gif" alt="tracker">` +
		`<img src="x" onerror="fetch('` + remote.URL + `/onerror')">`
	raw := "From: Bob <bob@example.org>\r\nTo: ada@agents.test\r\nSubject: The plan\r\nMessage-ID: <plan@example.org>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n" +
		"--b1\r\nContent-Type: multipart/alternative; boundary=b2\r\n\r\n" +
		"--b2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello Ada, the plan is attached.\r\n" +
		"--b2\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html + "\r\n--b2--\r\n" +
		"--b1\r\nContent-Type: text/plain; name=plan.txt\r\nContent-Disposition: attachment; filename=plan.txt\r\n\r\nstep one\r\n--b1--\r\n"
	do(t, tab, chromedp.Sleep(500*time.Millisecond)) // the script's first poll
	sendSMTP(t, r.svc.SMTPAddr(), "bob@example.org", []string{"ada@agents.test"}, raw)
	liveCtx, cancelLive := context.WithTimeout(tab, 25*time.Second)
	do(t, liveCtx, chromedp.WaitVisible(chromedp.CSS(`#live a`)))
	cancelLive()
	do(t, tab, chromedp.Click(chromedp.CSS(`#live a`)), chromedp.WaitVisible(chromedp.CSS(`.rows .row-title`)))
	if got := text(`.rows .row-title`); !strings.Contains(got, "The plan") {
		t.Fatalf("the thread list shows %q", got)
	}
	consoleLooksRight(t, tab, "phone-mail")

	// The thread: the HTML body in its sandbox ran no script and loaded no
	// remote image, until "Load images" is clicked.
	do(t, tab, chromedp.Click(chromedp.CSS(`.rows .row-title`)), chromedp.WaitVisible(chromedp.CSS(`iframe.body-html`)))
	if got := text(`.verdict`); got == "" {
		t.Error("no authentication verdict shown")
	}
	if got := text(`.attachments`); !strings.Contains(got, "plan.txt") {
		t.Errorf("attachments: %q", got)
	}
	do(t, tab, chromedp.Sleep(time.Second))
	consoleLooksRight(t, tab, "phone-thread")
	if seen := internet.seen(); len(seen) > 0 {
		t.Fatalf("the message reached the internet: %v", seen)
	}
	threadURL := read(t, tab, chromedp.Location())
	do(t, tab, chromedp.Click(chromedp.CSS(`a[href^="?images="]`)), chromedp.WaitVisible(chromedp.CSS(`iframe.body-html`)))
	poll(t, "the remote image, once asked for", func() bool { return len(internet.seen()) > 0 })
	do(t, tab, chromedp.Sleep(500*time.Millisecond))
	for _, p := range internet.seen() {
		if p != "/pixel.gif" {
			t.Errorf("with images loaded, the message still fetched %s", p)
		}
	}

	// Reply.
	do(t, tab,
		chromedp.Navigate(threadURL),
		chromedp.Click(chromedp.CSS(`a[href$="mode=reply"]`)),
		chromedp.WaitVisible(chromedp.ID("content")),
	)
	consoleLooksRight(t, tab, "phone-reply")
	do(t, tab,
		chromedp.SendKeys(chromedp.ID("content"), "Thanks Bob, on it."),
		chromedp.Click(chromedp.CSS(`form button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`article.message + article.message`)),
	)
	if got := text(`article.message:last-of-type`); !strings.Contains(got, "Thanks Bob, on it.") || !strings.Contains(got, "Sent by ada@agents.test") {
		t.Fatalf("the reply: %q", got)
	}

	// A key, created and shown once; it works, and once revoked it does not.
	do(t, tab, at("/console/keys/"),
		chromedp.SendKeys(chromedp.ID("name"), "browser test"),
		chromedp.Click(chromedp.CSS(`#new-h + form button.primary`)),
		chromedp.WaitVisible(chromedp.ID("new-key")),
	)
	key := strings.TrimSpace(text(`#new-key`))
	consoleLooksRight(t, tab, "phone-keys")
	if s := r.call("GET", "/api/health/whoami/", key, nil, nil); s != 200 {
		t.Fatalf("the new key: %d", s)
	}

	// A text arrives (through the simulator's webhook); reading it.
	var ident struct{ Phone string }
	idents := []struct {
		Name  string
		Phone string
	}{}
	if s := r.call("GET", "/api/identities/", key, nil, &idents); s != 200 || len(idents) != 1 {
		t.Fatalf("identities: %d %v", s, idents)
	}
	ident.Phone = idents[0].Phone
	if s := r.call("POST", "/webhooks/sim/sms/", key, map[string]string{"From": "+14155550123", "To": ident.Phone, "Body": "Are you there?"}, nil); s != 201 {
		t.Fatalf("inbound text: %d", s)
	}
	do(t, tab, chromedp.Navigate(strings.TrimSuffix(mailURL, "mail/")+"texts/"), chromedp.WaitVisible(chromedp.CSS(`.rows .row-title`)))
	consoleLooksRight(t, tab, "phone-texts")
	do(t, tab, chromedp.Click(chromedp.CSS(`.rows .row-title`)), chromedp.WaitVisible(chromedp.CSS(`.bubbles`)))
	if got := text(`.bubbles`); !strings.Contains(got, "Are you there?") || !strings.Contains(got, "unread") {
		t.Fatalf("the conversation: %q", got)
	}
	consoleLooksRight(t, tab, "phone-conversation")
	do(t, tab, chromedp.Click(chromedp.CSS(`form[action$="/read/"] button`)))
	waitUntil(t, tab, `document.readyState === "complete" && !document.querySelector('form[action$="/read/"]')`)
	if got := text(`.bubbles`); strings.Contains(got, "unread") {
		t.Fatalf("after marking read: %q", got)
	}

	// A secret, shown only after the password is typed again.
	do(t, tab, chromedp.Navigate(strings.TrimSuffix(mailURL, "mail/")+"vault/"),
		chromedp.SendKeys(chromedp.ID("sec-key"), "api_token"),
		chromedp.SendKeys(chromedp.ID("sec-value"), "tok-5521"),
		chromedp.Click(chromedp.CSS(`#addsec-h + form button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href*="/secrets/"]`)),
	)
	consoleLooksRight(t, tab, "phone-vault")
	do(t, tab, chromedp.Click(chromedp.CSS(`a[href*="/secrets/"]`)), chromedp.WaitVisible(chromedp.ID("password")))
	if strings.Contains(text(`main`), "tok-5521") {
		t.Fatal("the value shows before the password")
	}
	do(t, tab, chromedp.SendKeys(chromedp.ID("password"), ownerPassword), chromedp.Click(chromedp.CSS(`main form button.primary`)),
		chromedp.WaitVisible(chromedp.ID("value")))
	if got := text(`#value`); got != "tok-5521" {
		t.Fatalf("revealed %q", got)
	}
	consoleLooksRight(t, tab, "phone-reveal")

	// A form whose token was taken away is refused, and changes nothing.
	do(t, tab, at("/console/keys/"), chromedp.WaitVisible(chromedp.CSS(`form[action$="/revoke/"]`)))
	read(t, tab, chromedp.Evaluate[bool](`(document.querySelector('form[action$="/revoke/"] input[name=csrf_token]').value = "", true)`))
	do(t, tab,
		chromedp.Click(chromedp.CSS(`form[action$="/revoke/"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.error`)),
	)
	if got := text(`.error`); !strings.Contains(got, "This form has expired") {
		t.Fatalf("a form without its token: %q", got)
	}
	if s := r.call("GET", "/api/health/whoami/", key, nil, nil); s != 200 {
		t.Fatalf("the key after a refused revoke: %d", s)
	}

	// Revoke the key.
	do(t, tab, at("/console/keys/"), chromedp.WaitVisible(chromedp.ID("new-h")))
	read(t, tab, chromedp.Evaluate[bool](`([...document.querySelectorAll('tr')].find(tr => tr.textContent.includes('browser test')).querySelector('button').click(), true)`))
	waitUntil(t, tab, `document.readyState === "complete" && !document.body.textContent.includes("browser test")`)
	if s := r.call("GET", "/api/health/whoami/", key, nil, nil); s != 401 {
		t.Fatalf("a revoked key: %d", s)
	}

	// The same pages on a laptop (the phone's session, a wide window).
	laptop, cancelLaptop := chromedp.NewContext(tab)
	t.Cleanup(cancelLaptop)
	if err := chromedp.Do(laptop, chromedp.EmulateViewport(1280, 800)); err != nil { // its first run: on its own context (phone)
		t.Fatal(err)
	}
	for name, path := range map[string]string{"identities": "/console/", "mail": strings.TrimPrefix(mailURL, r.baseURL),
		"thread": strings.TrimPrefix(threadURL, r.baseURL), "keys": "/console/keys/", "domains": "/console/domains/", "events": "/console/events/",
		"vault": strings.TrimPrefix(strings.TrimSuffix(mailURL, "mail/")+"vault/", r.baseURL)} {
		do(t, laptop, chromedp.Navigate(r.baseURL+path), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		consoleLooksRight(t, laptop, "laptop-"+name)
	}
	do(t, tab, at("/console/"), chromedp.WaitVisible(chromedp.CSS(`.rows`)))
	consoleLooksRight(t, tab, "phone-identities")
}

// TestConsoleSignInWithProvider: with an OpenID Connect provider
// configured, the console signs in through it (the provider returns to
// the API's callback, which hands the session to the console).
func TestConsoleSignInWithProvider(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	idp := oidctest.Start(t, "callsign", "idp-secret", oidctest.Person{Subject: "p-1", Email: "Owner@Example.com", EmailVerified: true})
	r := startPublic(t, sqlstore.SQLite, map[string]string{
		"CALLSIGN_OIDC_ISSUER": idp.URL, "CALLSIGN_OIDC_CLIENT_ID": "callsign", "CALLSIGN_OIDC_CLIENT_SECRET": "idp-secret",
	})
	r.owner("owner@example.com")
	tab := phone(t, browser)
	do(t, tab, chromedp.Navigate(r.baseURL+"/console/"), chromedp.WaitVisible(chromedp.CSS(`form[action="/console/signin/provider/"] button`)))
	consoleLooksRight(t, tab, "phone-signin-provider")
	do(t, tab, chromedp.Click(chromedp.CSS(`form[action="/console/signin/provider/"] button`)), chromedp.WaitVisible(chromedp.ID("new-h")))
	if who := read(t, tab, chromedp.Text(chromedp.CSS(`.who`))); who != "owner@example.com" {
		t.Fatalf("signed in as %q", who)
	}
	// The device page's own session was not touched: it still asks to sign in.
	do(t, tab, chromedp.Navigate(r.baseURL+"/api/auth/device/verify/"), chromedp.WaitVisible(chromedp.ID("email")))
}
