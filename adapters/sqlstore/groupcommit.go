package sqlstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// errClosed answers a call made after the store closed.
var errClosed = errors.New("the store is closed")

// groupCommit lets concurrent callers share one transaction, and so one
// commit. Every call joins a queue; one goroutine takes everything queued
// (up to max calls), hands it to commit as one batch and answers each
// caller with its share of the results. With synchronous=FULL a commit
// costs an fsync, so under load many calls share one fsync instead of each
// paying for its own, and nothing is acknowledged before it is durable.
// When a batch fails, each call in it is committed alone, so that one bad
// call fails only its own caller.
//
// Callers on their way may say so (arrive): a batch then waits, up to
// arrivalWait, for those announced and not yet queued, so that one commit
// serves them too. Nothing waits for calls nobody announced, so a lone
// call commits at once.
type groupCommit[In, Out any] struct {
	// commit stores a batch in one transaction and returns one result per
	// input, in order, or an error when nothing was stored.
	commit func(ctx context.Context, batch []In) ([]Out, error)
	max    int
	// committed, when set, hears how many calls each commit stored (for
	// metrics); set it before the first call.
	committed func(calls int)

	queue chan *groupCall[In, Out]
	// arriving counts the callers announced and not yet done; left wakes
	// a batch waiting for them when one is done without a call.
	arriving atomic.Int64
	left     chan struct{}
	// arrivalWait is the longest a batch waits for them; none when 0.
	arrivalWait time.Duration
	// mu keeps close from racing a call into the queue: a call queued
	// before close is committed, one after it is refused.
	mu     sync.RWMutex
	closed bool
	stop   chan struct{}
	done   sync.WaitGroup
}

type groupCall[In, Out any] struct {
	in     []In
	answer chan groupAnswer[Out]
}

type groupAnswer[Out any] struct {
	out []Out
	err error
}

// newGroupCommit starts the goroutine that commits; close stops it.
func newGroupCommit[In, Out any](max int, commit func(context.Context, []In) ([]Out, error)) *groupCommit[In, Out] {
	g := &groupCommit[In, Out]{commit: commit, max: max, queue: make(chan *groupCall[In, Out], 4*max), left: make(chan struct{}, 1),
		stop: make(chan struct{})}
	g.done.Add(1)
	go g.run()
	return g
}

// do commits in with whatever else is queued, and returns in's results.
func (g *groupCommit[In, Out]) do(ctx context.Context, in []In) ([]Out, error) {
	if len(in) == 0 {
		return nil, nil
	}
	c := &groupCall[In, Out]{in: in, answer: make(chan groupAnswer[Out], 1)}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return nil, errClosed
	}
	select {
	case g.queue <- c:
		g.mu.RUnlock()
	case <-ctx.Done():
		g.mu.RUnlock()
		return nil, ctx.Err()
	}
	// Once queued the call is committed or failed; the caller must hear
	// which even if it stopped waiting, or it could retry what is stored.
	a := <-c.answer
	return a.out, a.err
}

// sqliteArrivalWait bounds how long an SQLite batch waits for announced
// callers: more than a delivery takes from its announcement to its call,
// less than a commit. A commit rewrites the hot pages of a dozen indexes
// (their last leaves, per identity and inbox) whatever its size; at c=16
// waiting made batches of 5.1 messages 6.8, and the writes to the log 41
// a message 38. PostgreSQL does not wait: its pipelined batches were
// slower for it (rate 0.95×, server and database CPU 1.05×).
const sqliteArrivalWait = 2 * time.Millisecond

// arrive announces a caller that will call do soon; done says it has
// finished (called or not).
func (g *groupCommit[In, Out]) arrive() (done func()) {
	g.arriving.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			g.arriving.Add(-1)
			select {
			case g.left <- struct{}{}:
			default:
			}
		})
	}
}

// close commits what is queued, then stops.
func (g *groupCommit[In, Out]) close() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.stop)
	}
	g.mu.Unlock()
	g.done.Wait()
}

func (g *groupCommit[In, Out]) run() {
	defer g.done.Done()
	for {
		var first *groupCall[In, Out]
		select {
		case first = <-g.queue:
		case <-g.stop:
			for {
				select {
				case c := <-g.queue:
					g.commitBatch([]*groupCall[In, Out]{c})
				default:
					return
				}
			}
		}
		batch := []*groupCall[In, Out]{first}
	gather:
		for len(batch) < g.max {
			select {
			case c := <-g.queue:
				batch = append(batch, c)
			default:
				break gather
			}
		}
		g.commitBatch(g.awaitArrivals(batch))
	}
}

// awaitArrivals adds to batch the calls of announced callers, while some
// are still on their way, for up to arrivalWait. A caller is counted
// until it is done, so those in batch are among the announced (or were
// never announced, which only shortens the wait).
func (g *groupCommit[In, Out]) awaitArrivals(batch []*groupCall[In, Out]) []*groupCall[In, Out] {
	expected := func() bool { return len(batch) < g.max && g.arriving.Load() > int64(len(batch)) }
	if g.arrivalWait <= 0 || !expected() {
		return batch
	}
	timer := time.NewTimer(g.arrivalWait)
	defer timer.Stop()
	for expected() {
		select {
		case c := <-g.queue:
			batch = append(batch, c)
		case <-g.left:
		case <-timer.C:
			return batch
		case <-g.stop:
			return batch
		}
	}
	return batch
}

// commitBatch commits the calls of batch together, or each alone when
// together fails.
func (g *groupCommit[In, Out]) commitBatch(batch []*groupCall[In, Out]) {
	var all []In
	for _, c := range batch {
		all = append(all, c.in...)
	}
	out, err := g.commit(context.Background(), all)
	switch {
	case err == nil:
		if g.committed != nil {
			g.committed(len(batch))
		}
		for _, c := range batch {
			c.answer <- groupAnswer[Out]{out: out[:len(c.in):len(c.in)]}
			out = out[len(c.in):]
		}
	case len(batch) == 1:
		batch[0].answer <- groupAnswer[Out]{err: err}
	default:
		for _, c := range batch {
			g.commitBatch([]*groupCall[In, Out]{c})
		}
	}
}
