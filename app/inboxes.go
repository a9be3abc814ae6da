package app

import (
	"context"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Inboxes are identities' addresses: which can be had, making, showing and
// deleting them (spec §4).
type Inboxes struct {
	base
	inboxes     ports.InboxStore
	domains     *Domains    // which domains take inboxes
	identities  *Identities // an inbox is made for an identity
	gate        gate        // new inboxes need an active subscription
	mailDomains []string    // generated addresses take the first
	// changes tells mail clients watching an inbox that it went.
	changes *changeFeed[int64]
	// deletedWith is what goes with a deleted inbox: its address from the
	// cache of recipients, its IMAP source's worker (New sets it).
	deletedWith func(core.Inbox)
}

// inboxAddress checks an address asked for by an account: well formed, and
// on a domain the account may use.
func (s *Inboxes) inboxAddress(ctx context.Context, accountID, field, addr string) (string, error) {
	email, err := core.NormalizeEmail(field, addr)
	if err != nil {
		return "", err
	}
	local, domain, _ := core.SplitAddress(email)
	if local, err = core.NormalizeLocalPart(field, local); err != nil {
		return "", err
	}
	if err := s.domains.ForInbox(ctx, accountID, field, domain); err != nil {
		return "", err
	}
	return local + "@" + domain, nil
}

// CheckAvailability reports whether an address can be had.
func (s *Inboxes) CheckAvailability(ctx context.Context, p core.Principal, addr string) (string, bool, error) {
	if strings.TrimSpace(addr) == "" {
		return "", false, core.Invalid("email", "This parameter is required.")
	}
	email, err := s.inboxAddress(ctx, p.AccountID, "email", addr)
	if err != nil {
		return "", false, err
	}
	_, err = s.inboxes.InboxByEmail(ctx, email)
	if isNotFound(err) {
		return email, true, nil
	}
	return email, false, err
}

// CreateInbox gives an identity another address: the one asked for, or one
// generated from the identity's name. It needs an active subscription.
func (s *Inboxes) CreateInbox(ctx context.Context, p core.Principal, requested, addr string) (core.Inbox, error) {
	ident, err := s.identities.selected(ctx, p, requested)
	if err != nil {
		return core.Inbox{}, err
	}
	if err := s.gate.allow(ctx, p.AccountID, core.ActCreateInbox); err != nil {
		return core.Inbox{}, err
	}
	in := core.Inbox{AccountID: p.AccountID, IdentityID: ident.ID, CreatedAt: s.now()}
	if strings.TrimSpace(addr) != "" {
		if in.Email, err = s.inboxAddress(ctx, p.AccountID, "email", addr); err != nil {
			return core.Inbox{}, err
		}
		in.UUID = s.ids.NewUUID()
		if in.ID, err = s.inboxes.CreateInbox(ctx, in); err != nil {
			if core.KindOf(err) == core.KindConflict {
				return core.Inbox{}, core.Conflict("The address %s is already taken.", in.Email)
			}
			return core.Inbox{}, err
		}
		return in, nil
	}
	for attempt := 1; ; attempt++ {
		local, err := core.GeneratedLocalPart(ident.Name, attempt, s.random)
		if err != nil {
			return core.Inbox{}, err
		}
		in.UUID, in.Email = s.ids.NewUUID(), local+"@"+s.mailDomains[0]
		in.ID, err = s.inboxes.CreateInbox(ctx, in)
		if core.KindOf(err) != core.KindConflict || attempt >= generatedAttempts {
			return in, err
		}
	}
}

// Inboxes lists a page of the inboxes in scope, newest first.
func (s *Inboxes) Inboxes(ctx context.Context, p core.Principal, requested string, page ports.Page) ([]core.Inbox, int, error) {
	return s.inboxes.Inboxes(ctx, p.Scope(requested), page)
}

// Inbox shows one inbox in scope.
func (s *Inboxes) Inbox(ctx context.Context, p core.Principal, id int64) (core.Inbox, error) {
	in, err := s.inboxes.Inbox(ctx, id)
	if err != nil {
		return core.Inbox{}, err
	}
	if !p.Scope("").Allows(in.AccountID, in.IdentityID) {
		return core.Inbox{}, core.NotFound("Inbox not found.")
	}
	return in, nil
}

// inboxAt is the inbox with an address, for a caller that checks who may see it.
func (s *Inboxes) inboxAt(ctx context.Context, email string) (core.Inbox, error) {
	return s.inboxes.InboxByEmail(ctx, email)
}

// inboxByID is an inbox, for a caller that checks who may see it.
func (s *Inboxes) inboxByID(ctx context.Context, id int64) (core.Inbox, error) {
	return s.inboxes.Inbox(ctx, id)
}

// DeleteInbox deletes an inbox in scope with its mail, threads and IMAP
// source; an identity keeps its last inbox (409). Mail to its address is
// refused from then on (550), on other instances within a minute, when
// their cache of addresses forgets it.
func (s *Inboxes) DeleteInbox(ctx context.Context, p core.Principal, id int64) error {
	in, err := s.Inbox(ctx, p, id)
	if err != nil {
		return err
	}
	if err := s.inboxes.DeleteInbox(ctx, in.AccountID, in.ID); err != nil {
		return err
	}
	s.deletedWith(in)
	s.changes.notify(in.ID)
	s.log.Info("inbox deleted", "inbox", in.ID, "identity", in.IdentityID)
	return nil
}
