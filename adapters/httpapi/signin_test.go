package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// The verification page answers HTML, which the OpenAPI check reads as text.
func init() { openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder) }

const password = "a long enough password"

// signInHarness is the API with password hashing, tokens and a sign-in
// provider, and options of the test's choosing.
type signInHarness struct {
	*harness
	idp *memory.SignInProvider
}

func newSignInHarness(t *testing.T, opts Options) *signInHarness {
	idp := &memory.SignInProvider{}
	h := newHarnessWith(t, func(d *app.Deps) {
		d.Hasher, d.Tokens, d.ExternalSignIn = memory.Hasher{}, &memory.Tokens{}, idp
	})
	opts.Log = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.BaseURL = "http://api.test"
	h.h = New(h.app, opts)
	return &signInHarness{harness: h, idp: idp}
}

// owner creates an account with a password and returns it.
func (h *signInHarness) owner(email string) core.Account {
	h.t.Helper()
	b, err := h.app.Accounts.Create(context.Background(), email, password)
	if err != nil {
		h.t.Fatal(err)
	}
	return b.Account
}

// browser keeps cookies across requests to the API, like a browser would.
type browser struct {
	h       *harness
	cookies map[string]*http.Cookie
	addr    string // the client address; "" for httptest's default
}

func (h *harness) browser() *browser { return &browser{h: h, cookies: map[string]*http.Cookie{}} }

