package ports

import (
	"context"

	"github.com/callsign/callsign/core"
)

// DraftFilter narrows a list of drafts.
type DraftFilter struct {
	Scope core.Scope
	// AwaitingApproval, when set, keeps the drafts that do (or do not)
	// await approval.
	AwaitingApproval *bool
	Page             Page
}

// DraftStore keeps unsent messages. SaveMail deletes a draft as it stores
// the message made from it (NewMail.FromDraft).
type DraftStore interface {
	// CreateDraft stores d, recording it on the idempotency claim ctx
	// carries (EffectDraft) in the same transaction.
	CreateDraft(ctx context.Context, d core.Draft) error
	Draft(ctx context.Context, accountID, id string) (core.Draft, error)
	// Drafts lists the drafts in scope, oldest first, as summaries
	// (core.Draft.Summary): a preview in place of the bodies.
	Drafts(ctx context.Context, f DraftFilter) ([]core.Draft, int, error)
	// UpdateDraft saves every field of d but its owner, kind and creation time.
	UpdateDraft(ctx context.Context, d core.Draft) error
	DeleteDraft(ctx context.Context, accountID, id string) error
}
