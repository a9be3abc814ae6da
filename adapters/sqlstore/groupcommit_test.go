package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// heldCommits is a commit function that records its batches, holds the
// first one until released, and fails a batch holding a negative number.
type heldCommits struct {
	mu      sync.Mutex
	batches [][]int
	release chan struct{}
}

func newHeldCommits() *heldCommits { return &heldCommits{release: make(chan struct{})} }

func (h *heldCommits) commit(_ context.Context, in []int) ([]int, error) {
	h.mu.Lock()
	h.batches = append(h.batches, slices.Clone(in))
	first := len(h.batches) == 1
	h.mu.Unlock()
	if first {
		<-h.release
	}
	out := make([]int, len(in))
	for i, v := range in {
		if v < 0 {
			return nil, fmt.Errorf("bad input %d", v)
		}
		out[i] = 10 * v
	}
	return out, nil
}

func (h *heldCommits) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.batches)
}

// eventually waits for cond; what it waits for happens at once on a
// working machine, so the deadline only stops a broken run.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
	}
}

// holdFirst makes the committer busy with a first call (answered on out),
// so that the calls after it queue up.
func holdFirst(t *testing.T, g *groupCommit[int, int], h *heldCommits) <-chan error {
	out := make(chan error, 1)
	go func() {
		_, err := g.do(context.Background(), []int{0})
		out <- err
	}()
	eventually(t, "the first batch", func() bool { return h.count() == 1 })
	return out
}

func TestGroupCommitSharesOneTransactionAmongQueuedCalls(t *testing.T) {
	h := newHeldCommits()
	g := newGroupCommit(128, h.commit)
	defer g.close()
	var sizes []int // heard by the one committing goroutine, read after every call returned
	g.committed = func(calls int) { sizes = append(sizes, calls) }
	first := holdFirst(t, g, h)
	var wg sync.WaitGroup
	results := make([][]int, 10)
	errs := make([]error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = g.do(context.Background(), []int{i + 1, 100 + i})
		}()
	}
	eventually(t, "ten queued calls", func() bool { return len(g.queue) == 10 })
	close(h.release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if len(h.batches) != 2 || len(h.batches[1]) != 20 {
		t.Fatalf("batches %v: the queued calls should share the second", h.batches)
	}
	if !slices.Equal(sizes, []int{1, 10}) {
		t.Fatalf("commits heard as %v calls, want [1 10]", sizes)
	}
	for i := range 10 {
		if errs[i] != nil || !slices.Equal(results[i], []int{10 * (i + 1), 10 * (100 + i)}) {
			t.Errorf("call %d got %v %v", i, results[i], errs[i])
		}
	}
}

func TestGroupCommitFailsOnlyTheBadCallOfABatch(t *testing.T) {
	h := newHeldCommits()
	g := newGroupCommit(128, h.commit)
	defer g.close()
	first := holdFirst(t, g, h)
	type answer struct {
		in  int
		out []int
		err error
	}
	answers := make(chan answer, 3)
	for _, in := range []int{1, -1, 2} {
		go func() {
			out, err := g.do(context.Background(), []int{in})
			answers <- answer{in, out, err}
		}()
	}
	eventually(t, "three queued calls", func() bool { return len(g.queue) == 3 })
	close(h.release)
	<-first
	for range 3 {
		a := <-answers
		if bad := a.in < 0; bad != (a.err != nil) || !bad && !slices.Equal(a.out, []int{10 * a.in}) {
			t.Errorf("call %d: %v %v", a.in, a.out, a.err)
		}
	}
	if len(h.batches) != 5 { // the held one, the three together, then each alone
		t.Fatalf("batches %v", h.batches)
	}
}

func TestGroupCommitClosesAfterCommittingWhatIsQueued(t *testing.T) {
	h := newHeldCommits()
	g := newGroupCommit(128, h.commit)
	first := holdFirst(t, g, h)
	answers := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := g.do(context.Background(), []int{i + 1})
			answers <- err
		}()
	}
	eventually(t, "three queued calls", func() bool { return len(g.queue) == 3 })
	closed := make(chan struct{})
	go func() {
		g.close()
		close(closed)
	}()
	close(h.release)
	<-closed
	<-first
	for range 3 {
		if err := <-answers; err != nil {
			t.Fatalf("a call queued before close: %v", err)
		}
	}
	if _, err := g.do(context.Background(), []int{9}); !errors.Is(err, errClosed) {
		t.Fatalf("a call after close: %v", err)
	}
}

func TestGroupCommitCallerThatGivesUpBeforeQueueingStoresNothing(t *testing.T) {
	h := newHeldCommits()
	g := newGroupCommit(1, h.commit) // a queue of four calls
	defer g.close()
	defer close(h.release)
	holdFirst(t, g, h)
	for i := range cap(g.queue) {
		go g.do(context.Background(), []int{i + 1})
	}
	eventually(t, "a full queue", func() bool { return len(g.queue) == cap(g.queue) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.do(ctx, []int{99}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller that gave up: %v", err)
	}
}

// TestGroupCommitWaitsForAnnouncedCallers: a batch waits for the callers
// announced and not yet queued, and only for them: a lone call, or one
// whose fellow gave up, commits at once. The wait is made too long to
// pass by running out.
func TestGroupCommitWaitsForAnnouncedCallers(t *testing.T) {
	var batches [][]int
	var mu sync.Mutex
	g := newGroupCommit(8, func(_ context.Context, in []int) ([]int, error) {
		mu.Lock()
		batches = append(batches, slices.Sorted(slices.Values(in)))
		mu.Unlock()
		return in, nil
	})
	g.arrivalWait = time.Hour
	defer g.close()
	call := func(v int) <-chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := g.do(context.Background(), []int{v})
			errc <- err
		}()
		return errc
	}
	returned := func(what string, errc <-chan error) {
		t.Helper()
		var err error
		eventually(t, what, func() bool {
			select {
			case err = <-errc:
				return true
			default:
				return false
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	returned("a lone call", call(1))

	doneA, doneB := g.arrive(), g.arrive()
	first := call(2)
	time.Sleep(10 * time.Millisecond) // the batch of 2 is waiting for B
	second := call(3)
	returned("the first announced call", first)
	returned("the second", second)
	doneA()
	doneB()

	doneC, doneD := g.arrive(), g.arrive()
	third := call(4)
	doneD() // gave up without calling
	returned("a call whose fellow gave up", third)
	doneC()
	doneC() // done is idempotent

	mu.Lock()
	defer mu.Unlock()
	if want := [][]int{{1}, {2, 3}, {4}}; !slices.EqualFunc(batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
	if n := g.arriving.Load(); n != 0 {
		t.Fatalf("%d callers still counted as arriving", n)
	}
}
