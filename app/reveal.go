package app

import (
	"context"
	"errors"

	"github.com/callsign/callsign/core"
)

// A person signed in to the console sees a stored password or secret only
// after typing the account's password again, every time; each reveal
// writes a log line naming the account, the identity and the entry, never
// the value.

var errWrongPassword = core.Unauthorized("Wrong password.")

// ConfirmPassword checks the password of a signed-in account again. An
// account without a password (signed in through the provider) never
// passes.
func (s *Auth) ConfirmPassword(ctx context.Context, accountID, password string) error {
	if s.hasher == nil {
		return errors.New("no password hasher configured")
	}
	acct, err := s.accounts.Account(ctx, accountID)
	if err != nil {
		return err
	}
	if !s.hasher.Verify(password, acct.PasswordHash) {
		return errWrongPassword
	}
	return nil
}

// RevealPassword shows an entry's password to the account's owner, who
// has typed the account's password again.
func (s *Vault) RevealPassword(ctx context.Context, p core.Principal, id, accountPassword string) (core.PasswordEntry, error) {
	e, err := s.GetPassword(ctx, p, id)
	if err != nil {
		return core.PasswordEntry{}, err
	}
	if err := s.auth.ConfirmPassword(ctx, p.AccountID, accountPassword); err != nil {
		return core.PasswordEntry{}, err
	}
	s.log.Info("vault value revealed", "account", p.AccountID, "identity", e.IdentityID, "password_entry", e.ID, "by", p.KeyPrefix)
	return e, nil
}

// RevealSecret shows a secret's value to the account's owner, who has
// typed the account's password again.
func (s *Vault) RevealSecret(ctx context.Context, p core.Principal, id, accountPassword string) (core.Secret, error) {
	sec, err := s.GetSecret(ctx, p, id)
	if err != nil {
		return core.Secret{}, err
	}
	if err := s.auth.ConfirmPassword(ctx, p.AccountID, accountPassword); err != nil {
		return core.Secret{}, err
	}
	s.log.Info("vault value revealed", "account", p.AccountID, "identity", sec.IdentityID, "secret", sec.ID, "by", p.KeyPrefix)
	return sec, nil
}
