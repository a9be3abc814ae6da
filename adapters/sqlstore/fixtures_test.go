package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/core"
)

// newMailbox creates an account (email) with one identity whose inbox is
// name@agents.test, all at the time at, and answers them with the inbox's id.
func newMailbox(t *testing.T, db *sqlstore.DB, email, name string, at time.Time) (core.Account, core.Identity, int64) {
	t.Helper()
	ctx := context.Background()
	acct := core.Account{ID: uuid.NewString(), Email: email, SubscriptionActive: true, CreatedAt: at}
	if err := db.CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	ident := core.Identity{ID: uuid.NewString(), AccountID: acct.ID, Name: name, Inbox: name + "@agents.test", CreatedAt: at, UpdatedAt: at}
	inboxID, err := db.CreateIdentity(ctx, ident, core.Inbox{UUID: uuid.NewString(), AccountID: acct.ID, IdentityID: ident.ID,
		Email: ident.Inbox, CreatedAt: at}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return acct, ident, inboxID
}
