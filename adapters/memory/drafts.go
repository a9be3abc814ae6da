package memory

import (
	"context"
	"slices"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// draftRows are created on first use.
func (s *Store) draftRows() map[string]*core.Draft {
	if s.drafts == nil {
		s.drafts = map[string]*core.Draft{}
	}
	return s.drafts
}

func cloneDraft(d core.Draft) core.Draft {
	d.To, d.Cc, d.Bcc, d.AttachmentIDs = slices.Clone(d.To), slices.Clone(d.Cc), slices.Clone(d.Bcc), slices.Clone(d.AttachmentIDs)
	return d
}

func (s *Store) CreateDraft(ctx context.Context, d core.Draft) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if in, ok := s.inboxes[d.InboxID]; !ok || in.AccountID != d.AccountID || in.IdentityID != d.IdentityID {
		return core.NotFound("Inbox not found.")
	}
	record, err := s.effect(ctx)
	if err != nil {
		return err
	}
	d = cloneDraft(d)
	s.draftRows()[d.ID] = &d
	record(ports.EffectDraft, d.ID)
	return nil
}

// draft is an account's draft under the caller's lock.
func (s *Store) draft(accountID, id string) (*core.Draft, error) {
	d, ok := s.draftRows()[id]
	if !ok || d.AccountID != accountID {
		return nil, core.NotFound("Draft not found.")
	}
	return d, nil
}

func (s *Store) Draft(_ context.Context, accountID, id string) (core.Draft, error) {
	if err := s.lock(); err != nil {
		return core.Draft{}, err
	}
	defer s.mu.Unlock()
	d, err := s.draft(accountID, id)
	if err != nil {
		return core.Draft{}, err
	}
	return s.withOriginal(*d), nil
}

// withOriginal forgets a deleted original, as the SQL store's ON DELETE
// SET NULL does.
func (s *Store) withOriginal(d core.Draft) core.Draft {
	if _, ok := s.mailTables().messages[d.OriginalID]; !ok {
		d.OriginalID = 0
	}
	return cloneDraft(d)
}

func (s *Store) Drafts(_ context.Context, f ports.DraftFilter) ([]core.Draft, int, error) {
	if err := s.lock(); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	if f.Scope.Empty {
		return nil, 0, nil
	}
	rows := values(s.draftRows(), func(d *core.Draft) bool {
		return d.AccountID == f.Scope.AccountID && (f.Scope.IdentityID == "" || d.IdentityID == f.Scope.IdentityID) &&
			(f.AwaitingApproval == nil || d.AwaitingApproval == *f.AwaitingApproval)
	}, func(a, b *core.Draft) bool {
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
	rows, total := pageOf(rows, f.Page)
	out := make([]core.Draft, len(rows))
	for i, d := range rows {
		out[i] = s.withOriginal(*d).Summary()
	}
	return out, total, nil
}

func (s *Store) UpdateDraft(_ context.Context, d core.Draft) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r, err := s.draft(d.AccountID, d.ID)
	if err != nil {
		return err
	}
	d = cloneDraft(d)
	r.To, r.Cc, r.Bcc, r.Subject, r.Content, r.HTML = d.To, d.Cc, d.Bcc, d.Subject, d.Content, d.HTML
	r.AttachmentIDs, r.SendAt, r.AwaitingApproval, r.UpdatedAt = d.AttachmentIDs, d.SendAt, d.AwaitingApproval, d.UpdatedAt
	return nil
}

func (s *Store) DeleteDraft(_ context.Context, accountID, id string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, err := s.draft(accountID, id); err != nil {
		return err
	}
	delete(s.drafts, id)
	return nil
}
