package memory

import (
	"context"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// trustTables hold custom domains, their DKIM keys and suppressions.
type trustTables struct {
	domains      map[string]*trustDomain         // by name
	suppressions map[[2]string]*core.Suppression // by account and lower-cased email
}

type trustDomain struct {
	core.Domain  // Keys unused: keys holds them
	keys         []ports.StoredDKIMKey
	claimedUntil time.Time
}

func (s *Store) trustTables() *trustTables {
	if s.trust.domains == nil {
		s.trust = trustTables{domains: map[string]*trustDomain{}, suppressions: map[[2]string]*core.Suppression{}}
	}
	return &s.trust
}

func (s *Store) deleteAccountDomains(accountID string) {
	t := s.trustTables()
	deleteWhere(t.domains, func(r *trustDomain) bool { return r.AccountID == accountID })
}

// domain is the stored row as callers see it: a copy, with its keys (the
// active one first).
func (r *trustDomain) domain() core.Domain {
	d := r.Domain
	d.Type = core.DomainCustom
	d.Checks = maps.Clone(r.Checks)
	d.Keys = nil
	keys := append([]ports.StoredDKIMKey(nil), r.keys...)
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].Key.Active && !keys[j].Key.Active })
	for _, k := range keys {
		d.Keys = append(d.Keys, k.Key)
	}
	return d
}

func (s *Store) CreateCustomDomain(_ context.Context, d core.Domain, key ports.StoredDKIMKey) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.trustTables()
	if _, ok := t.domains[d.Name]; ok {
		return conflict("name", "This domain belongs to an account already.")
	}
	d.Keys, d.Checks = nil, maps.Clone(d.Checks)
	key.Private = clone(key.Private)
	t.domains[d.Name] = &trustDomain{Domain: d, keys: []ports.StoredDKIMKey{key}}
	return nil
}

