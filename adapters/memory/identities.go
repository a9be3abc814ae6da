package memory

import (
	"context"
	"strconv"
	"strings"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

func (s *Store) CreateIdentity(ctx context.Context, ident core.Identity, inbox core.Inbox, phone *core.PhoneNumber) (int64, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return 0, err
	}
	if _, ok := s.accounts[ident.AccountID]; !ok {
		return 0, core.NotFound("Account not found.")
	}
	for _, r := range s.identities {
		if r.AccountID == ident.AccountID && r.Name == ident.Name {
			return 0, conflict("name", "An identity with this name already exists.")
		}
	}
	if err := s.addressFree(inbox.Email); err != nil {
		return 0, err
	}
	ident.Inbox, ident.Phone = inbox.Email, ""
	var events []core.NewEvent
	if phone != nil {
		p := *phone
		var err error
		if p.ID, err = s.addPhone(p); err != nil {
			return 0, err
		}
		events = append(events, core.PhoneEvent(core.PhoneProvisioned, p))
	}
	s.identities[ident.ID] = &identityRow{ident}
	inbox.ID = s.nextID()
	s.inboxes[inbox.ID] = &inboxRow{inbox}
	record(ports.EffectIdentity, ident.ID)
	if phone != nil {
		ident.Phone = phone.Number
	}
	events = append([]core.NewEvent{core.IdentityEvent(core.IdentityCreated, ident), core.InboxEvent(inbox)}, events...)
	return inbox.ID, s.writeEvents(events...)
}

func (s *Store) addressFree(email string) error {
	for _, r := range s.inboxes {
		if strings.EqualFold(r.Email, email) {
			return conflict("email", "This address is already taken.")
		}
	}
	return nil
}

func (s *Store) Identity(_ context.Context, accountID, id string) (core.Identity, error) {
	if err := s.lock(); err != nil {
		return core.Identity{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.identities[id]
	if !ok || r.AccountID != accountID {
		return core.Identity{}, core.NotFound("Identity not found.")
	}
	ident := r.Identity
	ident.Phone, ident.Inbox = s.phoneOf(ident.ID), s.inboxOf(ident.ID)
	return ident, nil
}

func (s *Store) Identities(_ context.Context, scope core.Scope, page ports.Page) ([]core.Identity, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.identities, func(r *identityRow) bool { return scope.Allows(r.AccountID, r.ID) },
		func(a, b *identityRow) bool { return before(a.CreatedAt, a.ID, b.CreatedAt, b.ID) })
	rows, total := pageOf(rows, page)
	out := make([]core.Identity, len(rows))
	for i, r := range rows {
		out[i] = r.Identity
		out[i].Phone, out[i].Inbox = s.phoneOf(r.ID), s.inboxOf(r.ID)
	}
	return out, total, nil
}

func (s *Store) UpdateIdentity(_ context.Context, ident core.Identity) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, ok := s.identities[ident.ID]
	if !ok || r.AccountID != ident.AccountID {
		return core.NotFound("Identity not found.")
	}
	for _, o := range s.identities {
		if o.ID != ident.ID && o.AccountID == ident.AccountID && o.Name == ident.Name {
			return conflict("name", "An identity with this name already exists.")
		}
	}
	r.Name, r.UpdatedAt = ident.Name, ident.UpdatedAt
	return nil
}

func (s *Store) IdentityNameTaken(_ context.Context, accountID, name string) (bool, error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	for _, r := range s.identities {
		if r.AccountID == accountID && r.Name == name {
			return true, nil
		}
	}
	return false, nil
}

func (s *Store) CreateInbox(ctx context.Context, in core.Inbox) (int64, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	record, err := s.effect(ctx)
	if err != nil {
		return 0, err
	}
	if r, ok := s.identities[in.IdentityID]; !ok || r.AccountID != in.AccountID {
		return 0, core.NotFound("Identity not found.")
	}
	if err := s.addressFree(in.Email); err != nil {
		return 0, err
	}
	in.ID = s.nextID()
	s.inboxes[in.ID] = &inboxRow{in}
	record(ports.EffectInbox, strconv.FormatInt(in.ID, 10))
	return in.ID, s.writeEvents(core.InboxEvent(in))
}

