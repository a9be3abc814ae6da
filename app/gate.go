package app

import (
	"context"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// gate is the one check before an account creates an identity, an inbox,
// a number, a domain, a vault item or an upload, sends, or receives mail:
// every route and page that does one of these (the API, the console, the
// device page's new identity, the SMTP listener, IMAP sources, the outbox's
// local delivery) goes through a use case that asks it first. It asks core
// whether the subscription allows the act (core.Account.Allows) and whether
// the account is under the quotas the act needs (core.Limits.Allow), with
// usage counted from the database, so that every instance agrees.
type gate struct {
	accounts ports.AccountStore
	usage    ports.UsageStore
	clock    ports.Clock
	limits   core.Limits
}

// allow checks an act of the whole account.
func (g gate) allow(ctx context.Context, accountID string, act core.Act) error {
	return g.allowFor(ctx, accountID, "", act)
}

// allowFor checks an act of one identity (its vault items are counted).
func (g gate) allowFor(ctx context.Context, accountID, identityID string, act core.Act) error {
	_, err := g.allowing(ctx, accountID, identityID, act)
	return err
}

// allowing is allowFor that also tells the usage it read (none when no
// quota limits act).
func (g gate) allowing(ctx context.Context, accountID, identityID string, act core.Act) (core.Usage, error) {
	if act.NeedsSubscription() {
		acct, err := g.accounts.Account(ctx, accountID)
		if err != nil {
			return core.Usage{}, err
		}
		if err := acct.Allows(act); err != nil {
			return core.Usage{}, err
		}
	}
	quotas := g.limits.Limiting(act)
	if len(quotas) == 0 {
		return core.Usage{}, nil
	}
	now := g.clock.Now()
	used, err := g.usage.Usage(ctx, accountID, identityID, now.Add(-core.SendWindow), quotas)
	if err != nil {
		return core.Usage{}, err
	}
	return used, g.limits.Allow(act, used, now)
}

// usageOf counts every quota of an account, for whoami.
func (g gate) usageOf(ctx context.Context, accountID, identityID string) (core.Usage, error) {
	return g.usage.Usage(ctx, accountID, identityID, g.clock.Now().Add(-core.SendWindow), core.Quotas)
}
