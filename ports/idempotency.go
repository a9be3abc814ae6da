package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// IdempotencyClaim is one request's hold on its idempotency key: the key of
// an account within a scope (the route and the caller), held while Token is
// the record's.
type IdempotencyClaim struct {
	AccountID string
	Scope     string
	Key       string
	Token     string
}

// What a request created, as stores record it on the claim (EffectKind).
const (
	EffectMessage    = "email_message"
	EffectSMS        = "sms_message"
	EffectIdentity   = "identity"
	EffectInbox      = "inbox"
	EffectPhone      = "phone"
	EffectPassword   = "password"
	EffectSecret     = "secret"
	EffectContact    = "contact"
	EffectAttachment = "attachment"
	EffectWebhook    = "webhook"
	EffectDraft      = "email_draft"
)

type claimKey struct{}

// WithClaim returns ctx carrying c: the store methods that create what a
// request asked for (SaveMail, SaveSMS, CreateIdentity, CreateInbox,
// CreatePhone, CreatePassword, CreateSecret, CreateContact, SaveUpload,
// CreateWebhook, CreateDraft)
// record their effect on it in the transaction that creates it.
//
// This is how a key's record takes part in the effect's transaction: the
// claim travels with the request's context, not through every store method's
// parameters, because the request's own transaction is opened deep inside
// the store (SaveMail even shares it with other callers).
func WithClaim(ctx context.Context, c *IdempotencyClaim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// ClaimOf is the claim ctx carries, or nil.
func ClaimOf(ctx context.Context) *IdempotencyClaim {
	c, _ := ctx.Value(claimKey{}).(*IdempotencyClaim)
	return c
}

// IdempotencyStore keeps idempotency keys.
//
// Recording an effect: a creating store method whose context carries a
// claim writes (kind, id) of what it created onto the claim's record in the
// same transaction, unless an effect is recorded already (the first is the
// request's). If the claim no longer holds the record (its lease ran out and
// another request took the key), the method stores nothing and fails with a
// Conflict. So an effect never exists without its key, nor twice for one key.
type IdempotencyStore interface {
	// ClaimIdempotencyKey reads the key's record under its lock and asks
	// core.JudgeIdempotencyKey; on IdempotencyRun it (re)writes the record
	// as c's: fingerprint, created now, leased until leaseUntil, with no
	// effect and no answer. It returns the outcome and the record as it was.
	ClaimIdempotencyKey(ctx context.Context, c IdempotencyClaim, fingerprint []byte, now, leaseUntil time.Time) (core.IdempotencyOutcome, core.IdempotencyRecord, error)
	// AnswerIdempotencyKey stores the answer of c's request, if c still
	// holds the key.
	AnswerIdempotencyKey(ctx context.Context, c IdempotencyClaim, status int, body []byte) error
	// ReleaseIdempotencyKey forgets the key, if c still holds it.
	ReleaseIdempotencyKey(ctx context.Context, c IdempotencyClaim) error
	// PurgeIdempotencyKeys deletes up to limit records created before
	// before, and says how many it deleted.
	PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error)
}
