package app

import (
	"context"
	"sync"

	"github.com/callsign/callsign/core"
)

// A live reader of the log (an event stream) is fed, not left to read the
// log itself: one feed per account on this instance reads each batch of
// new events once, when a commit is signalled, and hands every subscriber
// the events its filter keeps. A thousand streams cost one read per
// commit rather than a thousand.

// SubscriberBuffer bounds the events waiting for one subscriber: a reader
// that falls this far behind is dropped (its stream ends; it resumes with
// its last event id).
const SubscriberBuffer = 256

// LiveEvent is an event as a feed hands it out, with its JSON as the API
// shows it (Ports.EventJSON), rendered once for every subscriber.
type LiveEvent struct {
	core.Event
	JSON []byte
}

// Subscription is one live reader's share of its account's feed.
type Subscription struct {
	// Events carries the events the reader's filter keeps, oldest first,
	// from the account's head when it subscribed on. It is closed when the
	// subscriber is dropped: it fell SubscriberBuffer events behind, or the
	// feed could not read the log.
	Events <-chan LiveEvent
	events chan LiveEvent
	filter core.EventFilter
	feed   *eventFeed
}

// Close leaves the feed; the last subscriber to leave stops it.
func (sub *Subscription) Close() { sub.feed.leave(sub) }

// eventFeed reads one account's new events for its subscribers.
type eventFeed struct {
	events    *Events
	accountID string
	ready     chan struct{} // closed once last is known (or err is set)
	err       error

	mu   sync.Mutex
	last int64 // the newest event read; subscribers get what follows
	subs map[*Subscription]struct{}
	stop chan struct{} // closed when the last subscriber left
}

// Subscribe joins the account's feed with the filters of q (its After is
// ignored: the subscription starts at the account's newest committed
// event). A reader resuming from a cursor reads the log from its cursor
// after subscribing, until it has caught up, and skips events it already
// has: everything committed after its subscription comes through Events.
func (s *Events) Subscribe(ctx context.Context, p core.Principal, q EventQuery) (*Subscription, error) {
	s.feedsMu.Lock()
	if s.feeds == nil {
		s.feeds = map[string]*eventFeed{}
	}
	f := s.feeds[p.AccountID]
	creator := f == nil
	if creator {
		f = &eventFeed{events: s, accountID: p.AccountID, ready: make(chan struct{}), subs: map[*Subscription]struct{}{},
			stop: make(chan struct{})}
		s.feeds[p.AccountID] = f
	}
	sub := &Subscription{events: make(chan LiveEvent, SubscriberBuffer), feed: f,
		filter: core.EventFilter{Scope: p.Scope(q.Identity), Types: q.Types}}
	sub.Events = sub.events
	f.mu.Lock()
	f.subs[sub] = struct{}{} // held before the feed can end, so the feed outlives its start
	f.mu.Unlock()
	s.feedsMu.Unlock()
	if creator {
		// The head is read before any subscriber reads the log again, so
		// what a subscriber's catch-up does not see, the feed delivers.
		f.last, f.err = s.store.LatestEvent(ctx, p.AccountID)
		close(f.ready)
		if f.err == nil {
			go f.run()
		}
	}
	<-f.ready
	if f.err != nil {
		sub.Close()
		return nil, f.err
	}
	return sub, nil
}

func (f *eventFeed) leave(sub *Subscription) {
	f.events.feedsMu.Lock()
	defer f.events.feedsMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[sub]; !ok {
		return
	}
	delete(f.subs, sub)
	close(sub.events)
	if len(f.subs) == 0 {
		if f.events.feeds[f.accountID] == f {
			delete(f.events.feeds, f.accountID)
		}
		close(f.stop)
	}
}

// feedBatch bounds one read of the log by a feed.
const feedBatch = 200

// run reads what each commit added, after the feed's last event, and
// hands it out, until the last subscriber leaves.
func (f *eventFeed) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-f.stop; cancel() }()
	for {
		changed := f.events.Changed()
		for {
			f.mu.Lock()
			after := f.last
			f.mu.Unlock()
			batch, err := f.events.store.Events(ctx, core.EventFilter{Scope: core.Scope{AccountID: f.accountID}, After: after, Limit: feedBatch})
			if err != nil {
				if ctx.Err() == nil {
					f.events.log.Error("event feed: reading the log failed; its streams end", "err", err)
					f.dropAll()
				}
				return
			}
			f.hand(batch)
			if len(batch) < feedBatch {
				break
			}
		}
		select {
		case <-changed:
		case <-f.stop:
			return
		}
	}
}

// hand gives each subscriber the events of batch its filter keeps; one
// whose buffer is full is dropped.
func (f *eventFeed) hand(batch []core.Event) {
	if len(batch) == 0 {
		return
	}
	live := make([]LiveEvent, len(batch))
	for i, e := range batch {
		live[i].Event = e
		var err error
		if live[i].JSON, err = f.events.render(e); err != nil {
			f.events.log.Error("event feed: rendering an event failed", "event", e.ID(), "err", err)
		}
	}
	var slow []*Subscription
	f.mu.Lock()
	f.last = batch[len(batch)-1].Seq
	for sub := range f.subs {
		for _, e := range live {
			if !sub.filter.Keeps(e.Event) {
				continue
			}
			select {
			case sub.events <- e:
				continue
			default:
			}
			slow = append(slow, sub)
			break
		}
	}
	f.mu.Unlock()
	for _, sub := range slow {
		sub.Close()
	}
}

// dropAll ends a feed that cannot read the log: it leaves the map first,
// so a stream joining meanwhile starts a feed of its own rather than join
// one that reads no more.
func (f *eventFeed) dropAll() {
	f.events.feedsMu.Lock()
	if f.events.feeds[f.accountID] == f {
		delete(f.events.feeds, f.accountID)
	}
	f.events.feedsMu.Unlock()
	f.mu.Lock()
	subs := make([]*Subscription, 0, len(f.subs))
	for sub := range f.subs {
		subs = append(subs, sub)
	}
	f.mu.Unlock()
	for _, sub := range subs {
		sub.Close()
	}
}
