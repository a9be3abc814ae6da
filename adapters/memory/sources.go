package memory

import (
	"context"
	"sort"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type sourceRow struct {
	ports.StoredMailSource
	// The lease: who pulls the source, and until when.
	claimedBy    string
	claimedUntil time.Time
}

func (s *Store) sourceRows() map[string]*sourceRow {
	if s.sources == nil {
		s.sources = map[string]*sourceRow{}
	}
	return s.sources
}

// sourceOf is the source of an inbox of an account, or nil.
func (s *Store) sourceOf(accountID string, inboxID int64) *sourceRow {
	for _, r := range s.sourceRows() {
		if r.Source.AccountID == accountID && r.Source.InboxID == inboxID {
			return r
		}
	}
	return nil
}

// copySource shares nothing with src, so callers never alias the table.
func copySource(src ports.StoredMailSource) ports.StoredMailSource {
	out := src
	out.Password = clone(src.Password)
	if t := src.Source.Progress.LastSyncAt; t != nil {
		at := *t
		out.Source.Progress.LastSyncAt = &at
	}
	return out
}

func (s *Store) SaveMailSource(_ context.Context, src ports.StoredMailSource) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	in, ok := s.inboxes[src.Source.InboxID]
	if !ok || in.AccountID != src.Source.AccountID {
		return core.NotFound("Inbox not found.")
	}
	row := &sourceRow{StoredMailSource: copySource(src)}
	if old := s.sourceRows()[src.Source.ID]; old != nil {
		row.claimedBy, row.claimedUntil = old.claimedBy, old.claimedUntil // new settings keep the lease
	}
	s.sourceRows()[src.Source.ID] = row
	return nil
}

func (s *Store) MailSource(_ context.Context, accountID string, inboxID int64) (ports.StoredMailSource, error) {
	if err := s.lock(); err != nil {
		return ports.StoredMailSource{}, err
	}
	defer s.mu.Unlock()
	r := s.sourceOf(accountID, inboxID)
	if r == nil {
		return ports.StoredMailSource{}, core.NotFound("Mail source not found.")
	}
	return copySource(r.StoredMailSource), nil
}

func (s *Store) ClaimMailSources(_ context.Context, owner string, now, leaseUntil time.Time) ([]ports.StoredMailSource, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []ports.StoredMailSource
	for _, r := range s.sourceRows() {
		if r.claimedBy == owner || !r.claimedUntil.After(now) {
			r.claimedBy, r.claimedUntil = owner, leaseUntil
			out = append(out, copySource(r.StoredMailSource))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source.ID < out[j].Source.ID })
	return out, nil
}

func (s *Store) ReleaseMailSources(_ context.Context, owner string) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for _, r := range s.sourceRows() {
		if r.claimedBy == owner {
			r.claimedBy, r.claimedUntil = "", time.Time{}
		}
	}
	return nil
}

func (s *Store) DeleteMailSource(_ context.Context, accountID string, inboxID int64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r := s.sourceOf(accountID, inboxID)
	if r == nil {
		return core.NotFound("Mail source not found.")
	}
	delete(s.sources, r.Source.ID)
	return nil
}

func (s *Store) SaveSourceProgress(_ context.Context, id string, version time.Time, p core.SourceProgress) (bool, error) {
	if err := s.lock(); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	r, ok := s.sourceRows()[id]
	if !ok || !r.Source.UpdatedAt.Equal(version) {
		return false, nil
	}
	r.Source.Progress = p
	r.StoredMailSource = copySource(r.StoredMailSource)
	return true, nil
}

func (s *Store) MailboxEntries(_ context.Context, inboxID int64, dir core.Direction, spam bool) ([]ports.MailboxEntry, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	rows := values(s.mailTables().messages, func(r *messageRow) bool {
		return r.InboxID == inboxID && r.Direction == dir && !r.Blocked && r.IsSpam == spam
	},
		func(a, b *messageRow) bool { return a.ID < b.ID })
	out := make([]ports.MailboxEntry, len(rows))
	for i, r := range rows {
		out[i] = ports.MailboxEntry{ID: r.ID, IsRead: r.IsRead, Labels: r.Labels, Size: int64(len(r.raw)), CreatedAt: r.CreatedAt}
	}
	return out, nil
}
