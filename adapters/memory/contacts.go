package memory

import (
	"context"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type contactRow struct{ core.Contact }

// contactClash names the field on which c clashes with another contact of
// its identity, or "".
func (s *Store) contactClash(c core.Contact) string {
	for _, r := range s.contacts {
		if r.IdentityID != c.IdentityID || r.ID == c.ID {
			continue
		}
		if c.Email != "" && strings.EqualFold(r.Email, c.Email) {
			return "email"
		}
		if c.PhoneNumber != "" && r.PhoneNumber == c.PhoneNumber {
			return "phone_number"
		}
	}
	return ""
}

var contactClashMessages = map[string]string{
	"email":        "This identity already has a contact with this email.",
	"phone_number": "This identity already has a contact with this phone number.",
}

func (s *Store) CreateContact(ctx context.Context, c core.Contact) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return err
	}
	if !s.ownsIdentity(c.AccountID, c.IdentityID) {
		return core.NotFound("Identity not found.")
	}
	if f := s.contactClash(c); f != "" {
		return conflict(f, contactClashMessages[f])
	}
	s.contacts[c.ID] = &contactRow{c}
	record(ports.EffectContact, c.ID)
	return nil
}

func (s *Store) Contact(_ context.Context, accountID, id string) (core.Contact, error) {
	if err := s.lock(); err != nil {
		return core.Contact{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.contacts[id]
	if !ok || r.AccountID != accountID {
		return core.Contact{}, core.NotFound("Contact not found.")
	}
	return r.Contact, nil
}

func (s *Store) Contacts(_ context.Context, f ports.ContactFilter) ([]core.Contact, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	q := strings.ToLower(f.Query)
	rows := values(s.contacts, func(r *contactRow) bool {
		switch {
		case !f.Scope.Allows(r.AccountID, r.IdentityID),
			f.Source != "" && r.Source != f.Source,
			f.Email != "" && !strings.EqualFold(r.Email, f.Email),
			f.PhoneNumber != "" && r.PhoneNumber != f.PhoneNumber,
			f.Search != nil && !(core.SearchMatches(*f.Search, core.SearchContacts, "", strings.Join(r.SearchTexts(), "\n")) && inDates(*f.Search, r.CreatedAt)):
			return false
		}
		if q == "" {
			return true
		}
		for _, v := range []string{r.Email, r.DisplayName, r.Nickname, r.PhoneNumber} {
			if strings.Contains(strings.ToLower(v), q) {
				return true
			}
		}
		return false
	}, func(a, b *contactRow) bool {
		// The fake does not rank: a search lists newest first.
		return before(a.CreatedAt, a.ID, b.CreatedAt, b.ID) != (f.Search != nil || f.NewestFirst)
	})
	rows, total := pageOf(rows, f.Page)
	out := make([]core.Contact, len(rows))
	for i, r := range rows {
		out[i] = r.Contact
		if f.Search != nil {
			out[i].Highlights = core.Highlights(*f.Search, core.SearchContacts, "", r.SearchTexts()...)
		}
	}
	return out, total, nil
}

func (s *Store) UpdateContact(_ context.Context, c core.Contact) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.contacts[c.ID]
	if !ok || r.AccountID != c.AccountID {
		return core.NotFound("Contact not found.")
	}
	c.IdentityID, c.CreatedAt, c.Source = r.IdentityID, r.CreatedAt, r.Source
	if f := s.contactClash(c); f != "" {
		return conflict(f, contactClashMessages[f])
	}
	r.Contact = c
	return nil
}

func (s *Store) DeleteContact(_ context.Context, accountID, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.contacts[id]
	if !ok || r.AccountID != accountID {
		return core.NotFound("Contact not found.")
	}
	delete(s.contacts, id)
	return nil
}

func (s *Store) RecordCorrespondent(_ context.Context, c core.Contact) (bool, error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	if !s.ownsIdentity(c.AccountID, c.IdentityID) {
		return false, core.NotFound("Identity not found.")
	}
	if s.contactClash(c) != "" {
		return false, nil
	}
	s.contacts[c.ID] = &contactRow{c}
	return true, nil
}
