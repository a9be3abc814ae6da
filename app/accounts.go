package app

import (
	"context"
	"errors"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Accounts is the administrative side of accounts: what the CLI does.
type Accounts struct {
	base
	store  ports.AccountStore
	auth   *Auth // mints an account's first management key
	hasher ports.PasswordHasher
	gate   gate // counts usage against the quotas
}

// Quotas shows what the account uses of each quota, and the quotas (a
// quota absent from Limits is unlimited). vault_items is the identity
// key's identity's count, or for a management key the highest of any
// identity's: the one nearest the per-identity limit.
func (s *Accounts) Quotas(ctx context.Context, p core.Principal) (core.Usage, core.Limits, error) {
	used, err := s.gate.usageOf(ctx, p.AccountID, p.IdentityID)
	return used, s.gate.limits, err
}

// Bootstrap is a new account with its first management key.
type Bootstrap struct {
	Account       core.Account
	ManagementKey string
}

// MinAccountPassword is the shortest account password accepted.
const MinAccountPassword = 10

// Create makes an account with an active subscription and its first
// management key. password may be empty: the account then signs in with
// keys only until one is set.
func (s *Accounts) Create(ctx context.Context, email, password string) (Bootstrap, error) {
	email, err := core.NormalizeEmail("email", email)
	if err != nil {
		return Bootstrap{}, err
	}
	acct := core.Account{ID: s.ids.NewUUID(), Email: email, SubscriptionActive: true, CreatedAt: s.now()}
	if password != "" {
		if acct.PasswordHash, err = s.hashPassword(password); err != nil {
			return Bootstrap{}, err
		}
	}
	if err := s.store.CreateAccount(ctx, acct); err != nil {
		return Bootstrap{}, err
	}
	key, err := s.auth.mintKey(ctx, acct.ID, "bootstrap", core.OriginCLI)
	if err != nil {
		return Bootstrap{}, err
	}
	return Bootstrap{Account: acct, ManagementKey: key.Secret}, nil
}

// SetSubscription turns an account's subscription on or off (the path a
// billing integration calls).
func (s *Accounts) SetSubscription(ctx context.Context, accountID string, active bool) error {
	return s.store.SetSubscription(ctx, accountID, active)
}

// SetPassword sets or replaces an account's sign-in password.
func (s *Accounts) SetPassword(ctx context.Context, accountID, password string) error {
	hash, err := s.hashPassword(password)
	if err != nil {
		return err
	}
	return s.store.SetPasswordHash(ctx, accountID, hash)
}

// Delete removes an account with everything it owns.
func (s *Accounts) Delete(ctx context.Context, accountID string) error {
	return s.store.DeleteAccount(ctx, accountID)
}

// Find resolves an account by uuid or, when the argument has an @, by email:
// the CLI takes either.
func (s *Accounts) Find(ctx context.Context, idOrEmail string) (core.Account, error) {
	if strings.Contains(idOrEmail, "@") {
		email, err := core.NormalizeEmail("email", idOrEmail)
		if err != nil {
			return core.Account{}, err
		}
		return s.store.AccountByEmail(ctx, email)
	}
	return s.store.Account(ctx, idOrEmail)
}

func (s *Accounts) hashPassword(password string) (string, error) {
	if len([]rune(password)) < MinAccountPassword {
		return "", core.Invalid("password", "Ensure this field has at least %d characters.", MinAccountPassword)
	}
	if s.hasher == nil {
		return "", errors.New("no password hasher configured")
	}
	return s.hasher.Hash(password)
}

// CreateKey is the operator's way back into an account that lost its keys
// (`callsign key create`): a management key, or with identityID a key
// fenced to in.Identity, under the same rules as the API's key routes.
func (s *Accounts) CreateKey(ctx context.Context, accountID string, in KeyInput) (core.NewKey, error) {
	operator := core.Principal{AccountID: accountID, KeyType: core.KeyManagement, KeyPrefix: "operator", Origin: core.OriginCLI}
	if in.Identity == "" {
		return s.auth.CreateManagementKey(ctx, operator, KeyInput{Name: in.Name})
	}
	return s.auth.CreateIdentityKey(ctx, operator, in)
}
