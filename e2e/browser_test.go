package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/callsign/callsign/adapters/oidc/oidctest"
	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/internal/cli"
)

// requireAllVar, set to 1 (CI sets it), turns a missing browser into a failure.
const requireAllVar = "CALLSIGN_TEST_REQUIRE_ALL"

// screenshotsVar names a directory to save the pages' screenshots in, to look at them.
const screenshotsVar = "CALLSIGN_TEST_SCREENSHOTS"

// chromium finds the browser, or skips the test without one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv(requireAllVar) == "1" {
		t.Fatalf("Chromium is not installed (apt-get install chromium), and %s=1 requires the browser tests", requireAllVar)
	}
	t.Skip("Chromium is not installed (apt-get install chromium): skipping the browser tests")
	return ""
}

// newBrowser starts a headless Chromium for the test. The flags keep it
// off the network: it reaches only the loopback servers of the test.
func newBrowser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return browser
}

// phone opens a tab in a fresh profile (no cookies), the size of a phone.
// The tab's first action is run on its own context: the context of a
// tab's first run is the one whose end closes it.
func phone(t *testing.T, browser context.Context) context.Context {
	tab, cancelTab := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelTab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	return tab
}

// stepLimit bounds each do and read, not the tab's whole life: a page or
// two is seconds, but the longest test's dozen pages, run side by side
// with the other end-to-end tests under -race, were seen take 4 minutes.
const stepLimit = time.Minute

