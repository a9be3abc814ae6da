package memory

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type idempotencyID struct{ account, scope, key string }

// idempotencyRows are created on first use.
func (s *Store) idempotencyRows() map[idempotencyID]*core.IdempotencyRecord {
	if s.idempotency == nil {
		s.idempotency = map[idempotencyID]*core.IdempotencyRecord{}
	}
	return s.idempotency
}

func claimID(c ports.IdempotencyClaim) idempotencyID {
	return idempotencyID{c.AccountID, c.Scope, c.Key}
}

func (s *Store) ClaimIdempotencyKey(_ context.Context, c ports.IdempotencyClaim, fingerprint []byte, now, leaseUntil time.Time) (core.IdempotencyOutcome, core.IdempotencyRecord, error) {
	if err := s.lock(); err != nil {
		return 0, core.IdempotencyRecord{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.accounts[c.AccountID]; !ok {
		return 0, core.IdempotencyRecord{}, core.NotFound("Account not found.")
	}
	rows := s.idempotencyRows()
	var was core.IdempotencyRecord
	r := rows[claimID(c)]
	if r != nil {
		was = *r
	}
	outcome := core.JudgeIdempotencyKey(r, fingerprint, now)
	if outcome == core.IdempotencyRun {
		rows[claimID(c)] = &core.IdempotencyRecord{Fingerprint: append([]byte(nil), fingerprint...), Token: c.Token, CreatedAt: now, LeaseUntil: leaseUntil}
	}
	return outcome, was, nil
}

func (s *Store) AnswerIdempotencyKey(_ context.Context, c ports.IdempotencyClaim, status int, body []byte) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if r := s.idempotencyRows()[claimID(c)]; r != nil && r.Token == c.Token {
		r.Status, r.Body = status, append([]byte(nil), body...)
	}
	return nil
}

func (s *Store) ReleaseIdempotencyKey(_ context.Context, c ports.IdempotencyClaim) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if r := s.idempotencyRows()[claimID(c)]; r != nil && r.Token == c.Token {
		delete(s.idempotency, claimID(c))
	}
	return nil
}

func (s *Store) PurgeIdempotencyKeys(_ context.Context, before time.Time, limit int) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for id, r := range s.idempotencyRows() {
		if n < limit && r.CreatedAt.Before(before) {
			delete(s.idempotency, id)
			n++
		}
	}
	return n, nil
}

// effect checks, before a create stores anything, that the claim ctx
// carries (if any) still holds its key, and returns what records the
// create's effect on it afterwards (the first effect is kept). Callers
// hold s.mu.
func (s *Store) effect(ctx context.Context) (func(kind, id string), error) {
	c := ports.ClaimOf(ctx)
	if c == nil {
		return func(string, string) {}, nil
	}
	r := s.idempotencyRows()[claimID(*c)]
	if r == nil || r.Token != c.Token {
		return nil, core.Conflict("This request's %s was taken over by a retry; it did nothing.", core.IdempotencyHeader)
	}
	return func(kind, id string) {
		if r.EffectKind == "" {
			r.EffectKind, r.EffectID = kind, id
		}
	}, nil
}

// IdempotencyBodies lists the answers kept with keys, for tests that check
// what is kept.
func (s *Store) IdempotencyBodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for _, r := range s.idempotency {
		if r.Body != nil {
			out = append(out, r.Body)
		}
	}
	return out
}
