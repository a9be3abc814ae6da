package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// StoredDKIMKey is a domain's DKIM key as stores keep it: the public half,
// and the private half (PKCS #8) sealed with the vault cipher.
type StoredDKIMKey struct {
	ID      string // the row's id, which the sealed value is bound to
	Domain  string
	Key     core.DKIMKey
	Private []byte // sealed
}

// DomainStore keeps the accounts' own mail domains and their DKIM keys.
type DomainStore interface {
	// CreateCustomDomain stores a new domain (d.Keys are ignored) with its
	// first key; a domain any account holds clashes on "name".
	CreateCustomDomain(ctx context.Context, d core.Domain, key StoredDKIMKey) error
	// CustomDomain is one of an account's domains, with its keys.
	CustomDomain(ctx context.Context, accountID, name string) (core.Domain, error)
	// CustomDomains lists an account's domains by name, with their keys.
	CustomDomains(ctx context.Context, accountID string) ([]core.Domain, error)
	// DomainByName finds a domain whatever its account, for routing mail.
	DomainByName(ctx context.Context, name string) (core.Domain, error)
	// SaveDomainCheck stores what a check found: status, reason, record
	// statuses, times, the next check (which ends any lease), and which
	// key is active; the key retired (by selector, "" for none) is removed.
	SaveDomainCheck(ctx context.Context, d core.Domain, retired string) error
	// AddDKIMKey adds a rotation's next key to an account's domain,
	// replacing a next key not yet active.
	AddDKIMKey(ctx context.Context, accountID string, key StoredDKIMKey) error
	// SigningKey is a domain's active key with its sealed private half.
	SigningKey(ctx context.Context, domain string) (StoredDKIMKey, error)
	// SetMTASTSMode sets the mode of the MTA-STS policy served for an
	// account's domain.
	SetMTASTSMode(ctx context.Context, accountID, name string, mode core.MTASTSMode) error
	// DeleteCustomDomain removes an account's domain and its keys.
	DeleteCustomDomain(ctx context.Context, accountID, name string) error
	// ClaimDomainChecks leases up to limit domains whose next check is due
	// at now, so that no other instance checks them until leaseUntil.
	ClaimDomainChecks(ctx context.Context, now, leaseUntil time.Time, limit int) ([]core.Domain, error)
	// InboxesOnDomain lists up to limit addresses of inboxes on a domain.
	InboxesOnDomain(ctx context.Context, domain string, limit int) ([]string, error)
}

// SuppressionFilter narrows the suppression list.
type SuppressionFilter struct {
	Scope core.Scope
	Email string // exact, ignoring case
	Page  Page
}

// SuppressionStore keeps the addresses each account no longer sends to.
type SuppressionStore interface {
	// Suppress adds an address to its account's list, or refreshes the
	// identity and reason of one already there.
	Suppress(ctx context.Context, s core.Suppression) error
	// Suppressions lists entries in scope, newest first.
	Suppressions(ctx context.Context, f SuppressionFilter) ([]core.Suppression, int, error)
	// SuppressedAmong returns the entries of an account for any of emails.
	SuppressedAmong(ctx context.Context, accountID string, emails []string) ([]core.Suppression, error)
	// DeleteSuppression removes an entry in scope.
	DeleteSuppression(ctx context.Context, scope core.Scope, email string) error
}
