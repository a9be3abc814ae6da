package core

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"time"
)

// DeviceGrantStatus is where a device authorization stands.
type DeviceGrantStatus string

const (
	DevicePending  DeviceGrantStatus = "pending"  // waiting for a person on the verification page
	DeviceApproved DeviceGrantStatus = "approved" // approved; the client's next poll receives keys
	DeviceDenied   DeviceGrantStatus = "denied"
	DeviceRedeemed DeviceGrantStatus = "redeemed" // the keys were handed out; the device code is spent
)

// DeviceGrantMove is what a grant must be for a store to move it to
// status, and the Conflict to answer when it is not: an answer (approved,
// denied) needs a pending grant, redemption an approved one. A store
// checks and moves in one step, so of two concurrent answers (or polls)
// one wins.
func DeviceGrantMove(status DeviceGrantStatus) (from DeviceGrantStatus, refused error) {
	if status == DeviceRedeemed {
		return DeviceApproved, Conflict("This device code was already used.")
	}
	return DevicePending, Conflict("This request was already answered.")
}

// DeviceGrant is one OAuth 2.0 device authorization (RFC 8628): a client
// asked for keys and polls while a person approves or denies the request on
// the verification page.
type DeviceGrant struct {
	ID string // uuid
	// DeviceCodeHash is the SHA-256 of the device code (HashKey); the code
	// itself is a bearer secret, shown to the client once.
	DeviceCodeHash []byte
	UserCode       string // normalized: UserCodeLength characters of UserCodeAlphabet
	ClientName     string
	// RequestedFrom is the address the request came from, as the API saw
	// the client; the approval page shows it, with CreatedAt.
	RequestedFrom string
	// RequestedKeyType and RequestedIdentity are what the client asked for
	// (an identity key by default; the identity's id or name, if it named
	// one): the page only preselects them, the person decides.
	RequestedKeyType  KeyType
	RequestedIdentity string
	Status            DeviceGrantStatus
	AccountID         string  // set once decided
	KeyType           KeyType // set once approved: the one key the client gets
	IdentityID        string  // set once approved with an identity key
	// Interval is how long the client must wait between polls; slow_down adds to it.
	Interval     time.Duration
	CreatedAt    time.Time
	ExpiresAt    time.Time
	LastPolledAt *time.Time
}

// Expired reports whether the grant can no longer be approved or redeemed.
func (g DeviceGrant) Expired(now time.Time) bool { return !now.Before(g.ExpiresAt) }

// UserCodeAlphabet is RFC 8628 §6.1's: twenty consonants, so a code spells
// no word and has no 0/O or 1/I to confuse.
const UserCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// UserCodeLength gives 20^8 ≈ 2.6·10^10 codes (about 34 bits), enough for
// codes that live 15 minutes behind sign-in and a limit on wrong guesses.
const UserCodeLength = 8

// NewUserCode draws a user code from random (a crypto source).
func NewUserCode(random io.Reader) (string, error) {
	return RandomString(random, UserCodeLength, UserCodeAlphabet)
}

// NormalizeUserCode reads a code as a person types it: any case, with or
// without the dash and spaces. It reports false when the text cannot be a code.
func NormalizeUserCode(typed string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.ToUpper(typed) {
		switch {
		case r == '-' || r == ' ' || r == '\t':
		case strings.ContainsRune(UserCodeAlphabet, r):
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	if b.Len() != UserCodeLength {
		return "", false
	}
	return b.String(), true
}

// FormatUserCode shows a normalized code as people read it: XXXX-XXXX.
func FormatUserCode(code string) string {
	if len(code) != UserCodeLength {
		return code
	}
	return code[:UserCodeLength/2] + "-" + code[UserCodeLength/2:]
}

// OAuth error codes of RFC 6749 §5.2 and RFC 8628 §3.5.
const (
	OAuthAuthorizationPending = "authorization_pending"
	OAuthSlowDown             = "slow_down"
	OAuthAccessDenied         = "access_denied"
	OAuthExpiredToken         = "expired_token"
	OAuthInvalidGrant         = "invalid_grant"
	OAuthInvalidRequest       = "invalid_request"
	OAuthUnsupportedGrantType = "unsupported_grant_type"
)

// OAuthError is an answer of the device token endpoint. OAuth clients read
// the RFC's own shape, {"error": code}, so it is not a Kind of Error.
type OAuthError struct {
	Code        string
	Description string
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

// SecurityStamp changes whenever the account's password does. Signed
// tokens and sessions carry it, so setting a new password ends them all.
func (a Account) SecurityStamp() string {
	sum := sha256.Sum256([]byte("callsign-stamp:" + a.PasswordHash))
	return hex.EncodeToString(sum[:8])
}

// CredentialGuessKey names the count of failed checks (a wrong password,
// key or code) of one credential (an email address or inbox as typed, an
// account's id) from one client address. Failures are counted per
// credential and address, so that a stranger failing from the same address
// (a shared office, a carrier's NAT) cannot lock out the right credentials;
// each adapter also keeps a larger count per address alone, which bounds
// what one address can try across many credentials (password spraying).
// docs/api.md gives the numbers. The credential is compared ignoring case
// and surrounding space, and kept as a short hash, so a long one costs no
// more memory.
func CredentialGuessKey(address, credential string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(credential))))
	return address + " " + hex.EncodeToString(sum[:12])
}

// RefreshFamily is the refresh tokens of one password sign-in. Each
// refresh trades the family's newest token for a newer one (Generation
// counts them); an older one presented again can only be a copy, so it
// ends the family, and with it every token the sign-in gave: the person
// signs in again.
type RefreshFamily struct {
	ID         string // uuid
	AccountID  string
	Generation int64 // the generation of the one refresh token that may be used
	CreatedAt  time.Time
	ExpiresAt  time.Time // the sign-in's end; rotation does not extend it
	RevokedAt  *time.Time
}

var (
	// ErrRefreshEnded answers a token of a family that has expired or was revoked.
	ErrRefreshEnded = Unauthorized("Token is invalid or expired.")
	// ErrRefreshReused answers an older token of a family, which revokes it.
	ErrRefreshReused = Unauthorized("This refresh token was already used, so every token of its sign-in is revoked; sign in again.")
)

// Active reports whether the family's tokens are honoured at now.
func (f RefreshFamily) Active(now time.Time) bool {
	return f.RevokedAt == nil && now.Before(f.ExpiresAt)
}

// Rotate is the refresh, at now, with the family's token of generation
// presented: the next generation when that token is the newest; the family
// revoked and ErrRefreshReused when it is an older one; the family as it
// is and ErrRefreshEnded when it has ended. A store saves the family Rotate
// returns, error or not, in the transaction in which it read it locked.
func (f RefreshFamily) Rotate(presented int64, now time.Time) (RefreshFamily, error) {
	switch {
	case !f.Active(now):
		return f, ErrRefreshEnded
	case presented != f.Generation:
		f.RevokedAt = &now
		return f, ErrRefreshReused
	}
	f.Generation++
	return f, nil
}
