package app

import (
	"context"
	"sync"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Events reads the event log: pages of it, long polls on it, and the
// signal that it has grown. The stores write it, in each change's own
// transaction; this service never writes an event.
type Events struct {
	base
	store     ports.EventStore
	retention time.Duration
	render    func(core.Event) ([]byte, error) // an event's JSON, for live readers

	// changed is closed, and replaced, whenever the store says events were
	// committed (watch starts the goroutine that listens, once).
	mu      sync.Mutex
	changed chan struct{}
	watch   sync.Once
	// closed ends the watching goroutine (Close); watching is done when it has.
	closed   chan struct{}
	watching chan struct{}

	// feeds are the accounts' live feeds on this instance (eventfeed.go).
	feedsMu sync.Mutex
	feeds   map[string]*eventFeed
}

// MaxEventWait bounds a long poll.
const MaxEventWait = 60 * time.Second

// EventQuery is what a reader of the log asks for.
type EventQuery struct {
	// After is the cursor, nil when the reader starts at the oldest event kept.
	After *int64
	// Types are patterns (core.EventTypeMatches); validated by the caller.
	Types    []string
	Identity string
	Limit    int
	// Newest pages newest first, before Before (0: from the newest); After
	// is then unused.
	Newest bool
	Before int64
	// Wait, when nothing matches yet, holds the call until something does
	// or the time is up (at most MaxEventWait).
	Wait time.Duration
}

// List returns the events the key may see after the cursor, oldest first;
// with Wait, an empty answer waits for the next commit first. A cursor
// older than what retention has kept is Gone: events after it were lost.
func (s *Events) List(ctx context.Context, p core.Principal, q EventQuery) ([]core.Event, error) {
	deadline := time.Now().Add(min(q.Wait, MaxEventWait))
	for {
		changed := s.Changed()
		events, err := s.Page(ctx, p, q)
		if err != nil || len(events) > 0 || !time.Now().Before(deadline) {
			return events, err
		}
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, nil // the caller left; nothing arrived
		}
		timer.Stop()
	}
}

// Latest is the cursor "from now": the account's newest committed event
// (0 when it has none), after which a reader sees only what comes next.
func (s *Events) Latest(ctx context.Context, p core.Principal) (int64, error) {
	return s.store.LatestEvent(ctx, p.AccountID)
}

// Page is one page of the log after the cursor, without waiting.
func (s *Events) Page(ctx context.Context, p core.Principal, q EventQuery) ([]core.Event, error) {
	f := core.EventFilter{Scope: p.Scope(q.Identity), Types: q.Types, Limit: q.Limit, Newest: q.Newest, Before: q.Before}
	if q.After != nil && !q.Newest {
		pruned, err := s.store.EventsPrunedThrough(ctx, p.AccountID)
		if err != nil {
			return nil, err
		}
		if *q.After < pruned {
			return nil, core.Gone("Events after %d are no longer kept (events are kept for %s); start again without after, "+
				"or after %d, the oldest cursor still complete.", *q.After, s.retention, pruned)
		}
		f.After = *q.After
	}
	return s.store.Events(ctx, f)
}

// Changed is closed when events are next committed: take it before
// reading the log, and wait on it when the read found nothing, so no
// commit between the two is missed.
func (s *Events) Changed() <-chan struct{} {
	s.watch.Do(func() {
		written := s.store.EventsWritten()
		go func() {
			defer close(s.watching)
			for {
				select {
				case <-written:
				case <-s.closed:
					return
				}
				s.mu.Lock()
				close(s.changed)
				s.changed = make(chan struct{})
				s.mu.Unlock()
			}
		}()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Close stops listening for commits and waits until it has; a reader still
// waiting then ends at its own deadline or when its caller leaves.
func (s *Events) Close() {
	s.watch.Do(func() { close(s.watching) }) // never started: nothing to wait for
	s.mu.Lock()
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	s.mu.Unlock()
	<-s.watching
}

// followPage bounds one read of the log by a follower.
const followPage = 100

// follow signals ch, without blocking, whenever events in scope of one of
// the types are committed after follow returns, by this instance or any
// other sharing the store (Changed: NOTIFY on PostgreSQL). It reads the
// log only when Changed fires, from its own cursor, and stops with stop.
// When the log cannot be read at the start it follows nothing (logged):
// the caller's own periodic look remains.
func (s *Events) follow(scope core.Scope, types []string, ch chan struct{}) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	changed := s.Changed() // before the cursor is read: no commit between the two is missed
	after, err := s.store.LatestEvent(ctx, scope.AccountID)
	if err != nil {
		s.log.Error("following the event log failed", "err", err)
		cancel()
		return cancel
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
			changed = s.Changed()
			for {
				events, err := s.store.Events(ctx, core.EventFilter{Scope: scope, After: after, Types: types, Limit: followPage})
				if err != nil {
					if ctx.Err() == nil {
						s.log.Error("following the event log failed", "err", err)
					}
					break // the next commit tries again
				}
				if len(events) == 0 {
					break
				}
				after = events[len(events)-1].Seq
				select {
				case ch <- struct{}{}:
				default:
				}
				if len(events) < followPage {
					break
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// wake wakes every reader and the webhook worker, as a commit does.
func (s *Events) wake() {
	s.Changed() // the listener exists, so changed is never a closed channel
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// pruneBatch bounds one delete of expired events.
const pruneBatch = 1000

// RunRetention deletes events older than the retention period, looking
// every second, until ctx ends.
func (s *Events) RunRetention(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for {
			n, err := s.store.PruneEvents(ctx, s.now().Add(-s.retention), pruneBatch)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Error("deleting expired events failed", "err", err)
				}
				break
			}
			if n < pruneBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
