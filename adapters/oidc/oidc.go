// Package oidc signs people in through an external OpenID Connect provider
// (authorization code flow with PKCE), with coreos/go-oidc for discovery and
// ID token checks and golang.org/x/oauth2 for the code exchange.
package oidc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Config names the provider and this service's client registration.
type Config struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is this service's callback, registered with the provider.
	RedirectURL string
	// HTTPClient talks to the provider; nil means one with a 10-second timeout.
	HTTPClient *http.Client
}

// Provider is a ports.ExternalSignIn. It discovers the provider's endpoints
// on first use, not at start-up, so a provider that is down delays sign-ins
// through it and nothing else.
type Provider struct {
	cfg    Config
	mu     sync.Mutex
	client *client // nil until discovery succeeds
}

type client struct {
	oauth    oauth2.Config
	verifier *gooidc.IDTokenVerifier
}

// New makes a provider; it does not contact it yet.
func New(cfg Config) *Provider {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Provider{cfg: cfg}
}

// Name is the issuer's host name, as in "Sign in with accounts.example.com".
func (p *Provider) Name() string {
	u, err := url.Parse(p.cfg.Issuer)
	if err != nil || u.Hostname() == "" {
		return p.cfg.Issuer
	}
	return u.Hostname()
}

func (p *Provider) ctx(ctx context.Context) context.Context {
	return gooidc.ClientContext(ctx, p.cfg.HTTPClient)
}

// connect discovers the provider once; a failure is retried on the next call.
func (p *Provider) connect(ctx context.Context) (*client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		return p.client, nil
	}
	provider, err := gooidc.NewProvider(p.ctx(ctx), p.cfg.Issuer)
	if err != nil {
		return nil, core.Unavailable("The sign-in provider %s cannot be reached: %v", p.Name(), err)
	}
	p.client = &client{
		oauth: oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, RedirectURL: p.cfg.RedirectURL,
			Endpoint: provider.Endpoint(), Scopes: []string{gooidc.ScopeOpenID, "email"}},
		verifier: provider.Verifier(&gooidc.Config{ClientID: p.cfg.ClientID}),
	}
	return p.client, nil
}

// AuthCodeURL is the provider's authorization URL for one sign-in.
func (p *Provider) AuthCodeURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	c, err := p.connect(ctx)
	if err != nil {
		return "", err
	}
	return c.oauth.AuthCodeURL(state, gooidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

var errRefused = core.Unauthorized("The sign-in provider did not confirm who you are. Try again.")

// Exchange redeems the code and checks the ID token.
func (p *Provider) Exchange(ctx context.Context, code, nonce, verifier string) (ports.ExternalIdentity, error) {
	c, err := p.connect(ctx)
	if err != nil {
		return ports.ExternalIdentity{}, err
	}
	tok, err := c.oauth.Exchange(p.ctx(ctx), code, oauth2.VerifierOption(verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return ports.ExternalIdentity{}, errRefused
		}
		return ports.ExternalIdentity{}, core.Unavailable("The sign-in provider %s did not answer: %v", p.Name(), err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok {
		return ports.ExternalIdentity{}, errRefused
	}
	idToken, err := c.verifier.Verify(p.ctx(ctx), raw)
	if err != nil || idToken.Nonce != nonce {
		return ports.ExternalIdentity{}, errRefused
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"` // some providers send "true"
	}
	if err := idToken.Claims(&claims); err != nil {
		return ports.ExternalIdentity{}, fmt.Errorf("reading the ID token's claims: %w", err)
	}
	return ports.ExternalIdentity{Issuer: idToken.Issuer, Subject: idToken.Subject, Email: claims.Email, EmailVerified: isTrue(claims.EmailVerified)}, nil
}

func isTrue(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case string:
		t, _ := strconv.ParseBool(b)
		return t
	}
	return false
}
