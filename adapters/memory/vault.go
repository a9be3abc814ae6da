package memory

import (
	"bytes"
	"context"
	"sort"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type passwordRow struct{ ports.StoredPassword }
type secretRow struct{ ports.StoredSecret }

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func (s *Store) ownsIdentity(accountID, identityID string) bool {
	r, ok := s.identities[identityID]
	return ok && r.AccountID == accountID
}

func (s *Store) CreatePassword(ctx context.Context, p ports.StoredPassword) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return err
	}
	if !s.ownsIdentity(p.Entry.AccountID, p.Entry.IdentityID) {
		return core.NotFound("Identity not found.")
	}
	p.Password, p.Notes, p.TOTP = clone(p.Password), clone(p.Notes), clone(p.TOTP)
	s.passwords[p.Entry.ID] = &passwordRow{p}
	record(ports.EffectPassword, p.Entry.ID)
	return nil
}

func (s *Store) Password(_ context.Context, accountID, id string) (ports.StoredPassword, error) {
	if err := s.lock(); err != nil {
		return ports.StoredPassword{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.passwords[id]
	if !ok || r.Entry.AccountID != accountID {
		return ports.StoredPassword{}, core.NotFound("Password not found.")
	}
	return r.StoredPassword, nil
}

func (s *Store) Passwords(_ context.Context, f ports.PasswordFilter) ([]ports.StoredPassword, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.passwords, func(r *passwordRow) bool {
		if !f.Scope.Allows(r.Entry.AccountID, r.Entry.IdentityID) {
			return false
		}
		host := core.DomainHost(r.Entry.Domain)
		return f.Host == "" || host == f.Host || strings.HasSuffix(host, "."+f.Host)
	}, func(a, b *passwordRow) bool {
		return before(a.Entry.CreatedAt, a.Entry.ID, b.Entry.CreatedAt, b.Entry.ID)
	})
	rows, total := pageOf(rows, f.Page)
	out := make([]ports.StoredPassword, len(rows))
	for i, r := range rows {
		out[i] = r.StoredPassword
	}
	return out, total, nil
}

func (s *Store) UpdatePassword(_ context.Context, p ports.StoredPassword) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.passwords[p.Entry.ID]
	if !ok || r.Entry.AccountID != p.Entry.AccountID {
		return core.NotFound("Password not found.")
	}
	p.Entry.CreatedAt, p.Entry.IdentityID = r.Entry.CreatedAt, r.Entry.IdentityID
	p.Password, p.Notes, p.TOTP = clone(p.Password), clone(p.Notes), clone(p.TOTP)
	r.StoredPassword = p
	return nil
}

func (s *Store) DeletePassword(_ context.Context, accountID, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.passwords[id]
	if !ok || r.Entry.AccountID != accountID {
		return core.NotFound("Password not found.")
	}
	delete(s.passwords, id)
	return nil
}

func (s *Store) secretKeyTaken(identityID, key, exceptID string) bool {
	for _, r := range s.secrets {
		if r.Secret.IdentityID == identityID && r.Secret.Key == key && r.Secret.ID != exceptID {
			return true
		}
	}
	return false
}

func (s *Store) CreateSecret(ctx context.Context, sec ports.StoredSecret) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return err
	}
	if !s.ownsIdentity(sec.Secret.AccountID, sec.Secret.IdentityID) {
		return core.NotFound("Identity not found.")
	}
	if s.secretKeyTaken(sec.Secret.IdentityID, sec.Secret.Key, "") {
		return conflict("key", "A secret with this key already exists.")
	}
	sec.Value = clone(sec.Value)
	s.secrets[sec.Secret.ID] = &secretRow{sec}
	record(ports.EffectSecret, sec.Secret.ID)
	return nil
}

