package memory

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type accountRow struct{ core.Account }
type keyRow struct{ core.APIKey }
type identityRow struct{ core.Identity }
type inboxRow struct{ core.Inbox }

func conflict(field, msg string) error {
	return &core.Error{Kind: core.KindConflict, Message: msg, Fields: map[string][]string{field: {msg}}}
}

func (s *Store) CreateAccount(_ context.Context, a core.Account) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for _, r := range s.accounts {
		if strings.EqualFold(r.Email, a.Email) {
			return conflict("email", "An account with this email already exists.")
		}
	}
	s.accounts[a.ID] = &accountRow{a}
	return nil
}

func (s *Store) Account(_ context.Context, id string) (core.Account, error) {
	if err := s.lock(); err != nil {
		return core.Account{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.accounts[id]
	if !ok {
		return core.Account{}, core.NotFound("Account not found.")
	}
	return r.Account, nil
}

func (s *Store) AccountByEmail(_ context.Context, email string) (core.Account, error) {
	if err := s.lock(); err != nil {
		return core.Account{}, err
	}
	defer s.mu.Unlock()
	for _, r := range s.accounts {
		if strings.EqualFold(r.Email, email) {
			return r.Account, nil
		}
	}
	return core.Account{}, core.NotFound("Account not found.")
}

func (s *Store) updateAccount(id string, f func(*core.Account)) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.accounts[id]
	if !ok {
		return core.NotFound("Account not found.")
	}
	f(&r.Account)
	return nil
}

func (s *Store) SetSubscription(_ context.Context, id string, active bool) error {
	return s.updateAccount(id, func(a *core.Account) { a.SubscriptionActive = active })
}

func (s *Store) SetPasswordHash(_ context.Context, id, hash string) error {
	return s.updateAccount(id, func(a *core.Account) { a.PasswordHash = hash })
}

func (s *Store) DeleteAccount(_ context.Context, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.accounts[id]; !ok {
		return core.NotFound("Account not found.")
	}
	delete(s.accounts, id)
	s.deleteOwned(func(accountID, _ string) bool { return accountID == id })
	deleteWhere(s.authTables().families, func(f *core.RefreshFamily) bool { return f.AccountID == id })
	s.deleteAccountDomains(id)
	t := s.eventTables()
	t.log = slices.DeleteFunc(t.log, func(e core.Event) bool { return e.AccountID == id })
	delete(t.seq, id)
	delete(t.pruned, id)
	return nil
}

// deleteOwned deletes, from every table that belongs to an identity or an
// account, the rows whose owner (account, identity) gone reports; it is
// what the SQL store's ON DELETE CASCADE does.
func (s *Store) deleteOwned(gone func(accountID, identityID string) bool) {
	deleteWhere(s.keys, func(r *keyRow) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(s.identities, func(r *identityRow) bool { return gone(r.AccountID, r.ID) })
	deleteWhere(s.inboxes, func(r *inboxRow) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(s.passwords, func(r *passwordRow) bool { return gone(r.Entry.AccountID, r.Entry.IdentityID) })
	deleteWhere(s.secrets, func(r *secretRow) bool { return gone(r.Secret.AccountID, r.Secret.IdentityID) })
	deleteWhere(s.contacts, func(r *contactRow) bool { return gone(r.AccountID, r.IdentityID) })
	m := s.mailTables()
	deleteWhere(m.messages, func(r *messageRow) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(m.threads, func(r *core.Thread) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(m.attachments, func(r *ports.AttachmentContent) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(m.outbox, func(r *outboxRow) bool { return m.messages[r.MessageID] == nil })
	p := s.phoneTables()
	deleteWhere(p.phones, func(r *core.PhoneNumber) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(p.sms, func(r *core.SMSMessage) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(p.conversations, func(r *core.Conversation) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(p.voice, func(r *core.VoiceAgent) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(p.calls, func(r *core.Call) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(s.sourceRows(), func(r *sourceRow) bool { return gone(r.Source.AccountID, r.Source.IdentityID) })
	deleteWhere(s.authTables().grants, func(g *core.DeviceGrant) bool { return g.AccountID != "" && gone(g.AccountID, g.IdentityID) })
	deleteWhere(s.trustTables().suppressions, func(r *core.Suppression) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(s.ruleRows(), func(r *core.Rule) bool { return gone(r.AccountID, r.IdentityID) })
	deleteWhere(s.draftRows(), func(d *core.Draft) bool { return gone(d.AccountID, d.IdentityID) })
}

func deleteWhere[K comparable, V any](m map[K]V, match func(V) bool) {
	for k, v := range m {
		if match(v) {
			delete(m, k)
		}
	}
}

// values returns the rows of m that match, sorted by less.
func values[K comparable, V any](m map[K]V, match func(V) bool, less func(a, b V) bool) []V {
	var out []V
	for _, v := range m {
		if match(v) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func (s *Store) CreateKey(_ context.Context, k core.APIKey) (int64, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, ok := s.accounts[k.AccountID]; !ok {
		return 0, core.NotFound("Account not found.")
	}
	return s.insertKey(k), nil
}

// insertKey stores k under the lock the caller holds and returns its new id.
func (s *Store) insertKey(k core.APIKey) int64 {
	k.ID = s.nextID()
	s.keys[k.ID] = &keyRow{k}
	return k.ID
}

func (s *Store) KeyByHash(_ context.Context, hash []byte) (core.APIKey, error) {
	if err := s.lock(); err != nil {
		return core.APIKey{}, err
	}
	defer s.mu.Unlock()
	for _, r := range s.keys {
		if bytes.Equal(r.Hash, hash) {
			return r.APIKey, nil
		}
	}
	return core.APIKey{}, core.NotFound("Key not found.")
}

func (s *Store) Key(_ context.Context, accountID string, id int64) (core.APIKey, error) {
	if err := s.lock(); err != nil {
		return core.APIKey{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.keys[id]
	if !ok || r.AccountID != accountID {
		return core.APIKey{}, core.NotFound("Key not found.")
	}
	return r.APIKey, nil
}

func (s *Store) Keys(_ context.Context, accountID string, t core.KeyType, identityID string, page ports.Page) ([]core.APIKey, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.keys, func(r *keyRow) bool {
		return r.AccountID == accountID && r.Type == t && (identityID == "" || r.IdentityID == identityID)
	}, func(a, b *keyRow) bool { return a.ID < b.ID })
	rows, total := pageOf(rows, page)
	out := make([]core.APIKey, len(rows))
	for i, r := range rows {
		out[i] = r.APIKey
	}
	return out, total, nil
}

func (s *Store) DeleteKey(_ context.Context, accountID string, id int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.keys[id]
	if !ok || r.AccountID != accountID {
		return core.NotFound("Key not found.")
	}
	managementKeys := 0
	for _, k := range s.keys {
		if k.AccountID == accountID && k.Type == core.KeyManagement {
			managementKeys++
		}
	}
	if err := core.MayDeleteKey(r.APIKey, managementKeys); err != nil {
		return err
	}
	delete(s.keys, id)
	return nil
}

func (s *Store) SetKeyCanSend(_ context.Context, accountID string, id int64, canSend bool) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.keys[id]
	if !ok || r.AccountID != accountID {
		return core.NotFound("Key not found.")
	}
	r.CanSend = canSend
	return nil
}

func (s *Store) TouchKey(_ context.Context, id int64, at time.Time) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if r, ok := s.keys[id]; ok {
		r.LastUsedAt = &at
	}
	return nil
}
