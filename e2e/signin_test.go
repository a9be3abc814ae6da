package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/internal/cli"
)

const ownerPassword = "correct horse battery staple"

// shiftClock is the wall clock plus an offset a test can move, to expire things.
type shiftClock struct{ offset atomic.Int64 }

func (c *shiftClock) Now() time.Time { return time.Now().UTC().Add(time.Duration(c.offset.Load())) }

func (c *shiftClock) shift(d time.Duration) { c.offset.Add(int64(d)) }

// startPublic runs the service on a port chosen first, so that its base URL
// (in the verification URIs it hands out) is the address it listens on.
// Device polling is every second, to keep tests short.
func startPublic(t *testing.T, d sqlstore.Dialect, env map[string]string, tune ...func(*app.Deps)) *running {
	t.Helper()
	addr := freeAddr(t)
	e := map[string]string{"CALLSIGN_HTTP_ADDR": addr, "CALLSIGN_BASE_URL": "http://" + addr}
	for k, v := range env {
		e[k] = v
	}
	tune = append([]func(*app.Deps){func(d *app.Deps) { d.DevicePollInterval = time.Second }}, tune...)
	return start(t, d, e, tune...)
}

// owner creates an account with a password through the CLI.
func (r *running) owner(email string) {
	r.t.Helper()
	if _, errOut, code := r.cli(ownerPassword+"\n", "account", "create", "--email", email, "--password-stdin"); code != 0 {
		r.t.Fatalf("account create: %s", errOut)
	}
}

// configHome points the user's config directory at a fresh one.
func configHome(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	return filepath.Join(dir, "callsign", "credentials.json")
}

type loginResult struct {
	code   int
	out    string
	errOut string
}

var pageURLLine = regexp.MustCompile(`(?m)^  (http\S+user_code=\S+)$`)

// loginInBackground runs `callsign login` and returns the page URL it
// prints, and its result once it ends.
func (r *running) loginInBackground(flags ...string) (string, <-chan loginResult) {
	r.t.Helper()
	pr, pw := io.Pipe()
	exited := make(chan loginResult, 1)
	go func() {
		var errOut strings.Builder
		args := append([]string{"login", "--server", r.env["CALLSIGN_BASE_URL"], "--name", "e2e test"}, flags...)
		code := cli.Run(args, strings.NewReader(""), pw, &errOut, func(string) string { return "" })
		pw.Close()
		exited <- loginResult{code: code, errOut: errOut.String()}
	}()
	pageURLs, output := make(chan string, 1), make(chan string, 1)
	go func() {
		var out strings.Builder
		for lines := bufio.NewScanner(pr); lines.Scan(); {
			out.WriteString(lines.Text() + "\n")
			if m := pageURLLine.FindStringSubmatch(lines.Text()); m != nil {
				pageURLs <- m[1]
			}
		}
		output <- out.String()
	}()
	done := make(chan loginResult, 1)
	go func() {
		res := <-exited
		res.out = <-output
		done <- res
	}()
	select {
	case u := <-pageURLs:
		return u, done
	case res := <-done:
		r.t.Fatalf("login printed no page URL: %s %s", res.out, res.errOut)
	}
	return "", nil
}

func waitLogin(t *testing.T, done <-chan loginResult) loginResult {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(30 * time.Second):
		t.Fatal("callsign login did not finish")
	}
	return loginResult{}
}

// pageClient is a person on the verification page without a browser: an
// HTTP client with cookies that submits the page's forms.
type pageClient struct {
	t    *testing.T
	http *http.Client
}

