package app

import (
	"context"
	"errors"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Identities manages agent personas and their first inbox (spec §2, §4).
// The services that act for an identity find it here (selected, lookup).
type Identities struct {
	base
	store       ports.IdentityStore
	gate        gate     // a new identity needs an active subscription
	numbers     *numbers // an identity may get a phone number as it is made
	domains     *Domains // which domains take inboxes
	mailDomains []string
	// deletedWith tells the services that keep something of an identity in
	// memory (Receiving's cache of recipients, Sources' workers) that it is gone.
	deletedWith func(core.Identity)
}

// IdentityInput carries the fields of a create or update; nil means absent.
type IdentityInput struct {
	Name            *string
	EmailIdentifier *string
	Domain          *string
	// ProvisionPhone, on create, buys a number in CountryCode (default US)
	// as part of making the identity: if it cannot be had, no identity is made.
	ProvisionPhone bool
	CountryCode    string
}

// generatedAttempts bounds the retries when a generated name or address is taken.
const generatedAttempts = 8

// Create makes an identity and its inbox. Identity keys cannot create identities.
func (s *Identities) Create(ctx context.Context, p core.Principal, in IdentityInput) (core.Identity, error) {
	if err := requireManagement(p); err != nil {
		return core.Identity{}, err
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActCreateIdentity); err != nil {
		return core.Identity{}, err
	}
	if in.ProvisionPhone {
		if err := s.gate.allow(ctx, p.AccountID, core.ActBuyNumber); err != nil {
			return core.Identity{}, err
		}
	}
	var problems core.Problems
	if in.Name != nil {
		problems.Merge(core.ValidateIdentityName(*in.Name))
	}
	domain, err := s.resolveDomain(ctx, p.AccountID, in.Domain)
	problems.Merge(err)
	var local string
	if in.EmailIdentifier != nil {
		local, err = core.NormalizeLocalPart("email_identifier", *in.EmailIdentifier)
		problems.Merge(err)
	}
	var country string
	if in.ProvisionPhone {
		country, err = normalizeCountry(in.CountryCode)
		problems.Merge(err)
	}
	if err := problems.Err(); err != nil {
		return core.Identity{}, err
	}
	now := s.now()
	identityID := s.ids.NewUUID()
	// The number is bought first and stored with the identity in one
	// transaction: a failed purchase leaves no identity behind, and a failed
	// store gives the number back.
	var phone *core.PhoneNumber
	if in.ProvisionPhone {
		number, err := s.numbers.buy(ctx, p.AccountID, identityID, country)
		if err != nil {
			return core.Identity{}, err
		}
		phone = &number
		defer func() {
			if phone != nil {
				s.numbers.release(ctx, *phone)
			}
		}()
	}
	for attempt := 0; ; attempt++ {
		ident := core.Identity{ID: identityID, AccountID: p.AccountID, CreatedAt: now, UpdatedAt: now}
		if in.Name != nil {
			ident.Name = strings.TrimSpace(*in.Name)
		} else if ident.Name, err = s.freeName(ctx, p.AccountID); err != nil {
			return core.Identity{}, err
		}
		addrLocal := local
		if in.EmailIdentifier == nil {
			if addrLocal, err = core.GeneratedLocalPart(ident.Name, attempt, s.random); err != nil {
				return core.Identity{}, err
			}
		}
		ident.Inbox = addrLocal + "@" + domain
		inbox := core.Inbox{UUID: s.ids.NewUUID(), AccountID: p.AccountID, IdentityID: ident.ID, Email: ident.Inbox, CreatedAt: now}
		_, err = s.store.CreateIdentity(ctx, ident, inbox, phone)
		if err == nil {
			if phone != nil {
				ident.Phone, phone = phone.Number, nil // kept: nothing to release
			}
			return ident, nil
		}
		// A clash on something we generated is ours to retry; a clash on what
		// the caller asked for is theirs to hear about.
		field := conflictField(err)
		generated := field == "email" && in.EmailIdentifier == nil || field == "name" && in.Name == nil
		if !generated || attempt+1 >= generatedAttempts {
			return core.Identity{}, conflictMessage(err, ident)
		}
	}
}

// conflictField names the field a Conflict error clashed on.
func conflictField(err error) string {
	var e *core.Error
	if !errors.As(err, &e) || e.Kind != core.KindConflict {
		return ""
	}
	for f := range e.Fields {
		return f
	}
	return ""
}

// conflictMessage words a store clash for the caller.
func conflictMessage(err error, ident core.Identity) error {
	switch conflictField(err) {
	case "name":
		return &core.Error{Kind: core.KindConflict, Message: "An identity named \"" + ident.Name + "\" already exists.", Fields: map[string][]string{"name": {"An identity with this name already exists."}}}
	case "email":
		return &core.Error{Kind: core.KindConflict, Message: "The address " + ident.Inbox + " is already taken.", Fields: map[string][]string{"email_identifier": {"This address is already taken."}}}
	}
	return err
}

func (s *Identities) freeName(ctx context.Context, accountID string) (string, error) {
	for range generatedAttempts {
		name, err := core.GenerateIdentityName(s.random)
		if err != nil {
			return "", err
		}
		taken, err := s.store.IdentityNameTaken(ctx, accountID, name)
		if err != nil {
			return "", err
		}
		if !taken {
			return name, nil
		}
	}
	return "", core.Conflict("Could not find a free identity name; pass one.")
}

// resolveDomain picks the inbox domain: the default platform domain when
// none is asked for, else one the service serves for this account.
func (s *Identities) resolveDomain(ctx context.Context, accountID string, requested *string) (string, error) {
	if requested == nil || strings.TrimSpace(*requested) == "" {
		return s.mailDomains[0], nil
	}
	d := core.NormalizeDomain(*requested)
	return d, s.domains.ForInbox(ctx, accountID, "domain", d)
}

// List shows a page of the identities in scope.
func (s *Identities) List(ctx context.Context, p core.Principal, requested string, page ports.Page) ([]core.Identity, int, error) {
	return s.store.Identities(ctx, p.Scope(requested), page)
}

// Get shows one identity; another identity's key sees none.
func (s *Identities) Get(ctx context.Context, p core.Principal, id string) (core.Identity, error) {
	ident, err := s.store.Identity(ctx, p.AccountID, id)
	if err != nil {
		return core.Identity{}, err
	}
	if !p.Scope("").Allows(ident.AccountID, ident.ID) {
		return core.Identity{}, core.NotFound("Identity not found.")
	}
	return ident, nil
}

// Update changes an identity's name. The address fields are fixed at
// creation: they may be sent back unchanged (a PUT of what GET returned),
// never changed. replace (PUT) requires the name.
func (s *Identities) Update(ctx context.Context, p core.Principal, id string, in IdentityInput, replace bool) (core.Identity, error) {
	ident, err := s.Get(ctx, p, id)
	if err != nil {
		return core.Identity{}, err
	}
	var problems core.Problems
	if in.Name == nil && replace {
		problems.Add("name", "This field is required.")
	}
	if in.Name != nil {
		problems.Merge(core.ValidateIdentityName(*in.Name))
	}
	local, domain, _ := core.SplitAddress(ident.Inbox)
	if in.EmailIdentifier != nil && strings.ToLower(strings.TrimSpace(*in.EmailIdentifier)) != local {
		problems.Add("email_identifier", "The address cannot be changed after creation.")
	}
	if in.Domain != nil && core.NormalizeDomain(*in.Domain) != domain {
		problems.Add("domain", "The address cannot be changed after creation.")
	}
	if err := problems.Err(); err != nil {
		return core.Identity{}, err
	}
	if in.Name == nil {
		return ident, nil
	}
	ident.Name = strings.TrimSpace(*in.Name)
	ident.UpdatedAt = s.now()
	if err := s.store.UpdateIdentity(ctx, ident); err != nil {
		return core.Identity{}, conflictMessage(err, ident)
	}
	return ident, nil
}

// Delete removes an identity and everything it owns: its inboxes and their
// mail, its phone number (released at the provider), keys, passwords,
// secrets, contacts and text messages. Management keys only. The number is
// released first: when the provider fails nothing is deleted (503), and
// the call may be repeated. Without confirm the answer (400) says what
// would go, so a slip of the wrong uuid costs nothing.
func (s *Identities) Delete(ctx context.Context, p core.Principal, id string, confirm bool) error {
	if err := requireManagement(p); err != nil {
		return err
	}
	ident, err := s.Get(ctx, p, id)
	if err != nil {
		return err
	}
	if !confirm {
		return core.Invalid("confirm", "%s", deletionWarning(ident))
	}
	released, err := s.numbers.releaseOf(ctx, ident)
	if err != nil {
		return err
	}
	if err := s.store.DeleteIdentity(ctx, ident.AccountID, ident.ID); err != nil {
		return err
	}
	s.deletedWith(ident)
	s.deleted(ident, released)
	return nil
}

// deletionWarning says what deleting an identity takes with it.
func deletionWarning(ident core.Identity) string {
	number := ""
	if ident.Phone != "" {
		number = " releases its phone number " + ident.Phone + " at the provider (the number is gone for good),"
	}
	return "Deleting the identity \"" + ident.Name + "\" deletes its inboxes (" + ident.Inbox + ") and all their mail," + number +
		" and deletes its keys, passwords, secrets, contacts and text messages. Send confirm=true to go ahead."
}

// deleted logs an identity's deletion (DeleteIdentity wrote its
// identity.deleted and phone.released events in its transaction).
func (s *Identities) deleted(ident core.Identity, released *core.PhoneNumber) {
	if released != nil {
		s.log.Info("phone released", "identity", ident.ID, "phone", released.ID, "number", released.Number, "provider", released.Provider)
	}
	s.log.Info("identity deleted", "identity", ident.ID, "account", ident.AccountID)
}

// selected is the identity a create acts for (spec §1): the bound one for
// an identity key, ?identity= for a management key.
func (s *Identities) selected(ctx context.Context, p core.Principal, requested string) (core.Identity, error) {
	id, err := p.Scope(requested).Single("identity")
	if err != nil {
		return core.Identity{}, err
	}
	return s.store.Identity(ctx, p.AccountID, id)
}

// lookup finds an identity of an account, for a caller that already knows
// it may see it.
func (s *Identities) lookup(ctx context.Context, accountID, id string) (core.Identity, error) {
	return s.store.Identity(ctx, accountID, id)
}
