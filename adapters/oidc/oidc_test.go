package oidc

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/callsign/callsign/adapters/oidc/oidctest"
	"github.com/callsign/callsign/core"
)

const callback = "http://callsign.test/api/auth/device/callback/"

var ctx = context.Background()

func start(t *testing.T) (*oidctest.Provider, *Provider) {
	idp := oidctest.Start(t, "callsign", "client-secret", oidctest.Person{Subject: "u-1", Email: "Person@Example.com", EmailVerified: true})
	return idp, New(Config{Issuer: idp.URL, ClientID: "callsign", ClientSecret: "client-secret", RedirectURL: callback})
}

// signIn runs the browser's part: it follows the authorization URL to the
// provider and returns the code and state the provider sends back.
func signIn(t *testing.T, p *Provider, state, nonce, verifier string) (code, gotState string) {
	t.Helper()
	authURL, err := p.AuthCodeURL(ctx, state, nonce, verifier)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	back, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil || back.String()[:len(callback)] != callback {
		t.Fatalf("the provider answered %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	return back.Query().Get("code"), back.Query().Get("state")
}

func TestSignInThroughTheProvider(t *testing.T) {
	idp, p := start(t)
	if p.Name() != "127.0.0.1" {
		t.Fatalf("name %q", p.Name())
	}
	verifier := oauth2.GenerateVerifier()
	code, state := signIn(t, p, "state-1", "nonce-1", verifier)
	if state != "state-1" || code == "" {
		t.Fatalf("code %q state %q", code, state)
	}
	who, err := p.Exchange(ctx, code, "nonce-1", verifier)
	if err != nil {
		t.Fatal(err)
	}
	if who.Issuer != idp.URL || who.Subject != "u-1" || who.Email != "Person@Example.com" || !who.EmailVerified {
		t.Fatalf("identity %+v", who)
	}
	// A code is good once.
	if _, err := p.Exchange(ctx, code, "nonce-1", verifier); core.KindOf(err) != core.KindUnauthorized {
		t.Fatalf("a reused code: %v", err)
	}

	idp.SetPerson(oidctest.Person{Subject: "u-2", Email: "new@example.com"})
	code, _ = signIn(t, p, "s", "n", verifier)
	if who, err := p.Exchange(ctx, code, "n", verifier); err != nil || who.EmailVerified {
		t.Fatalf("an unverified email reads as %+v, %v", who, err)
	}
	idp.Tamper(func(c map[string]any) { c["email_verified"] = "true" })
	code, _ = signIn(t, p, "s", "n", verifier)
	if who, err := p.Exchange(ctx, code, "n", verifier); err != nil || !who.EmailVerified {
		t.Fatalf(`email_verified "true" reads as %+v, %v`, who, err)
	}
}

func TestExchangeRefusesWhatDoesNotCheckOut(t *testing.T) {
	for name, tc := range map[string]struct {
		tamper   func(map[string]any)
		forge    bool
		nonce    string
		verifier func(real string) string
	}{
		"another nonce":         {nonce: "other"},
		"another PKCE verifier": {verifier: func(string) string { return oauth2.GenerateVerifier() }},
		"another audience":      {tamper: func(c map[string]any) { c["aud"] = "someone-else" }},
		"another issuer":        {tamper: func(c map[string]any) { c["iss"] = "https://evil.example" }},
		"expired":               {tamper: func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }},
		"an unpublished key":    {forge: true},
	} {
		t.Run(name, func(t *testing.T) {
			idp, p := start(t)
			idp.Tamper(tc.tamper)
			if tc.forge {
				idp.SignWithUnpublishedKey(t)
			}
			verifier := oauth2.GenerateVerifier()
			code, _ := signIn(t, p, "s", "nonce", verifier)
			nonce := "nonce"
			if tc.nonce != "" {
				nonce = tc.nonce
			}
			if tc.verifier != nil {
				verifier = tc.verifier(verifier)
			}
			if who, err := p.Exchange(ctx, code, nonce, verifier); core.KindOf(err) != core.KindUnauthorized {
				t.Fatalf("accepted as %+v, %v", who, err)
			}
		})
	}
}

func TestProviderDownIsUnavailable(t *testing.T) {
	p := New(Config{Issuer: "http://127.0.0.1:1", ClientID: "callsign", RedirectURL: callback})
	if _, err := p.AuthCodeURL(ctx, "s", "n", "v"); core.KindOf(err) != core.KindUnavailable {
		t.Fatalf("discovery against nothing: %v", err)
	}
	if _, err := p.Exchange(ctx, "code", "n", "v"); core.KindOf(err) != core.KindUnavailable {
		t.Fatalf("exchange against nothing: %v", err)
	}
}
