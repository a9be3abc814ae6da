package ports

import (
	"context"
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
	// AllMailSources lists every source of every account, for the workers.
	AllMailSources(ctx context.Context) ([]StoredMailSource, error)
	DeleteMailSource(ctx context.Context, accountID string, inboxID int64) error
	// SaveSourceProgress records a worker's progress, only while the
	// source's settings are still those of version (its UpdatedAt); it
	// reports false when they have changed or the source is gone.
	SaveSourceProgress(ctx context.Context, id string, version time.Time, p core.SourceProgress) (bool, error)
}
