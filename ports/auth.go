package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// DeviceGrantStore keeps device authorizations (RFC 8628).
type DeviceGrantStore interface {
	// CreateDeviceGrant clashes on "user_code" when a live grant has the code.
	CreateDeviceGrant(ctx context.Context, g core.DeviceGrant) error
	DeviceGrantByDeviceCode(ctx context.Context, deviceCodeHash []byte) (core.DeviceGrant, error)
	DeviceGrantByUserCode(ctx context.Context, userCode string) (core.DeviceGrant, error)
	// RecordDevicePoll notes a poll and the interval the client must keep from now on.
	RecordDevicePoll(ctx context.Context, id string, at time.Time, interval time.Duration) error
	// DecideDeviceGrant approves or denies a grant in the one step
	// core.DeviceGrantMove allows (a pending grant; else its Conflict:
	// someone answered first).
	DecideDeviceGrant(ctx context.Context, id string, d DeviceDecision) error
	// RedeemDeviceGrant marks an approved grant redeemed (else the Conflict
	// of core.DeviceGrantMove, say, for a concurrent poll) and stores keys
	// with it, in one transaction, and returns the keys' new ids; on a
	// Conflict no key is stored.
	RedeemDeviceGrant(ctx context.Context, id string, keys []core.APIKey) ([]int64, error)
	// DeleteDeviceGrants forgets grants that expired before the given time.
	DeleteDeviceGrants(ctx context.Context, expiredBefore time.Time) error
}

// RefreshFamilyStore keeps the refresh token families of password
// sign-ins (core.RefreshFamily), so that rotation and reuse are decided
// the same on every instance and across restarts.
type RefreshFamilyStore interface {
	CreateRefreshFamily(ctx context.Context, f core.RefreshFamily) error
	RefreshFamily(ctx context.Context, id string) (core.RefreshFamily, error)
	// RotateRefreshFamily reads the family locked, saves what
	// core.RefreshFamily.Rotate makes of it, whatever Rotate answered, and
	// returns both.
	RotateRefreshFamily(ctx context.Context, id string, presented int64, now time.Time) (core.RefreshFamily, error)
	// DeleteRefreshFamilies forgets families that expired before the given time.
	DeleteRefreshFamilies(ctx context.Context, expiredBefore time.Time) error
}

// DeviceDecision is a person's answer on the verification page.
type DeviceDecision struct {
	Status     core.DeviceGrantStatus // DeviceApproved or DeviceDenied
	AccountID  string
	KeyType    core.KeyType // approvals only: the key the client gets
	IdentityID string       // approvals of an identity key only
}

// TokenKind says what a signed token is for; a token of one kind is never
// accepted as another.
type TokenKind string

const (
	AccessToken  TokenKind = "access"  // a bearer token for the API
	RefreshToken TokenKind = "refresh" // trades for a new access token
	SessionToken TokenKind = "session" // the verification page's sign-in cookie
)

// TokenClaims is what a signed token says.
type TokenClaims struct {
	Kind      TokenKind
	AccountID string
	// Stamp is the account's security stamp when the token was issued.
	Stamp string
	// Family is the refresh family (core.RefreshFamily) of an access or
	// refresh token, and Generation a refresh token's place in it.
	Family     string
	Generation int64
	IssuedAt   time.Time
	ExpiresAt  time.Time
}

// Tokens signs and verifies self-contained tokens (JWTs).
type Tokens interface {
	Sign(c TokenClaims) (string, error)
	// Verify checks the token's signature and that it has not expired at
	// now; any failure is an error, never partial claims.
	Verify(token string, now time.Time) (TokenClaims, error)
}

// ExternalSignIn is an OpenID Connect provider people may sign in with.
type ExternalSignIn interface {
	// Name is how the verification page names the provider.
	Name() string
	// AuthCodeURL is where to send the browser. state, nonce and the PKCE
	// verifier come back to Exchange through the caller.
	AuthCodeURL(ctx context.Context, state, nonce, verifier string) (string, error)
	// Exchange trades the authorization code for the person's identity,
	// after checking the ID token's signature, issuer, audience, expiry and
	// nonce. Provider failures are core Unavailable errors.
	Exchange(ctx context.Context, code, nonce, verifier string) (ExternalIdentity, error)
}

// ExternalIdentity is who the provider says signed in.
type ExternalIdentity struct {
	Issuer        string
	Subject       string
	Email         string
	EmailVerified bool
}
