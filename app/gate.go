package app

import (
	"context"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// gate is the one check before an account creates an identity, an inbox,
// a number or a domain, or sends: every route and page that does one of
// these (the API, the console, the device page's new identity) goes
// through a use case that asks it first (core.Account.Allows).
type gate struct {
	accounts ports.AccountStore
}

func (g gate) allow(ctx context.Context, accountID string, act core.Act) error {
	acct, err := g.accounts.Account(ctx, accountID)
	if err != nil {
		return err
	}
	return acct.Allows(act)
}
