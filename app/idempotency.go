package app

import (
	"context"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Idempotency keeps the Idempotency-Key of requests that create or send.
// A request claims its key before it runs; the store that makes its effect
// records the effect on the claim in the same transaction (ports.WithClaim);
// the answer is stored after. The decision what a repeat does is
// core.JudgeIdempotencyKey, asked by the store under the key's lock.
type Idempotency struct {
	base
	store ports.IdempotencyStore
	// cipher keys the fingerprints, which may be digests of vault values.
	cipher ports.Cipher

	mu         sync.Mutex
	lastPurged time.Time
}

// IdempotentRequest is what a caller began: what to do, the record of the
// key when it was known, and the claim to run under when the outcome is
// core.IdempotencyRun.
type IdempotentRequest struct {
	Outcome core.IdempotencyOutcome
	Record  core.IdempotencyRecord
	Claim   *ports.IdempotencyClaim
}

// purgeEvery is how often, at most, expired keys are deleted (a batch
// at a time, by whichever request comes along).
const (
	purgeEvery = time.Minute
	purgeBatch = 1000
)

// Begin claims key for a request of p to scope (the route) whose content
// is fingerprint. The scope includes the identity of an identity key, so
// one identity's keys never answer another's requests. The fingerprint is
// kept as a keyed digest: a request that creates a secret must not leave a
// plain hash of it behind (a short value could be guessed back). After a
// vault key rotation a repeat of an older request is therefore a mismatch.
func (s *Idempotency) Begin(ctx context.Context, p core.Principal, scope, key string, fingerprint []byte) (IdempotentRequest, error) {
	if err := core.CheckIdempotencyKey(key); err != nil {
		return IdempotentRequest{}, err
	}
	now := s.now()
	s.purge(ctx, now)
	c := ports.IdempotencyClaim{AccountID: p.AccountID, Scope: scope + " " + p.IdentityID, Key: key, Token: s.ids.NewUUID()}
	outcome, was, err := s.store.ClaimIdempotencyKey(ctx, c, s.cipher.Digest(fingerprint), now, now.Add(core.IdempotencyLease))
	if err != nil {
		return IdempotentRequest{}, err
	}
	if err := core.IdempotencyError(outcome); err != nil {
		return IdempotentRequest{}, err
	}
	r := IdempotentRequest{Outcome: outcome, Record: was}
	if outcome == core.IdempotencyRun {
		r.Claim = &c
	}
	return r, nil
}

// Answer stores the answer of a claimed request, for its repeats.
func (s *Idempotency) Answer(ctx context.Context, c *ports.IdempotencyClaim, status int, body []byte) error {
	return s.store.AnswerIdempotencyKey(context.WithoutCancel(ctx), *c, status, body)
}

// Release forgets the key of a request that failed: a failed request did
// nothing (its transaction rolled back, or it undid what it did), so a
// retry runs anew.
func (s *Idempotency) Release(ctx context.Context, c *ports.IdempotencyClaim) error {
	return s.store.ReleaseIdempotencyKey(context.WithoutCancel(ctx), *c)
}

// purge deletes a batch of expired keys, at most once per purgeEvery.
func (s *Idempotency) purge(ctx context.Context, now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.lastPurged) >= purgeEvery
	if due {
		s.lastPurged = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if _, err := s.store.PurgeIdempotencyKeys(ctx, now.Add(-core.IdempotencyKeyTTL), purgeBatch); err != nil {
		s.log.Warn("purging expired idempotency keys", "err", err)
	}
}