func newPageClient(t *testing.T) *pageClient {
	jar, _ := cookiejar.New(nil)
	return &pageClient{t: t, http: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

var csrfInput = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func (p *pageClient) get(u string) (int, string) {
	p.t.Helper()
	res, err := p.http.Get(u)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// submit posts the form fields with the CSRF token of page (a redirect is followed).
func (p *pageClient) submit(pageURL, page string, fields url.Values) (int, string) {
	p.t.Helper()
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		p.t.Fatalf("no form on the page:\n%s", page)
	}
	fields.Set("csrf_token", m[1])
	u, _ := url.Parse(pageURL)
	u.RawQuery = ""
	res, err := p.http.PostForm(u.String(), fields)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// approve signs in on the page and approves with a new identity.
func (p *pageClient) approve(pageURL, email, identityName string) {
	p.t.Helper()
	p.approveWith(pageURL, email, url.Values{"identity": {"new"}, "identity_name": {identityName}})
}

// approveWith signs in on the page and approves with the choice given;
// it returns the page it approved on.
func (p *pageClient) approveWith(pageURL, email string, choice url.Values) string {
	p.t.Helper()
	code := regexp.MustCompile(`user_code=([A-Z-]+)`).FindStringSubmatch(pageURL)[1]
	_, page := p.get(pageURL)
	status, page := p.submit(pageURL, page, url.Values{"action": {"signin"}, "user_code": {code}, "email": {email}, "password": {ownerPassword}})
	if status != 200 || !strings.Contains(page, code) {
		p.t.Fatalf("after signing in: %d\n%s", status, page)
	}
	choice.Set("action", "approve")
	choice.Set("user_code", code)
	status, done := p.submit(pageURL, page, choice)
	if status != 200 || !strings.Contains(done, "Device connected") {
		p.t.Fatalf("approving: %d\n%s", status, done)
	}
	return page
}

// storedKeys reads what login saved for the server.
func storedKeys(t *testing.T, path, server string) cli.DeviceKeys {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := os.Stat(filepath.Dir(path))
	if info.Mode().Perm() != 0o600 || dir.Mode().Perm() != 0o700 {
		t.Fatalf("credentials mode %v, directory %v", info.Mode(), dir.Mode())
	}
	data, _ := os.ReadFile(path)
	var creds cli.Credentials
	if err := json.Unmarshal(data, &creds); err != nil {
		t.Fatal(err)
	}
	return creds.Servers[server].DeviceKeys
}

func TestLoginCommand(t *testing.T) {
	forEachDialectInTurn(t, func(t *testing.T, d sqlstore.Dialect) {
		r := startPublic(t, d, nil)
		r.owner("owner@example.com")
		credentials := configHome(t)
		pageURL, done := r.loginInBackground()
		newPageClient(t).approve(pageURL, "owner@example.com", "CLI Agent")
		res := waitLogin(t, done)
		if res.code != 0 || !strings.Contains(res.out, `Logged in to `+r.baseURL+` as identity "CLI Agent"`) {
			t.Fatalf("login: %d %s %s", res.code, res.out, res.errOut)
		}
		keys := storedKeys(t, credentials, r.baseURL)
		var who struct {
			KeyType  string `json:"key_type"`
			Identity string
		}
		if s := r.call("GET", "/api/health/whoami/", keys.IdentityKey, nil, &who); s != 200 || who.KeyType != "identity" || who.Identity != keys.Identity.UUID {
			t.Fatalf("identity key: %d %+v", s, who)
		}
		// Only what was granted is kept: no management key by default.
		if keys.ManagementKey != "" || strings.Contains(mustRead(t, credentials), "management_key") {
			t.Fatalf("an identity login stored a management key: %+v", keys)
		}
		if got := keyOrigins(t, r, keys.IdentityKey, "identity"); got[keys.IdentityKey[:len("svc_id_")+4]] != "device" {
			t.Fatalf("the device login's identity key is listed with origins %v", got)
		}
		if strings.Contains(res.out+res.errOut, keys.IdentityKey) {
			t.Fatal("login printed a key")
		}

		// A second login, denied this time, keeps the first server's keys.
		pageURL, done = r.loginInBackground()
		p := newPageClient(t)
		code := regexp.MustCompile(`user_code=([A-Z-]+)`).FindStringSubmatch(pageURL)[1]
		_, page := p.get(pageURL)
		_, page = p.submit(pageURL, page, url.Values{"action": {"signin"}, "user_code": {code}, "email": {"owner@example.com"}, "password": {ownerPassword}})
		if status, page := p.submit(pageURL, page, url.Values{"action": {"deny"}, "user_code": {code}}); status != 200 || !strings.Contains(page, "denied") {
			t.Fatalf("deny: %d %s", status, page)
		}
		if res := waitLogin(t, done); res.code != 1 || !strings.Contains(res.errOut, "denied") {
			t.Fatalf("denied login: %d %s", res.code, res.errOut)
		}
		if storedKeys(t, credentials, r.baseURL).IdentityKey != keys.IdentityKey {
			t.Fatal("a denied login changed the stored keys")
		}

		// --identity preselects the identity by name; --management asks for
		// the whole account, and gets a management key alone once approved.
		pageURL, done = r.loginInBackground("--identity", "cli agent")
		page = newPageClient(t).approveWith(pageURL, "owner@example.com", url.Values{"identity": {keys.Identity.UUID}})
		if !strings.Contains(page, `value="`+keys.Identity.UUID+`" checked`) {
			t.Fatalf("--identity did not preselect the identity:\n%s", page)
		}
		if res := waitLogin(t, done); res.code != 0 || storedKeys(t, credentials, r.baseURL).Identity.UUID != keys.Identity.UUID {
			t.Fatalf("login --identity: %d %s %s", res.code, res.out, res.errOut)
		}
		pageURL, done = r.loginInBackground("--management")
		page = newPageClient(t).approveWith(pageURL, "owner@example.com", url.Values{"identity": {"management"}})
		if !strings.Contains(page, `value="management" checked`) || !strings.Contains(page, `id="grant-management">It gets a management key`) {
			t.Fatalf("--management is not preselected and said:\n%s", page)
		}
		res = waitLogin(t, done)
		if res.code != 0 || !strings.Contains(res.out, "with a management key for the whole account") {
			t.Fatalf("login --management: %d %s %s", res.code, res.out, res.errOut)
		}
		mgmt := storedKeys(t, credentials, r.baseURL)
		if mgmt.IdentityKey != "" || strings.Contains(mustRead(t, credentials), "identity_key") {
			t.Fatalf("a management login stored an identity key: %+v", mgmt)
		}
		if s := r.call("GET", "/api/health/whoami/", mgmt.ManagementKey, nil, &who); s != 200 || who.KeyType != "management" {
			t.Fatalf("management key: %d %+v", s, who)
		}
	})
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLoginCommandUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"login"}, {"login", "--server", "ftp://x"}, {"login", "--server", "http://x/?a=b"},
		{"login", "--server", "http://x", "--identity", "a", "--management"}} {
		var out, errOut strings.Builder
		if code := cli.Run(args, strings.NewReader(""), &out, &errOut, func(string) string { return "" }); code != 2 {
			t.Errorf("%v: exit %d, %s", args, code, errOut.String())
		}
	}
}

func TestPasswordSignInEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		r := start(t, d, nil)
		r.owner("owner@example.com")
		var pair struct{ Access, Refresh string }
		if s := r.call("POST", "/api/auth/token/", "", map[string]string{"email": "owner@example.com", "password": ownerPassword}, &pair); s != 200 {
			t.Fatalf("sign in: %d", s)
		}
		if len(strings.Split(pair.Access, ".")) != 3 {
			t.Fatalf("the access token is not a JWT: %q", pair.Access)
		}
		var who struct {
			KeyType   string `json:"key_type"`
			KeyPrefix string `json:"key_prefix"`
		}
		if s := r.call("GET", "/api/health/whoami/", pair.Access, nil, &who); s != 200 || who.KeyType != "management" || who.KeyPrefix != "jwt" {
			t.Fatalf("whoami: %d %+v", s, who)
		}
		var refreshed struct{ Access string }
		if s := r.call("POST", "/api/auth/token/refresh/", "", map[string]string{"refresh": pair.Refresh}, &refreshed); s != 200 || refreshed.Access == "" {
			t.Fatalf("refresh: %d", s)
		}
		// A management key made with the access token is listed as made
		// with it; the bootstrap key as the command line's; one made with a
		// key as the API's.
		var made struct{ Key string }
		if s := r.call("POST", "/api/auth/keys/management/", pair.Access, map[string]string{"name": "made with a JWT"}, &made); s != 201 {
			t.Fatalf("a key made with the access token: %d", s)
		}
		var byKey struct{ Key string }
		if s := r.call("POST", "/api/auth/keys/management/", made.Key, map[string]string{"name": "made with a key"}, &byKey); s != 201 {
			t.Fatalf("a key made with a key: %d", s)
		}
		got := keyOrigins(t, r, made.Key, "management")
		if len(got) != 3 || got[made.Key[:len("svc_mgmt_")+4]] != "jwt" || got[byKey.Key[:len("svc_mgmt_")+4]] != "api" ||
			slices.Index(slices.Sorted(maps.Values(got)), "cli") < 0 {
			t.Fatalf("origins by prefix: %v", got)
		}

		// The generated signing key is kept in the data directory, for the owner only.
		if info, err := os.Stat(filepath.Join(r.env["CALLSIGN_DATA_DIR"], "jwt.key")); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("jwt.key: %v %v", info, err)
		}

		// A new password ends the tokens; so does deleting the account.
		if _, errOut, code := r.cli("another long password\n", "account", "set-password", "--account", "owner@example.com", "--password-stdin"); code != 0 {
			t.Fatal(errOut)
		}
		if s := r.call("GET", "/api/health/whoami/", refreshed.Access, nil, nil); s != 401 {
			t.Fatalf("a token after a new password: %d", s)
		}
		if s := r.call("POST", "/api/auth/token/", "", map[string]string{"email": "owner@example.com", "password": "another long password"}, &pair); s != 200 {
			t.Fatalf("sign in with the new password: %d", s)
		}
		if _, errOut, code := r.cli("", "account", "delete", "--account", "owner@example.com"); code != 0 {
			t.Fatal(errOut)
		}
		if s := r.call("GET", "/api/health/whoami/", pair.Access, nil, nil); s != 401 {
			t.Fatalf("a token of a deleted account: %d", s)
		}
	})
}

