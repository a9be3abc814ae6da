package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// Store is every store at once; the SQL store and the memory fake implement
// it whole, and each app service asks only for the parts it uses.
//
// Conventions for every method: a missing row is a core NotFound error; a
// uniqueness clash is a core Conflict error whose Fields name the field;
// lists take a core.Scope and return nothing when it is Empty.
type Store interface {
	Pinger
	AccountStore
	KeyStore
	IdentityStore
	InboxStore
}

// AccountStore keeps accounts.
type AccountStore interface {
	CreateAccount(ctx context.Context, a core.Account) error
	Account(ctx context.Context, id string) (core.Account, error)
	AccountByEmail(ctx context.Context, email string) (core.Account, error)
	SetSubscription(ctx context.Context, id string, active bool) error
	SetPasswordHash(ctx context.Context, id, hash string) error
	// DeleteAccount removes the account and everything it owns.
	DeleteAccount(ctx context.Context, id string) error
}

// KeyStore keeps API keys (their hashes, never the keys).
type KeyStore interface {
	// CreateKey stores k and returns its new id.
	CreateKey(ctx context.Context, k core.APIKey) (int64, error)
	KeyByHash(ctx context.Context, hash []byte) (core.APIKey, error)
	Key(ctx context.Context, accountID string, id int64) (core.APIKey, error)
	// Keys lists an account's keys of one type, oldest first; identityID ""
	// means every identity.
	Keys(ctx context.Context, accountID string, t core.KeyType, identityID string) ([]core.APIKey, error)
	DeleteKey(ctx context.Context, accountID string, id int64) error
	TouchKey(ctx context.Context, id int64, at time.Time) error
}

// IdentityStore keeps identities.
type IdentityStore interface {
	// CreateIdentity stores an identity with its first inbox in one
	// transaction and returns the inbox's new id. A taken name clashes on
	// "name", a taken address on "email".
	CreateIdentity(ctx context.Context, id core.Identity, inbox core.Inbox) (int64, error)
	Identity(ctx context.Context, accountID, id string) (core.Identity, error)
	// Identities lists the identities in scope, oldest first.
	Identities(ctx context.Context, scope core.Scope) ([]core.Identity, error)
	// UpdateIdentity saves the mutable fields (name, updated time).
	UpdateIdentity(ctx context.Context, id core.Identity) error
	IdentityNameTaken(ctx context.Context, accountID, name string) (bool, error)
}

// InboxStore keeps inboxes.
type InboxStore interface {
	CreateInbox(ctx context.Context, in core.Inbox) (int64, error)
	Inbox(ctx context.Context, id int64) (core.Inbox, error)
	InboxByEmail(ctx context.Context, email string) (core.Inbox, error)
	// Inboxes lists the inboxes in scope, newest first.
	Inboxes(ctx context.Context, scope core.Scope) ([]core.Inbox, error)
}