func (b *browser) send(req *http.Request) *response {
	b.h.t.Helper()
	for _, c := range b.cookies {
		if strings.HasPrefix(req.URL.Path, c.Path) {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
	if b.addr != "" {
		req.RemoteAddr = b.addr + ":4321"
	}
	res := b.h.serve(req)
	for _, c := range (&http.Response{Header: res.Header}).Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return res
}

func (b *browser) get(target string) *response {
	return b.send(httptest.NewRequest("GET", target, nil))
}

func (b *browser) post(target string, form url.Values) *response {
	req := httptest.NewRequest("POST", target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.send(req)
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf is the token of the last page's forms.
func csrf(t testing.TB, page *response) string {
	t.Helper()
	m := csrfField.FindSubmatch(page.Body)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", page.Body)
	}
	return string(m[1])
}

// form posts one of the page's forms, with the page's CSRF token.
func (b *browser) form(page *response, fields url.Values) *response {
	fields.Set("csrf_token", csrf(b.h.t, page))
	return b.post(verifyPath, fields)
}

func (r *response) contains(t testing.TB, texts ...string) *response {
	t.Helper()
	for _, text := range texts {
		if !strings.Contains(string(r.Body), text) {
			t.Fatalf("the response lacks %q:\n%s", text, r.Body)
		}
	}
	return r
}

func TestPasswordSignInAndJWTs(t *testing.T) {
	h := newSignInHarness(t, Options{})
	acct := h.owner("owner@example.com")
	res := h.do("POST", "/api/auth/token/", map[string]any{"email": "Owner@Example.com", "password": password}, "").want(t, 200)
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token response cache control %q", res.Header.Get("Cache-Control"))
	}
	var pair struct{ Access, Refresh string }
	res.decode(t, &pair)
	who := h.do("GET", "/api/health/whoami/", nil, pair.Access).want(t, 200).object(t)
	if who["account"] != acct.ID || who["key_type"] != "management" || who["identity"] != nil || who["key_prefix"] != "jwt" {
		t.Fatalf("whoami with a token: %v", who)
	}
	// With the rights of a management key.
	h.do("POST", "/api/auth/keys/management/", map[string]any{"name": "from a token"}, pair.Access).want(t, 201)
	h.do("POST", "/api/identities/", map[string]any{"name": "made with a token"}, pair.Access).want(t, 201)

	// Form bodies work as well as JSON.
	form := url.Values{"refresh": {pair.Refresh}}
	refreshed := h.raw("POST", "/api/auth/token/refresh/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), "").want(t, 200).object(t)
	access, next := refreshed["access"].(string), refreshed["refresh"].(string)
	h.do("GET", "/api/health/whoami/", nil, access).want(t, 200)

	// Expiry: the access token lasts 15 minutes, the sign-in 7 days.
	h.clock.Advance(app.AccessTokenLifetime)
	h.do("GET", "/api/health/whoami/", nil, access).want(t, 401)
	h.do("POST", "/api/auth/token/refresh/", map[string]any{"refresh": next}, "").want(t, 200).decode(t, &pair)
	h.clock.Advance(app.RefreshTokenLifetime)
	h.do("POST", "/api/auth/token/refresh/", map[string]any{"refresh": pair.Refresh}, "").want(t, 401)

	// A token of a deleted account.
	h.do("POST", "/api/auth/token/", map[string]any{"email": "owner@example.com", "password": password}, "").want(t, 200).decode(t, &pair)
	if err := h.app.Accounts.Delete(context.Background(), acct.ID); err != nil {
		t.Fatal(err)
	}
	h.do("GET", "/api/health/whoami/", nil, pair.Access).want(t, 401)
	h.do("POST", "/api/auth/token/refresh/", map[string]any{"refresh": pair.Refresh}, "").want(t, 401)
}

func TestWrongCredentialsGetOneAnswer(t *testing.T) {
	h := newSignInHarness(t, Options{})
	h.owner("owner@example.com")
	var first []byte
	for _, body := range []map[string]any{
		{"email": "owner@example.com", "password": "not the password"},
		{"email": "nobody@example.com", "password": password},
		{"email": "not an address", "password": password},
	} {
		res := h.do("POST", "/api/auth/token/", body, "").want(t, 401)
		if first == nil {
			first = res.Body
		}
		if string(res.Body) != string(first) {
			t.Fatalf("%v answered %s, unlike %s", body, res.Body, first)
		}
	}
	missing := h.do("POST", "/api/auth/token/", map[string]any{"email": " "}, "").want(t, 400).object(t)
	if missing["email"] == nil || missing["password"] == nil {
		t.Fatalf("missing fields: %v", missing)
	}
	h.do("POST", "/api/auth/token/", map[string]any{"email": 1, "password": password}, "").want(t, 400)
	h.do("POST", "/api/auth/token/refresh/", nil, "").want(t, 400)
	for _, bad := range []string{"nonsense", "memtok.forged", strings.Repeat("x", 300)} {
		h.do("POST", "/api/auth/token/refresh/", map[string]any{"refresh": bad}, "").want(t, 401)
		h.do("GET", "/api/health/whoami/", nil, bad).want(t, 401)
	}
	// An access token does not refresh, a refresh token does not authenticate.
	var pair struct{ Access, Refresh string }
	h.do("POST", "/api/auth/token/", map[string]any{"email": "owner@example.com", "password": password}, "").want(t, 200).decode(t, &pair)
	h.do("POST", "/api/auth/token/refresh/", map[string]any{"refresh": pair.Access}, "").want(t, 401)
	h.do("GET", "/api/health/whoami/", nil, pair.Refresh).want(t, 401)
}

// poll asks for the device's keys.
func (h *signInHarness) poll(deviceCode string) *response {
	return h.do("POST", "/api/auth/device/token/", map[string]any{"device_code": deviceCode, "grant_type": deviceGrantType}, "")
}

func oauthErrorOf(t *testing.T, r *response) string {
	t.Helper()
	r.want(t, 400)
	body := r.object(t)
	if _, drf := body["detail"]; drf || body["error_description"] == nil {
		t.Fatalf("not the RFC's error shape: %s", r.Body)
	}
	return body["error"].(string)
}

type deviceStart struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

func (h *signInHarness) startDevice(clientName string) deviceStart {
	h.t.Helper()
	var st deviceStart
	h.do("POST", "/api/auth/device/", map[string]any{"client_name": clientName}, "").want(h.t, 200).decode(h.t, &st)
	return st
}

// signIn signs a browser in on the page for the device's code.
func (h *signInHarness) signIn(b *browser, st deviceStart, email string) *response {
	h.t.Helper()
	page := b.get(verifyPath+"?"+url.Values{"user_code": {strings.ToLower(st.UserCode)}}.Encode()).want(h.t, 200)
	page.contains(h.t, "Sign in", `value="`+st.UserCode+`"`)
	res := b.form(page, url.Values{"action": {"signin"}, "user_code": {st.UserCode}, "email": {email}, "password": {password}}).want(h.t, 303)
	if loc := res.Header.Get("Location"); loc != verifyPath+"?user_code="+st.UserCode {
		h.t.Fatalf("after signing in, to %q", loc)
	}
	return b.get(res.Header.Get("Location")).want(h.t, 200)
}

func TestDeviceLoginOverHTTP(t *testing.T) {
	h := newSignInHarness(t, Options{})
	h.owner("owner@example.com")
	st := h.startDevice("laptop <cli>")
	if !regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`).MatchString(st.UserCode) ||
		st.VerificationURI != "http://api.test/api/auth/device/verify/" || st.VerificationURIComplete != st.VerificationURI+"?user_code="+st.UserCode ||
		st.ExpiresIn != 900 || st.Interval != 5 || len(st.DeviceCode) < 40 {
		t.Fatalf("start: %+v", st)
	}
	if got := oauthErrorOf(t, h.poll(st.DeviceCode)); got != "authorization_pending" {
		t.Fatalf("first poll: %s", got)
	}
	if got := oauthErrorOf(t, h.poll(st.DeviceCode)); got != "slow_down" {
		t.Fatalf("second poll at once: %s", got)
	}

	b := h.browser()
	wrong := b.get(verifyPath).want(t, 200)
	wrong = b.form(wrong, url.Values{"action": {"signin"}, "user_code": {st.UserCode}, "email": {"owner@example.com"}, "password": {"wrong"}}).want(t, 401)
	wrong.contains(t, "Wrong email or password.", `value="owner@example.com"`)
	if _, ok := b.cookies[sessionCookie]; ok {
		t.Fatal("a failed sign-in set a session")
	}
	approve := h.signIn(b, st, "owner@example.com")
	approve.contains(t, "laptop &lt;cli&gt;", st.UserCode, "A new identity", "The whole account", "Approve", "Deny", "Signed in as owner@example.com")
	// Before approving, one sentence says what the device gets: by default an identity key.
	approve.contains(t, `class="grant grant-identity" id="grant-identity">It gets a key for the one identity you chose`,
		`class="grant grant-management off" id="grant-management">It gets a management key`)
	// When and from where the device asked (httptest's client address).
	approve.contains(t, `Requested at <time datetime="2026-11-21T08:00:00Z">08:00 UTC on 21 November 2026</time> from 192.0.2.1.`)
	done := b.form(approve, url.Values{"action": {"approve"}, "user_code": {st.UserCode}, "identity": {"new"}, "identity_name": {"Laptop Agent"}}).want(t, 200)
	done.contains(t, "Device connected")

	h.clock.Advance(11 * time.Second)
	keys := h.poll(st.DeviceCode).want(t, 200).object(t)
	ident := keys["identity"].(map[string]any)
	if _, more := keys["management_key"]; more || ident["name"] != "Laptop Agent" {
		t.Fatalf("keys: %v", keys)
	}
	idk := h.do("GET", "/api/health/whoami/", nil, keys["identity_key"].(string)).want(t, 200).object(t)
	if idk["key_type"] != "identity" || idk["identity"] != ident["uuid"] {
		t.Fatalf("whoami: %v", idk)
	}
	named := h.do("GET", "/api/auth/keys/identity/", nil, keys["identity_key"].(string)).want(t, 200).list(t)
	if len(named) != 1 || named[0]["name"] != "device login: laptop <cli>" {
		t.Fatalf("key names: %v", named)
	}
	if got := oauthErrorOf(t, h.poll(st.DeviceCode)); got != "invalid_grant" {
		t.Fatalf("a redeemed code: %s", got)
	}
	// The page no longer knows the code either.
	b.get(verifyPath+"?user_code="+st.UserCode).want(t, 400).contains(t, "not valid, was already used, or has expired")

	// A second device: the person is still signed in and picks the identity made above.
	st2 := h.startDevice("")
	page := b.get(verifyPath+"?user_code="+st2.UserCode).want(t, 200).contains(t, "A device", "Laptop Agent")
	b.form(page, url.Values{"action": {"approve"}, "user_code": {st2.UserCode}, "identity": {ident["uuid"].(string)}}).want(t, 200)
	if again := h.poll(st2.DeviceCode).want(t, 200).object(t); again["identity"].(map[string]any)["uuid"] != ident["uuid"] {
		t.Fatalf("second device: %v", again)
	}

	// A third asks for a management key: the page preselects it and says so; approved, it gets that key alone.
	var st3 deviceStart
	h.do("POST", "/api/auth/device/", map[string]any{"client_name": "ops", "key_type": "management"}, "").want(t, 200).decode(t, &st3)
	page = b.get(verifyPath+"?user_code="+st3.UserCode).want(t, 200)
	page.contains(t, `value="management" checked`, `class="grant grant-identity off"`, `class="grant grant-management" id="grant-management">It gets a management key`)
	b.form(page, url.Values{"action": {"approve"}, "user_code": {st3.UserCode}, "identity": {"management"}}).want(t, 200)
	h.clock.Advance(11 * time.Second)
	mk := h.poll(st3.DeviceCode).want(t, 200).object(t)
	if _, more := mk["identity_key"]; more || mk["identity"] != nil {
		t.Fatalf("a management grant: %v", mk)
	}
	if who := h.do("GET", "/api/health/whoami/", nil, mk["management_key"].(string)).want(t, 200).object(t); who["key_type"] != "management" {
		t.Fatalf("whoami: %v", who)
	}
	// A client that names an identity has it preselected; it cannot ask for both.
	var st4 deviceStart
	h.do("POST", "/api/auth/device/", map[string]any{"identity": "laptop agent"}, "").want(t, 200).decode(t, &st4)
	b.get(verifyPath+"?user_code="+st4.UserCode).want(t, 200).contains(t, `value="`+ident["uuid"].(string)+`" checked`)
	h.do("POST", "/api/auth/device/", map[string]any{"identity": "x", "key_type": "management"}, "").want(t, 400).contains(t, "identity")
	h.do("POST", "/api/auth/device/", map[string]any{"key_type": "root"}, "").want(t, 400).contains(t, "key_type")
}

func TestDeviceTokenErrorsUseTheRFCShape(t *testing.T) {
	h := newSignInHarness(t, Options{})
	st := h.startDevice("")
	for name, tc := range map[string]struct {
		body map[string]any
		want string
	}{
		"no device code":    {map[string]any{"grant_type": deviceGrantType}, "invalid_request"},
		"device code typed": {map[string]any{"device_code": 7}, "invalid_request"},
		"other grant type":  {map[string]any{"device_code": st.DeviceCode, "grant_type": "password"}, "unsupported_grant_type"},
		"unknown code":      {map[string]any{"device_code": "nope"}, "invalid_grant"},
		"no grant type":     {map[string]any{"device_code": st.DeviceCode}, "authorization_pending"},
	} {
		if got := oauthErrorOf(t, h.do("POST", "/api/auth/device/token/", tc.body, "")); got != tc.want {
			t.Errorf("%s: %s, want %s", name, got, tc.want)
		}
	}
	if got := oauthErrorOf(t, h.raw("POST", "/api/auth/device/token/", "application/json", strings.NewReader("{"), "")); got != "invalid_request" {
		t.Fatalf("malformed body: %s", got)
	}
	bad := h.do("POST", "/api/auth/device/", map[string]any{"client_name": strings.Repeat("n", 101)}, "").want(t, 400).object(t)
	if bad["client_name"] == nil {
		t.Fatalf("long client name: %v", bad)
	}

	// Denied, and expired.
	owner := h.owner("owner@example.com")
	if err := h.app.Device.Deny(context.Background(), owner.ID, st.UserCode); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(10 * time.Second)
	if got := oauthErrorOf(t, h.poll(st.DeviceCode)); got != "access_denied" {
		t.Fatalf("denied: %s", got)
	}
	late := h.startDevice("")
	h.clock.Advance(app.DeviceCodeLifetime)
	if got := oauthErrorOf(t, h.poll(late.DeviceCode)); got != "expired_token" {
		t.Fatalf("expired: %s", got)
	}
}

func TestVerifyPageForms(t *testing.T) {
	h := newSignInHarness(t, Options{})
	h.owner("owner@example.com")
	st := h.startDevice("cli")
	b := h.browser()
	approve := h.signIn(b, st, "owner@example.com")
	if c := b.cookies[sessionCookie]; c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != devicePath || c.Secure {
		t.Fatalf("session cookie %+v", c)
	}
	if approve.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(approve.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("page headers %v", approve.Header)
	}

	// Nothing chosen, someone else's identity, a taken name.
	b.form(approve, url.Values{"action": {"approve"}, "user_code": {st.UserCode}}).want(t, 400).contains(t, "Choose an identity")
	b.form(approve, url.Values{"action": {"approve"}, "user_code": {st.UserCode}, "identity": {"not-a-uuid"}}).want(t, 400).contains(t, "Choose one of your identities.")
	stranger := h.owner("stranger@example.com")
	theirs, _ := h.app.Identities.Create(context.Background(), core.Principal{AccountID: stranger.ID, KeyType: core.KeyManagement}, app.IdentityInput{})
	b.form(approve, url.Values{"action": {"approve"}, "user_code": {st.UserCode}, "identity": {theirs.ID}}).want(t, 400)
	b.form(approve, url.Values{"action": {"approve"}, "user_code": {st.UserCode}, "identity": {"new"}, "identity_name": {"taken"}}).want(t, 200)
	st2 := h.startDevice("")
	page := b.get(verifyPath+"?user_code="+st2.UserCode).want(t, 200)
	b.form(page, url.Values{"action": {"approve"}, "user_code": {st2.UserCode}, "identity": {"new"}, "identity_name": {"taken"}}).want(t, 409).contains(t, "already exists", `value="taken"`)

	// Codes are read loosely; wrong ones are told apart from nothing.
	b.get(verifyPath+"?user_code="+url.QueryEscape(strings.ToLower(strings.ReplaceAll(st2.UserCode, "-", " ")))).want(t, 200).contains(t, st2.UserCode)
	b.get(verifyPath+"?user_code=BCDF-BCDF").want(t, 400).contains(t, "Check the code your device shows")
	b.get(verifyPath).want(t, 200).contains(t, "Enter the code")
	b.form(page, url.Values{"action": {"deny"}, "user_code": {"BCDF-BCDF"}}).want(t, 400)
	b.form(page, url.Values{"action": {"dance"}}).want(t, 400)

	// Signing out ends the session; answering then asks to sign in.
	out := b.form(page, url.Values{"action": {"signout"}, "user_code": {st2.UserCode}}).want(t, 303)
	if _, still := b.cookies[sessionCookie]; still || out.Header.Get("Location") != verifyPath+"?user_code="+st2.UserCode {
		t.Fatalf("sign-out: cookies %v, location %q", b.cookies, out.Header.Get("Location"))
	}
	b.form(page, url.Values{"action": {"deny"}, "user_code": {st2.UserCode}}).want(t, 401).contains(t, "Sign in first.")
}

func TestVerifyPageRefusesForgedForms(t *testing.T) {
	h := newSignInHarness(t, Options{})
	h.owner("owner@example.com")
	st := h.startDevice("")
	victim := h.browser()
	approve := h.signIn(victim, st, "owner@example.com")
	token := csrf(t, approve)
	answer := url.Values{"action": {"deny"}, "user_code": {st.UserCode}}

	// A form from elsewhere: no token, another browser's token, a token without its cookie.
	victim.post(verifyPath, answer).want(t, 403).contains(t, "This form has expired")
	attacker := h.browser()
	answer.Set("csrf_token", csrf(t, attacker.get(verifyPath)))
	victim.post(verifyPath, answer).want(t, 403)
	answer.Set("csrf_token", token)
	session := victim.cookies[sessionCookie]
	cookieless := &browser{h: h.harness, cookies: map[string]*http.Cookie{sessionCookie: session}}
	cookieless.post(verifyPath, answer).want(t, 403)
	if got := oauthErrorOf(t, h.poll(st.DeviceCode)); got != "authorization_pending" {
		t.Fatalf("a forged form answered the request: %s", got)
	}
	// The real form still works.
	victim.post(verifyPath, answer).want(t, 200).contains(t, "Request denied")
}

func TestSignInThroughTheProvider(t *testing.T) {
	h := newSignInHarness(t, Options{})
	acct := h.owner("owner@example.com")
	h.idp.Person = ports.ExternalIdentity{Issuer: "https://idp.test", Subject: "1", Email: "OWNER@example.com", EmailVerified: true}
	st := h.startDevice("")
	b := h.browser()
	page := b.get(verifyPath+"?user_code="+st.UserCode).want(t, 200).contains(t, "Sign in with idp.test")

	toProvider := func() (code, state string) {
		res := b.form(page, url.Values{"action": {"oidc"}, "user_code": {st.UserCode}}).want(t, 303)
		u, err := url.Parse(res.Header.Get("Location"))
		if err != nil || u.Host != "idp.test" {
			t.Fatalf("to the provider: %q", res.Header.Get("Location"))
		}
		if c := b.cookies[signInCookie]; c == nil || c.Path != callbackPath {
			t.Fatalf("state cookie %+v", c)
		}
		return u.Query().Get("code"), u.Query().Get("state")
	}
	code, state := toProvider()
	// Someone else's state: refused, and the attempt is over.
	b.get(callbackPath+"?"+url.Values{"code": {code}, "state": {"forged"}}.Encode()).want(t, 400).contains(t, "did not start on this page")
	b.get(callbackPath+"?"+url.Values{"code": {code}, "state": {state}}.Encode()).want(t, 400)

	code, state = toProvider()
	back := b.get(callbackPath+"?"+url.Values{"code": {code}, "state": {state}}.Encode()).want(t, 303)
	if back.Header.Get("Location") != verifyPath+"?user_code="+st.UserCode || b.cookies[sessionCookie] == nil {
		t.Fatalf("back from the provider: %q, cookies %v", back.Header.Get("Location"), b.cookies)
	}
	b.get(back.Header.Get("Location")).want(t, 200).contains(t, "Connect a device", "Signed in as "+acct.Email)

	// Cancelled at the provider; an address nobody has.
	_, state = toProvider()
	b.get(callbackPath+"?"+url.Values{"error": {"access_denied"}, "state": {state}}.Encode()).want(t, 401).contains(t, "was cancelled")
	h.idp.Person.Email = "stranger@example.com"
	code, state = toProvider()
	b.get(callbackPath+"?"+url.Values{"code": {code}, "state": {state}}.Encode()).want(t, 403).contains(t, "No account uses stranger@example.com")

	// Without a provider, the callback says so.
	plain := newHarness(t)
	nf := plain.do("GET", callbackPath, nil, "").want(t, 404).object(t)
	if !strings.Contains(nf["detail"].(string), "not configured") {
		t.Fatalf("unconfigured callback: %v", nf)
	}
	plain.browser().get(verifyPath).want(t, 200)
}

func TestRateLimits(t *testing.T) {
	clock := memory.NewClock(t0)
	h := newSignInHarness(t, Options{RateLimit: RateLimit{PerSecond: 20, Burst: 40}, Now: clock.Now})
	a, b := h.account(), h.account()
	for i := range 40 {
		h.do("GET", "/api/health/whoami/", nil, a).want(t, 200)
		if i == 0 {
			h.do("GET", "/api/health/whoami/", nil, b).want(t, 200)
		}
	}
	res := h.do("GET", "/api/identities/", nil, a).want(t, 429)
	if res.Header.Get("Retry-After") != "1" || res.object(t)["detail"] != "Request was throttled. Expected available in 1 seconds." {
		t.Fatalf("429: %v %s", res.Header, res.Body)
	}
	h.do("GET", "/api/health/whoami/", nil, b).want(t, 200)
	clock.Advance(50 * time.Millisecond) // one token back at 20 per second
	h.do("GET", "/api/health/whoami/", nil, a).want(t, 200)
	h.do("GET", "/api/health/whoami/", nil, a).want(t, 429)

	// Sign-in routes count per address; a forged X-Forwarded-For does not escape.
	for range 40 {
		h.do("POST", "/api/auth/device/", nil, "").want(t, 200)
	}
	req := httptest.NewRequest("POST", "/api/auth/device/", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	if res := h.serve(req); res.Status != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("the 41st from one address: %d", res.Status)
	}
	elsewhere := h.browser()
	elsewhere.addr = "198.51.100.7"
	elsewhere.get(verifyPath).want(t, 200)
	other := httptest.NewRequest("POST", "/api/auth/device/", nil)
	other.RemoteAddr = "198.51.100.7:1"
	if res := h.serve(other); res.Status != 200 {
		t.Fatalf("another address: %d", res.Status)
	}

	// Failed authentication counts against the address too.
	guesser := func() *response {
		req := httptest.NewRequest("GET", "/api/health/whoami/", nil)
		req.RemoteAddr, req.Header["Authorization"] = "198.51.100.9:1", []string{"Bearer svc_mgmt_" + strings.Repeat("A", 40)}
		return h.serve(req)
	}
	for range 40 {
		guesser().want(t, 401)
	}
	guesser().want(t, 429)
}

func TestWrongGuessesAreLimited(t *testing.T) {
	clock := memory.NewClock(t0)
	h := newSignInHarness(t, Options{RateLimit: RateLimit{PerSecond: 1000, Burst: 1000}, Now: clock.Now})
	h.owner("owner@example.com")
	for range guessLimit.Burst {
		h.do("POST", "/api/auth/token/", map[string]any{"email": "owner@example.com", "password": "guess"}, "").want(t, 401)
	}
	// Even the right password waits now.
	res := h.do("POST", "/api/auth/token/", map[string]any{"email": "owner@example.com", "password": password}, "").want(t, 429)
	if res.Header.Get("Retry-After") != "6" {
		t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
	}
	clock.Advance(6 * time.Second)
	h.do("POST", "/api/auth/token/", map[string]any{"email": "owner@example.com", "password": password}, "").want(t, 200)

	// Wrong codes on the page, from another address.
	b := h.browser()
	b.addr = "198.51.100.8"
	st := h.startDevice("")
	h.signIn(b, st, "owner@example.com")
	for range guessLimit.Burst {
		b.get(verifyPath+"?user_code=BCDF-BCDF").want(t, 400)
	}
	page := b.get(verifyPath+"?user_code="+st.UserCode).want(t, 429)
	if page.Header.Get("Retry-After") == "" || !strings.Contains(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("throttled page: %v", page.Header)
	}
}

// TestGuessesCountPerCredential: a stranger's wrong passwords from the same
// address (a shared office, a carrier's NAT) do not lock out the right
// credentials; one address trying many credentials still meets a cap.
func TestGuessesCountPerCredential(t *testing.T) {
	clock := memory.NewClock(t0)
	h := newSignInHarness(t, Options{RateLimit: RateLimit{PerSecond: 1000, Burst: 1000}, Now: clock.Now})
	h.owner("owner@example.com")
	h.owner("stranger@example.com")
	signIn := func(email, pw string) *response {
		return h.do("POST", "/api/auth/token/", map[string]any{"email": email, "password": pw}, "")
	}
	for range 3 * guessLimit.Burst {
		if s := signIn("stranger@example.com", "forgotten").Status; s != 401 && s != 429 {
			t.Fatalf("a stranger's wrong password: %d", s)
		}
	}
	signIn("stranger@example.com", password).want(t, 429)
	signIn("OWNER@example.com ", password).want(t, 200) // the same address, another credential
	for range guessLimit.Burst {
		signIn("Owner@Example.com", "guess").want(t, 401)
	}
	signIn("owner@example.com", password).want(t, 429) // the email is compared ignoring case

	// On the page, a stranger's wrong codes do not hold back another
	// account's right one.
	st := h.startDevice("")
	stranger, owner := h.browser(), h.browser()
	stranger.addr, owner.addr = "198.51.100.20", "198.51.100.20"
	h.signIn(stranger, h.startDevice(""), "stranger@example.com")
	for range guessLimit.Burst {
		stranger.get(verifyPath+"?user_code=BCDF-BCDF").want(t, 400)
	}
	stranger.get(verifyPath+"?user_code=BCDF-BCDF").want(t, 429)
	h.signIn(owner, st, "owner@example.com")
	owner.get(verifyPath+"?user_code="+st.UserCode).want(t, 200)

	// Spraying: a hundred credentials from one address use up the
	// address's own allowance, whatever the credential.
	clock.Advance(time.Hour)
	sprayer := func(email, pw string) *response {
		req := httptest.NewRequest("POST", "/api/auth/token/", strings.NewReader(url.Values{"email": {email}, "password": {pw}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = "198.51.100.30:1"
		return h.serve(req)
	}
	for i := range addressGuessLimit.Burst {
		sprayer(fmt.Sprintf("user%d@example.com", i), "Password1").want(t, 401)
	}
	res := sprayer("owner@example.com", password).want(t, 429)
	if res.Header.Get("Retry-After") != "3" {
		t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
	}
	signIn("owner@example.com", password).want(t, 200) // from another address
	clock.Advance(3 * time.Second)
	sprayer("owner@example.com", password).want(t, 200)
}

func TestLimiterForgetsIdleClients(t *testing.T) {
	clock := memory.NewClock(t0)
	l := newLimiter(RateLimit{PerSecond: 10, Burst: 20}, clock.Now)
	l.maxBuckets = 100
	for i := range 1000 {
		l.take(strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String())
	}
	if n := len(l.buckets); n > l.maxBuckets {
		t.Fatalf("%d buckets kept; the bound is %d", n, l.maxBuckets)
	}
	for range 20 {
		l.take("busy")
	}
	if l.take("busy") == 0 {
		t.Fatal("an empty bucket let a request through")
	}
	clock.Advance(2 * time.Second) // every bucket has refilled
	l.take("new")
	if n := len(l.buckets); n != 1 {
		t.Fatalf("%d buckets after a sweep of idle ones, want the new one only", n)
	}
	if l.take("busy") != 0 {
		t.Fatal("a refilled client is still throttled")
	}
	var off *limiter
	if off.take("x") != 0 || off.wait("x") != 0 {
		t.Fatal("a nil limiter throttles")
	}
}

// TestNoSecretReachesTheLog runs every sign-in path with the log at debug
// level and looks for each secret that went over the wire.
func TestNoSecretReachesTheLog(t *testing.T) {
	h := newSignInHarness(t, Options{RateLimit: RateLimit{PerSecond: 1000, Burst: 1000}})
	h.owner("owner@example.com")
	h.idp.Person = ports.ExternalIdentity{Email: "owner@example.com", EmailVerified: true}
	secrets := []string{password, "wrong-password-123"}

	h.do("POST", "/api/auth/token/", map[string]any{"email": "owner@example.com", "password": "wrong-password-123"}, "").want(t, 401)
	pair := h.do("POST", "/api/auth/token/", map[string]any{"email": "owner@example.com", "password": password}, "").want(t, 200).object(t)
	access := h.do("POST", "/api/auth/token/refresh/", map[string]any{"refresh": pair["refresh"]}, "").want(t, 200).object(t)["access"].(string)
	h.do("GET", "/api/health/whoami/", nil, access).want(t, 200)
	h.do("GET", "/api/health/whoami/", nil, access+"x").want(t, 401)
	secrets = append(secrets, pair["access"].(string), pair["refresh"].(string), access)

	st := h.startDevice("cli")
	b := h.browser()
	page := b.get(verifyPath + "?user_code=" + st.UserCode)
	toProvider := b.form(page, url.Values{"action": {"oidc"}, "user_code": {st.UserCode}}).want(t, 303)
	u, _ := url.Parse(toProvider.Header.Get("Location"))
	b.get(callbackPath+"?"+u.RawQuery).want(t, 303)
	page = b.get(verifyPath+"?user_code="+st.UserCode).want(t, 200)
	b.form(page, url.Values{"action": {"approve"}, "user_code": {st.UserCode}, "identity": {"new"}}).want(t, 200)
	h.clock.Advance(10 * time.Second)
	keys := h.poll(st.DeviceCode).want(t, 200).object(t)
	secrets = append(secrets, st.DeviceCode, csrf(t, page), u.Query().Get("code"), u.Query().Get("state"),
		keys["identity_key"].(string))
	for _, c := range b.cookies {
		secrets = append(secrets, c.Value)
	}

	logs := h.logs.String()
	if !strings.Contains(logs, `"route":"/api/auth/device/token/"`) || !strings.Contains(logs, "device login completed") {
		t.Fatalf("the log misses the requests; the check would prove nothing:\n%s", logs)
	}
	for _, secret := range secrets {
		if secret == "" {
			t.Fatal("an empty secret: the test lost track of one")
		}
		if strings.Contains(logs, secret) {
			t.Errorf("a secret reached the log: %.12s…", secret)
		}
	}
}
