package ports

import (
	"context"
	"time"

	"github.com/callsign/callsign/core"
)

// EventStore reads the event log. Events are written by the other stores'
// methods, in the transaction of the change each tells (the methods' docs
// name theirs); nothing here writes one.
type EventStore interface {
	// Events lists the events f keeps, oldest first, at most f.Limit.
	Events(ctx context.Context, f core.EventFilter) ([]core.Event, error)
	// LatestEvent is the sequence number of the account's newest committed
	// event (0 when it has none): the cursor "from now", where a live reader
	// starts and after which it sees only what is committed next.
	LatestEvent(ctx context.Context, accountID string) (int64, error)
	// EventsPrunedThrough is the highest sequence number of the account's
	// events deleted by PruneEvents (0 when none was): a cursor below it
	// has lost events.
	EventsPrunedThrough(ctx context.Context, accountID string) (int64, error)
	// PruneEvents deletes up to limit events created before the given
	// time, oldest first, and returns how many it deleted.
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
	// EventsWritten receives a value, soon after, whenever events have been
	// committed (by this instance, or on PostgreSQL by any instance sharing
	// the database). One reader; a value stands for every commit since the
	// last one read.
	EventsWritten() <-chan struct{}
}

// EventEncoder renders an event's subject into the JSON object that is
// its data, once, when the event is written: the API's own view of the
// subject, so every reader of the log sends the bytes as stored.
type EventEncoder func(e core.NewEvent) ([]byte, error)
