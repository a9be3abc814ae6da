package memory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/url"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Hasher is a fast ports.PasswordHasher fake: a bare SHA-256, so tests do
// not pay for Argon2.
type Hasher struct{}

func (Hasher) Hash(password string) (string, error) {
	sum := sha256.Sum256([]byte(password))
	return "sha256$" + hex.EncodeToString(sum[:]), nil
}

func (h Hasher) Verify(password, encoded string) bool {
	want, _ := h.Hash(password)
	return subtle.ConstantTimeCompare([]byte(want), []byte(encoded)) == 1
}

// Tokens is a ports.Tokens fake: a token is an opaque random string it
// remembers, so a token changed in any way is unknown to it.
type Tokens struct {
	mu     sync.Mutex
	issued map[string]ports.TokenClaims
}

var errUnknownToken = errors.New("memory tokens: unknown or expired token")

func (t *Tokens) Sign(c ports.TokenClaims) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.issued == nil {
		t.issued = map[string]ports.TokenClaims{}
	}
	tok := "memtok." + rand.Text()
	t.issued[tok] = c
	return tok, nil
}

func (t *Tokens) Verify(token string, now time.Time) (ports.TokenClaims, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.issued[token]
	if !ok || !now.Before(c.ExpiresAt) {
		return ports.TokenClaims{}, errUnknownToken
	}
	return c, nil
}

// SignInProvider is a ports.ExternalSignIn fake. AuthCodeURL points at an
// imaginary provider and carries the code the provider would send back;
// Exchange answers Person for that code, given the same nonce and verifier.
type SignInProvider struct {
	mu      sync.Mutex
	Person  ports.ExternalIdentity
	pending map[string][2]string // code → nonce, verifier
}

func (p *SignInProvider) Name() string { return "idp.test" }

func (p *SignInProvider) AuthCodeURL(_ context.Context, state, nonce, verifier string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = map[string][2]string{}
	}
	code := rand.Text()
	p.pending[code] = [2]string{nonce, verifier}
	return "https://idp.test/authorize?" + url.Values{"code": {code}, "state": {state}}.Encode(), nil
}

func (p *SignInProvider) Exchange(_ context.Context, code, nonce, verifier string) (ports.ExternalIdentity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want, ok := p.pending[code]
	delete(p.pending, code)
	if !ok || want != [2]string{nonce, verifier} {
		return ports.ExternalIdentity{}, core.Unauthorized("The sign-in provider did not confirm who you are. Try again.")
	}
	return p.Person, nil
}