// keyOrigins lists an account's keys of one type ("management" or
// "identity") with key and answers their origins by prefix.
func keyOrigins(t *testing.T, r *running, key, keyType string) map[string]string {
	t.Helper()
	var list []struct{ Prefix, Origin string }
	if s := r.call("GET", "/api/auth/keys/"+keyType+"/", key, nil, &list); s != 200 {
		t.Fatalf("listing %s keys: %d", keyType, s)
	}
	origins := map[string]string{}
	for _, k := range list {
		origins[k.Prefix] = k.Origin
	}
	return origins
}

// TestRefreshTokensRotateAcrossInstances: a refresh answers a new refresh
// token; the used one, presented again to another instance of the same
// database, ends the sign-in there and here (its access and refresh
// tokens), and leaves other sign-ins alone.
func TestRefreshTokensRotateAcrossInstances(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		secret := strings.Repeat("shared-secret-", 3)
		a := start(t, d, map[string]string{"CALLSIGN_JWT_SECRET": secret})
		b := start(t, d, map[string]string{"CALLSIGN_JWT_SECRET": secret, "CALLSIGN_DATABASE_URL": a.env["CALLSIGN_DATABASE_URL"]})
		a.owner("owner@example.com")
		type pair struct{ Access, Refresh string }
		signIn := func(r *running) pair {
			var p pair
			if s := r.call("POST", "/api/auth/token/", "", map[string]string{"email": "owner@example.com", "password": ownerPassword}, &p); s != 200 {
				t.Fatalf("sign in: %d", s)
			}
			return p
		}
		refresh := func(r *running, token string) (int, pair, string) {
			var p pair
			status, raw := r.callRaw("POST", "/api/auth/token/refresh/", "", map[string]string{"refresh": token})
			if status == 200 {
				if err := json.Unmarshal(raw, &p); err != nil {
					t.Fatal(err)
				}
			}
			return status, p, string(raw)
		}
		first, other := signIn(a), signIn(b)
		s, second, _ := refresh(a, first.Refresh)
		if s != 200 || second.Access == "" || second.Refresh == "" || second.Refresh == first.Refresh {
			t.Fatalf("refresh: %d %+v", s, second)
		}
		if s, _, body := refresh(b, first.Refresh); s != 401 || !strings.Contains(body, "already used") {
			t.Fatalf("the used refresh token again, on the other instance: %d %s", s, body)
		}
		if s, _, _ := refresh(a, second.Refresh); s != 401 {
			t.Fatalf("the newest refresh token of the ended sign-in: %d", s)
		}
		for _, r := range []*running{a, b} {
			for _, access := range []string{first.Access, second.Access} {
				if s := r.call("GET", "/api/health/whoami/", access, nil, nil); s != 401 {
					t.Fatalf("an access token of the ended sign-in: %d", s)
				}
			}
			if s := r.call("GET", "/api/health/whoami/", other.Access, nil, nil); s != 200 {
				t.Fatalf("another sign-in's access token: %d", s)
			}
		}
		if s, next, _ := refresh(a, other.Refresh); s != 200 || next.Refresh == "" {
			t.Fatalf("another sign-in's refresh, on the other instance: %d", s)
		}
		signIn(b) // signing in again works
	})
}

func TestConfiguredJWTSecretIsShared(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("shared-secret-", 3)
	r := start(t, sqlstore.SQLite, map[string]string{"CALLSIGN_JWT_SECRET": secret})
	r.owner("owner@example.com")
	var pair struct{ Access string }
	r.call("POST", "/api/auth/token/", "", map[string]string{"email": "owner@example.com", "password": ownerPassword}, &pair)
	if _, err := os.Stat(filepath.Join(r.env["CALLSIGN_DATA_DIR"], "jwt.key")); !os.IsNotExist(err) {
		t.Fatalf("a key file was made although CALLSIGN_JWT_SECRET is set: %v", err)
	}
	// Another instance with the same secret and database accepts the token.
	other := start(t, sqlstore.SQLite, map[string]string{"CALLSIGN_JWT_SECRET": secret, "CALLSIGN_DATABASE_URL": r.env["CALLSIGN_DATABASE_URL"]})
	if s := other.call("GET", "/api/health/whoami/", pair.Access, nil, nil); s != 200 {
		t.Fatalf("the other instance: %d", s)
	}
}
