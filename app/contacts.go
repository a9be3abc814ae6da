package app

import (
	"context"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Contacts keeps the people an identity corresponds with (spec §2, §4).
type Contacts struct {
	base
	store      ports.ContactStore
	identities *Identities // contacts are made for an identity
}

// ContactInput carries the fields of a contact write; nil means absent.
type ContactInput struct {
	Email, DisplayName, Nickname, PhoneNumber *string
}

func (s *Contacts) applyContact(c *core.Contact, in ContactInput) (core.Contact, error) {
	for dst, v := range map[*string]*string{&c.Email: in.Email, &c.DisplayName: in.DisplayName, &c.Nickname: in.Nickname, &c.PhoneNumber: in.PhoneNumber} {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	out, err := core.NormalizeContact(*c)
	if err == nil && out.PhoneNumber != "" {
		err = s.possibleNumber("phone_number", out.PhoneNumber)
	}
	return out, err
}

// Create stores a manual contact for the identity the request selects.
func (s *Contacts) Create(ctx context.Context, p core.Principal, requested string, in ContactInput) (core.Contact, error) {
	ident, err := s.identities.selected(ctx, p, requested)
	if err != nil {
		return core.Contact{}, err
	}
	now := s.now()
	c := core.Contact{ID: s.ids.NewUUID(), AccountID: p.AccountID, IdentityID: ident.ID, Source: core.ContactManual, CreatedAt: now, UpdatedAt: now}
	if c, err = s.applyContact(&c, in); err != nil {
		return core.Contact{}, err
	}
	return c, s.store.CreateContact(ctx, c)
}

// List lists a page of the contacts in scope that f keeps (its source, a
// search).
func (s *Contacts) List(ctx context.Context, p core.Principal, requested string, f ports.ContactFilter) ([]core.Contact, int, error) {
	f.Scope = p.Scope(requested)
	return s.store.Contacts(ctx, f)
}

// Find looks a contact up by email, phone number or both (then both must
// match). Account-wide, the oldest match wins.
func (s *Contacts) Find(ctx context.Context, p core.Principal, requested, email, phone string) (core.Contact, error) {
	if email == "" && phone == "" {
		return core.Contact{}, core.Invalid(core.NonFieldErrors, "Pass email or phone_number.")
	}
	if phone != "" && !core.IsE164(phone) {
		return core.Contact{}, core.Invalid("phone_number", core.E164Hint)
	}
	if phone != "" {
		if err := s.possibleNumber("phone_number", phone); err != nil {
			return core.Contact{}, err
		}
	}
	list, _, err := s.store.Contacts(ctx, ports.ContactFilter{Scope: p.Scope(requested), Email: email, PhoneNumber: phone,
		Page: ports.Page{Limit: 1}})
	if err != nil {
		return core.Contact{}, err
	}
	if len(list) == 0 {
		return core.Contact{}, core.NotFound("No contact matches.")
	}
	return list[0], nil
}

// Search lists a page of the contacts whose email, display name, nickname
// or phone number contains q, ignoring case.
func (s *Contacts) Search(ctx context.Context, p core.Principal, requested, q string, page ports.Page) ([]core.Contact, int, error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return nil, 0, core.Invalid("q", "This parameter is required.")
	}
	return s.store.Contacts(ctx, ports.ContactFilter{Scope: p.Scope(requested), Query: q, Page: page})
}

// Get shows one contact.
func (s *Contacts) Get(ctx context.Context, p core.Principal, id string) (core.Contact, error) {
	c, err := s.store.Contact(ctx, p.AccountID, id)
	if err != nil {
		return core.Contact{}, err
	}
	if !p.Scope("").Allows(c.AccountID, c.IdentityID) {
		return core.Contact{}, core.NotFound("Contact not found.")
	}
	return c, nil
}

// Update changes some of a contact's fields; its source stays.
func (s *Contacts) Update(ctx context.Context, p core.Principal, id string, in ContactInput) (core.Contact, error) {
	c, err := s.Get(ctx, p, id)
	if err != nil {
		return core.Contact{}, err
	}
	if c, err = s.applyContact(&c, in); err != nil {
		return core.Contact{}, err
	}
	c.UpdatedAt = s.now()
	return c, s.store.UpdateContact(ctx, c)
}

// Delete removes a contact.
func (s *Contacts) Delete(ctx context.Context, p core.Principal, id string) error {
	if _, err := s.Get(ctx, p, id); err != nil {
		return err
	}
	return s.store.DeleteContact(ctx, p.AccountID, id)
}

// RecordCorrespondent makes a new correspondent an auto contact of the
// identity; one it already knows (by email, or by number) is left alone,
// and one that cannot be a contact (core.Correspondent.Contact) is skipped.
// Mail and SMS delivery record theirs as they store the message.
func (s *Contacts) RecordCorrespondent(ctx context.Context, who core.Correspondent) error {
	c, ok := who.Contact(s.ids.NewUUID(), s.now())
	if !ok {
		return nil
	}
	_, err := s.store.RecordCorrespondent(ctx, c)
	return err
}
