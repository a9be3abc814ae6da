package mcpserver

import (
	"context"
	"time"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/client"
	"github.com/callsign/callsign/core"
)

// Signals tell a waiting tool (wait_for_email, wait_for_sms), and the
// watcher of subscribed resources, when to look again for new mail or
// texts; what is new is then read through the API. This is the one place
// that decides how news is learnt: Poll asks on a timer (a client of a
// remote server), and the service's own endpoint follows the event log
// (EventSignals).
type Signals interface {
	// Mail is signalled when mail in the client's reach may have
	// changed. Call stop when done.
	Mail(ctx context.Context, c *client.Client) (changed <-chan struct{}, stop func(), err error)
	// SMS is the same for text messages.
	SMS(ctx context.Context, c *client.Client) (changed <-chan struct{}, stop func(), err error)
}

// Poll signals every Interval: a client of a remote server, which the
// event log could tell only through a long poll or a stream of its own.
type Poll struct{ Interval time.Duration }

func (p Poll) Mail(context.Context, *client.Client) (<-chan struct{}, func(), error) {
	ch, stop := every(p.Interval, nil)
	return ch, stop, nil
}

func (p Poll) SMS(ctx context.Context, c *client.Client) (<-chan struct{}, func(), error) {
	return p.Mail(ctx, c)
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