func (s *Store) Secret(_ context.Context, accountID, id string) (ports.StoredSecret, error) {
	if err := s.lock(); err != nil {
		return ports.StoredSecret{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.secrets[id]
	if !ok || r.Secret.AccountID != accountID {
		return ports.StoredSecret{}, core.NotFound("Secret not found.")
	}
	return r.StoredSecret, nil
}

func (s *Store) Secrets(_ context.Context, f ports.SecretFilter) ([]ports.StoredSecret, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.secrets, func(r *secretRow) bool {
		return f.Scope.Allows(r.Secret.AccountID, r.Secret.IdentityID) && (f.Key == "" || r.Secret.Key == f.Key)
	}, func(a, b *secretRow) bool {
		return before(a.Secret.CreatedAt, a.Secret.ID, b.Secret.CreatedAt, b.Secret.ID)
	})
	rows, total := pageOf(rows, f.Page)
	out := make([]ports.StoredSecret, len(rows))
	for i, r := range rows {
		out[i] = r.StoredSecret
	}
	return out, total, nil
}

func (s *Store) UpdateSecret(_ context.Context, sec ports.StoredSecret) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.secrets[sec.Secret.ID]
	if !ok || r.Secret.AccountID != sec.Secret.AccountID {
		return core.NotFound("Secret not found.")
	}
	if s.secretKeyTaken(r.Secret.IdentityID, sec.Secret.Key, sec.Secret.ID) {
		return conflict("key", "A secret with this key already exists.")
	}
	sec.Secret.CreatedAt, sec.Secret.IdentityID = r.Secret.CreatedAt, r.Secret.IdentityID
	sec.Value = clone(sec.Value)
	r.StoredSecret = sec
	return nil
}

func (s *Store) DeleteSecret(_ context.Context, accountID, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.secrets[id]
	if !ok || r.Secret.AccountID != accountID {
		return core.NotFound("Secret not found.")
	}
	delete(s.secrets, id)
	return nil
}

// sealedCells lists every sealed cell with a pointer to it, in the order
// SealedValues pages through them: by table, id, then field.
func (s *Store) sealedCells() []sealedCell {
	var cells []sealedCell
	for id, r := range s.passwords {
		cells = append(cells, sealedCell{"passwords", id, "notes", &r.Notes}, sealedCell{"passwords", id, "password", &r.Password}, sealedCell{"passwords", id, "totp", &r.TOTP})
	}
	for id, r := range s.secrets {
		cells = append(cells, sealedCell{"secrets", id, "value", &r.Value})
	}
	for _, d := range s.trustTables().domains {
		for i := range d.keys {
			cells = append(cells, sealedCell{"dkim_keys", d.keys[i].ID, "private_key", &d.keys[i].Private})
		}
	}
	for id, r := range s.sourceRows() {
		cells = append(cells, sealedCell{"mail_sources", id, "password", &r.Password})
	}
	for id, w := range s.webhookTables().hooks {
		cells = append(cells, sealedCell{"webhooks", id, "secret", &w.Secret}, sealedCell{"webhooks", id, "previous_secret", &w.PreviousSecret})
	}
	for key, e := range s.certificateTables().entries {
		cells = append(cells, sealedCell{"acme_cache", key, "value", &e.value})
	}
	sort.Slice(cells, func(i, j int) bool { return sealedBefore(cells[i].value(), cells[j].value()) })
	return cells
}

type sealedCell struct {
	table, id, field string
	ptr              *[]byte
}

func (c sealedCell) value() ports.SealedValue {
	return ports.SealedValue{Table: c.table, ID: c.id, Field: c.field, Sealed: clone(*c.ptr)}
}

func sealedBefore(a, b ports.SealedValue) bool {
	if a.Table != b.Table {
		return a.Table < b.Table
	}
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	return a.Field < b.Field
}

func (s *Store) SealedValues(_ context.Context, after ports.SealedValue, limit int) ([]ports.SealedValue, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []ports.SealedValue
	for _, c := range s.sealedCells() {
		v := c.value()
		if len(v.Sealed) == 0 || after.Table != "" && !sealedBefore(after, v) {
			continue
		}
		if out = append(out, v); len(out) == limit {
			break
		}
	}
	return out, nil
}

func (s *Store) ReplaceSealed(_ context.Context, v ports.SealedValue, replacement []byte) (bool, error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	for _, c := range s.sealedCells() {
		if c.table == v.Table && c.id == v.ID && c.field == v.Field {
			if !bytes.Equal(*c.ptr, v.Sealed) {
				return false, nil
			}
			*c.ptr = clone(replacement)
			return true, nil
		}
	}
	return false, nil
}
