package app_test

import (
	"errors"
	"testing"
	"time"

	"github.com/callsign/callsign/adapters/memory"
	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// countingHasher records how often a password is checked.
type countingHasher struct {
	memory.Hasher
	verified int
}

func (h *countingHasher) Verify(password, encoded string) bool {
	h.verified++
	return h.Hasher.Verify(password, encoded)
}

type signInWorld struct {
	*world
	hasher *countingHasher
	idp    *memory.SignInProvider
}

// newSignInWorld is the app with password hashing, tokens and a sign-in provider.
func newSignInWorld(t *testing.T, change ...func(*app.Deps)) *signInWorld {
	w := &signInWorld{world: newWorld(t), hasher: &countingHasher{}, idp: &memory.SignInProvider{}}
	deps := app.Deps{Ports: app.Ports{Store: w.store, Clock: w.clock, IDs: memory.IDs{}, Hasher: w.hasher, Tokens: &memory.Tokens{},
		ExternalSignIn: w.idp}, Settings: app.Settings{MailDomains: []string{"agents.test"}}}
	for _, f := range change {
		f(&deps)
	}
	w.app = newApp(t, deps)
	return w
}

// account creates an account with a password.
func (w *signInWorld) account(email, password string) core.Account {
	w.t.Helper()
	b, err := w.app.Accounts.Create(w.ctx, email, password)
	if err != nil {
		w.t.Fatal(err)
	}
	return b.Account
}

func wantKind(t *testing.T, err error, k core.Kind) {
	t.Helper()
	if err == nil || core.KindOf(err) != k {
		t.Fatalf("want error kind %d, got %v", k, err)
	}
}

func TestLoginIssuesTokensThatActForTheAccount(t *testing.T) {
	w := newSignInWorld(t)
	acct := w.account("owner@example.com", "long enough password")
	pair, err := w.app.Auth.Login(w.ctx, "OWNER@example.com", "long enough password")
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.app.Auth.Authenticate(w.ctx, pair.Access)
	if err != nil || p.AccountID != acct.ID || !p.IsManagement() || p.KeyPrefix != "jwt" || p.KeyID != 0 {
		t.Fatalf("access token acts as %+v, %v", p, err)
	}
	// A refresh token is not an access token, nor the other way round.
	_, err = w.app.Auth.Authenticate(w.ctx, pair.Refresh)
	wantKind(t, err, core.KindUnauthorized)
	_, err = w.app.Auth.Refresh(w.ctx, pair.Access)
	wantKind(t, err, core.KindUnauthorized)

	w.clock.Advance(app.AccessTokenLifetime)
	_, err = w.app.Auth.Authenticate(w.ctx, pair.Access)
	wantKind(t, err, core.KindUnauthorized)
	next, err := w.app.Auth.Refresh(w.ctx, pair.Refresh)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := w.app.Auth.Authenticate(w.ctx, next.Access); err != nil || p.AccountID != acct.ID {
		t.Fatalf("refreshed access token: %+v, %v", p, err)
	}
	// Rotation does not extend the sign-in.
	w.clock.Advance(app.RefreshTokenLifetime - app.AccessTokenLifetime)
	_, err = w.app.Auth.Refresh(w.ctx, next.Refresh)
	wantKind(t, err, core.KindUnauthorized)
}

// TestRefreshTokensRotate: each refresh answers a new refresh token, and a
// used one presented again revokes every token of its sign-in, and no
// other sign-in's.
func TestRefreshTokensRotate(t *testing.T) {
	w := newSignInWorld(t)
	w.account("owner@example.com", "long enough password")
	first, _ := w.app.Auth.Login(w.ctx, "owner@example.com", "long enough password")
	other, _ := w.app.Auth.Login(w.ctx, "owner@example.com", "long enough password")
	second, err := w.app.Auth.Refresh(w.ctx, first.Refresh)
	if err != nil || second.Refresh == first.Refresh {
		t.Fatalf("refresh: %v (a new refresh token: %t)", err, second.Refresh != first.Refresh)
	}
	third, err := w.app.Auth.Refresh(w.ctx, second.Refresh)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.app.Auth.Refresh(w.ctx, first.Refresh) // a copy of a used token
	if err != core.ErrRefreshReused {
		t.Fatalf("reuse: %v", err)
	}
	_, err = w.app.Auth.Refresh(w.ctx, third.Refresh) // the newest, descended from the same sign-in
	wantKind(t, err, core.KindUnauthorized)
	for _, access := range []string{first.Access, second.Access, third.Access} {
		_, err := w.app.Auth.Authenticate(w.ctx, access)
		wantKind(t, err, core.KindUnauthorized)
	}
	if _, err := w.app.Auth.Authenticate(w.ctx, other.Access); err != nil {
		t.Fatalf("another sign-in's access token: %v", err)
	}
	if _, err := w.app.Auth.Refresh(w.ctx, other.Refresh); err != nil {
		t.Fatalf("another sign-in's refresh token: %v", err)
	}
}

func TestWrongCredentialsLookAlike(t *testing.T) {
	w := newSignInWorld(t)
	w.account("owner@example.com", "long enough password")
	w.account("nopassword@example.com", "")
	var first error
	for name, tc := range map[string][2]string{
		"wrong password":     {"owner@example.com", "long enough passworD"},
		"unknown email":      {"nobody@example.com", "long enough password"},
		"malformed email":    {"not an email", "long enough password"},
		"account without pw": {"nopassword@example.com", ""},
	} {
		before := w.hasher.verified
		_, err := w.app.Auth.Login(w.ctx, tc[0], tc[1])
		wantKind(t, err, core.KindUnauthorized)
		if first == nil {
			first = err
		}
		if err.Error() != first.Error() {
			t.Errorf("%s: %q differs from %q", name, err, first)
		}
		// The password is checked every time: no shortcut for a missing account.
		if w.hasher.verified != before+1 {
			t.Errorf("%s: the hasher ran %d times", name, w.hasher.verified-before)
		}
	}
}

func TestTokensEndWithThePasswordOrTheAccount(t *testing.T) {
	w := newSignInWorld(t)
	acct := w.account("owner@example.com", "long enough password")
	pair, _ := w.app.Auth.Login(w.ctx, "owner@example.com", "long enough password")
	session, err := w.app.Auth.SignIn(w.ctx, "owner@example.com", "long enough password")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.app.Auth.Session(w.ctx, session); err != nil || got.ID != acct.ID {
		t.Fatalf("session: %+v, %v", got, err)
	}
	// A session is for the verification page only.
	_, err = w.app.Auth.Authenticate(w.ctx, session)
	wantKind(t, err, core.KindUnauthorized)
	_, err = w.app.Auth.Session(w.ctx, pair.Access)
	wantKind(t, err, core.KindUnauthorized)

	if err := w.app.Accounts.SetPassword(w.ctx, acct.ID, "another long password"); err != nil {
		t.Fatal(err)
	}
	for name, try := range map[string]func() error{
		"access":  func() error { _, err := w.app.Auth.Authenticate(w.ctx, pair.Access); return err },
		"refresh": func() error { _, err := w.app.Auth.Refresh(w.ctx, pair.Refresh); return err },
		"session": func() error { _, err := w.app.Auth.Session(w.ctx, session); return err },
	} {
		if err := try(); core.KindOf(err) != core.KindUnauthorized {
			t.Errorf("%s token after a password change: %v", name, err)
		}
	}

	pair, _ = w.app.Auth.Login(w.ctx, "owner@example.com", "another long password")
	if err := w.app.Accounts.Delete(w.ctx, acct.ID); err != nil {
		t.Fatal(err)
	}
	_, err = w.app.Auth.Authenticate(w.ctx, pair.Access)
	wantKind(t, err, core.KindUnauthorized)
}

func TestExternalSignInLinksTheVerifiedEmail(t *testing.T) {
	w := newSignInWorld(t)
	acct := w.account("owner@example.com", "")
	signIn := func(who ports.ExternalIdentity) (string, error) {
		w.idp.Person = who
		u, err := w.app.Auth.ExternalSignInURL(w.ctx, "state", "nonce", "verifier")
		if err != nil {
			t.Fatal(err)
		}
		code := u[len("https://idp.test/authorize?code="):]
		code = code[:len(code)-len("&state=state")]
		return w.app.Auth.ExternalSignIn(w.ctx, code, "nonce", "verifier")
	}
	session, err := signIn(ports.ExternalIdentity{Issuer: "https://idp.test", Subject: "1", Email: "Owner@Example.COM", EmailVerified: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.app.Auth.Session(w.ctx, session); err != nil || got.ID != acct.ID {
		t.Fatalf("session of the provider's sign-in: %+v, %v", got, err)
	}
	_, err = signIn(ports.ExternalIdentity{Subject: "1", Email: "owner@example.com"})
	wantKind(t, err, core.KindForbidden)
	_, err = signIn(ports.ExternalIdentity{Subject: "2", Email: "stranger@example.com", EmailVerified: true})
	wantKind(t, err, core.KindForbidden)
	if name := w.app.Auth.ExternalProvider(); name != "idp.test" {
		t.Fatalf("provider name %q", name)
	}

	none := newSignInWorld(t, func(d *app.Deps) { d.ExternalSignIn = nil })
	_, err = none.app.Auth.ExternalSignInURL(none.ctx, "s", "n", "v")
	wantKind(t, err, core.KindNotFound)
	if none.app.Auth.ExternalProvider() != "" {
		t.Fatal("a provider is named without one")
	}
}

func oauthCode(err error) string {
	var oe *core.OAuthError
	if errors.As(err, &oe) {
		return oe.Code
	}
	return ""
}

func TestDeviceLogin(t *testing.T) {
	w := newSignInWorld(t)
	acct := w.account("owner@example.com", "long enough password")
	owner := core.Principal{AccountID: acct.ID, KeyType: core.KeyManagement}
	name := "existing"
	existing, err := w.app.Identities.Create(w.ctx, owner, app.IdentityInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	start, err := w.app.Device.Start(w.ctx, app.DeviceRequest{ClientName: "  laptop cli  ", From: "192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := core.NormalizeUserCode(start.UserCode); !ok || len(start.DeviceCode) < 40 ||
		start.ExpiresIn != 15*time.Minute || start.Interval != 5*time.Second {
		t.Fatalf("start: %+v", start)
	}

	// Polling: pending, too fast, pending again once the client slows down.
	_, err = w.app.Device.Poll(w.ctx, start.DeviceCode)
	if oauthCode(err) != core.OAuthAuthorizationPending {
		t.Fatalf("first poll: %v", err)
	}
	w.clock.Advance(time.Second)
	if _, err = w.app.Device.Poll(w.ctx, start.DeviceCode); oauthCode(err) != core.OAuthSlowDown {
		t.Fatalf("fast poll: %v", err)
	}
	w.clock.Advance(5 * time.Second) // the interval is now 10 s
	if _, err = w.app.Device.Poll(w.ctx, start.DeviceCode); oauthCode(err) != core.OAuthSlowDown {
		t.Fatalf("poll within the raised interval: %v", err)
	}
	w.clock.Advance(15 * time.Second)
	if _, err = w.app.Device.Poll(w.ctx, start.DeviceCode); oauthCode(err) != core.OAuthAuthorizationPending {
		t.Fatalf("slowed-down poll: %v", err)
	}

	// The person types the code loosely and picks an identity.
	typed := " " + core.FormatUserCode(start.UserCode)[:6] + " " + core.FormatUserCode(start.UserCode)[6:]
	g, err := w.app.Device.Pending(w.ctx, typed)
	if err != nil || g.ClientName != "laptop cli" {
		t.Fatalf("pending %+v, %v", g, err)
	}
	_, err = w.app.Device.Approve(w.ctx, acct.ID, start.UserCode, app.DeviceChoice{})
	wantKind(t, err, core.KindInvalid)
	// Another account's identity cannot be chosen.
	stranger := w.account("stranger@example.com", "")
	theirs, _ := w.app.Identities.Create(w.ctx, core.Principal{AccountID: stranger.ID, KeyType: core.KeyManagement}, app.IdentityInput{})
	_, err = w.app.Device.Approve(w.ctx, acct.ID, start.UserCode, app.DeviceChoice{IdentityID: theirs.ID})
	wantKind(t, err, core.KindInvalid)
	if _, err := w.app.Device.Approve(w.ctx, acct.ID, start.UserCode, app.DeviceChoice{IdentityID: existing.ID}); err != nil {
		t.Fatal(err)
	}
	// Answered once: the code no longer finds the request.
	wantKind(t, w.app.Device.Deny(w.ctx, acct.ID, start.UserCode), core.KindNotFound)

	keys, err := w.app.Device.Poll(w.ctx, start.DeviceCode)
	if err != nil {
		t.Fatal(err)
	}
	// The default grant is an identity key, and nothing more.
	if keys.Identity == nil || keys.Identity.ID != existing.ID || keys.Key.Record.Name != "device login: laptop cli" {
		t.Fatalf("keys: %+v", keys)
	}
	ip, err := w.app.Auth.Authenticate(w.ctx, keys.Key.Secret)
	if err != nil || ip.KeyType != core.KeyIdentity || ip.IdentityID != existing.ID || ip.KeyID != keys.Key.Record.ID {
		t.Fatalf("identity key acts as %+v, %v", ip, err)
	}
	mgmt, _, err := w.app.Auth.ListKeys(w.ctx, owner, core.KeyManagement, "", ports.Page{Limit: 10})
	if err != nil || countOrigin(mgmt, core.OriginDevice) != 0 {
		t.Fatalf("management keys after an identity grant: %+v, %v", mgmt, err)
	}
	if _, err = w.app.Device.Poll(w.ctx, start.DeviceCode); oauthCode(err) != core.OAuthInvalidGrant {
		t.Fatalf("a redeemed code polled again: %v", err)
	}
	if _, err = w.app.Device.Poll(w.ctx, "not-a-device-code"); oauthCode(err) != core.OAuthInvalidGrant {
		t.Fatalf("an unknown code: %v", err)
	}
	if _, err = w.app.Device.Poll(w.ctx, ""); oauthCode(err) != core.OAuthInvalidRequest {
		t.Fatalf("no code: %v", err)
	}
}

func TestDeviceLoginDeniedExpiredOrNewIdentity(t *testing.T) {
	w := newSignInWorld(t)
	acct := w.account("owner@example.com", "long enough password")

	denied, _ := w.app.Device.Start(w.ctx, app.DeviceRequest{From: "192.0.2.7"})
	if err := w.app.Device.Deny(w.ctx, acct.ID, denied.UserCode); err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Device.Poll(w.ctx, denied.DeviceCode); oauthCode(err) != core.OAuthAccessDenied {
		t.Fatalf("denied: %v", err)
	}

	fresh, _ := w.app.Device.Start(w.ctx, app.DeviceRequest{From: "192.0.2.7"})
	newName := "Fresh Agent"
	ident, err := w.app.Device.Approve(w.ctx, acct.ID, fresh.UserCode, app.DeviceChoice{NewName: &newName})
	if err != nil || ident.Name != "Fresh Agent" {
		t.Fatalf("new identity %+v, %v", ident, err)
	}
	if keys, err := w.app.Device.Poll(w.ctx, fresh.DeviceCode); err != nil || keys.Identity == nil || keys.Identity.ID != ident.ID || keys.Key.Record.Name != "device login" {
		t.Fatalf("keys for the new identity: %+v, %v", keys, err)
	}

	late, _ := w.app.Device.Start(w.ctx, app.DeviceRequest{From: "192.0.2.7"})
	w.clock.Advance(app.DeviceCodeLifetime)
	_, err = w.app.Device.Pending(w.ctx, late.UserCode)
	wantKind(t, err, core.KindNotFound)
	if _, err := w.app.Device.Poll(w.ctx, late.DeviceCode); oauthCode(err) != core.OAuthExpiredToken {
		t.Fatalf("expired: %v", err)
	}
	// An hour on, a new request forgets the expired one.
	w.clock.Advance(time.Hour + time.Second)
	if _, err := w.app.Device.Start(w.ctx, app.DeviceRequest{From: "192.0.2.7"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.app.Device.Poll(w.ctx, late.DeviceCode); oauthCode(err) != core.OAuthInvalidGrant {
		t.Fatalf("forgotten: %v", err)
	}

	_, err = w.app.Device.Start(w.ctx, app.DeviceRequest{ClientName: "two\nlines", From: "192.0.2.7"})
	wantKind(t, err, core.KindInvalid)
}

// TestDeviceLoginManagementKeyOnlyWhenChosen: a client may ask for a
// management key, which only preselects it; the person's choice is what
// the client gets, one key either way.
func TestDeviceLoginManagementKeyOnlyWhenChosen(t *testing.T) {
	w := newSignInWorld(t)
	acct := w.account("owner@example.com", "long enough password")
	owner := core.Principal{AccountID: acct.ID, KeyType: core.KeyManagement}
	name := "Support"
	support, _ := w.app.Identities.Create(w.ctx, owner, app.IdentityInput{Name: &name})

	asked, err := w.app.Device.Start(w.ctx, app.DeviceRequest{From: "192.0.2.7", KeyType: core.KeyManagement})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := w.app.Device.Pending(w.ctx, asked.UserCode)
	if !app.Suggest(g, []core.Identity{support}).Management {
		t.Fatalf("a management request preselects %+v", app.Suggest(g, nil))
	}
	if _, err := w.app.Device.Approve(w.ctx, acct.ID, asked.UserCode, app.DeviceChoice{Management: true}); err != nil {
		t.Fatal(err)
	}
	keys, err := w.app.Device.Poll(w.ctx, asked.DeviceCode)
	if err != nil || keys.Identity != nil || keys.Key.Record.Type != core.KeyManagement {
		t.Fatalf("management grant: %+v, %v", keys, err)
	}
	if p, err := w.app.Auth.Authenticate(w.ctx, keys.Key.Secret); err != nil || !p.IsManagement() || p.AccountID != acct.ID {
		t.Fatalf("management key acts as %+v, %v", p, err)
	}

	// Asked for a management key, the person grants an identity key.
	downgraded, _ := w.app.Device.Start(w.ctx, app.DeviceRequest{KeyType: core.KeyManagement})
	if _, err := w.app.Device.Approve(w.ctx, acct.ID, downgraded.UserCode, app.DeviceChoice{IdentityID: support.ID}); err != nil {
		t.Fatal(err)
	}
	if keys, err := w.app.Device.Poll(w.ctx, downgraded.DeviceCode); err != nil || keys.Key.Record.Type != core.KeyIdentity {
		t.Fatalf("the person's choice wins: %+v, %v", keys, err)
	}

	// A named identity is preselected by name or id, case aside; an unknown
	// name suggests a new identity of that name.
	for asked, want := range map[string]app.DeviceChoice{"support": {IdentityID: support.ID}, support.ID: {IdentityID: support.ID}, "Billing": {NewName: new("Billing")}} {
		g := core.DeviceGrant{RequestedKeyType: core.KeyIdentity, RequestedIdentity: asked}
		got := app.Suggest(g, []core.Identity{support})
		if got.IdentityID != want.IdentityID || (want.NewName == nil) != (got.NewName == nil) || want.NewName != nil && *got.NewName != *want.NewName {
			t.Errorf("asked %q: suggested %+v", asked, got)
		}
	}
	for _, bad := range []app.DeviceRequest{{KeyType: "root"}, {KeyType: core.KeyManagement, Identity: "Support"}, {Identity: "two\nlines"}} {
		_, err := w.app.Device.Start(w.ctx, bad)
		wantKind(t, err, core.KindInvalid)
	}
}

func countOrigin(keys []core.APIKey, origin core.KeyOrigin) int {
	n := 0
	for _, k := range keys {
		if k.Origin == origin {
			n++
		}
	}
	return n
}

func TestConcurrentPollsRedeemOnce(t *testing.T) {
	w := newSignInWorld(t)
	acct := w.account("owner@example.com", "long enough password")
	start, _ := w.app.Device.Start(w.ctx, app.DeviceRequest{From: "192.0.2.7"})
	empty := ""
	if _, err := w.app.Device.Approve(w.ctx, acct.ID, start.UserCode, app.DeviceChoice{NewName: &empty}); err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := w.app.Device.Poll(w.ctx, start.DeviceCode)
			results <- err
		}()
	}
	won := 0
	for range 8 {
		err := <-results
		switch {
		case err == nil:
			won++
		case oauthCode(err) != core.OAuthInvalidGrant:
			t.Errorf("a losing poll: %v", err)
		}
	}
	keys, _, _ := w.store.Keys(w.ctx, acct.ID, core.KeyIdentity, "", ports.Page{})
	if won != 1 || len(keys) != 1 {
		t.Fatalf("%d polls got keys; %d identity keys stored", won, len(keys))
	}
}
