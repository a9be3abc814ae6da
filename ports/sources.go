package ports

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/callsign/callsign/core"
)

// StoredMailSource is a mail source as stores keep it: Password of Source
// is empty, its sealed form is beside it.
type StoredMailSource struct {
	Source   core.MailSource
	Password []byte // sealed
}

// MailSourceStore keeps the IMAP mailboxes that feed inboxes, one per inbox.
type MailSourceStore interface {
	// SaveMailSource creates or replaces the source of s.Source.InboxID with
	// its settings and progress.
	SaveMailSource(ctx context.Context, s StoredMailSource) error
	MailSource(ctx context.Context, accountID string, inboxID int64) (StoredMailSource, error)
	// ClaimMailSources leases to owner, until leaseUntil, every source whose
	// lease has run out by now, renews the leases owner already holds, and
	// returns every source owner holds: the ones its workers may pull. Each
	// source is held by one owner at a time, however many instances claim
	// at once.
	ClaimMailSources(ctx context.Context, owner string, now, leaseUntil time.Time) ([]StoredMailSource, error)
	// ReleaseMailSources ends owner's leases, so that other instances take
	// its sources at their next claim.
	ReleaseMailSources(ctx context.Context, owner string) error
	DeleteMailSource(ctx context.Context, accountID string, inboxID int64) error
	// SaveSourceProgress records a worker's progress, only while the
	// source's settings are still those of version (its UpdatedAt); it
	// reports false when they have changed or the source is gone.
	SaveSourceProgress(ctx context.Context, id string, version time.Time, p core.SourceProgress) (bool, error)
}

// Destinations is the way out to hosts users name (IMAP sources, webhooks),
// under core's outbound-destination policy: Resolve returns a host's
// addresses only if the policy allows every one (else a
// *core.DestinationError, or a *net.DNSError when the name has none), and
// DialContext resolves once and connects to an address it checked.
type Destinations interface {
	Resolve(ctx context.Context, host string) ([]netip.Addr, error)
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}
