package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Vault keeps an identity's passwords and secrets, sealed at rest (spec §2, §4).
type Vault struct {
	base
	store      ports.VaultStore
	identities *Identities // entries are made for an identity
	gate       gate        // a new entry needs room under vault_items
	cipher     ports.Cipher
	auth       *Auth // a reveal checks the account's password again (reveal.go)
	otp        ports.OneTimePasswords
}

// PasswordInput carries the fields of a password write; nil means absent.
type PasswordInput struct {
	Domain, Username, Password, Notes *string
	// TOTP is an otpauth://totp/ URI or a base32 secret; "" removes the key.
	TOTP *string
}

// SecretInput carries the fields of a secret write; nil means absent.
type SecretInput struct {
	Key, Value *string
}

// aad binds a sealed value to its table, column and row.
func aad(table, field, id string) []byte { return []byte(table + ":" + field + ":" + id) }

func (s *Vault) sealPassword(e core.PasswordEntry) (ports.StoredPassword, error) {
	sp := ports.StoredPassword{Entry: e}
	sp.Entry.Password, sp.Entry.Notes, sp.Entry.TOTP = "", "", ""
	var err error
	if sp.Password, err = s.cipher.Seal([]byte(e.Password), aad("passwords", "password", e.ID)); err != nil {
		return sp, err
	}
	if e.Notes != "" {
		if sp.Notes, err = s.cipher.Seal([]byte(e.Notes), aad("passwords", "notes", e.ID)); err != nil {
			return sp, err
		}
	}
	if e.TOTP != "" {
		sp.TOTP, err = s.cipher.Seal([]byte(e.TOTP), aad("passwords", "totp", e.ID))
	}
	return sp, err
}

func (s *Vault) openPassword(sp ports.StoredPassword) (core.PasswordEntry, error) {
	e := sp.Entry
	pw, err := s.cipher.Open(sp.Password, aad("passwords", "password", e.ID))
	if err != nil {
		return e, err
	}
	e.Password = string(pw)
	if len(sp.Notes) > 0 {
		notes, err := s.cipher.Open(sp.Notes, aad("passwords", "notes", e.ID))
		if err != nil {
			return e, err
		}
		e.Notes = string(notes)
	}
	if len(sp.TOTP) > 0 {
		key, err := s.cipher.Open(sp.TOTP, aad("passwords", "totp", e.ID))
		if err != nil {
			return e, err
		}
		e.TOTP = string(key)
	}
	return e, nil
}

