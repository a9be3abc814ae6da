package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// person is a browser without a browser: a cookie jar on the console.
type person struct {
	t    testing.TB
	r    *running
	http *http.Client
}

func (r *running) person(t testing.TB) *person {
	jar, _ := cookiejar.New(nil)
	return &person{t: t, r: r, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// get fetches a console page: its status, location and body.
func (p *person) get(path string) (int, string, string) {
	p.t.Helper()
	res, err := p.http.Get(p.r.baseURL + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(body)
}

// token is the CSRF token the console's forms carry for this person.
func (p *person) token() string {
	p.t.Helper()
	s, loc, body := p.get("/console/signin/")
	if s == 303 { // signed in already
		_, _, body = p.get(loc)
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		p.t.Fatalf("no form token on the sign-in page:\n%s", body)
	}
	return m[1]
}

// post submits a form; the token is added unless the form has one (even empty).
func (p *person) post(path string, form url.Values) (int, string, string) {
	p.t.Helper()
	res, body := p.submit(path, form)
	return res.StatusCode, res.Header.Get("Location"), body
}

// submit is post with the whole response, its body read.
func (p *person) submit(path string, form url.Values) (*http.Response, string) {
	p.t.Helper()
	if _, ok := form["csrf_token"]; !ok {
		form.Set("csrf_token", p.token())
	}
	res, err := p.http.PostForm(p.r.baseURL+path, form)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func (p *person) signIn(email string) {
	p.t.Helper()
	if s, loc, body := p.post("/console/signin/", url.Values{"email": {email}, "password": {ownerPassword}}); s != 303 || loc != "/console/" {
		p.t.Fatalf("sign-in: %d %s %s", s, loc, body)
	}
}

// TestConsoleGuards holds the console to its promises over HTTP: sign-in
// with the password (rate limited), a session cookie as the device page's,
// CSRF on every form, other accounts' objects not found, and mail shown
// and downloaded safely.
func TestConsoleGuards(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := startPublic(t, d, map[string]string{"CALLSIGN_RATE_LIMIT": "100:200", "CALLSIGN_LOG_LEVEL": "info"})
		r.owner("owner@example.com")
		r.owner("other@example.com")
		ann := r.person(t)

		if s, loc, _ := ann.get("/console/"); s != 303 || loc != "/console/signin/" {
			t.Fatalf("signed out: %d %s", s, loc)
		}
		if s, loc, _ := ann.get("/console/threads/x/"); s != 303 || loc != "/console/signin/?next=%2Fconsole%2Fthreads%2Fx%2F" {
			t.Fatalf("signed out, deeper: %d %s", s, loc)
		}
		if s, _, body := ann.post("/console/signin/", url.Values{"email": {"owner@example.com"}, "password": {"wrong"}}); s != 401 || !strings.Contains(body, "Wrong email or password") {
			t.Fatalf("wrong password: %d", s)
		}
		if s, _, _ := ann.post("/console/signin/", url.Values{"email": {"owner@example.com"}, "password": {ownerPassword}, "csrf_token": {""}}); s != 403 {
			t.Fatalf("sign-in without a token: %d", s)
		}
		ann.signIn("owner@example.com")
		var session *http.Cookie
		for _, ck := range ann.http.Jar.Cookies(mustURL(t, r.baseURL+"/console/")) {
			if ck.Name == "callsign_console_session" {
				session = ck
			}
		}
		if session == nil {
			t.Fatal("no session cookie")
		}
		// The cookie's attributes, as the server set them.
		res, err := ann.http.PostForm(r.baseURL+"/console/signin/", url.Values{"csrf_token": {ann.token()}, "email": {"owner@example.com"}, "password": {ownerPassword}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		setCookie := strings.Join(res.Header.Values("Set-Cookie"), "\n")
		for _, want := range []string{"callsign_console_session=", "Path=/console/", "Max-Age=43200", "HttpOnly", "SameSite=Lax"} {
			if !strings.Contains(setCookie, want) {
				t.Errorf("session cookie lacks %q: %s", want, setCookie)
			}
		}

		// A form without its token changes nothing.
		if s, _, body := ann.post("/console/identities/", url.Values{"name": {"Forged"}, "csrf_token": {"forged"}}); s != 403 || !strings.Contains(body, "This form has expired") {
			t.Fatalf("forged form: %d", s)
		}
		if _, _, body := ann.get("/console/"); strings.Contains(body, "Forged") {
			t.Fatal("a forged form made an identity")
		}
		s, loc, _ := ann.post("/console/identities/", url.Values{"name": {"Ada"}, "email_identifier": {"ada"}})
		if s != 303 || !strings.HasPrefix(loc, "/console/identities/") {
			t.Fatalf("create: %d %s", s, loc)
		}
		adaPath := strings.TrimSuffix(loc, "mail/")

		htmlBody := "<p>Hello <b>Ada</b></p><script>document.title='ran'</script><img src=\"http://127.0.0.1:9/pixel.png\" onerror=\"x()\">"
		raw := "From: Bob <bob@example.org>\r\nTo: ada@agents.test\r\nSubject: Plans\r\nMessage-ID: <plans@example.org>\r\n" +
			"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n" +
			"--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + htmlBody + "\r\n" +
			"--b1\r\nContent-Type: text/html; name=page.html\r\nContent-Disposition: attachment; filename=page.html\r\n\r\n<script>alert(1)</script>\r\n--b1--\r\n"
		sendSMTP(t, r.svc.SMTPAddr(), "bob@example.org", []string{"ada@agents.test"}, raw)
		_, _, mail := ann.get(adaPath + "mail/")
		thread := regexp.MustCompile(`href="(/console/threads/[^"]+)"`).FindStringSubmatch(mail)
		if thread == nil || !strings.Contains(mail, "Plans") {
			t.Fatalf("the mail page:\n%s", mail)
		}
		_, _, page := ann.get(thread[1])
		frame := regexp.MustCompile(`<iframe[^>]*src="(/console/messages/\d+/body/)"[^>]*sandbox="([^"]*)"`).FindStringSubmatch(page)
		// The frame keeps the console's origin only so that the console can
		// size it: nothing may run in it (no allow-scripts, here or in its CSP).
		if frame == nil || strings.Contains(frame[2], "allow-scripts") {
			t.Fatalf("the HTML body's frame: %v\n%s", frame, page)
		}
		res, err = ann.http.Get(r.baseURL + frame[1])
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		csp := res.Header.Get("Content-Security-Policy")
		if strings.Contains(string(body), "<script") || strings.Contains(string(body), "onerror") || !strings.Contains(string(body), "<b>Ada</b>") ||
			!strings.HasPrefix(csp, "sandbox") || strings.Contains(csp, "allow-scripts") || strings.Contains(csp, "script-src") ||
			!strings.Contains(csp, "default-src 'none'") || !strings.HasSuffix(csp, "img-src data:") {
			t.Fatalf("the body: %s\n%s", csp, body)
		}
		attachment := regexp.MustCompile(`href="(/console/attachments/[^"]+)"`).FindStringSubmatch(page)
		res, err = ann.http.Get(r.baseURL + attachment[1])
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.Header.Get("Content-Disposition") != "attachment; filename=page.html" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("attachment headers: %v", res.Header)
		}

		// Fifty threads to a page; "Older" continues after the last one.
		for n := range 55 {
			sendSMTP(t, r.svc.SMTPAddr(), "bob@example.org", []string{"ada@agents.test"}, plainMail("ada@agents.test", fmt.Sprintf("p%d@example.org", n), fmt.Sprintf("Paged %d", n)))
		}
		rows := regexp.MustCompile(`class="row-title" href="/console/threads/`)
		_, _, first := ann.get(adaPath + "mail/")
		next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(first)
		if n := len(rows.FindAllString(first, -1)); n != 50 || next == nil || !strings.Contains(first, "Paged 54") {
			t.Fatalf("the first page: %d threads, next %v", n, next)
		}
		_, _, second := ann.get(html.UnescapeString(next[1]))
		if n := len(rows.FindAllString(second, -1)); n != 6 || !strings.Contains(second, "Plans") || strings.Contains(second, `rel="next"`) ||
			!strings.Contains(second, ">Newest<") {
			t.Fatalf("the second page: %d threads\n%s", n, second)
		}

		// Search.
		if _, _, found := ann.get(adaPath + "mail/?q=plans"); !strings.Contains(found, "Plans") || strings.Contains(found, "Paged") {
			t.Fatalf("searching for plans:\n%s", found)
		}
		if s, _, _ := ann.get(adaPath + "mail/?q=" + url.QueryEscape(strings.Repeat("x", 2000))); s != 400 {
			t.Fatalf("a search too long: %d", s)
		}

		// A secret: stored, listed without its value, shown after the
		// password is typed again, and logged without the value.
		if s, _, _ := ann.post(adaPath+"secrets/", url.Values{"key": {"api_token"}, "value": {"tok-9431-value"}}); s != 303 {
			t.Fatalf("store a secret: %d", s)
		}
		_, _, vault := ann.get(adaPath + "vault/")
		reveal := regexp.MustCompile(`href="(/console/secrets/[^"]+/reveal/)"`).FindStringSubmatch(vault)
		if reveal == nil || strings.Contains(vault, "tok-9431-value") {
			t.Fatalf("the vault page:\n%s", vault)
		}
		if s, _, body := ann.post(reveal[1], url.Values{"password": {"wrong"}}); s != 401 || strings.Contains(body, "tok-9431-value") {
			t.Fatalf("reveal with a wrong password: %d", s)
		}
		if s, _, body := ann.post(reveal[1], url.Values{"password": {ownerPassword}}); s != 200 || !strings.Contains(body, "tok-9431-value") {
			t.Fatalf("reveal: %d", s)
		}
		if _, _, again := ann.get(reveal[1]); strings.Contains(again, "tok-9431-value") {
			t.Fatal("the value shows again without the password")
		}
		if logs := r.logs(); !regexp.MustCompile(`"vault value revealed".*account=\S+ identity=\S+ secret=\S+ by=console`).MatchString(logs) ||
			strings.Contains(logs, "tok-9431-value") {
			t.Errorf("the log of the reveal:\n%s", logs)
		}

		// Another account sees none of it.
		bea := r.person(t)
		bea.signIn("other@example.com")
		for _, path := range []string{adaPath + "mail/", adaPath + "delete/", adaPath + "texts/", adaPath + "contacts/", adaPath + "vault/",
			adaPath + "phone/", thread[1], frame[1], strings.TrimSuffix(frame[1], "body/"), strings.TrimSuffix(frame[1], "body/") + "?download=1",
			attachment[1], reveal[1]} {
			if s, _, _ := bea.get(path); s != 404 {
				t.Errorf("another account's %s: %d", path, s)
			}
		}
		if s, _, _ := bea.post(adaPath+"delete/", url.Values{"confirm": {"yes"}}); s != 404 {
			t.Errorf("deleting another account's identity: %d", s)
		}
		if s, _, body := bea.post(reveal[1], url.Values{"password": {ownerPassword}}); s != 404 || strings.Contains(body, "tok-9431-value") {
			t.Errorf("revealing another account's secret: %d", s)
		}

		// Write a message with an attachment: it goes out, in a thread of
		// its own, with the file.
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		_ = mw.WriteField("csrf_token", ann.token())
		_ = mw.WriteField("to", "carol@example.net")
		_ = mw.WriteField("subject", "Report")
		_ = mw.WriteField("content", "Attached.")
		fw, _ := mw.CreateFormFile("attachments", "report.csv")
		_, _ = fw.Write([]byte("a,b\n1,2\n"))
		_ = mw.Close()
		res, err = ann.http.Post(r.baseURL+adaPath+"compose/", mw.FormDataContentType(), &form)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); res.StatusCode != 303 || !strings.HasPrefix(loc, "/console/threads/") {
			t.Fatalf("compose: %d %s", res.StatusCode, loc)
		}
		if _, _, sent := ann.get(res.Header.Get("Location")); !strings.Contains(sent, "Sent by ada@agents.test") || !strings.Contains(sent, "report.csv") ||
			!strings.Contains(sent, "carol@example.net") {
			t.Fatalf("the sent message:\n%s", sent)
		}

		// Delete an identity: the page says what goes; confirming deletes it.
		_, loc, _ = ann.post("/console/identities/", url.Values{"name": {"Temp"}})
		tempPath := strings.TrimSuffix(loc, "mail/")
		if _, _, confirm := ann.get(tempPath + "delete/"); !strings.Contains(confirm, "deletes its inboxes") || strings.Contains(confirm, "confirm=true") {
			t.Fatalf("the confirmation page:\n%s", confirm)
		}
		if s, loc, _ := ann.post(tempPath+"delete/", url.Values{"confirm": {"yes"}}); s != 303 || loc != "/console/" {
			t.Fatalf("delete: %d %s", s, loc)
		}
		if s, _, _ := ann.get(tempPath + "mail/"); s != 404 {
			t.Fatalf("a deleted identity's mail: %d", s)
		}

		// Sign-out ends the session.
		if s, loc, _ := ann.post("/console/signout/", url.Values{}); s != 303 || loc != "/console/signin/" {
			t.Fatalf("sign-out: %d %s", s, loc)
		}
		if s, _, _ := ann.get(adaPath + "mail/"); s != 303 {
			t.Fatalf("after sign-out: %d", s)
		}
	})
}

// TestConsoleSignInIsRateLimited: wrong passwords of one email from one
// address share the API's bucket of guesses; past it the page answers 429.
func TestConsoleSignInIsRateLimited(t *testing.T) {
	t.Parallel()
	r := startPublic(t, sqlstore.SQLite, map[string]string{"CALLSIGN_RATE_LIMIT": "100:200"})
	r.owner("owner@example.com")
	p := r.person(t)
	// Ten guesses, then one every six seconds: on a slow machine a guess
	// may refill while the others are checked, so count the wrong
	// passwords answered before the first 429 against the time they took.
	began, wrong := time.Now(), 0
	var throttled time.Time
	var retryAfter time.Duration
	for {
		res, _ := p.submit("/console/signin/", url.Values{"email": {"owner@example.com"}, "password": {"guess"}})
		if s := res.StatusCode; s == 429 {
			throttled = time.Now()
			seconds, err := strconv.Atoi(res.Header.Get("Retry-After"))
			if err != nil || seconds < 1 || seconds > 6 {
				t.Fatalf("Retry-After %q: want the seconds until a guess refills (1 to 6)", res.Header.Get("Retry-After"))
			}
			retryAfter = time.Duration(seconds) * time.Second
			break
		} else if s != 401 {
			t.Fatalf("wrong password: %d", s)
		}
		if wrong++; wrong > 10+int(time.Since(began)/(6*time.Second))+1 {
			t.Fatalf("%d wrong passwords in %s and none throttled", wrong, time.Since(began))
		}
	}
	if wrong < 10 {
		t.Fatalf("throttled after %d wrong passwords; the bucket holds 10", wrong)
	}
	// The right password waits too, until the bucket refills. Retry-After
	// rounds the wait up to whole seconds, and the guesses above may have
	// refilled part of a guess (one in six seconds) while a loaded machine
	// answered them, so the wait may be up to a second shorter than it says.
	s, _, body := p.post("/console/signin/", url.Values{"email": {"owner@example.com"}, "password": {ownerPassword}})
	if refilled := time.Since(throttled) >= retryAfter-time.Second; (s != 429 || !strings.Contains(body, "throttled")) && !(refilled && s == 303) {
		t.Fatalf("right password %s after the 429 (Retry-After %s): %d", time.Since(throttled), retryAfter, s)
	}
	// Another account's right password from the same address is not held
	// back by those guesses.
	r.owner("colleague@example.com")
	if s, _, _ := r.person(t).post("/console/signin/", url.Values{"email": {"colleague@example.com"}, "password": {ownerPassword}}); s != 303 {
		t.Fatalf("another account's sign-in from the same address: %d", s)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestConsoleLiveStream: the console's stream tells a person when their
// own mail arrives, and tells another account nothing; the events page
// lists what the log kept.
func TestConsoleLiveStream(t *testing.T) {
	t.Parallel()
	r := startPublic(t, sqlstore.SQLite, nil)
	r.owner("owner@example.com")
	r.owner("other@example.com")
	ann, bea := r.person(t), r.person(t)
	ann.signIn("owner@example.com")
	bea.signIn("other@example.com")
	if s, _, _ := ann.post("/console/identities/", url.Values{"name": {"Ada"}, "email_identifier": {"ada"}}); s != 303 {
		t.Fatalf("create: %d", s)
	}
	// listen reads a stream's lines into a channel.
	listen := func(p *person) <-chan string {
		res, err := p.http.Get(r.baseURL + "/console/stream/")
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
		lines := make(chan string, 16)
		go func() {
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if sc.Text() != "" {
					lines <- sc.Text()
				}
			}
			close(lines)
		}()
		if first := <-lines; first != ": live" {
			t.Fatalf("the stream began with %q", first)
		}
		return lines
	}
	annLines, beaLines := listen(ann), listen(bea)
	sendSMTP(t, r.svc.SMTPAddr(), "bob@example.org", []string{"ada@agents.test"}, plainMail("ada@agents.test", "live@example.org", "Live"))
	select {
	case line := <-annLines:
		if line != "event: changed" {
			t.Fatalf("ann's stream said %q", line)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ann's stream said nothing of her new mail")
	}
	select {
	case line := <-beaLines:
		t.Fatalf("another account's stream said %q", line)
	case <-time.After(3 * time.Second):
	}
	_, _, events := ann.get("/console/events/")
	// The type filter names every type, so a row is known by its payload.
	if !strings.Contains(events, "email.received") || !strings.Contains(events, "identity.created") || !strings.Contains(events, "live@example.org") {
		t.Fatalf("the events page:\n%s", events)
	}
	if _, _, other := bea.get("/console/events/"); strings.Contains(other, "live@example.org") {
		t.Fatal("another account's events page shows ann's mail")
	}
}

// TestConsoleWebhooks: add a webhook (its secret shown once), send it a
// test, see the delivery log, remove it; another account sees none of it.
func TestConsoleWebhooks(t *testing.T) {
	t.Parallel()
	var got atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Webhook-Signature") != "" {
			got.Add(1)
		}
	}))
	t.Cleanup(receiver.Close)
	r := startPublic(t, sqlstore.SQLite, map[string]string{"CALLSIGN_WEBHOOK_ALLOW_PRIVATE": "true"})
	r.owner("owner@example.com")
	r.owner("other@example.com")
	ann, bea := r.person(t), r.person(t)
	ann.signIn("owner@example.com")
	bea.signIn("other@example.com")
	s, _, page := ann.post("/console/webhooks/", url.Values{"url": {receiver.URL + "/hook"}, "event_types": {"email.received"}})
	if s != 201 || !regexp.MustCompile(`id="new-secret">whsec_`).MatchString(page) {
		t.Fatalf("add: %d\n%s", s, page)
	}
	hook := regexp.MustCompile(`href="(/console/webhooks/[^"]+/)"`).FindStringSubmatch(page)
	if hook == nil {
		t.Fatal("no link to the webhook")
	}
	if _, _, again := ann.get("/console/webhooks/"); strings.Contains(again, "whsec_") {
		t.Fatal("the secret shows again")
	}
	if s, _, tested := ann.post(hook[1]+"test/", url.Values{}); s != 200 || !strings.Contains(tested, "Test delivered") || got.Load() != 1 {
		t.Fatalf("test: %d %d\n%s", s, got.Load(), tested)
	}
	for _, path := range []string{hook[1]} {
		if s, _, _ := bea.get(path); s != 404 {
			t.Errorf("another account's %s: %d", path, s)
		}
	}
	for _, action := range []string{"enabled/", "rotate-secret/", "deliveries/1/retry/"} {
		if s, _, _ := bea.post(hook[1]+action, url.Values{"enabled": {"0"}}); s != 404 {
			t.Errorf("another account's %s: %d", action, s)
		}
		if s, _, _ := ann.post(hook[1]+action, url.Values{"csrf_token": {"forged"}}); s != 403 {
			t.Errorf("%s without the form's token: %d", action, s)
		}
	}
	if s, loc, _ := ann.post(hook[1]+"enabled/", url.Values{"enabled": {"0"}}); s != 303 || loc != hook[1] {
		t.Fatalf("turn off: %d %s", s, loc)
	}
	if _, _, off := ann.get(hook[1]); !strings.Contains(off, `id="state">off`) {
		t.Fatalf("after turning it off:\n%s", off)
	}
	if s, _, rotated := ann.post(hook[1]+"rotate-secret/", url.Values{}); s != 200 || !regexp.MustCompile(`id="new-secret">whsec_`).MatchString(rotated) {
		t.Fatalf("rotate: %d\n%s", s, rotated)
	}
	if _, _, again := ann.get(hook[1]); strings.Contains(again, "whsec_") {
		t.Fatal("the rotated secret shows again")
	}
	if s, _, _ := bea.post(hook[1]+"delete/", url.Values{}); s != 404 {
		t.Errorf("another account removing it: %d", s)
	}
	if s, loc, _ := ann.post(hook[1]+"delete/", url.Values{}); s != 303 || loc != "/console/webhooks/" {
		t.Fatalf("remove: %d %s", s, loc)
	}
	if s, _, _ := ann.get(hook[1]); s != 404 {
		t.Fatalf("a removed webhook: %d", s)
	}
}