func (s *Store) CustomDomain(_ context.Context, accountID, name string) (core.Domain, error) {
	if err := s.lock(); err != nil {
		return core.Domain{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.trustTables().domains[name]
	if !ok || r.AccountID != accountID {
		return core.Domain{}, core.NotFound("Domain not found.")
	}
	return r.domain(), nil
}

func (s *Store) CustomDomains(_ context.Context, accountID string) ([]core.Domain, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	rows := values(s.trustTables().domains, func(r *trustDomain) bool { return r.AccountID == accountID },
		func(a, b *trustDomain) bool { return a.Name < b.Name })
	out := make([]core.Domain, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

func (s *Store) DomainByName(_ context.Context, name string) (core.Domain, error) {
	if err := s.lock(); err != nil {
		return core.Domain{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.trustTables().domains[name]
	if !ok {
		return core.Domain{}, core.NotFound("Domain not found.")
	}
	return r.domain(), nil
}

func (s *Store) SetMTASTSMode(_ context.Context, accountID, name string, mode core.MTASTSMode) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.trustTables().domains[name]
	if !ok || r.AccountID != accountID {
		return core.NotFound("Domain not found.")
	}
	r.MTASTSMode = mode
	return nil
}

func (s *Store) SaveDomainCheck(_ context.Context, d core.Domain, retired string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.trustTables().domains[d.Name]
	if !ok || r.AccountID != d.AccountID {
		return core.NotFound("Domain not found.")
	}
	r.Status, r.Reason, r.Checks = d.Status, d.Reason, maps.Clone(d.Checks)
	r.VerifiedAt, r.LastCheckedAt, r.NextCheckAt, r.claimedUntil = d.VerifiedAt, d.LastCheckedAt, d.NextCheckAt, time.Time{}
	kept := r.keys[:0]
	for _, k := range r.keys {
		if k.Key.Selector == retired {
			continue
		}
		for _, dk := range d.Keys {
			if dk.Selector == k.Key.Selector {
				k.Key.Active = dk.Active
			}
		}
		kept = append(kept, k)
	}
	r.keys = kept
	return nil
}

func (s *Store) AddDKIMKey(_ context.Context, accountID string, key ports.StoredDKIMKey) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.trustTables().domains[key.Domain]
	if !ok || r.AccountID != accountID {
		return core.NotFound("Domain not found.")
	}
	kept := r.keys[:0]
	for _, k := range r.keys {
		if k.Key.Active {
			kept = append(kept, k)
		}
	}
	for _, k := range kept {
		if k.Key.Selector == key.Key.Selector {
			return conflict("selector", "The domain has a key with this selector already.")
		}
	}
	key.Private = clone(key.Private)
	r.keys = append(kept, key)
	return nil
}

func (s *Store) SigningKey(_ context.Context, domain string) (ports.StoredDKIMKey, error) {
	if err := s.lock(); err != nil {
		return ports.StoredDKIMKey{}, err
	}
	defer s.mu.Unlock()
	if r, ok := s.trustTables().domains[domain]; ok {
		for _, k := range r.keys {
			if k.Key.Active {
				k.Private = clone(k.Private)
				return k, nil
			}
		}
	}
	return ports.StoredDKIMKey{}, core.NotFound("Signing key not found.")
}

func (s *Store) DeleteCustomDomain(_ context.Context, accountID, name string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.trustTables()
	if r, ok := t.domains[name]; !ok || r.AccountID != accountID {
		return core.NotFound("Domain not found.")
	}
	delete(t.domains, name)
	return nil
}

func (s *Store) ClaimDomainChecks(_ context.Context, now, leaseUntil time.Time, limit int) ([]core.Domain, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	due := values(s.trustTables().domains, func(r *trustDomain) bool { return !r.NextCheckAt.After(now) && !r.claimedUntil.After(now) },
		func(a, b *trustDomain) bool {
			return a.NextCheckAt.Before(b.NextCheckAt) || a.NextCheckAt.Equal(b.NextCheckAt) && a.Name < b.Name
		})
	var out []core.Domain
	for _, r := range due[:min(limit, len(due))] {
		r.claimedUntil = leaseUntil
		out = append(out, r.domain())
	}
	return out, nil
}

func (s *Store) InboxesOnDomain(_ context.Context, domain string, limit int) ([]string, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	rows := values(s.inboxes, func(r *inboxRow) bool { return strings.HasSuffix(r.Email, "@"+domain) },
		func(a, b *inboxRow) bool { return a.Email < b.Email })
	var out []string
	for _, r := range rows[:min(limit, len(rows))] {
		out = append(out, r.Email)
	}
	return out, nil
}

func (s *Store) Suppress(_ context.Context, sup core.Suppression) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	sup.Email = strings.ToLower(sup.Email)
	s.trustTables().suppressions[[2]string{sup.AccountID, sup.Email}] = &sup
	return nil
}

func (s *Store) Suppressions(_ context.Context, f ports.SuppressionFilter) ([]core.Suppression, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	if f.Scope.Empty {
		return nil, 0, nil
	}
	rows := values(s.trustTables().suppressions, func(r *core.Suppression) bool {
		return r.AccountID == f.Scope.AccountID && (f.Scope.IdentityID == "" || r.IdentityID == f.Scope.IdentityID) &&
			(f.Email == "" || r.Email == strings.ToLower(f.Email))
	}, func(a, b *core.Suppression) bool {
		return a.CreatedAt.After(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.Email < b.Email
	})
	rows, total := pageOf(rows, f.Page)
	return derefAll(rows), total, nil
}

func (s *Store) SuppressedAmong(_ context.Context, accountID string, emails []string) ([]core.Suppression, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	rows := values(s.trustTables().suppressions, func(r *core.Suppression) bool {
		if r.AccountID != accountID {
			return false
		}
		for _, e := range emails {
			if strings.ToLower(e) == r.Email {
				return true
			}
		}
		return false
	}, func(a, b *core.Suppression) bool { return a.Email < b.Email })
	return derefAll(rows), nil
}

func derefAll[T any](rows []*T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out
}

func (s *Store) DeleteSuppression(_ context.Context, scope core.Scope, email string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.trustTables()
	k := [2]string{scope.AccountID, strings.ToLower(email)}
	r, ok := t.suppressions[k]
	if !ok || scope.Empty || scope.IdentityID != "" && r.IdentityID != scope.IdentityID {
		return core.NotFound("Suppression not found.")
	}
	delete(t.suppressions, k)
	return nil
}
