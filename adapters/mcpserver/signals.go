package mcpserver

import (
	"context"
	"time"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/client"
)

// Signals tell a waiting tool (wait_for_email, wait_for_sms), and the
// watcher of subscribed resources, when to look again for new mail or
// texts; what is new is then read through the API. This is the one place
// that decides how news is learnt: Poll asks on a timer, and the service's
// own endpoint adds app.Mail's change feed (AppSignals). When the event
// log's long poll (GET /api/events/?wait=) exists, it belongs here.
type Signals interface {
	// Mail is signalled when mail in the client's reach may have
	// changed. Call stop when done.
	Mail(ctx context.Context, c *client.Client) (changed <-chan struct{}, stop func(), err error)
	// SMS is the same for text messages.
	SMS(ctx context.Context, c *client.Client) (changed <-chan struct{}, stop func(), err error)
}

// Poll signals every Interval: a client of a remote server has nothing
// better until the event log exists.
type Poll struct{ Interval time.Duration }

func (p Poll) Mail(context.Context, *client.Client) (<-chan struct{}, func(), error) {
	ch, stop := every(p.Interval, nil)
	return ch, stop, nil
}

func (p Poll) SMS(ctx context.Context, c *client.Client) (<-chan struct{}, func(), error) {
	return p.Mail(ctx, c)
}

// AppSignals are the service's own: app.Mail's change feed says at once
// when this instance stores mail for an inbox in the client's reach (as
// the API lists them); a look every Recheck finds what other instances
// stored, and texts (which have no feed) are looked for every SMSInterval.
type AppSignals struct {
	Feed        *app.Mail
	Recheck     time.Duration
	SMSInterval time.Duration
}

func (s AppSignals) Mail(ctx context.Context, c *client.Client) (<-chan struct{}, func(), error) {
	inboxes, err := c.Inboxes(ctx)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]int64, len(inboxes))
	for i, in := range inboxes {
		ids[i] = in.ID
	}
	feed, stopFeed := s.Feed.Watch(ids...)
	ch, stopTimer := every(s.Recheck, feed)
	return ch, func() { stopTimer(); stopFeed() }, nil
}

func (s AppSignals) SMS(context.Context, *client.Client) (<-chan struct{}, func(), error) {
	ch, stop := every(s.SMSInterval, nil)
	return ch, stop, nil
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