func do(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, stepLimit)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func read[T any](t *testing.T, tab context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, stepLimit)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// looksRightOnAPhone checks what makes a page usable on a small screen: no
// sideways scrolling, and buttons big enough for a thumb.
func looksRightOnAPhone(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if !read(t, tab, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`)) {
		t.Errorf("%s: the page scrolls sideways on a phone", name)
	}
	if !read(t, tab, chromedp.Evaluate[bool](`[...document.querySelectorAll('button:not(.link), input:not([type=radio]):not([type=hidden])')].every(e => e.getBoundingClientRect().height >= 40)`)) {
		t.Errorf("%s: a button or field is too small to tap", name)
	}
	if dir := os.Getenv(screenshotsVar); dir != "" {
		png := read(t, tab, chromedp.FullScreenshot(100)) // 100: PNG
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// signInOnThePage signs in on the page the tab shows, with the password.
func signInOnThePage(t *testing.T, tab context.Context) {
	do(t, tab,
		chromedp.SendKeys(chromedp.ID("email"), "owner@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), ownerPassword),
		chromedp.Click(chromedp.CSS(`button.primary`)),
	)
}

var userCodeOf = regexp.MustCompile(`user_code=([A-Z]{4}-[A-Z]{4})`)

// TestDeviceLoginInABrowser is device-code login end to end: `callsign
// login` or a plain HTTP client on one side, a person in headless Chromium
// on the other.
func TestDeviceLoginInABrowser(t *testing.T) {
	browser := newBrowser(t)
	idp := oidctest.Start(t, "callsign", "idp-secret", oidctest.Person{Subject: "p-1", Email: "Owner@Example.com", EmailVerified: true})
	clock := &shiftClock{}
	r := startPublic(t, sqlstore.SQLite, map[string]string{
		"CALLSIGN_RATE_LIMIT":  "20:40",
		"CALLSIGN_OIDC_ISSUER": idp.URL, "CALLSIGN_OIDC_CLIENT_ID": "callsign", "CALLSIGN_OIDC_CLIENT_SECRET": "idp-secret",
	}, func(d *app.Deps) { d.Clock = clock })
	r.owner("owner@example.com")

	// startDevice is a client that is not the CLI.
	startDevice := func(t *testing.T) (deviceCode, pageURL string) {
		var st cli.DeviceStart
		if s := r.call("POST", "/api/auth/device/", "", map[string]string{"client_name": "test client"}, &st); s != 200 {
			t.Fatalf("start: %d", s)
		}
		return st.DeviceCode, st.VerificationURIComplete
	}
	poll := func(t *testing.T, deviceCode string) (int, map[string]any) {
		var answer map[string]any
		s := r.call("POST", "/api/auth/device/token/", "", map[string]string{"device_code": deviceCode, "grant_type": cli.DeviceGrantType}, &answer)
		return s, answer
	}

	t.Run("approve: callsign login gets working keys", func(t *testing.T) {
		credentials := configHome(t)
		pageURL, done := r.loginInBackground()
		tab := phone(t, browser)
		do(t, tab, chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.ID("email")))
		looksRightOnAPhone(t, tab, "sign-in")
		signInOnThePage(t, tab)
		do(t, tab, chromedp.WaitVisible(chromedp.ID("code")))
		if shown := read(t, tab, chromedp.Text(chromedp.ID("code"))); shown != userCodeOf.FindStringSubmatch(pageURL)[1] {
			t.Fatalf("the page shows the code %q for %s", shown, pageURL)
		}
		looksRightOnAPhone(t, tab, "approve")
		do(t, tab,
			chromedp.Click(chromedp.CSS(`input[name=identity][value=new]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name=identity_name]`), "Browser Agent"),
			chromedp.Click(chromedp.CSS(`button[value=approve]`)),
			chromedp.WaitVisible(chromedp.CSS(`p.ok`)),
		)
		looksRightOnAPhone(t, tab, "approved")
		if res := waitLogin(t, done); res.code != 0 || !strings.Contains(res.out, `as identity "Browser Agent"`) {
			t.Fatalf("login: %d %s %s", res.code, res.out, res.errOut)
		}
		keys := storedKeys(t, credentials, r.baseURL)
		var who struct {
			KeyType  string `json:"key_type"`
			Identity string
		}
		if s := r.call("GET", "/api/health/whoami/", keys.IdentityKey, nil, &who); s != 200 || who.Identity != keys.Identity.UUID {
			t.Fatalf("the identity key: %d %+v", s, who)
		}
		if keys.ManagementKey != "" {
			t.Fatal("an identity login got a management key")
		}
	})

	t.Run("--management: preselected, said in one sentence, and granted alone", func(t *testing.T) {
		credentials := configHome(t)
		pageURL, done := r.loginInBackground("--management")
		tab := phone(t, browser)
		do(t, tab, chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.ID("email")))
		signInOnThePage(t, tab)
		do(t, tab, chromedp.WaitVisible(chromedp.ID("grant-management")))
		if hidden := read(t, tab, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById('grant-identity')).display === 'none'`)); !hidden {
			t.Fatal("both sentences show")
		}
		looksRightOnAPhone(t, tab, "approve-management")
		// The sentence follows the choice, without a script.
		do(t, tab, chromedp.Click(chromedp.CSS(`input[name=identity][value=new]`)), chromedp.WaitVisible(chromedp.ID("grant-identity")),
			chromedp.WaitNotVisible(chromedp.ID("grant-management")))
		do(t, tab, chromedp.Click(chromedp.CSS(`input[name=identity][value=management]`)), chromedp.WaitVisible(chromedp.ID("grant-management")),
			chromedp.Click(chromedp.CSS(`button[value=approve]`)), chromedp.WaitVisible(chromedp.CSS(`p.ok`)))
		if res := waitLogin(t, done); res.code != 0 || !strings.Contains(res.out, "management key") {
			t.Fatalf("login: %d %s %s", res.code, res.out, res.errOut)
		}
		if keys := storedKeys(t, credentials, r.baseURL); keys.IdentityKey != "" || r.call("GET", "/api/identities/", keys.ManagementKey, nil, nil) != 200 {
			t.Fatalf("a management login stored %+v", keys)
		}
	})

	t.Run("deny, signed in through the OpenID Connect provider", func(t *testing.T) {
		configHome(t)
		pageURL, done := r.loginInBackground()
		tab := phone(t, browser)
		do(t, tab,
			chromedp.Navigate(pageURL),
			chromedp.Click(chromedp.CSS(`button[value=oidc]`)),
			chromedp.WaitVisible(chromedp.ID("code")),
		)
		if who := read(t, tab, chromedp.Text(chromedp.CSS(`.who`))); !strings.Contains(who, "owner@example.com") {
			t.Fatalf("signed in as %q", who)
		}
		do(t, tab, chromedp.Click(chromedp.CSS(`button[value=deny]`)), chromedp.WaitVisible(chromedp.CSS(`p.ok`)))
		if res := waitLogin(t, done); res.code != 1 || !strings.Contains(res.errOut, "denied") {
			t.Fatalf("denied login: %d %s", res.code, res.errOut)
		}
	})

	t.Run("a forged form is refused", func(t *testing.T) {
		deviceCode, pageURL := startDevice(t)
		tab := phone(t, browser)
		do(t, tab, chromedp.Navigate(pageURL))
		signInOnThePage(t, tab)
		do(t, tab,
			chromedp.WaitVisible(chromedp.ID("code")),
			chromedp.SetValue(chromedp.CSS(`form input[name=csrf_token]`), "forged"),
			chromedp.Click(chromedp.CSS(`button[value=approve]`)),
			chromedp.WaitVisible(chromedp.CSS(`p.error`)),
		)
		if msg := read(t, tab, chromedp.Text(chromedp.CSS(`p.error`))); !strings.Contains(msg, "This form has expired") {
			t.Fatalf("the page says %q", msg)
		}
		if s, answer := poll(t, deviceCode); s != 400 || answer["error"] != "authorization_pending" {
			t.Fatalf("after a forged approval: %d %v", s, answer)
		}
	})

	t.Run("slow_down, and a redeemed code is spent", func(t *testing.T) {
		deviceCode, pageURL := startDevice(t)
		if s, answer := poll(t, deviceCode); s != 400 || answer["error"] != "authorization_pending" {
			t.Fatalf("first poll: %d %v", s, answer)
		}
		if s, answer := poll(t, deviceCode); s != 400 || answer["error"] != "slow_down" {
			t.Fatalf("a poll at once: %d %v", s, answer)
		}
		tab := phone(t, browser)
		do(t, tab, chromedp.Navigate(pageURL))
		signInOnThePage(t, tab)
		do(t, tab, chromedp.WaitVisible(chromedp.ID("code")))
		looksRightOnAPhone(t, tab, "approve-with-identities")
		// The first identity is chosen already.
		do(t, tab, chromedp.Click(chromedp.CSS(`button[value=approve]`)), chromedp.WaitVisible(chromedp.CSS(`p.ok`)))
		if s, keys := poll(t, deviceCode); s != 200 || keys["identity_key"] == nil {
			t.Fatalf("after approval: %d %v", s, keys)
		}
		if s, answer := poll(t, deviceCode); s != 400 || answer["error"] != "invalid_grant" {
			t.Fatalf("a redeemed code: %d %v", s, answer)
		}
		do(t, tab, chromedp.Navigate(pageURL), chromedp.WaitVisible(chromedp.CSS(`p.error`)))
		if msg := read(t, tab, chromedp.Text(chromedp.CSS(`p.error`))); !strings.Contains(msg, "already used") {
			t.Fatalf("the page says %q about a redeemed code", msg)
		}
	})

	t.Run("expiry", func(t *testing.T) {
		deviceCode, pageURL := startDevice(t)
		clock.shift(app.DeviceCodeLifetime + time.Second)
		defer clock.shift(-app.DeviceCodeLifetime - time.Second)
		tab := phone(t, browser)
		do(t, tab, chromedp.Navigate(pageURL))
		signInOnThePage(t, tab)
		do(t, tab, chromedp.WaitVisible(chromedp.CSS(`p.error`)))
		looksRightOnAPhone(t, tab, "expired")
		if msg := read(t, tab, chromedp.Text(chromedp.CSS(`p.error`))); !strings.Contains(msg, "expired") {
			t.Fatalf("the page says %q about an expired code", msg)
		}
		if s, answer := poll(t, deviceCode); s != 400 || answer["error"] != "expired_token" {
			t.Fatalf("polling an expired code: %d %v", s, answer)
		}
	})
}