func (s *Store) Inbox(_ context.Context, id int64) (core.Inbox, error) {
	if err := s.lock(); err != nil {
		return core.Inbox{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.inboxes[id]
	if !ok {
		return core.Inbox{}, core.NotFound("Inbox not found.")
	}
	return r.Inbox, nil
}

func (s *Store) InboxByEmail(_ context.Context, email string) (core.Inbox, error) {
	if err := s.lock(); err != nil {
		return core.Inbox{}, err
	}
	defer s.mu.Unlock()
	for _, r := range s.inboxes {
		if strings.EqualFold(r.Email, email) {
			return r.Inbox, nil
		}
	}
	return core.Inbox{}, core.NotFound("Inbox not found.")
}

func (s *Store) FirstInbox(_ context.Context, accountID string) (core.Inbox, error) {
	if err := s.lock(); err != nil {
		return core.Inbox{}, err
	}
	defer s.mu.Unlock()
	rows := values(s.inboxes, func(r *inboxRow) bool { return accountID == "" || r.AccountID == accountID },
		func(a, b *inboxRow) bool { return a.ID < b.ID })
	if len(rows) == 0 {
		return core.Inbox{}, core.NotFound("Inbox not found.")
	}
	return rows[0].Inbox, nil
}

func (s *Store) Inboxes(_ context.Context, scope core.Scope, page ports.Page) ([]core.Inbox, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	rows := values(s.inboxes, func(r *inboxRow) bool { return scope.Allows(r.AccountID, r.IdentityID) },
		func(a, b *inboxRow) bool { return a.ID > b.ID })
	rows, total := pageOf(rows, page)
	out := make([]core.Inbox, len(rows))
	for i, r := range rows {
		out[i] = r.Inbox
	}
	return out, total, nil
}

func (s *Store) DeleteIdentity(_ context.Context, accountID, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if !s.ownsIdentity(accountID, id) {
		return core.NotFound("Identity not found.")
	}
	ident := s.identities[id].Identity
	ident.Phone, ident.Inbox = s.phoneOf(id), s.inboxOf(id)
	var events []core.NewEvent
	for _, p := range s.phoneTables().phones {
		if p.IdentityID == id {
			events = append(events, core.PhoneEvent(core.PhoneReleased, *p))
		}
	}
	events = append(events, core.IdentityEvent(core.IdentityDeleted, ident))
	s.deleteOwned(func(_, identityID string) bool { return identityID == id })
	return s.writeEvents(events...)
}

func (s *Store) DeleteInbox(_ context.Context, accountID string, id int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	in, ok := s.inboxes[id]
	if !ok || in.AccountID != accountID {
		return core.NotFound("Inbox not found.")
	}
	inboxes := 0
	for _, r := range s.inboxes {
		if r.IdentityID == in.IdentityID {
			inboxes++
		}
	}
	if err := core.InboxMayGo(inboxes); err != nil {
		return err
	}
	delete(s.inboxes, id)
	m := s.mailTables()
	deleteWhere(m.messages, func(r *messageRow) bool { return r.InboxID == id })
	deleteWhere(m.threads, func(r *core.Thread) bool { return r.InboxID == id })
	deleteWhere(m.attachments, func(r *ports.AttachmentContent) bool { return r.MessageID != 0 && m.messages[r.MessageID] == nil })
	deleteWhere(m.outbox, func(r *outboxRow) bool { return m.messages[r.MessageID] == nil })
	deleteWhere(s.sourceRows(), func(r *sourceRow) bool { return r.Source.InboxID == id })
	deleteWhere(s.draftRows(), func(d *core.Draft) bool { return d.InboxID == id })
	return nil
}

// inboxOf is the address of an identity's first inbox, as the SQL store
// joins it.
func (s *Store) inboxOf(identityID string) string {
	var first *inboxRow
	for _, r := range s.inboxes {
		if r.IdentityID == identityID && (first == nil || r.ID < first.ID) {
			first = r
		}
	}
	if first == nil {
		return ""
	}
	return first.Email
}
