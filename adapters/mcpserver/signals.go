package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/client"
	"github.com/callsign/callsign/core"
)

// Signals tell a waiting tool (wait_for_email, wait_for_sms), and the
// watcher of subscribed resources, when to look again for new mail or
// texts; what is new is then read through the API. This is the one place
// that decides how news is learnt: a client of a remote server follows the
// API's event log (Feed), and the service's own endpoint its feed within
// (EventSignals).
type Signals interface {
	// Mail is signalled when mail in the client's reach may have
	// changed. Call stop when done.
	Mail(ctx context.Context, c *client.Client) (changed <-chan struct{}, stop func(), err error)
	// SMS is the same for text messages.
	SMS(ctx context.Context, c *client.Client) (changed <-chan struct{}, stop func(), err error)
}

// Feed follows the API's event log (GET /api/events/) with long polls, for
// a client of a remote server (callsign mcp, the CLI's waits). The first
// asks from now (after=latest) before Mail or SMS returns, so nothing
// committed after that is missed; each next one goes on from the answer's
// cursor and is held by the server until an event of the kind arrives, so
// a wait wakes as soon as mail or a text is stored, on any instance. While
// the log cannot be read (the server unreachable or restarting, a rate
// limit) it signals every FeedRetry instead, as a poll would.
type Feed struct{}

// FeedRetry is how long a Feed waits after a failed read of the log
// before it tries again (a 429's Retry-After when longer).
const FeedRetry = 2 * time.Second

func (Feed) Mail(ctx context.Context, c *client.Client) (<-chan struct{}, func(), error) {
	return follow(ctx, c, string(core.EmailReceived))
}

func (Feed) SMS(ctx context.Context, c *client.Client) (<-chan struct{}, func(), error) {
	return follow(ctx, c, string(core.SMSReceivedEvent))
}

// follow signals each page of events of the types in c's reach until stop.
func follow(ctx context.Context, c *client.Client, types ...string) (<-chan struct{}, func(), error) {
	f := client.EventFilter{After: client.AfterLatest, Types: types, Limit: 1}
	_, cursor, err := c.Events(ctx, f)
	if err != nil && ctx.Err() != nil {
		// The wait ran out (or was stopped) before it began: it found
		// nothing, as client's waits say when ctx ends first. A nil channel
		// never signals.
		return nil, func() {}, nil
	}
	if client.NotFound(err) { // a server from before the event log
		ch, stop := every(FeedRetry, nil)
		return ch, stop, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan struct{}, 1)
	go func() {
		f.Limit, f.Wait = core.MaxPageLimit, client.MaxEventWait
		for {
			f.After = cursor
			p, next, err := c.Events(ctx, f)
			if ctx.Err() != nil {
				return
			}
			cursor = next
			if err == nil && len(p.Results) == 0 {
				continue // the wait ran out: ask again
			}
			select {
			case out <- struct{}{}:
			default:
			}
			if err == nil {
				continue
			}
			if client.Gone(err) { // the cursor outlived the log: from now on, after the look signalled
				cursor = client.AfterLatest
			}
			retry := FeedRetry
			if e := (*client.Error)(nil); errors.As(err, &e) && e.RetryAfter > retry {
				retry = e.RetryAfter
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
		}
	}()
	return out, cancel, nil
}

// EventSignals are the service's own: the account's event feed
// (app.Events.Subscribe) says at once when mail or a text arrived within
// the key's reach, stored by this instance or, on PostgreSQL, by any
// other sharing the database.
type EventSignals struct {
	Events *app.Events
	// Key is the principal of the session's key, whose scope the feed keeps.
	Key core.Principal
}

func (s EventSignals) Mail(ctx context.Context, _ *client.Client) (<-chan struct{}, func(), error) {
	return s.watch(ctx, string(core.EmailReceived))
}

func (s EventSignals) SMS(ctx context.Context, _ *client.Client) (<-chan struct{}, func(), error) {
	return s.watch(ctx, string(core.SMSReceivedEvent))
}

// watch signals each event of the types until stop. A subscription
// dropped for falling behind is taken again, with a signal for what it
// may have missed.
func (s EventSignals) watch(ctx context.Context, types ...string) (<-chan struct{}, func(), error) {
	q := app.EventQuery{Types: types}
	sub, err := s.Events.Subscribe(ctx, s.Key, q)
	if err != nil {
		return nil, nil, err
	}
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer func() { sub.Close() }()
		for {
			select {
			case <-done:
				return
			case _, ok := <-sub.Events:
				for !ok {
					select {
					case <-done:
						return
					case <-time.After(time.Second):
					}
					if next, err := s.Events.Subscribe(context.Background(), s.Key, q); err == nil {
						sub, ok = next, true
					}
				}
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out, func() { close(done) }, nil
}

// every signals each interval, and whenever also is signalled (nil for
// never), until stop. A signal not yet taken is not repeated.
func every(interval time.Duration, also <-chan struct{}) (<-chan struct{}, func()) {
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	t := time.NewTicker(interval)
	go func() {
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			case <-also:
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out, func() { close(done) }
}
