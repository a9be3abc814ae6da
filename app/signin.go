package app

import (
	"context"
	"errors"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Token lifetimes (docs/api.md).
const (
	AccessTokenLifetime  = 15 * time.Minute
	RefreshTokenLifetime = 7 * 24 * time.Hour
	// SessionLifetime bounds a sign-in on the verification page.
	SessionLifetime = 12 * time.Hour
)

// TokenPrincipalPrefix stands where a key's visible prefix would be for a
// request made with a bearer token.
const TokenPrincipalPrefix = "jwt"

// TokenPair is what a password sign-in answers.
type TokenPair struct {
	Access  string
	Refresh string
}

var (
	// errBadCredentials is the one answer to a wrong email or password,
	// whichever it was.
	errBadCredentials = core.Unauthorized("No active account found with the given credentials.")
	errBadToken       = core.Unauthorized("Token is invalid or expired.")
)

// ErrNoExternalSignIn answers every use of the provider when none is configured.
var ErrNoExternalSignIn = core.NotFound("Sign-in through an OpenID Connect provider is not configured.")

// Login checks an email and password, starts a refresh family for the
// sign-in and issues an access and a refresh token of it.
func (s *Auth) Login(ctx context.Context, email, password string) (TokenPair, error) {
	acct, err := s.checkPassword(ctx, email, password)
	if err != nil {
		return TokenPair{}, err
	}
	now := s.now()
	if err := s.families.DeleteRefreshFamilies(ctx, now); err != nil {
		s.log.Warn("forgetting expired sign-ins failed", "err", err)
	}
	f := core.RefreshFamily{ID: s.ids.NewUUID(), AccountID: acct.ID, Generation: 1, CreatedAt: now, ExpiresAt: now.Add(RefreshTokenLifetime)}
	if err := s.families.CreateRefreshFamily(ctx, f); err != nil {
		return TokenPair{}, err
	}
	return s.issuePair(acct, f)
}

// Refresh trades the newest refresh token of a sign-in for a new access
// token and a newer refresh token. An older one ends the sign-in.
func (s *Auth) Refresh(ctx context.Context, refresh string) (TokenPair, error) {
	acct, c, err := s.verifyToken(ctx, refresh, ports.RefreshToken)
	if err != nil {
		return TokenPair{}, err
	}
	f, err := s.families.RotateRefreshFamily(ctx, c.Family, c.Generation, s.now())
	switch {
	case errors.Is(err, core.ErrRefreshReused):
		s.log.Warn("a used refresh token was presented again: its sign-in is revoked", "account", acct.ID, "family", c.Family)
		return TokenPair{}, err
	case isNotFound(err):
		return TokenPair{}, errBadToken
	case err != nil:
		return TokenPair{}, err
	}
	return s.issuePair(acct, f)
}

// issuePair issues an access token of the family and its newest refresh
// token, which ends with the sign-in.
func (s *Auth) issuePair(acct core.Account, f core.RefreshFamily) (TokenPair, error) {
	now := s.now()
	access, err := s.sign(acct, ports.TokenClaims{Kind: ports.AccessToken, Family: f.ID, IssuedAt: now, ExpiresAt: now.Add(AccessTokenLifetime)})
	if err != nil {
		return TokenPair{}, err
	}
	refresh, err := s.sign(acct, ports.TokenClaims{Kind: ports.RefreshToken, Family: f.ID, Generation: f.Generation, IssuedAt: now, ExpiresAt: f.ExpiresAt})
	if err != nil {
		return TokenPair{}, err
	}
	return TokenPair{Access: access, Refresh: refresh}, nil
}

// SignIn checks an email and password on the verification page and opens
// a session there.
func (s *Auth) SignIn(ctx context.Context, email, password string) (string, error) {
	acct, err := s.checkPassword(ctx, email, password)
	if err != nil {
		return "", err
	}
	return s.issueSession(acct)
}

// Session resolves a session to its account. A session ends when it
// expires, when the account's password changes, or with the account.
func (s *Auth) Session(ctx context.Context, session string) (core.Account, error) {
	acct, _, err := s.verifyToken(ctx, session, ports.SessionToken)
	return acct, err
}

// checkPassword finds the account of email and checks its password. An
// unknown email costs the same work and gets the same answer as a wrong
// password, so neither the answer nor its timing tells whether it exists.
func (s *Auth) checkPassword(ctx context.Context, email, password string) (core.Account, error) {
	if s.hasher == nil {
		return core.Account{}, errors.New("no password hasher configured")
	}
	var acct core.Account
	if normalized, err := core.NormalizeEmail("email", email); err == nil {
		if acct, err = s.accounts.AccountByEmail(ctx, normalized); err != nil && !isNotFound(err) {
			return core.Account{}, err
		}
	}
	// With no account, or an account without a password, the hash is empty:
	// the hasher then checks against a decoy, which never matches.
	if !s.hasher.Verify(password, acct.PasswordHash) || acct.ID == "" {
		return core.Account{}, errBadCredentials
	}
	return acct, nil
}

// issueSession issues a session token of the verification page and console.
func (s *Auth) issueSession(acct core.Account) (string, error) {
	now := s.now()
	return s.sign(acct, ports.TokenClaims{Kind: ports.SessionToken, IssuedAt: now, ExpiresAt: now.Add(SessionLifetime)})
}

// sign signs claims for the account, under its current security stamp.
func (s *Auth) sign(acct core.Account, c ports.TokenClaims) (string, error) {
	if s.tokens == nil {
		return "", errors.New("no token signer configured")
	}
	c.AccountID, c.Stamp = acct.ID, acct.SecurityStamp()
	return s.tokens.Sign(c)
}

// verifyToken checks a token of one kind and returns its account, which
// must still exist with the password the token was issued under, and its
// claims. Access and refresh tokens belong to a refresh family.
func (s *Auth) verifyToken(ctx context.Context, token string, kind ports.TokenKind) (core.Account, ports.TokenClaims, error) {
	if s.tokens == nil {
		return core.Account{}, ports.TokenClaims{}, errBadToken
	}
	c, err := s.tokens.Verify(token, s.now())
	if err != nil || c.Kind != kind || kind != ports.SessionToken && c.Family == "" {
		return core.Account{}, ports.TokenClaims{}, errBadToken
	}
	acct, err := s.accounts.Account(ctx, c.AccountID)
	if isNotFound(err) {
		return core.Account{}, ports.TokenClaims{}, errBadToken
	}
	if err != nil {
		return core.Account{}, ports.TokenClaims{}, err
	}
	if acct.SecurityStamp() != c.Stamp {
		return core.Account{}, ports.TokenClaims{}, errBadToken
	}
	return acct, c, nil
}

// authenticateToken resolves a bearer access token: it acts for its
// account with the rights of a management key while its sign-in's refresh
// family is active.
func (s *Auth) authenticateToken(ctx context.Context, token string) (core.Principal, error) {
	acct, c, err := s.verifyToken(ctx, token, ports.AccessToken)
	if err != nil {
		return core.Principal{}, err
	}
	f, err := s.families.RefreshFamily(ctx, c.Family)
	if isNotFound(err) || err == nil && (!f.Active(s.now()) || f.AccountID != acct.ID) {
		return core.Principal{}, errBadToken
	}
	if err != nil {
		return core.Principal{}, err
	}
	return core.Principal{AccountID: acct.ID, KeyType: core.KeyManagement, KeyPrefix: TokenPrincipalPrefix, Origin: core.OriginJWT}, nil
}

// ExternalProvider names the configured sign-in provider; "" when none is.
func (s *Auth) ExternalProvider() string {
	if s.external == nil {
		return ""
	}
	return s.external.Name()
}

// ExternalSignInURL is where to send a browser to sign in with the provider.
func (s *Auth) ExternalSignInURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	if s.external == nil {
		return "", ErrNoExternalSignIn
	}
	return s.external.AuthCodeURL(ctx, state, nonce, verifier)
}

// ExternalSignIn completes a sign-in through the provider and opens a
// session for the account whose email address the provider has verified:
// the verified address is the link between the two.
func (s *Auth) ExternalSignIn(ctx context.Context, code, nonce, verifier string) (string, error) {
	if s.external == nil {
		return "", ErrNoExternalSignIn
	}
	p := s.external
	who, err := p.Exchange(ctx, code, nonce, verifier)
	if err != nil {
		return "", err
	}
	email, err := core.NormalizeEmail("email", who.Email)
	if err != nil || !who.EmailVerified {
		return "", core.Forbidden("%s has not confirmed an email address for this sign-in, so it cannot be linked to an account. Sign in with your password instead.", p.Name())
	}
	acct, err := s.accounts.AccountByEmail(ctx, email)
	if isNotFound(err) {
		return "", core.Forbidden("No account uses %s. Sign in with your password, or ask the administrator to create the account.", email)
	}
	if err != nil {
		return "", err
	}
	s.log.Info("signed in through the provider", "account", acct.ID, "issuer", who.Issuer, "subject", who.Subject)
	return s.issueSession(acct)
}