// applyPassword sets the fields in; replace (PUT, create) requires domain and
// password and clears the optional fields that are absent.
func applyPassword(e *core.PasswordEntry, in PasswordInput, replace bool) error {
	var p core.Problems
	if replace {
		if in.Domain == nil {
			p.Add("domain", "This field is required.")
		}
		if in.Password == nil {
			p.Add("password", "This field is required.")
		}
		e.Username, e.Notes, e.TOTP = "", "", ""
	}
	for dst, v := range map[*string]*string{&e.Domain: in.Domain, &e.Username: in.Username, &e.Password: in.Password, &e.Notes: in.Notes} {
		if v != nil {
			*dst = *v
		}
	}
	e.Domain, e.Username = strings.TrimSpace(e.Domain), strings.TrimSpace(e.Username)
	if in.TOTP != nil {
		e.TOTP = ""
		if strings.TrimSpace(*in.TOTP) != "" {
			key, err := core.ParseTOTP(*in.TOTP)
			if err != nil {
				p.Merge(err)
			}
			e.TOTP = key.URI()
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	return core.ValidatePasswordEntry(*e)
}

// CreatePassword stores an entry for the identity the request selects.
func (s *Vault) CreatePassword(ctx context.Context, p core.Principal, requested string, in PasswordInput) (core.PasswordEntry, error) {
	ident, err := s.identities.selected(ctx, p, requested)
	if err != nil {
		return core.PasswordEntry{}, err
	}
	now := s.now()
	e := core.PasswordEntry{ID: s.ids.NewUUID(), AccountID: p.AccountID, IdentityID: ident.ID, CreatedAt: now, UpdatedAt: now}
	if err := applyPassword(&e, in, true); err != nil {
		return core.PasswordEntry{}, err
	}
	if err := s.gate.allowFor(ctx, p.AccountID, ident.ID, core.ActStoreVaultItem); err != nil {
		return core.PasswordEntry{}, err
	}
	sp, err := s.sealPassword(e)
	if err != nil {
		return core.PasswordEntry{}, err
	}
	return e, s.store.CreatePassword(ctx, sp)
}

// ListPasswords lists a page of the entries in scope; domain, when set,
// keeps entries for that host and its subdomains.
func (s *Vault) ListPasswords(ctx context.Context, p core.Principal, requested, domain string, page ports.Page) ([]core.PasswordEntry, int, error) {
	stored, total, err := s.store.Passwords(ctx, ports.PasswordFilter{Scope: p.Scope(requested), Host: core.DomainHost(domain), Page: page})
	if err != nil {
		return nil, 0, err
	}
	out := make([]core.PasswordEntry, len(stored))
	for i, sp := range stored {
		if out[i], err = s.openPassword(sp); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

func (s *Vault) storedPassword(ctx context.Context, p core.Principal, id string) (ports.StoredPassword, error) {
	sp, err := s.store.Password(ctx, p.AccountID, id)
	if err != nil {
		return sp, err
	}
	if !p.Scope("").Allows(sp.Entry.AccountID, sp.Entry.IdentityID) {
		return sp, core.NotFound("Password not found.")
	}
	return sp, nil
}

// GetPassword shows one entry.
func (s *Vault) GetPassword(ctx context.Context, p core.Principal, id string) (core.PasswordEntry, error) {
	sp, err := s.storedPassword(ctx, p, id)
	if err != nil {
		return core.PasswordEntry{}, err
	}
	return s.openPassword(sp)
}

// UpdatePassword changes an entry; replace is PUT.
func (s *Vault) UpdatePassword(ctx context.Context, p core.Principal, id string, in PasswordInput, replace bool) (core.PasswordEntry, error) {
	e, err := s.GetPassword(ctx, p, id)
	if err != nil {
		return core.PasswordEntry{}, err
	}
	if err := applyPassword(&e, in, replace); err != nil {
		return core.PasswordEntry{}, err
	}
	e.UpdatedAt = s.now()
	sp, err := s.sealPassword(e)
	if err != nil {
		return core.PasswordEntry{}, err
	}
	return e, s.store.UpdatePassword(ctx, sp)
}

// TOTP is the current one-time password of an entry that keeps a TOTP
// key; an entry without one is NotFound.
func (s *Vault) TOTP(ctx context.Context, p core.Principal, id string) (core.TOTPCode, error) {
	e, err := s.GetPassword(ctx, p, id)
	if err != nil {
		return core.TOTPCode{}, err
	}
	if e.TOTP == "" {
		return core.TOTPCode{}, core.NotFound("This password entry has no TOTP key.")
	}
	key, err := core.ParseTOTP(e.TOTP)
	if err != nil {
		return core.TOTPCode{}, fmt.Errorf("stored TOTP key of %s: %w", id, err)
	}
	now := s.now()
	code, err := s.otp.TOTP(key, now)
	return core.TOTPCode{Code: code, Period: key.Period, Digits: key.Digits, ExpiresIn: key.ExpiresIn(now)}, err
}

// DeletePassword removes an entry.
func (s *Vault) DeletePassword(ctx context.Context, p core.Principal, id string) error {
	if _, err := s.storedPassword(ctx, p, id); err != nil {
		return err
	}
	return s.store.DeletePassword(ctx, p.AccountID, id)
}

// GeneratePassword draws a password to spec from the crypto source.
func (s *Vault) GeneratePassword(spec core.PasswordSpec) (string, error) {
	return core.GeneratePassword(spec, s.random)
}

func (s *Vault) sealSecret(sec core.Secret) (ports.StoredSecret, error) {
	ss := ports.StoredSecret{Secret: sec}
	ss.Secret.Value = ""
	var err error
	ss.Value, err = s.cipher.Seal([]byte(sec.Value), aad("secrets", "value", sec.ID))
	return ss, err
}

func (s *Vault) openSecret(ss ports.StoredSecret) (core.Secret, error) {
	sec := ss.Secret
	v, err := s.cipher.Open(ss.Value, aad("secrets", "value", sec.ID))
	sec.Value = string(v)
	return sec, err
}

func applySecret(sec *core.Secret, in SecretInput, replace bool) error {
	var p core.Problems
	if replace {
		if in.Key == nil {
			p.Add("key", "This field is required.")
		}
		if in.Value == nil {
			p.Add("value", "This field is required.")
		}
	}
	if in.Key != nil {
		sec.Key = *in.Key
	}
	if in.Value != nil {
		sec.Value = *in.Value
	}
	if err := p.Err(); err != nil {
		return err
	}
	return core.ValidateSecret(*sec)
}

// CreateSecret stores a secret for the identity the request selects; its
// key must be new to the identity (409 otherwise).
func (s *Vault) CreateSecret(ctx context.Context, p core.Principal, requested string, in SecretInput) (core.Secret, error) {
	ident, err := s.identities.selected(ctx, p, requested)
	if err != nil {
		return core.Secret{}, err
	}
	now := s.now()
	sec := core.Secret{ID: s.ids.NewUUID(), AccountID: p.AccountID, IdentityID: ident.ID, CreatedAt: now, UpdatedAt: now}
	if err := applySecret(&sec, in, true); err != nil {
		return core.Secret{}, err
	}
	if err := s.gate.allowFor(ctx, p.AccountID, ident.ID, core.ActStoreVaultItem); err != nil {
		return core.Secret{}, err
	}
	ss, err := s.sealSecret(sec)
	if err != nil {
		return core.Secret{}, err
	}
	return sec, s.store.CreateSecret(ctx, ss)
}

// ListSecrets lists a page of the secrets in scope, optionally only the one with key.
func (s *Vault) ListSecrets(ctx context.Context, p core.Principal, requested, key string, page ports.Page) ([]core.Secret, int, error) {
	stored, total, err := s.store.Secrets(ctx, ports.SecretFilter{Scope: p.Scope(requested), Key: key, Page: page})
	if err != nil {
		return nil, 0, err
	}
	out := make([]core.Secret, len(stored))
	for i, ss := range stored {
		if out[i], err = s.openSecret(ss); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

func (s *Vault) storedSecret(ctx context.Context, p core.Principal, id string) (ports.StoredSecret, error) {
	ss, err := s.store.Secret(ctx, p.AccountID, id)
	if err != nil {
		return ss, err
	}
	if !p.Scope("").Allows(ss.Secret.AccountID, ss.Secret.IdentityID) {
		return ss, core.NotFound("Secret not found.")
	}
	return ss, nil
}

// GetSecret shows one secret.
func (s *Vault) GetSecret(ctx context.Context, p core.Principal, id string) (core.Secret, error) {
	ss, err := s.storedSecret(ctx, p, id)
	if err != nil {
		return core.Secret{}, err
	}
	return s.openSecret(ss)
}

// UpdateSecret changes a secret; replace is PUT.
func (s *Vault) UpdateSecret(ctx context.Context, p core.Principal, id string, in SecretInput, replace bool) (core.Secret, error) {
	sec, err := s.GetSecret(ctx, p, id)
	if err != nil {
		return core.Secret{}, err
	}
	if err := applySecret(&sec, in, replace); err != nil {
		return core.Secret{}, err
	}
	sec.UpdatedAt = s.now()
	ss, err := s.sealSecret(sec)
	if err != nil {
		return core.Secret{}, err
	}
	return sec, s.store.UpdateSecret(ctx, ss)
}

// DeleteSecret removes a secret.
func (s *Vault) DeleteSecret(ctx context.Context, p core.Principal, id string) error {
	if _, err := s.storedSecret(ctx, p, id); err != nil {
		return err
	}
	return s.store.DeleteSecret(ctx, p.AccountID, id)
}

// VaultCheck counts what a check of the sealed values found.
type VaultCheck struct {
	Checked    int // sealed values looked at
	Unreadable int // values the configured keys do not open
}

// Check tries to open every sealed value with the configured keys, reading
// nothing out: a restore proves with it that the vault key fits the data.
func (s *Vault) Check(ctx context.Context) (VaultCheck, error) {
	var rep VaultCheck
	var after ports.SealedValue
	for {
		page, err := s.store.SealedValues(ctx, after, resealPage)
		if err != nil || len(page) == 0 {
			return rep, err
		}
		for _, v := range page {
			rep.Checked++
			if _, err := s.cipher.Open(v.Sealed, aad(v.Table, v.Field, v.ID)); err != nil {
				rep.Unreadable++
			}
		}
		after = page[len(page)-1]
	}
}

// ResealReport counts what a reseal pass did.
type ResealReport struct {
	Checked  int // sealed values looked at
	Resealed int // values moved to the current key
	Skipped  int // values changed by someone else while we worked (sealed anew by them)
}

// resealPage is how many values a reseal pass reads at a time.
const resealPage = 500

// Reseal moves every sealed value that is not under the current key to it.
// It runs beside a live service: a value updated meanwhile is left to its
// writer (ReplaceSealed only swaps what it read), and a second pass picks up
// anything still under an old key.
func (s *Vault) Reseal(ctx context.Context) (ResealReport, error) {
	var rep ResealReport
	var after ports.SealedValue
	for {
		page, err := s.store.SealedValues(ctx, after, resealPage)
		if err != nil {
			return rep, err
		}
		if len(page) == 0 {
			return rep, nil
		}
		for _, v := range page {
			rep.Checked++
			if s.cipher.Current(v.Sealed) {
				continue
			}
			binding := aad(v.Table, v.Field, v.ID)
			plain, err := s.cipher.Open(v.Sealed, binding)
			if err != nil {
				return rep, err
			}
			fresh, err := s.cipher.Seal(plain, binding)
			if err != nil {
				return rep, err
			}
			swapped, err := s.store.ReplaceSealed(ctx, v, fresh)
			if err != nil {
				return rep, err
			}
			if swapped {
				rep.Resealed++
			} else {
				rep.Skipped++
			}
		}
		after = page[len(page)-1]
	}
}
