package ports

import (
	"context"

	"github.com/callsign/callsign/core"
)

// RuleStore keeps allow and block rules.
type RuleStore interface {
	CreateRule(ctx context.Context, r core.Rule) error
	// Rules lists the rules in scope, oldest first: an identity's scope
	// holds its own rules and the account-wide ones.
	Rules(ctx context.Context, scope core.Scope, page Page) ([]core.Rule, int, error)
	// CountRules counts every rule of an account.
	CountRules(ctx context.Context, accountID string) (int, error)
	DeleteRule(ctx context.Context, accountID, id string) error
	// RulesFor lists the rules that judge an identity's correspondents on
	// one channel and direction: its own and the account-wide ones.
	RulesFor(ctx context.Context, accountID, identityID string, channel core.RuleChannel, direction core.RuleDirection) ([]core.Rule, error)
}
